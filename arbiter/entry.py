"""The ``arbiter`` command's entry point: ``--version`` answers before the CLI is imported.

The CLI (typer, rich, the graders' contracts, pydantic) takes most of a second
to import; a version check, which scripts and package managers run often, needs
none of it.
"""

from __future__ import annotations

import sys


def main() -> None:
    """Print the version for a bare ``--version``; otherwise run the CLI."""
    if sys.argv[1:] == ["--version"]:
        from arbiter.version import __version__

        print(f"arbiter {__version__}")
        return
    from arbiter.cli import main as cli

    cli()
