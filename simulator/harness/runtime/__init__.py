"""Modules that run inside the session's backend, not in RepoSim's process.

They use the standard library (and pytest, which the project under test has), never
`simulator`: the harness workflow copies each file into the workspace under `.reposim/runtime/`
(or next to a harness) and runs it there with the project's own Python, on the local backend or
in a container. `source(name)` gives a module's text for that copy.
"""

from __future__ import annotations

from pathlib import Path

MODULES = ("reposim_tracer", "reposim_mutants", "reposim_derive", "reposim_harness_support")


def source(name: str) -> str:
    """The text of one runtime module, as shipped in this package."""
    if name not in MODULES:
        raise KeyError(name)
    return (Path(__file__).parent / f"{name}.py").read_text(encoding="utf-8")
