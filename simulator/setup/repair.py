"""Error-driven repairs: read the oracle's diagnosis and name the one fix that matches it.

`plan(diagnosis, ...)` is pure: it returns a `Fix` (what to install, pin or switch) or None when
no rule applies or the fix was already tried. The ladder applies it through the session and asks
the oracle again, for a bounded number of rounds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from simulator.setup.detect import PLUGIN_FLAGS, PLUGIN_SETTINGS, PLUGIN_USES
from simulator.setup.imports import NOT_INSTALLABLE, distribution_for
from simulator.setup.oracle import Category, Diagnosis

# A C header a build could not find -> the Debian package that ships it. The session's user is
# not root, so the fix is recorded for the generated Dockerfile and the build retried from a
# binary wheel; the evidence names the package.
HEADER_PACKAGES = {
    "ffi.h": "libffi-dev",
    "openssl/ssl.h": "libssl-dev",
    "openssl/opensslv.h": "libssl-dev",
    "Python.h": "python3-dev",
    "libxml/xmlversion.h": "libxml2-dev",
    "libxslt/xsltconfig.h": "libxslt1-dev",
    "zlib.h": "zlib1g-dev",
    "jpeglib.h": "libjpeg-dev",
    "png.h": "libpng-dev",
    "yaml.h": "libyaml-dev",
    "sqlite3.h": "libsqlite3-dev",
    "mysql.h": "default-libmysqlclient-dev",
    "pg_config.h": "libpq-dev",
    "libpq-fe.h": "libpq-dev",
    "bzlib.h": "libbz2-dev",
    "lzma.h": "liblzma-dev",
    "curl/curl.h": "libcurl4-openssl-dev",
    "gmp.h": "libgmp-dev",
    "hdf5.h": "libhdf5-dev",
    "portaudio.h": "portaudio19-dev",
    "cairo.h": "libcairo2-dev",
}


@dataclass(frozen=True)
class Fix:
    kind: str  # install | downgrade | binary | plugin | runner | none
    requirements: tuple[str, ...] = ()
    reason: str = ""
    options: tuple[str, ...] = ()  # installer options (--only-binary NAME)
    system_packages: tuple[str, ...] = ()  # what a Dockerfile would apt-get install

    @property
    def key(self) -> str:
        return f"{self.kind}:{','.join(self.requirements)}:{','.join(self.options)}"


@dataclass
class RepairState:
    """What the repair loop knows between rounds: tried fixes and installed versions."""

    tried: set[str] = field(default_factory=set)
    local: set[str] = field(default_factory=set)
    versions: dict[str, str] = field(default_factory=dict)  # distribution (lowercase) -> version
    system_packages: list[str] = field(default_factory=list)


def plan(diagnosis: Diagnosis, state: RepairState) -> Fix | None:
    fix = _rule(diagnosis, state)
    if fix is None or fix.key in state.tried:
        return None
    return fix


def _rule(diagnosis: Diagnosis, state: RepairState) -> Fix | None:
    subject = diagnosis.subject or ""
    category = diagnosis.category
    if category is Category.MODULE_NOT_FOUND and subject:
        return _install_module(subject, state, diagnosis.evidence)
    if category is Category.IMPORT_ERROR and subject:
        if ":" not in subject:
            return _install_module(subject, state, diagnosis.evidence)
        module, name = subject.split(":", 1)
        return _older(module, state, f"'{name}' is gone from {module}: an older release has it")
    if category is Category.ATTRIBUTE_ERROR and subject:
        module, attribute = subject.split(":", 1)
        return _older(module, state, f"{module}.{attribute} was removed in a newer release")
    if category is Category.MISSING_PLUGIN:
        return _plugin(diagnosis)
    if category is Category.BUILD:
        return _build(diagnosis, state)
    return None


def _install_module(module: str, state: RepairState, evidence: str) -> Fix | None:
    top = module.split(".")[0]
    if top in state.local or top in NOT_INSTALLABLE:
        return None
    dist = distribution_for(module)
    return Fix("install", (dist,), f"{module} is imported but not installed ({dist})")


def _older(module: str, state: RepairState, reason: str) -> Fix | None:
    top = module.split(".")[0]
    if top in state.local:
        return None
    dist = distribution_for(top)
    version = state.versions.get(dist.lower())
    if version is None:
        return None
    parts = [int(p) for p in re.findall(r"\d+", version)[:2]] or [0]
    if parts[0] >= 1:
        bound = f"{parts[0]}"
    elif len(parts) > 1 and parts[1] > 0:
        bound = f"0.{parts[1]}"
    else:
        return None
    return Fix("downgrade", (f"{dist}<{bound}",), f"{reason} (installed {dist} {version})")


def _plugin(diagnosis: Diagnosis) -> Fix | None:
    text = diagnosis.evidence
    match = re.search(r"fixture '(\w+)' not found", text)
    if match and match.group(1) in PLUGIN_USES:
        dist = PLUGIN_USES[match.group(1)]
        return Fix("plugin", (dist,), f"fixture {match.group(1)!r} comes from {dist}")
    match = re.search(r"unrecognized arguments: (--?[\w-]+)", text)
    if match:
        flag = match.group(1)
        plugin = next((d for f, d in PLUGIN_FLAGS.items() if flag.startswith(f)), None)
        if plugin is not None:
            return Fix("plugin", (plugin,), f"option {flag} comes from {plugin}")
    match = re.search(r"Unknown config option: (\w+)", text)
    if match and match.group(1) in PLUGIN_SETTINGS:
        dist = PLUGIN_SETTINGS[match.group(1)]
        return Fix("plugin", (dist,), f"setting {match.group(1)} comes from {dist}")
    match = re.search(r"'(\w+)' not found in `markers`", text)
    if match and f"mark.{match.group(1)}" in PLUGIN_USES:
        dist = PLUGIN_USES[f"mark.{match.group(1)}"]
        return Fix("plugin", (dist,), f"marker {match.group(1)!r} comes from {dist}")
    if "async def functions are not natively supported" in text:
        return Fix("plugin", ("pytest-asyncio",), "async tests need pytest-asyncio")
    return None


def _build(diagnosis: Diagnosis, state: RepairState) -> Fix | None:
    header = re.search(r"fatal error: ([\w/.+-]+\.h)", diagnosis.evidence)
    packages: tuple[str, ...] = ()
    if header and header.group(1) in HEADER_PACKAGES:
        packages = (HEADER_PACKAGES[header.group(1)],)
        state.system_packages.extend(p for p in packages if p not in state.system_packages)
    failed = re.search(r"Failed to build `?([\w.-]+)", diagnosis.evidence)
    if failed is None:
        failed = re.search(r"Building wheel for ([\w.-]+)", diagnosis.evidence)
    if failed is None:
        return None
    dist = failed.group(1).split("@")[0].split("==")[0]
    return Fix(
        "binary",
        (dist,),
        f"{dist} failed to build from source; a release with a binary wheel avoids the build"
        + (f" (or apt-get install {' '.join(packages)})" if packages else ""),
        options=("--only-binary", dist),
        system_packages=packages,
    )
