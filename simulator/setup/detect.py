"""What kind of project a repository is, read from its files without running anything.

`detect(root)` reads lockfiles, pyproject.toml (PEP 621, Poetry, Hatch, PDM, Flit, PEP 735
dependency groups), setup.cfg, setup.py (by pattern: it is never executed), requirements files,
tox.ini, noxfile.py, Makefile and CI workflow install steps, and the C build systems (CMake,
meson, autotools, Make, build.sh). The ladder turns the result into install commands.
"""

from __future__ import annotations

import configparser
import re
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from simulator.workspace import local_files

# Extras and dependency groups whose names say they hold what the tests need.
TEST_EXTRA = re.compile(r"^(tests?|testing|dev|develop|development|check|ci|pytest|all)$", re.I)
REQUIREMENT_FILE = re.compile(r"^(requirements|reqs|test|tests|dev|testing)[-_.\w]*\.(txt|in)$")


@dataclass
class Project:
    root: str
    language: str = "unknown"  # python | c | unknown
    build_backend: str | None = None  # setuptools | poetry | hatch | pdm | flit | ...
    installable: bool = False  # pip can install the root (pyproject with a build, or setup.py)
    name: str | None = None
    lockfiles: list[str] = field(default_factory=list)
    python_requires: str | None = None
    extras: list[str] = field(default_factory=list)  # the test/dev extras the project declares
    requirement_files: list[str] = field(default_factory=list)  # relative paths, tests first
    extra_requirements: list[str] = field(default_factory=list)  # groups, tox deps, CI lines
    pytest_plugins: list[str] = field(default_factory=list)  # distributions the config needs
    test_dirs: list[str] = field(default_factory=list)
    runner: str = "pytest"  # pytest | unittest
    c_build: str | None = None  # cmake | meson | autotools | make | build.sh
    c_extensions: bool = False  # setup.py builds extension modules (Extension, cythonize)
    # Every build system the tree carries, c_build first: the next is tried when one fails
    # (zlib as Debian ships it: CMake stops on a file the tree lacks, ./configure && make works).
    c_builds: list[str] = field(default_factory=list)
    # setup.py passes use_2to3=True: the build converts the package from Python 2 as it installs
    # it, so the tests inside the package run in the installed copy, not in the tree (deap 1.3.1)
    converts_2to3: bool = False
    hints: list[str] = field(default_factory=list)  # what was read, for the record

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def detect(root: Path) -> Project:
    project = Project(root=str(root))
    for lock in ("uv.lock", "poetry.lock", "Pipfile.lock", "pdm.lock", "Pipfile"):
        if (root / lock).is_file():
            project.lockfiles.append(lock)
    pyproject = _toml(root / "pyproject.toml")
    if pyproject is not None:
        _read_pyproject(project, pyproject)
    _read_setup_cfg(project, root / "setup.cfg")
    _read_setup_py(project, root / "setup.py")
    _read_requirement_files(project, root)
    _read_tox(project, root / "tox.ini")
    _read_nox(project, root / "noxfile.py")
    _read_ci(project, root)
    _read_pytest_config(project, root, pyproject)
    project.test_dirs = [d for d in ("tests", "test", "testing") if (root / d).is_dir()]
    if _has_python(root):
        project.language = "python"
    else:
        project.c_builds = _c_builds(root)
        project.c_build = next(iter(project.c_builds), None)
        if project.c_build is not None:
            project.language = "c"
    project.extras = _unique(project.extras)
    project.extra_requirements = _unique(project.extra_requirements)
    project.pytest_plugins = _unique(project.pytest_plugins)
    return project


def _toml(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        return tomllib.loads(path.read_text(errors="replace"))
    except tomllib.TOMLDecodeError:
        return None


def _read_pyproject(project: Project, data: dict[str, Any]) -> None:
    build = data.get("build-system") or {}
    backend = str(build.get("build-backend") or "")
    for key, name in (
        ("poetry", "poetry"),
        ("hatch", "hatch"),
        ("pdm", "pdm"),
        ("flit", "flit"),
        ("setuptools", "setuptools"),
        ("maturin", "maturin"),
        ("mesonpy", "meson-python"),
        ("scikit_build", "scikit-build"),
    ):
        if key in backend:
            project.build_backend = name
    pep621 = data.get("project") or {}
    tool = data.get("tool") or {}
    if build or pep621:
        project.installable = True
        project.hints.append(f"pyproject.toml ({project.build_backend or 'PEP 517 default'})")
    if pep621.get("name"):
        project.name = str(pep621["name"])
    if pep621.get("requires-python"):
        project.python_requires = str(pep621["requires-python"])
    for extra in pep621.get("optional-dependencies") or {}:
        if TEST_EXTRA.match(extra):
            project.extras.append(extra)
    # PEP 735 dependency groups (uv, pdm and pip >= 25.1 read them).
    for group, items in (data.get("dependency-groups") or {}).items():
        if TEST_EXTRA.match(group):
            project.extra_requirements += [i for i in items if isinstance(i, str)]
    poetry = tool.get("poetry") or {}
    if poetry:
        project.build_backend = project.build_backend or "poetry"
        project.installable = True
        project.name = project.name or poetry.get("name")
        python = (poetry.get("dependencies") or {}).get("python")
        if isinstance(python, str):
            project.python_requires = project.python_requires or python
        for extra in poetry.get("extras") or {}:
            if TEST_EXTRA.match(extra):
                project.extras.append(extra)
        groups = dict(poetry.get("group") or {})
        if poetry.get("dev-dependencies"):
            groups["dev"] = {"dependencies": poetry["dev-dependencies"]}
        for group, body in groups.items():
            if TEST_EXTRA.match(group):
                deps = (body or {}).get("dependencies") or {}
                project.extra_requirements += [
                    _poetry_requirement(n, s) for n, s in deps.items() if n != "python"
                ]
    pdm = tool.get("pdm") or {}
    for group, items in (pdm.get("dev-dependencies") or {}).items():
        if TEST_EXTRA.match(group):
            project.extra_requirements += [i for i in items if isinstance(i, str) and "-e" not in i]
    hatch_envs = ((tool.get("hatch") or {}).get("envs")) or {}
    for env_name, env in hatch_envs.items():
        if TEST_EXTRA.match(env_name) or env_name == "default":
            deps = (env or {}).get("dependencies") or (env or {}).get("extra-dependencies") or []
            project.extra_requirements += [d for d in deps if isinstance(d, str)]
            project.extras += [f for f in (env or {}).get("features") or [] if isinstance(f, str)]


def _poetry_requirement(name: str, spec: Any) -> str:
    """A Poetry dependency as a requirement pip understands (`^1.2` becomes `>=1.2`)."""
    version = spec.get("version") if isinstance(spec, dict) else spec
    if not isinstance(version, str) or version in ("*", ""):
        return name
    version = version.strip()
    if version[0] in "^~" and version[1:2] != "=":
        return f"{name}>={version[1:]}"
    if version[0].isdigit():
        return f"{name}=={version}"
    return f"{name}{version}"


def _read_setup_cfg(project: Project, path: Path) -> None:
    if not path.is_file():
        return
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(path.read_text(errors="replace"))
    except configparser.Error:
        return
    project.hints.append("setup.cfg")
    if parser.has_option("metadata", "name"):
        project.name = project.name or parser.get("metadata", "name")
    if parser.has_option("options", "python_requires"):
        project.python_requires = project.python_requires or parser.get(
            "options", "python_requires"
        )
    if parser.has_section("options.extras_require"):
        for extra in parser.options("options.extras_require"):
            if TEST_EXTRA.match(extra):
                project.extras.append(extra)
    if parser.has_option("options", "tests_require"):
        project.extra_requirements += _lines(parser.get("options", "tests_require"))


def _read_setup_py(project: Project, path: Path) -> None:
    if not path.is_file():
        return
    project.installable = True
    project.build_backend = project.build_backend or "setuptools"
    text = path.read_text(errors="replace")
    project.hints.append("setup.py")
    match = re.search(r"python_requires\s*=\s*['\"]([^'\"]+)['\"]", text)
    if match:
        project.python_requires = project.python_requires or match.group(1)
    # extras_require={"test": [...]} or extras_require=dict(test=[...]): the names are enough.
    block = re.search(r"extras_require\s*=\s*(\{|dict\()(.*?)(\}|\))\s*,?\s*\n", text, re.S)
    if block:
        for name in re.findall(r"['\"]([\w.-]+)['\"]\s*:|(\w+)\s*=\s*\[", block.group(2)):
            extra = name[0] or name[1]
            if TEST_EXTRA.match(extra):
                project.extras.append(extra)
    tests_require = re.search(r"tests_require\s*=\s*\[(.*?)\]", text, re.S)
    if tests_require:
        project.extra_requirements += re.findall(r"['\"]([^'\"]+)['\"]", tests_require.group(1))
    name = re.search(r"\bname\s*=\s*['\"]([\w.-]+)['\"]", text)
    if name:
        project.name = project.name or name.group(1)
    if re.search(r"\bExtension\s*\(|\bext_modules\s*=|\bcythonize\s*\(", text):
        project.c_extensions = True
    if re.search(r"\buse_2to3\s*=\s*True\b", text):
        project.converts_2to3 = True


def _read_requirement_files(project: Project, root: Path) -> None:
    found: list[str] = []
    for folder in (root, root / "requirements", root / "tests", root / "test", root / "ci"):
        if not folder.is_dir():
            continue
        for path in sorted(folder.iterdir()):
            if path.is_file() and REQUIREMENT_FILE.match(path.name) and path.suffix == ".txt":
                rel = str(path.relative_to(root))
                if any(word in rel for word in ("doc", "lint", "mypy", "typing", "release")):
                    continue
                found.append(rel)
    # Test requirements first: they matter most to the verdict.
    found.sort(key=lambda rel: (0 if re.search(r"test|dev", rel) else 1, rel))
    project.requirement_files = found
    if found:
        project.hints.append("requirement files: " + ", ".join(found))


def _read_ini(path: Path) -> configparser.ConfigParser | None:
    """An ini file (tox.ini, setup.cfg, pytest.ini) as a project writes it: no interpolation,
    repeated keys allowed; None when it is missing or does not parse."""
    if not path.is_file():
        return None
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(path.read_text(errors="replace"))
    except configparser.Error:
        return None
    return parser


def _read_tox(project: Project, path: Path) -> None:
    parser = _read_ini(path)
    if parser is None:
        return
    project.hints.append("tox.ini")
    for section in parser.sections():
        if section == "testenv" or section.startswith("testenv:"):
            if parser.has_option(section, "deps"):
                for line in _lines(parser.get(section, "deps")):
                    if _plain_requirement(line):
                        project.extra_requirements.append(line)
            if parser.has_option(section, "extras"):
                for line in _lines(parser.get(section, "extras")):
                    if ":" in line:
                        continue  # `factor: extra` is for one environment (mypy, docs...) only
                    for extra in re.split(r"[\s,]+", line):
                        if re.match(r"^[A-Za-z0-9][\w.-]*$", extra):
                            project.extras.append(extra)
            if section == "testenv":
                break


def _read_nox(project: Project, path: Path) -> None:
    if not path.is_file():
        return
    project.hints.append("noxfile.py")
    for args in re.findall(r"session\.install\(([^)]*)\)", path.read_text(errors="replace")):
        for item in re.findall(r"['\"]([^'\"]+)['\"]", args):
            if _plain_requirement(item):
                project.extra_requirements.append(item)


def _read_ci(project: Project, root: Path) -> None:
    workflows = root / ".github" / "workflows"
    if not workflows.is_dir():
        return
    for path in sorted(workflows.glob("*.y*ml")):
        for line in path.read_text(errors="replace").splitlines():
            match = re.search(r"pip install (.+)$", line)
            if not match:
                continue
            for word in match.group(1).split():
                word = word.strip("'\"")
                if word.startswith("-") or "$" in word or "/" in word or word == ".":
                    continue
                if _plain_requirement(word) and re.match(r"^(pytest|hypothesis|coverage)", word):
                    project.extra_requirements.append(word)
        project.hints.append(f"CI workflow {path.name}")


PLUGIN_FLAGS = {
    "--cov": "pytest-cov",
    "-n": "pytest-xdist",
    "--numprocesses": "pytest-xdist",
    "--timeout": "pytest-timeout",
    "--benchmark": "pytest-benchmark",
    "--mypy": "pytest-mypy",
    "--flake8": "pytest-flake8",
    "--doctest-rst": "pytest-doctestplus",
    "--doctest-plus": "pytest-doctestplus",
    "--reruns": "pytest-rerunfailures",
    "--random-order": "pytest-random-order",
    "--html": "pytest-html",
    "--mpl": "pytest-mpl",
    "--hypothesis": "hypothesis",
}
PLUGIN_SETTINGS = {
    "asyncio_mode": "pytest-asyncio",
    "asyncio_default_fixture_loop_scope": "pytest-asyncio",
    "timeout": "pytest-timeout",
    "env": "pytest-env",
    "mock_use_standalone_module": "pytest-mock",
    "django_settings_module": "pytest-django",
    "DJANGO_SETTINGS_MODULE": "pytest-django",
    "trio_mode": "pytest-trio",
    "doctest_plus": "pytest-doctestplus",
}
# Fixtures and markers that only a plugin provides.
PLUGIN_USES = {
    "mocker": "pytest-mock",
    "benchmark": "pytest-benchmark",
    "httpserver": "pytest-httpserver",
    "mark.asyncio": "pytest-asyncio",
    "mark.trio": "pytest-trio",
    "mark.anyio": "anyio",
    "mark.timeout": "pytest-timeout",
    "mark.flaky": "pytest-rerunfailures",
    "mark.django_db": "pytest-django",
    "freezer": "pytest-freezer",
    "mark.freeze_time": "pytest-freezer",
    "requests_mock": "requests-mock",
    "snapshot": "syrupy",
    "aioresponses": "aioresponses",
    "datadir": "pytest-datadir",
    "shared_datadir": "pytest-datadir",
    "mark.parametrize_plus": "pytest-cases",
    "subtests": "pytest-subtests",
    "mark.order": "pytest-order",
    "mark.dependency": "pytest-dependency",
    "mark.vcr": "pytest-recording",
    "mark.httpx_mock": "pytest-httpx",
    "httpx_mock": "pytest-httpx",
}


def _read_pytest_config(project: Project, root: Path, pyproject: dict[str, Any] | None) -> None:
    options: dict[str, str] = {}
    ini = ((pyproject or {}).get("tool") or {}).get("pytest") or {}
    for key, value in (ini.get("ini_options") or {}).items():
        options[key] = " ".join(value) if isinstance(value, list) else str(value)
    for name, section in (
        ("pytest.ini", "pytest"),
        ("tox.ini", "pytest"),
        ("setup.cfg", "tool:pytest"),
    ):
        parser = _read_ini(root / name)
        if parser is not None and parser.has_section(section):
            options.update(dict(parser.items(section)))
    addopts = options.get("addopts", "")
    for flag, dist in PLUGIN_FLAGS.items():
        if re.search(rf"(^|\s){re.escape(flag)}(=|\s|$)", addopts):
            project.pytest_plugins.append(dist)
    for key, dist in PLUGIN_SETTINGS.items():
        if key in options:
            project.pytest_plugins.append(dist)
    for plugin in re.findall(r"-p\s+([\w.]+)", addopts):
        if not plugin.startswith("no:"):
            project.pytest_plugins.append(_plugin_dist(plugin))
    for req in re.split(r"[\s,]+", options.get("required_plugins", "")):
        if req:
            project.pytest_plugins.append(req)
    for conftest in _test_sources(root):
        text = conftest.read_text(errors="replace")
        for listed in re.findall(r"pytest_plugins\s*=\s*[\[(]?([^\])\n]+)", text):
            for plugin in re.findall(r"['\"]([\w.]+)['\"]", listed):
                if plugin.split(".")[0].startswith("pytest_"):
                    project.pytest_plugins.append(_plugin_dist(plugin))
        # Arguments the module parametrizes are values, not fixtures (opt-einsum 3.3.0
        # parametrizes one named `benchmark`; pytest-benchmark then stops the run).
        parametrized = {
            name.strip()
            for names in re.findall(r"parametrize\(\s*['\"]([^'\"]+)['\"]", text)
            for name in names.split(",")
        }
        for use, dist in PLUGIN_USES.items():
            if use.startswith("mark."):
                used = re.search(rf"\b{re.escape(use)}\b", text) is not None
            elif use in parametrized:
                used = False
            else:  # a fixture: a parameter of a test function or of a fixture
                name = re.escape(use)
                used = (
                    re.search(rf"def test\w*\([^)]*\b{name}\b", text) is not None
                    or re.search(rf"@pytest\.fixture\b[^\n]*\n\s*def \w+\([^)]*\b{name}\b", text)
                    is not None
                )
            if used:
                project.pytest_plugins.append(dist)


def _plugin_dist(module: str) -> str:
    return module.split(".")[0].replace("_", "-")


def _test_sources(root: Path, limit: int = 400) -> list[Path]:
    """conftest.py files and test modules (bounded: a huge tree is sampled, not read whole)."""
    found: list[Path] = []
    for path in local_files(root):
        if path.suffix == ".py" and (
            path.name == "conftest.py"
            or path.name.startswith("test_")
            or path.stem.endswith("_test")
        ):
            found.append(path)
            if len(found) >= limit:
                break
    return found


def _has_python(root: Path) -> bool:
    """Python metadata at the root, or Python files; but a tree with a C build system at its
    root and more C than Python files (cJSON's and jansson's helper scripts) is a C project."""
    if any((root / name).is_file() for name in ("pyproject.toml", "setup.py", "setup.cfg")):
        return True
    files = local_files(root)[:5000]
    python = sum(path.suffix == ".py" for path in files)
    if python and _c_build(root) is not None:
        return python >= sum(path.suffix in (".c", ".h", ".cc", ".cpp") for path in files)
    return python > 0


C_BUILD_FILES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("cmake", ("CMakeLists.txt",)),
    ("meson", ("meson.build",)),
    ("autotools", ("configure", "configure.ac", "configure.in")),
    ("make", ("Makefile", "makefile", "GNUmakefile")),
    ("build.sh", ("build.sh",)),
)


def _c_builds(root: Path) -> list[str]:
    """The build systems at the root, in the order they are tried."""
    return [kind for kind, names in C_BUILD_FILES if any((root / name).is_file() for name in names)]


def _c_build(root: Path) -> str | None:
    return next(iter(_c_builds(root)), None)


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def _plain_requirement(line: str) -> bool:
    """A requirement pip can install on its own: no options, paths, URLs or tox substitutions."""
    line = line.strip()
    return (
        bool(line)
        and re.match(r"^[A-Za-z0-9][\w.\-]*(\[[\w,\-]+\])?\s*([<>=!~;].*)?$", line) is not None
    )


def _unique(items: list[str]) -> list[str]:
    seen: dict[str, None] = {}
    for item in items:
        seen.setdefault(item, None)
    return list(seen)
