"""`python -m reposim` is the `reposim` command."""

from reposim.cli import main

main()
