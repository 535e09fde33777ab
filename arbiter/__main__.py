"""``python -m arbiter`` runs the CLI."""

from arbiter.cli import main

main()
