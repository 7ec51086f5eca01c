"""`python -m simulator` is the `reposim` command."""

from simulator.cli import main

main()
