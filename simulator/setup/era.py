"""The build tools of a project's era.

An old source distribution can fail to build with today's build tools because a tool removed
what its setup.py uses: setuptools 58 dropped `use_2to3` (deap 1.3.1), setuptools 82 dropped
`pkg_resources` (html5lib 1.1 imports it in setup.py), Cython 3 dropped
`build_ext.cython_sources` (PyYAML 5.4.1), pybind11 2.10.4 made its GIL guards non-copyable
(hmmlearn 0.2.7's C++11 copies one), setuptools 72.2 links C++ with a linker PyPy names none
for (editdistance 0.6.0 on pypy3: a regression, so the newest release before it rather than the
date's). A person then builds it with the tools of the
project's time. `era_causes(output)` names the rules a failed install's output shows, each keyed
on the failure (its message) and the tool release that removed the thing; the ladder then
resolves that tool as of the project's date, below that release, and builds again with it as a
build constraint (`uv pip install -b`, `pip install --build-constraint`).

Only an install's output is read here: a failed install runs nothing of the project but its
build, so `No module named 'pkg_resources'` there is the build's, not the code's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class EraRule:
    signature: re.Pattern[str]  # the failure, as the build prints it
    tool: str  # the build tool (a distribution name)
    removed_in: str  # the release of `tool` that removed what the build uses
    what: str  # what went away, for the notes
    # A regression in the tool rather than what the project's era had: the newest release below
    # it, not the project's date's (whose setuptools may predate editable installs)
    regression: bool = False

    @property
    def bound(self) -> str:
        return f"{self.tool}<{self.removed_in}"

    def cause(self) -> str:
        return f"{self.tool} {self.removed_in} removed {self.what}"


# From the tools' release notes.
ERA_RULES: tuple[EraRule, ...] = (
    EraRule(re.compile(r"use_2to3 is invalid"), "setuptools", "58", "use_2to3"),
    EraRule(re.compile(r"No module named 'pkg_resources'"), "setuptools", "82", "pkg_resources"),
    EraRule(
        re.compile(r"cannot import name 'Feature' from 'setuptools'"),
        "setuptools",
        "46",
        "setuptools.Feature",
    ),
    EraRule(
        re.compile(r"has no attribute 'cython_sources'"),
        "Cython",
        "3",
        "build_ext.cython_sources",
    ),
    # numexpr 2.7.3 (stop 44's fresh pins) builds with numpy.distutils, whose compiler classes
    # call distutils' CCompiler with the positional `verbose` today's setuptools dropped:
    # `TypeError: Compiler.__init__() takes from 1 to 3 positional arguments but 4 were given`.
    # numpy.distutils is documented for setuptools < 60 (numpy pinned 59.2.0 to build itself);
    # the release that dropped the argument is later, and the date's release is taken anyway.
    EraRule(
        re.compile(r"TypeError: \w*Compiler\.__init__\(\) takes from 1 to 3 positional arguments"),
        "setuptools",
        "60",
        "the distutils CCompiler numpy.distutils subclasses (its `verbose` argument)",
    ),
    # editdistance 0.6.0 on pypy3 (C++): setuptools 72.2 took distutils' native C++ support,
    # which links C++ with the `LDCXXSHARED` PyPy's sysconfig does not have (pypa/distutils#283,
    # open). setuptools of the project's date (58.2.0, 2021) built it but has no editable
    # installs, and the project's own tree, where no extension was built, shadowed the one
    # installed: the newest release before the regression (72.1.0) instead.
    EraRule(
        re.compile(r"in link\s+linker = \(\s+TypeError: 'NoneType' object is not subscriptable"),
        "setuptools",
        "72.2",
        "linking C++ without the LDCXXSHARED an interpreter's sysconfig may lack (PyPy's does)",
        regression=True,
    ),
    # hmmlearn 0.2.7 (C++11): `auto nogil = py::gil_scoped_release{};` copies the guard, which
    # pybind11 2.10.4 made non-copyable ("Ensure gil_scoped_release RAII is non-copyable").
    EraRule(
        re.compile(r"use of deleted function .pybind11::gil_scoped_(?:release|acquire)::"),
        "pybind11",
        "2.10.4",
        "the copy of its GIL guards (gil_scoped_release)",
    ),
)


def era_causes(output: str) -> list[EraRule]:
    """The rules whose failure shows in a failed install's `output`, one per tool (the lowest
    bound where two rules name the same tool)."""
    found: dict[str, EraRule] = {}
    for rule in ERA_RULES:
        if not rule.signature.search(output):
            continue
        known = found.get(rule.tool)
        if known is None or _major(rule.removed_in) < _major(known.removed_in):
            found[rule.tool] = rule
    return list(found.values())


def evidence(output: str, rule: EraRule) -> str:
    """The line of `output` that shows the rule's failure."""
    for line in output.splitlines():
        if rule.signature.search(line):
            return line.strip()[:200]
    return rule.cause()


def _major(version: str) -> int:
    digits = re.match(r"\d+", version)
    return int(digits.group(0)) if digits else 0
