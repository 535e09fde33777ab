"""The ``arbiter`` command's entry point: ``--version`` answers before the CLI is imported.

The CLI (typer, rich, the graders' contracts, pydantic) is slow to import; a
version check, which scripts and package managers run often, needs none of it.
On a client-only install (``pip install arbiter-rewards``) the CLI's packages
are absent: the command then names the extra to install.
"""

from __future__ import annotations

import sys

from arbiter.extras import missing_extra


def main() -> None:
    """Print the version for a bare ``--version``; otherwise run the CLI."""
    if sys.argv[1:] == ["--version"]:
        from arbiter.version import __version__

        print(f"arbiter {__version__}")
        return
    try:
        from arbiter.cli import main as cli

        cli()
    except ModuleNotFoundError as e:
        hint = missing_extra(e)
        if hint is None:
            raise
        command = " ".join(["arbiter", *sys.argv[1:2]])
        print(f"{command}: {hint}", file=sys.stderr)
        sys.exit(2)
