"""``python -m arbiter`` runs the CLI."""

from arbiter.entry import main

main()
