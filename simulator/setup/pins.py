"""Pins for what a dependency's newer release removed, chosen from the index's own data.

Old code meets today's releases of its dependencies: `matplotlib.cm.register_cmap` (seaborn
0.11.2), `np.finfo(...).machar` (numdifftools 0.9.39), `from numpy.testing import dec`. The fix
a person makes is to pin that dependency to a release that still has the name. Here:

1. `REMOVED_FROM_SCRIPT` (run by the environment's Python) names the installed distribution the
   name belongs to: the one that ships the module (`matplotlib.cm` -> matplotlib), or, for an
   object's attribute (`'finfo' object has no attribute 'machar'`), the one among the modules
   the project's code imports (the import scan), then its declared requirements, whose
   top-level module has a class of that name that lacks it (numdifftools 0.9.39 declares no
   requirement in its metadata; its code imports numpy). The
   standard library and the project itself are never pinned (that is the interpreter).
2. `RELEASES_SCRIPT` lists that distribution's releases with a wheel for this interpreter and the
   date each was first uploaded, from the index's JSON Simple API (PEP 691/700).
3. The ladder tries the newest release before the project's date. When none before it has a
   wheel here (an old project on today's interpreter: quantities 0.12.4, dated 2020-01-08, and
   numpy, whose first cp311 wheels are 1.23.2's of 2022-08), it takes the release nearest the
   date among the later ones (`nearest_with`: walking up from the oldest, each installed
   `--no-deps` and asked `HAS_SCRIPT`), since the nearest is the one whose behaviour the
   project was written against: numpy 2.3.5, the newest that still has `ndarray.ptp`, kept
   NumPy 2's scalar and casting semantics and failed 30 of quantities' 160 tests. Only when the
   nearest few do not import here does it bisect the rest for the newest that has the name.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

REMOVED_FROM_SCRIPT = r"""
import importlib, importlib.metadata as m, json, re, sys
subject, project, imported = sys.argv[1], sys.argv[2], sys.argv[3:]
norm = lambda n: re.sub(r'[-_.]+', '-', n).lower()
owners = m.packages_distributions()

def local(dist):
    try:
        return 'dir_info' in (m.distribution(dist).read_text('direct_url.json') or '')
    except m.PackageNotFoundError:
        return True

def owner(module):
    top = module.split('.')[0]
    if top in sys.stdlib_module_names:
        return None
    names = [n for n in owners.get(top, []) if not local(n)]
    return names[0] if names else None

parts = subject.split(':')
found = None
if parts[0] == 'object' and len(parts) == 3:
    cls, attr = parts[1], parts[2]
    try:
        wanted = [re.match(r'[A-Za-z0-9._-]+', r).group(0) for r in m.requires(project) or []]
    except m.PackageNotFoundError:
        wanted = []
    wanted = {norm(n) for n in wanted}
    # The modules the project's code imports first, then those of its declared requirements.
    tops = [t for t in imported if t in owners]
    for top, dists in sorted(owners.items()):
        if top not in tops and any(norm(d) in wanted for d in dists):
            tops.append(top)
    for top in tops:
        dist = next((d for d in owners[top] if not local(d)), None)
        if dist is None or top.startswith('_') or top in sys.stdlib_module_names:
            continue
        try:
            module = importlib.import_module(top)
        except Exception:
            continue
        obj = getattr(module, cls, None)
        if isinstance(obj, type) and not hasattr(obj, attr):
            found = {'dist': dist, 'module': top, 'object': cls, 'attr': attr}
            break
elif len(parts) >= 2 and parts[0] != 'object':
    dist = owner(parts[0])
    if dist is not None:
        found = {'dist': dist, 'module': parts[0], 'object': '', 'attr': parts[1]}
print(json.dumps(found))
"""

RELEASES_SCRIPT = r"""
import json, os, sys, urllib.request
from pip._vendor.packaging.tags import sys_tags
from pip._vendor.packaging.utils import canonicalize_name, parse_wheel_filename
from pip._vendor.packaging.version import Version
name = canonicalize_name(sys.argv[1])
index = os.environ.get('UV_INDEX_URL') or os.environ.get('PIP_INDEX_URL') or 'https://pypi.org/simple'
request = urllib.request.Request(
    index.rstrip('/') + '/' + name + '/',
    headers={'Accept': 'application/vnd.pypi.simple.v1+json'},
)
data = json.load(urllib.request.urlopen(request, timeout=120))
here = set(sys_tags())
first = {}
for f in data.get('files', []):
    if not f['filename'].endswith('.whl') or f.get('yanked'):
        continue
    try:
        _, version, _, tags = parse_wheel_filename(f['filename'])
    except Exception:
        continue
    if version.is_prerelease or version.is_devrelease or not (tags & here):
        continue
    when = f.get('upload-time') or ''
    key = str(version)
    if key not in first or (when and when < first[key]):
        first[key] = when
print(json.dumps(sorted(first.items(), key=lambda kv: Version(kv[0]))))
"""

# Exit 0: the module imports and has the name; 1: it imports and lacks it; 2: it does not import.
HAS_SCRIPT = r"""
import importlib, sys
module, obj, attr = sys.argv[1:4]
try:
    found = importlib.import_module(module)
except Exception:
    sys.exit(2)
found = getattr(found, obj, None) if obj else found
sys.exit(0 if found is not None and hasattr(found, attr) else 1)
"""


@dataclass(frozen=True)
class Removed:
    """A name a dependency's installed release lacks: `module.object.attr` of `dist`."""

    dist: str
    module: str
    object: str
    attr: str

    @property
    def name(self) -> str:
        return ".".join(p for p in (self.module, self.object, self.attr) if p)


@dataclass(frozen=True)
class Candidates:
    """Where to look for a release that still has the name: the newest before the project's
    date (None when none has a wheel here), then the later ones, oldest first."""

    before: str | None
    after: tuple[str, ...]


def candidates(
    releases: list[tuple[str, str]], date: str | None, installed: str | None
) -> Candidates:
    """From (version, first upload time) pairs sorted by version: the releases older than the
    installed one, split at the project's date."""
    from packaging.version import InvalidVersion, Version

    def older(version: str) -> bool:
        if installed is None:
            return True
        try:
            return Version(version) < Version(installed)
        except InvalidVersion:
            return False

    kept = [(v, t) for v, t in releases if older(v)]
    moment = _instant(date) if date else None
    before = [v for v, t in kept if moment and t and _instant(t) <= moment]
    after = tuple(v for v, _ in kept if v not in before)
    return Candidates(before[-1] if before else None, after)


NEAREST_SLACK_HOURS = 24  # the other platforms' wheels of a release follow its first within a day


def nearest_moment(releases: list[tuple[str, str]], date: str) -> str | None:
    """The first moment after `date` a release of these (version, first upload of a wheel for
    this interpreter) pairs had a wheel here, with a day's slack, as uv's `exclude-newer` takes
    it (`2022-08-15T00:17:33Z`); None when no release after the date has one."""
    from datetime import UTC, datetime, timedelta

    moment = _instant(date)
    later = sorted(_instant(t) for _, t in releases if t and _instant(t) > moment)
    if not later:
        return None
    first = datetime.fromisoformat(later[0]) + timedelta(hours=NEAREST_SLACK_HOURS)
    return first.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _instant(text: str) -> str:
    """An ISO 8601 time as a UTC string that sorts (`2021-08-15T14:07:22Z`)."""
    from datetime import UTC, datetime

    return datetime.fromisoformat(re.sub(r"Z$", "+00:00", text)).astimezone(UTC).isoformat()


NEAREST_TRIES = 3  # later releases looked at, nearest the date first, before a bisection


@dataclass(frozen=True)
class Nearest:
    """What the walk up from the project's date found: the release chosen (None when none was),
    and the releases it did not reach (the nearest `NEAREST_TRIES` did not import here)."""

    chosen: str | None
    rest: tuple[str, ...]


async def nearest_with(
    releases: Sequence[str], has: Callable[[str], Awaitable[int]], tries: int = NEAREST_TRIES
) -> Nearest:
    """The oldest of `releases` (oldest first: those after the project's date) that has the name
    and imports here. `has(version)` as for `newest_with`: a release that lacks the name (1)
    ends the walk with none (the name went before it, so every later one lacks it too); one
    that does not import here (2: built for other releases of its own dependencies) is passed
    over, at most `tries` of them, after which the rest is left to the caller."""
    for looked, version in enumerate(releases):
        if looked >= tries:
            return Nearest(None, tuple(releases[looked:]))
        code = await has(version)
        if code == 0:
            return Nearest(version, ())
        if code == 1:
            return Nearest(None, ())
    return Nearest(None, ())


async def newest_with(releases: Sequence[str], has: Callable[[str], Awaitable[int]]) -> str | None:
    """The newest of `releases` (oldest first) that has the name, by bisection: `has(version)`
    is 0 where it has it, 1 where it lacks it (from the removal on) and 2 where the release
    does not import here (built for older dependencies: before the removal, not usable)."""
    chosen = None
    low, high = 0, len(releases) - 1
    while low <= high:
        middle = (low + high) // 2
        code = await has(releases[middle])
        if code == 0:
            chosen = releases[middle]
        if code in (0, 2):
            low = middle + 1
        else:
            high = middle - 1
    return chosen
