"""RepoSim's composition root: the `reposim` command line.

It sits above both the engine (`simulator`, `backends`) and the UI (`widgets`): it opens
sessions, builds agents and model clients, and launches the UI on them. Nothing below imports
it. Imports point one way: reposim -> widgets -> simulator -> backends.
"""
