"""The install-name rules shared by `reposim setup` and `perf compare --setup`.

Every name that reaches an installer went through here:

- `valid_distribution_name(name)`: a distribution name as PEP 508 spells it
  (`^([A-Z0-9]|[A-Z0-9][A-Z0-9._-]*[A-Z0-9])$`, case-insensitive). `-house` is not one.
- `checked_requirement(text)`: a requirement string (name, extras, version, marker) that parses
  as PEP 508 and names a valid distribution; None for anything else (options, paths, URLs).
- `install_argv(prefix, options, requirements)`: the installer's argv with every requirement
  after `--`, so no text from a repository is ever read as an option.
- `resolve_imports(names, probe)`: import names to distributions, only through the maintained
  table (`imports.DISTRIBUTIONS`) or the index's own data (a wheel of the distribution of the
  same name that really ships a top-level module of that name, read from its file list by
  `PROBE_SCRIPT`); never a bare `pip install <import name>`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from packaging.requirements import InvalidRequirement, Requirement

DISTRIBUTION_NAME = re.compile(r"^([A-Z0-9]|[A-Z0-9][A-Z0-9._-]*[A-Z0-9])$", re.I)
IMPORT_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


def valid_distribution_name(name: str) -> bool:
    return DISTRIBUTION_NAME.match(name) is not None


def checked_requirement(text: str) -> str | None:
    """`text` when it is a PEP 508 requirement on a named distribution (no URL, no option)."""
    text = text.strip()
    if not text or text.startswith("-"):
        return None
    try:
        requirement = Requirement(text)
    except InvalidRequirement:
        return None
    if requirement.url or not valid_distribution_name(requirement.name):
        return None
    return text


def install_argv(prefix: list[str], options: list[str], requirements: list[str]) -> list[str]:
    """`prefix + options + ["--", *requirements]`: requirements are never options.

    Raises ValueError for a requirement that is not a checked one, so a caller cannot pass text
    from a repository through unchecked."""
    bad = [r for r in requirements if checked_requirement(r) is None]
    if bad:
        raise ValueError(f"not a distribution requirement: {bad[0]!r}")
    return [*prefix, *options, *(["--", *requirements] if requirements else [])]


# Run inside the environment with its own interpreter: for each import name, download (never
# build or run) the newest wheel of the distribution of the same name and list the top-level
# modules it ships. Prints one JSON object: name -> [top-level modules] or null (no wheel).
PROBE_SCRIPT = r"""
import json, pathlib, subprocess, sys, tempfile, zipfile
out = {}
for name in sys.argv[1:]:
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "-q",
             "--no-deps", "--only-binary", ":all:", "-d", tmp, "--", name],
            capture_output=True, timeout=300,
        )
        wheels = sorted(pathlib.Path(tmp).glob("*.whl"))
        if proc.returncode != 0 or not wheels:
            out[name] = None
            continue
        tops = set()
        for entry in zipfile.ZipFile(wheels[0]).namelist():
            first = entry.split("/")[0]
            if first.endswith((".dist-info", ".data")):
                continue
            tops.add(first.split(".")[0] if "/" not in entry else first)
        out[name] = sorted(tops)
print(json.dumps(out))
"""

Probe = Callable[[list[str]], Awaitable[dict[str, list[str] | None]]]


@dataclass
class Resolution:
    """Import name -> distribution, and the names no rule could map (with why)."""

    distributions: dict[str, str] = field(default_factory=dict)
    unresolved: dict[str, str] = field(default_factory=dict)
    probed: list[str] = field(default_factory=list)  # names checked against the index

    def to_dict(self) -> dict[str, object]:
        return {
            "distributions": self.distributions,
            "unresolved": self.unresolved,
            "probed": self.probed,
        }


def parse_probe_output(text: str) -> dict[str, list[str] | None]:
    for line in reversed(text.strip().splitlines()):
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict):
            return {
                str(k): [str(t) for t in v] if isinstance(v, list) else None
                for k, v in data.items()
            }
    return {}


async def resolve_imports(names: list[str], probe: Probe | None) -> Resolution:
    """Map import names to distributions: the table first, then the index (via `probe`).

    A name the table does not know is installed only when a wheel of the distribution of the
    same name ships that top-level module; otherwise it is left unresolved with the reason."""
    from simulator.setup.imports import NOT_INSTALLABLE, distribution_for

    result = Resolution()
    to_probe: list[str] = []
    for name in names:
        top = name.split(".")[0]
        if not IMPORT_NAME.match(name) or top in NOT_INSTALLABLE:
            result.unresolved[name] = "not an installable import name"
            continue
        known = distribution_for(name)
        if known is not None:
            result.distributions[name] = known
        elif top.startswith("_") or not valid_distribution_name(top):
            result.unresolved[name] = "not a distribution name"
        else:
            to_probe.append(name)
    if to_probe and probe is not None:
        tops = sorted({n.split(".")[0] for n in to_probe})
        found = await probe(tops)
        result.probed = tops
        for name in to_probe:
            top = name.split(".")[0]
            shipped = found.get(top)
            if shipped is None:
                result.unresolved[name] = "no wheel of that name on the index"
            elif top in shipped:
                result.distributions[name] = top
            else:
                result.unresolved[name] = (
                    f"the distribution {top!r} on the index ships {', '.join(shipped[:4])}, "
                    f"not {top!r}"
                )
    else:
        for name in to_probe:
            result.unresolved[name] = "not in the table and the index was not asked"
    return result
