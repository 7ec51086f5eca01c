"""Which command F5 runs for a repository: the one the person set (remembered per repository in
~/.config/reposim/test-commands.json), else the one a `reposim setup` on this machine found
(with the venv it left), else one detected from the repository (the setup workflow's detection:
ctest, meson test, make test/check, unittest), else pytest.

A repository is C by evidence, not by the absence of any `.py` file: a C build (CMake, Meson,
autotools, a Makefile) with C sources and no Python packaging is C even when a few Python helper
scripts sit in its test tooling."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from simulator.paths import config_dir
from simulator.workspace import skipped_dir

STORE = "test-commands.json"
_MAKE_TARGET = re.compile(r"^(test|check|tests)\s*:", re.MULTILINE)
PACKAGING = ("pyproject.toml", "setup.py", "setup.cfg")
C_SOURCES = frozenset({".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh"})
# build system -> the files that say it is there, in the setup ladder's order of preference
BUILD_FILES = (
    ("cmake", ("CMakeLists.txt",)),
    ("meson", ("meson.build",)),
    ("autotools", ("configure", "configure.ac", "configure.in")),
    ("make", ("GNUmakefile", "makefile", "Makefile")),
    ("build.sh", ("build.sh",)),
)
SCAN_LIMIT = 20_000  # files looked at for C sources: enough for any repository's top levels


def _store() -> Path:
    return config_dir() / STORE


def _read() -> dict[str, str]:
    try:
        data = json.loads(_store().read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def remembered(root: Path) -> str | None:
    return _read().get(str(root.resolve()))


def remember(root: Path, command: str) -> None:
    """Keep `command` as this repository's test command (an empty one forgets it)."""
    data = _read()
    key = str(root.resolve())
    if command.strip():
        data[key] = command
    else:
        data.pop(key, None)
    path = _store()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    tmp.replace(path)


def c_build(root: Path) -> str | None:
    """The build system of a C repository (cmake, meson, autotools, make, build.sh), or None
    when the evidence does not make it one: Python packaging wins, and a build file alone (a
    Python project's Makefile) is not enough without C sources."""
    if any((root / name).is_file() for name in PACKAGING):
        return None
    build = next(
        (kind for kind, names in BUILD_FILES if any((root / n).is_file() for n in names)), None
    )
    return build if build is not None and _has_c_sources(root) else None


def _has_c_sources(root: Path) -> bool:
    seen = 0
    for _folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not skipped_dir(d) and not d.startswith("."))
        for name in files:
            if Path(name).suffix in C_SOURCES:
                return True
        seen += len(files)
        if seen > SCAN_LIMIT:
            return False
    return False


def detect(root: Path) -> str | None:
    """A test command for the repository, or None for the default (pytest)."""
    build = c_build(root)
    if build is None:
        from simulator.setup.detect import detect as detect_project

        project = detect_project(root)
        if project.language == "python" and project.runner == "unittest":
            return "python -m unittest discover -v"
        if project.language != "c" or project.c_build is None:
            return None
        build = project.c_build
    # The setup ladder loads for C projects only: the rest of `reposim open` never needs it.
    from simulator.setup.ladder import C_COMMANDS

    if build in C_COMMANDS:
        build_command, test = C_COMMANDS[build]
        if build == "make":
            makefile = next(
                (root / n for n in ("GNUmakefile", "makefile", "Makefile") if (root / n).is_file()),
                None,
            )
            text = makefile.read_text(errors="replace") if makefile else ""
            found = _MAKE_TARGET.search(text)
            return f"make {found.group(1)}" if found else "make"
        return f"({build_command}) && {test}"
    return None


def choose(root: Path, given: str | None) -> str | None:
    """`given` (then remembered), else the remembered one, else the detected one."""
    if given is not None:
        remember(root, given)
        return given.strip() or detect(root)
    return remembered(root) or from_setup(root) or detect(root)


def from_setup(root: Path) -> str | None:
    """The test command of the venv `reposim setup` left for the repository, while it fits."""
    from simulator.venvcache import lookup

    cached = lookup(root)
    return cached.test_command if cached is not None and cached.stale is None else None
