"""Error-driven repairs: read the oracle's diagnosis and name the one fix that matches it.

`plan(diagnosis, ...)` is pure: it returns a `Fix` (what to install, pin or switch) or None when
no rule applies or the fix was already tried. The ladder applies it through the session and asks
the oracle again, for a bounded number of rounds.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field

from simulator.setup.detect import PLUGIN_FLAGS, PLUGIN_SETTINGS, PLUGIN_USES
from simulator.setup.imports import NOT_INSTALLABLE, distribution_for
from simulator.setup.names import valid_distribution_name
from simulator.setup.oracle import BUILD_LIBRARY, NUMPY_ABI_SUBJECT, Category, Diagnosis

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


# A library a build could not find (Pillow 8.4.0: "The headers or library files could not be
# found for jpeg"; ld: "cannot find -lz"; pkg-config: "Package libxml-2.0 was not found") -> the
# Debian (bookworm) development package. A name not listed here is looked up in the container
# as lib<name>.so, like a shared library below.
BUILD_LIBRARY_PACKAGES = {
    "jpeg": "libjpeg-dev",
    "zlib": "zlib1g-dev",
    "z": "zlib1g-dev",
    "png": "libpng-dev",
    "libpng": "libpng-dev",
    "tiff": "libtiff-dev",
    "libtiff-4": "libtiff-dev",
    "freetype": "libfreetype-dev",
    "freetype2": "libfreetype-dev",
    "lcms2": "liblcms2-dev",
    "webp": "libwebp-dev",
    "openjp2": "libopenjp2-7-dev",
    "libopenjp2": "libopenjp2-7-dev",
    "ffi": "libffi-dev",
    "libffi": "libffi-dev",
    "ssl": "libssl-dev",
    "crypto": "libssl-dev",
    "openssl": "libssl-dev",
    "xml2": "libxml2-dev",
    "libxml-2.0": "libxml2-dev",
    "xslt": "libxslt1-dev",
    "libxslt": "libxslt1-dev",
    "yaml": "libyaml-dev",
    "yaml-0.1": "libyaml-dev",
    "sqlite3": "libsqlite3-dev",
    "bz2": "libbz2-dev",
    "lzma": "liblzma-dev",
    "liblzma": "liblzma-dev",
    "lz4": "liblz4-dev",
    "liblz4": "liblz4-dev",
    "zstd": "libzstd-dev",
    "libzstd": "libzstd-dev",
    "snappy": "libsnappy-dev",
    "curl": "libcurl4-openssl-dev",
    "libcurl": "libcurl4-openssl-dev",
    "gmp": "libgmp-dev",
    "mpfr": "libmpfr-dev",
    "hdf5": "libhdf5-dev",
    "pq": "libpq-dev",
    "libpq": "libpq-dev",
    "cairo": "libcairo2-dev",
    "uuid": "uuid-dev",
    "openblas": "libopenblas-dev",
    "lapack": "liblapack-dev",
    "blas": "libblas-dev",
    "fftw3": "libfftw3-dev",
    "glib-2.0": "libglib2.0-dev",
}

# A shared library a module could not load -> the Debian (bookworm) package that ships it. A
# library not listed here is looked up in the container (`SYSTEM_LOOKUP`): the candidate
# packages its name suggests are downloaded, never installed, and kept only when their file list
# holds that exact file.
LIBRARY_PACKAGES = {
    "libgobject-2.0.so.0": "libglib2.0-0",
    "libglib-2.0.so.0": "libglib2.0-0",
    "libgio-2.0.so.0": "libglib2.0-0",
    "libgthread-2.0.so.0": "libglib2.0-0",
    "libgmodule-2.0.so.0": "libglib2.0-0",
    "libgirepository-1.0.so.1": "libgirepository-1.0-1",
    "libcairo.so.2": "libcairo2",
    "libpango-1.0.so.0": "libpango-1.0-0",
    "libpangocairo-1.0.so.0": "libpangocairo-1.0-0",
    "libgdk_pixbuf-2.0.so.0": "libgdk-pixbuf-2.0-0",
    "libgtk-3.so.0": "libgtk-3-0",
    "libGL.so.1": "libgl1",
    "libEGL.so.1": "libegl1",
    "libGLU.so.1": "libglu1-mesa",
    "libSM.so.6": "libsm6",
    "libICE.so.6": "libice6",
    "libXext.so.6": "libxext6",
    "libXrender.so.1": "libxrender1",
    "libX11.so.6": "libx11-6",
    "libxcb.so.1": "libxcb1",
    "libfontconfig.so.1": "libfontconfig1",
    "libfreetype.so.6": "libfreetype6",
    "libgomp.so.1": "libgomp1",
    "libgfortran.so.5": "libgfortran5",
    "libopenblas.so.0": "libopenblas0",
    "liblapack.so.3": "liblapack3",
    "libblas.so.3": "libblas3",
    "libsndfile.so.1": "libsndfile1",
    "libsndfile.so": "libsndfile1",
    "libportaudio.so.2": "libportaudio2",
    "libasound.so.2": "libasound2",
    "libmagic.so.1": "libmagic1",
    "libzbar.so.0": "libzbar0",
    "libgeos_c.so.1": "libgeos-c1v5",
    "libgeos_c.so": "libgeos-c1v5",
    "libproj.so.25": "libproj25",
    "libgdal.so.32": "libgdal32",
    "libspatialindex_c.so": "libspatialindex-c6",
    "libhdf5_serial.so.103": "libhdf5-103-1",
    "libnetcdf.so.19": "libnetcdf19",
    "libzmq.so.5": "libzmq5",
    "libpq.so.5": "libpq5",
    "libmariadb.so.3": "libmariadb3",
    "libsqlite3.so.0": "libsqlite3-0",
    "libxml2.so.2": "libxml2",
    "libxslt.so.1": "libxslt1.1",
    "libjpeg.so.62": "libjpeg62-turbo",
    "libpng16.so.16": "libpng16-16",
    "libtiff.so.6": "libtiff6",
    "libwebp.so.7": "libwebp7",
    "libtesseract.so.5": "libtesseract5",
    "liblept.so.5": "liblept5",
    "libespeak-ng.so.1": "libespeak-ng1",
    "libusb-1.0.so.0": "libusb-1.0-0",
    "libdbus-1.so.3": "libdbus-1-3",
    "libpcap.so.0.8": "libpcap0.8",
    "libsnappy.so.1": "libsnappy1v5",
    "libyaml-0.so.2": "libyaml-0-2",
    "libgmp.so.10": "libgmp10",
    "libmpfr.so.6": "libmpfr6",
    "libtk8.6.so": "libtk8.6",
    "libtcl8.6.so": "libtcl8.6",
    "libcurl.so.4": "libcurl4",
    "libfftw3.so.3": "libfftw3-double3",
    "libsodium.so.23": "libsodium23",
    "libgraphviz.so": "libgvc6",
    "libgvc.so.6": "libgvc6",
}
# The end of both lookups below: the first candidate in $cands (each tried once) whose
# downloaded package, never installed, `ships` the file (its file list on stdin) is printed.
_FIRST_THAT_SHIPS = r"""
tmp=$(mktemp -d) && cd "$tmp" || exit 1
seen=" "
for c in $cands; do
  case "$seen" in *" $c "*) continue ;; esac; seen="$seen$c "
  apt-cache show "$c" >/dev/null 2>&1 || continue
  apt-get -o APT::Sandbox::User=root download -qq "$c" >/dev/null 2>&1 || continue
  if dpkg-deb -c ./"$c"_*.deb 2>/dev/null | ships; then
    echo "$c"; rm -rf "$tmp"; exit 0
  fi
done
rm -rf "$tmp"; exit 1
"""
# Run as root in the container with the library's file name: prints the Debian package that
# ships that exact file (a candidate from the name, checked in its downloaded file list).
SYSTEM_LOOKUP = (
    r"""
lib="$1"; stem="${lib%%.so*}"; ver="${lib#*.so}"; ver="${ver#.}"; ver="${ver%%.*}"
base="${stem#lib}"
cands="$stem$ver $stem-$ver ${stem}${ver}t64 $stem lib${base}-${ver}"
[ -n "$ver" ] || cands="$stem $stem-dev"
ships() { grep -q "/$lib\(\.[0-9.]*\)\?$"; }
"""
    + _FIRST_THAT_SHIPS
)
# Run as root in the container with a header's path as the build printed it (`mpfr.h`,
# `openssl/ssl.h`): prints the Debian package that ships that exact file under /usr/include.
# The candidates come from the header's name (lib<stem>-dev, <stem>-dev, the same without a
# version suffix, and the folder's name for `folder/x.h`); each is downloaded, never installed,
# and kept only when its file list holds the header. No Contents index is fetched: bookworm's
# main Contents-amd64 is tens of megabytes for one file name, and apt-file is not in the image.
HEADER_LOOKUP = (
    r"""
h="$1"; stem="${h##*/}"; stem="${stem%.h}"; base="${stem#lib}"
bare=$(printf '%s' "$base" | sed 's/[-_.]*[0-9][0-9.]*$//')
cands=""
case "$h" in */*) dir="${h%%/*}"; dir="${dir#lib}"; cands="lib$dir-dev $dir-dev" ;; esac
cands="$cands lib$base-dev $base-dev lib$bare-dev $bare-dev"
# /usr/include/<h>, or a folder under it (multiarch: /usr/include/x86_64-linux-gnu/gmp.h)
ships() { awk -v h="$h" '{ f = $NF; n = length(h) }
    index(f, "./usr/include/") == 1 && substr(f, length(f) - n) == "/" h { ok = 1 }
    END { exit !ok }'; }
"""
    + _FIRST_THAT_SHIPS
)
# Attributes a newer release removed, and the requirement that still has them (the release
# that removed them, from the projects' release notes).
REMOVED_IN = {
    **{
        ("numpy", name): "numpy<1.24"
        for name in ("float", "int", "bool", "object", "str", "complex", "long", "unicode")
    },
    **{
        ("numpy", name): "numpy<2"
        for name in (
            "NaN",
            "NAN",
            "Inf",
            "PINF",
            "NINF",
            "Infinity",
            "infty",
            "float_",
            "complex_",
            "string_",
            "unicode_",
            "round_",
            "product",
            "cumproduct",
            "sometrue",
            "alltrue",
            "row_stack",
            "asfarray",
            "find_common_type",
            "msort",
            "cast",
            "source",
            "lookfor",
            "who",
            "issubclass_",
            "set_string_function",
            "safe_eval",
            "recfromcsv",
            "recfromtxt",
            "deprecate",
            "longfloat",
            "singlecomplex",
            "cfloat",
            "longcomplex",
            "clongfloat",
            "mat",
            "obj2sctype",
            "sctype2char",
            "maximum_sctype",
        )
    },
    ("DataFrame", "append"): "pandas<2",
    ("Series", "append"): "pandas<2",
    ("DataFrame", "iteritems"): "pandas<2",
    ("Series", "iteritems"): "pandas<2",
    ("Index", "is_monotonic"): "pandas<2",
}

# A module name another distribution stands in for, with only part of its API: module ->
# (the distribution that has the whole module, the attributes the stand-in has, why). pytest
# 7.2 dropped its dependency on the py library and ships a `py` module of its own with only
# `py.path` and `py.error`; tests of its era call `py.test.raises`, `py.test.skip`, `py.code`
# (cffi 1.15.0: 255 of 738 failed on `module 'py' has no attribute 'test'`).
SHIMMED = {
    "py": (
        "py",
        ("path", "error"),
        "pytest (>= 7.2) ships a `py` module of its own with only py.path and py.error; the "
        "rest is the py library's (py.test is pytest there)",
    ),
}


@dataclass(frozen=True)
class Fix:
    kind: str  # install | downgrade | removed | binary | plugin | system | ignore-option
    requirements: tuple[str, ...] = ()
    reason: str = ""
    options: tuple[str, ...] = ()  # installer options (--only-binary NAME)
    system_packages: tuple[str, ...] = ()  # what a Dockerfile would apt-get install
    modules: tuple[str, ...] = ()  # import names the ladder resolves (table, then the index)

    @property
    def key(self) -> str:
        """What makes two fixes the same fix (the repair loop tries each key once)."""
        parts = (self.requirements, self.options, self.modules, self.system_packages)
        return ":".join((self.kind, *(",".join(part) for part in parts)))


@dataclass
class RepairState:
    """What the repair loop knows between rounds: tried fixes and installed versions."""

    tried: set[str] = field(default_factory=set)
    local: set[str] = field(default_factory=set)
    versions: dict[str, str] = field(default_factory=dict)  # distribution (lowercase) -> version
    system_packages: list[str] = field(default_factory=list)
    unresolved: dict[str, str] = field(default_factory=dict)  # import name -> why not installed
    project: str | None = None  # the project's distribution name (whose requirements to read)
    imported: list[str] = field(default_factory=list)  # top-level names the project imports
    # Test classes that set themselves up in nose-style `setup(self)`/`teardown(self)` methods
    # (the test files, `nose_style_classes`): the names of those classes
    nose_classes: set[str] = field(default_factory=set)
    # Every class the project's own tree defines (`defined_classes`): a name missing on one of
    # them is the project's own, never a dependency's removal
    own_classes: set[str] = field(default_factory=set)
    # The project's runtime requirements (declared, and what its code imports), when its commit
    # is old and some of them run at today's releases (no wheel here as of its date): the
    # nearest-date rung resolves them again (`ladder._nearest_date`). Empty: not this case.
    nearest: tuple[str, ...] = ()
    # The dependencies a fix has moved below today's release for a name it removed (normalized
    # distribution names, `moved_back`): with `nearest`, what says the project's era is wanted
    moved: set[str] = field(default_factory=set)


def moved_back(fix: Fix) -> str | None:
    """The dependency `fix` moves below today's release for a name that release removed (a
    `downgrade` pin's distribution, the dependency a `removed` name belongs to), normalized;
    None for another fix, or a name on an object whose class says nothing of its package."""
    if fix.kind == "downgrade" and fix.requirements:
        dist = _name(fix.requirements[0])
    elif fix.kind == "removed" and fix.modules and not fix.modules[0].startswith("object:"):
        top = fix.modules[0].split(":")[0].split(".")[0]
        dist = _name(distribution_for(top) or top)
    else:
        return None
    return re.sub(r"[-_.]+", "-", dist).lower() if valid_distribution_name(dist) else None


def plan(diagnosis: Diagnosis, state: RepairState) -> Fix | None:
    fix = _rule(diagnosis, state)
    if fix is None or fix.key in state.tried:
        return None
    return fix


# The project's own conftest implements a hook with an argument today's pytest dropped from the
# hookspec (html5lib 1.1: `pytest_collect_file(path, parent)`; pytest 9 removed `path`).
# Refused while collecting a test folder, pytest's summary line cuts the conftest's path:
# `ERROR html5lib/tests - pluggy._manager.PluginValidationError: Plugin '/worksp...`.
OWN_HOOK_REJECTED = re.compile(
    r"PluginValidationError: Plugin '[^']*conftest\.py' for hook|"
    r"^ERROR \S+ - \S*PluginValidationError: Plugin '"
)


# pytest 9 refuses a mark applied to a fixture (8 warned: PytestRemovedIn9Warning), while
# collecting: `E   Failed: Marks cannot be applied to fixtures.` then `E   See docs: https://docs.
# pytest.org/en/stable/deprecations.html#applying-a-mark-to-a-fixture-function` (seaborn 0.11.2's
# test_core.py, stop 43 run F); the verdict's evidence is the second line.
MARKED_FIXTURE = re.compile(
    r"Marks cannot be applied to fixtures|deprecations\.html#applying-a-mark-to-a-fixture-function"
)


def _rule(diagnosis: Diagnosis, state: RepairState) -> Fix | None:
    subject = diagnosis.subject or ""
    category = diagnosis.category
    if OWN_HOOK_REJECTED.search(diagnosis.evidence):
        return _older(
            "pytest", state, "the project's conftest implements a hook the way older pytest took it"
        )
    if MARKED_FIXTURE.search(diagnosis.evidence):
        return _older_than(
            "pytest", "9", state, "the project's tests mark fixtures, which pytest 9 refuses"
        )
    if category is Category.MODULE_NOT_FOUND and subject:
        return _install_module(subject, state, diagnosis.evidence)
    if category is Category.IMPORT_ERROR and subject == NUMPY_ABI_SUBJECT:
        return _numpy_abi(state)
    if category is Category.IMPORT_ERROR and subject:
        if ":" not in subject:
            return _install_module(subject, state, diagnosis.evidence)
        module, name = subject.split(":", 1)
        reason = f"'{name}' is gone from {module}: an older release has it"
        return _removed(subject, state, reason) or _older(module, state, reason)
    if category is Category.ATTRIBUTE_ERROR and subject:
        parts = subject.split(":")
        if parts[0] == "object" and len(parts) > 2 and parts[1] in state.nose_classes:
            # hmmlearn 0.2.7: `'TestMultinomailHMM' object has no attribute 'n_components'`,
            # set in the class's `def setup(self)`, which pytest 8 no longer calls (it dropped
            # nose support): the pytest below 8.
            return _older_than(
                "pytest",
                "8",
                state,
                f"{parts[1]} sets itself up in a nose-style setup(), which pytest 8 no longer "
                "calls",
            )
        if parts[0] == "object" and len(parts) > 2 and parts[1] in state.own_classes:
            # tornado 6.1: `'TestIOStreamMixin' object has no attribute 'io_loop'`, a mixin of
            # its own tests that pytest collects alone (its runner never does): no release of
            # a dependency has that name to pin.
            return None
        return _removed_attribute(subject, state)
    if category is Category.SYSTEM_LIBRARY and subject:
        return _system_library(subject, state)
    if category is Category.MISSING_PLUGIN:
        fix = _plugin(diagnosis)
        if fix is not None and fix.key not in state.tried:
            return fix
        return _ignored_option(diagnosis)
    if category is Category.BUILD:
        return _build(diagnosis, state)
    return None


def _install_module(module: str, state: RepairState, evidence: str) -> Fix | None:
    top = module.split(".")[0]
    if top in state.local or top in NOT_INSTALLABLE:
        return None
    dist = distribution_for(module)
    if dist is None:
        # Not in the table: the ladder asks the index whether a wheel of that name ships it.
        return Fix("install", (), f"{module} is imported but not installed", modules=(top,))
    return Fix("install", (dist,), f"{module} is imported but not installed ({dist})")


def _removed_attribute(subject: str, state: RepairState) -> Fix | None:
    """`numpy:NaN:<2.0` (the release named by the error), `numpy:float` or
    `object:DataFrame:append`: pin below the release that removed it."""
    parts = subject.split(":")
    if parts[0] == "object":
        pin = REMOVED_IN.get((parts[1], parts[2]))
        if pin is None:
            return _removed(subject, state, f"{parts[1]}.{parts[2]} was removed in a newer release")
        return Fix(
            "downgrade",
            (pin,),
            f"{parts[1]}.{parts[2]} was removed in {pin[len(_name(pin)) + 1 :]}",
        )
    module, attribute = parts[0], parts[1]
    top = module.split(".")[0]
    shim = SHIMMED.get(top)
    if shim is not None and attribute not in shim[1] and shim[0] not in state.versions:
        # Not a removal: the module of that name here is another distribution's stand-in.
        return Fix("install", (shim[0],), f"{module}.{attribute}: {shim[2]}")
    reason = f"{module}.{attribute} was removed in a newer release"
    if len(parts) > 2 and parts[2].startswith("<"):
        dist = _name(distribution_for(top) or top)
        pin = f"{dist}{parts[2]}"
        return Fix("downgrade", (pin,), f"{reason} ({dist} {parts[2][1:]}, the error says)")
    known = REMOVED_IN.get((top, attribute))
    if known is not None:
        return Fix("downgrade", (known,), f"{reason} ({known})")
    return _removed(subject, state, reason) or _older(module, state, reason)


def _numpy_abi(state: RepairState) -> Fix | None:
    """A module built for NumPy 1.x does not load under NumPy 2, whose binary interface
    changed: NumPy below 2, and the packages that require a newer one move with it (the ladder
    adds them to the same resolution). Not when NumPy is older than 2 already."""
    version = state.versions.get("numpy", "")
    major = re.match(r"\d+", version)
    if major is None or int(major.group(0)) < 2:
        return None
    return Fix(
        "downgrade",
        ("numpy<2",),
        f"a module built for NumPy 1.x does not load under NumPy {version} (its binary "
        "interface changed in 2.0)",
    )


def _removed(subject: str, state: RepairState, reason: str) -> Fix | None:
    """Pin the dependency the name belongs to at a release that still has it, chosen from the
    index's releases and the project's date (the ladder does the looking: simulator/setup/
    pins.py); None once tried, and the next rule (below the installed major) follows."""
    top = subject.split(":")[0].split(".")[0]
    if top in state.local or top in sys.stdlib_module_names:
        return None  # the project's own code, or the interpreter's: no release to pin
    fix = Fix("removed", (), reason, modules=(subject,))
    return None if fix.key in state.tried else fix


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~;\[ ]", requirement)[0]


def _older_than(dist: str, release: str, state: RepairState, reason: str) -> Fix | None:
    """`dist` below `release` when the installed one is that release or newer (else None)."""
    version = state.versions.get(dist.lower(), "")
    major = re.match(r"\d+", version)
    if major is None or int(major.group(0)) < int(release):
        return None
    return Fix("downgrade", (f"{dist}<{release}",), f"{reason} (installed {dist} {version})")


# A test class (not a unittest.TestCase) with a nose-style `setup(self)` or `teardown(self)`.
_NOSE_CLASS = re.compile(r"^class (Test\w*)(?:\((?:object)?\))?:\s*$")
_NOSE_METHOD = re.compile(r"^\s+def (?:setup|teardown)\(self\)")


def nose_style_classes(sources: list[str]) -> set[str]:
    """The test classes in `sources` (test files' text) that set themselves up in nose-style
    `setup(self)`/`teardown(self)` methods, which pytest called until 8.0."""
    found: set[str] = set()
    for text in sources:
        current = None
        for line in text.splitlines():
            match = _NOSE_CLASS.match(line)
            if match:
                current = match.group(1)
            elif line and not line[0].isspace():
                current = None
            elif current and _NOSE_METHOD.match(line):
                found.add(current)
    return found


_CLASS = re.compile(r"^\s*class ([A-Za-z_]\w*)\b", re.M)


def defined_classes(sources: list[str]) -> set[str]:
    """The names of the classes `sources` (the project's own files' text) define."""
    return {name for text in sources for name in _CLASS.findall(text)}


def _older(module: str, state: RepairState, reason: str) -> Fix | None:
    """Below the installed major (below the installed minor once the major pin was tried)."""
    top = module.split(".")[0]
    if top in state.local:
        return None
    dist = _name(distribution_for(top) or top)
    version = state.versions.get(dist.lower())
    if version is None:
        return None
    parts = [int(p) for p in re.findall(r"\d+", version)[:2]] or [0]
    if parts[0] >= 1 and Fix("downgrade", (f"{dist}<{parts[0] + 1}",)).key not in state.tried:
        bound = f"{parts[0]}"
    elif len(parts) > 1 and parts[1] > 0:
        bound = f"{parts[0]}.{parts[1]}"
    else:
        return None
    return Fix("downgrade", (f"{dist}<{bound}",), f"{reason} (installed {dist} {version})")


def _system_library(library: str, state: RepairState) -> Fix | None:
    """The Debian package that ships `library`: the table, else looked up in the container."""
    package = LIBRARY_PACKAGES.get(library)
    if package is None:
        base = re.sub(r"\.so.*$", ".so", library)
        package = next((p for lib, p in LIBRARY_PACKAGES.items() if lib.startswith(base)), None)
    return Fix(
        "system",
        (),
        f"{library} is missing from the image"
        + (f": Debian package {package}" if package else ": looking up its Debian package"),
        system_packages=(package,) if package else (),
        modules=(library,) if package is None else (),
    )


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


IGNORABLE_OPTION = re.compile(r"^--[A-Za-z][\w-]*$")


def _ignored_option(diagnosis: Diagnosis) -> Fix | None:
    """An option the project's pytest config passes (setup's own commands pass none pytest does
    not know) that no plugin setup knows provides, or whose plugin installed and still did not
    provide it (numdifftools 0.9.39's `--pep8`: pytest-pep8, last released in 2014, loads in no
    pytest of today): accepted and ignored, so the rest of the config still applies, as a
    person deletes the flag from addopts and keeps the rest."""
    match = re.search(r"unrecognized arguments: (--?[\w-]+)", diagnosis.evidence)
    if match is None or not IGNORABLE_OPTION.match(match.group(1)):
        return None
    flag = match.group(1)
    reason = f"no plugin that loads here provides {flag}: accepted and ignored"
    return Fix("ignore-option", reason=reason, options=(flag,))


# A header path the lookup takes (no leading slash, no `..`, nothing a shell would read).
DEBIAN_HEADER = re.compile(r"^(?!.*\.\.)[A-Za-z0-9_][\w+-]*(/[\w.+-]+)*\.h$")


def _build(diagnosis: Diagnosis, state: RepairState) -> Fix | None:
    header = re.search(r"fatal error: ([\w/.+-]+\.h)", diagnosis.evidence)
    packages: tuple[str, ...] = ()
    if header and header.group(1) in HEADER_PACKAGES:
        packages = (HEADER_PACKAGES[header.group(1)],)
    library = BUILD_LIBRARY.search(diagnosis.evidence)
    if not packages and library is not None:
        name = next(g for g in library.groups() if g)
        package = BUILD_LIBRARY_PACKAGES.get(name)
        system = Fix(
            "system",
            (),
            f"the build could not find the library {name}: "
            + (f"Debian package {package}" if package else "looking up its Debian package"),
            system_packages=(package,) if package else (),
            modules=() if package else (f"lib{name.removeprefix('lib')}.so",),
        )
        if system.key not in state.tried:
            return system
    if packages:
        system = Fix(
            "system",
            (),
            f"{header.group(1) if header else 'a header'} is missing: Debian package "
            f"{' '.join(packages)}",
            system_packages=packages,
        )
        if system.key not in state.tried:
            return system
    if header and not packages and DEBIAN_HEADER.match(header.group(1)):
        # A header the table does not name (gmpy2 2.1.2: gmp.h, then mpfr.h, then mpc.h): its
        # package is looked up in the container (`HEADER_LOOKUP`).
        system = Fix(
            "system",
            (),
            f"{header.group(1)} is missing: looking up the Debian package that ships it",
            modules=(header.group(1),),
        )
        if system.key not in state.tried:
            return system
    failed = re.search(
        r"Failed to build `([^`\s]+)`|Failed to build ([\w.-]+)\s*$", diagnosis.evidence
    )
    if failed is None:
        failed = re.search(r"Building wheel for ([\w.-]+)", diagnosis.evidence)
    if failed is None:
        return None
    dist = next(g for g in failed.groups() if g).split("@")[0].split("==")[0]
    if not valid_distribution_name(dist):
        return None
    return Fix(
        "binary",
        (dist,),
        f"{dist} failed to build from source; a release with a binary wheel avoids the build"
        + (f" (or apt-get install {' '.join(packages)})" if packages else ""),
        options=("--only-binary", dist),
        system_packages=packages,
    )
