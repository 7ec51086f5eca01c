"""The project's own test command, read from its files and parsed into a known runner.

`project_test_commands(root)` reads CI workflows (GitHub Actions `run:` steps, .travis.yml
`script:`), tox.ini `commands`, noxfile `session.run(...)`, Hatch/PDM/Poe scripts, Makefile and
justfile recipes of a test target, setup.cfg `[aliases] test` and the README's code blocks, and
ranks what it finds in that order (CI first: it is what the project really runs).

A command string from a repository is never run through a shell: each is split with shlex,
wrappers (`coverage run -m`, `poetry run`, `tox -e`, env assignments...) are peeled off, and it is
kept only when what remains is a runner this module knows: pytest, `python -m unittest`
(discover with its start folder, pattern and top folder) or a Python script in the repository.
Only values are taken from the repository, each checked (an existing relative path inside the
tree, a discovery pattern, a dotted module name); options are the ones built here. So
`pytest --cov=x -n auto tests/ ; rm -rf /` becomes `pytest tests`.
"""

from __future__ import annotations

import configparser
import re
import shlex
import tomllib
from dataclasses import dataclass
from pathlib import Path

RUNNERS = ("pytest", "unittest", "script")
_SAFE_PATH = re.compile(r"^[\w][\w./-]*$")
_PATTERN = re.compile(r"^[\w*?.\-\[\]]+\.py$")
_MODULE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
# What measures speed, not correctness: a benchmark workflow's steps and a benchmark script are
# no test command (ujson 4.3.0: benchmark.yml runs tests/benchmark.py, which imports the rival
# libraries it compares against; taken as the test command, it decided the verdict).
_BENCHMARK = re.compile(r"bench|perf|profil|timing", re.I)
_WRAPPERS = {"poetry", "pipenv", "pdm", "hatch", "uv", "rye", "time", "xvfb-run", "exec", "env"}
_SOURCES_RANK = {
    "ci": 0,
    "tox": 1,
    "nox": 2,
    "scripts": 3,
    "make": 4,
    "shell": 5,
    "setup.cfg": 6,
    "readme": 7,
}


@dataclass(frozen=True)
class TestCommand:
    __test__ = False  # not a pytest test class

    runner: str  # pytest | unittest | script
    args: tuple[str, ...]  # checked values and the options built here
    source: str  # where it was read, for the record ("CI workflow test.yml")
    rank: int = 9
    # python -P: the working directory (the checkout) is not put first on sys.path, so the
    # installed copy of the project is what is imported (one its build converted with 2to3)
    installed_copy: bool = False

    def command(self, python: str, *, verbose: bool = False) -> str:
        """The command for the session's shell, every word quoted. `verbose`: pytest's report
        of each test's id as it starts, unbuffered (what a killed run printed is kept)."""
        if self.runner == "pytest":
            argv = [python, *(["-P"] if self.installed_copy else []), *(["-u"] if verbose else [])]
            argv += ["-m", "pytest", "-p", "no:cacheprovider", "--continue-on-collection-errors"]
            argv += ["-v" if verbose else "-q", *self.args]
        elif self.runner == "unittest":
            argv = [python, "-m", "unittest", *self.args]
        else:
            argv = [python, *self.args]
        return " ".join(shlex.quote(a) for a in argv)

    def to_dict(self) -> dict[str, object]:
        return {"runner": self.runner, "args": list(self.args), "source": self.source}


def project_test_commands(root: Path) -> list[TestCommand]:
    """Every test command the project's files name, best first, duplicates removed."""
    found: list[TestCommand] = []
    for source, label, line in _candidate_lines(root):
        command = parse_command(line, root, source=label, rank=_SOURCES_RANK[source])
        if command is not None:
            found.append(command)
    seen: set[tuple[str, tuple[str, ...]]] = set()
    out: list[TestCommand] = []
    for command in sorted(found, key=lambda c: c.rank):
        key = (command.runner, command.args)
        if key not in seen:
            seen.add(key)
            out.append(command)
    return out


def parse_command(line: str, root: Path, *, source: str = "", rank: int = 9) -> TestCommand | None:
    """A shell line as a known runner with checked values, or None."""
    for part in re.split(r"\s*(?:&&|\|\||;|\|)\s*", line.strip()):
        try:
            words = shlex.split(part, comments=True)
        except ValueError:
            continue
        words = _peel(words)
        if not words:
            continue
        command = _recognise(words, root, source, rank)
        if command is not None:
            return command
    return None


def _peel(words: list[str]) -> list[str]:
    """Drop env assignments, `poetry run`/`uv run`..., `coverage run [-m]`, `python -m`."""
    while words:
        head = words[0]
        if re.match(r"^\w+=", head):
            words = words[1:]
        elif head in _WRAPPERS:
            words = words[1:]
            while words and (words[0] == "run" or words[0].startswith("-")):
                words = words[1:]
        elif head in ("coverage", "python-coverage") or head.endswith("/coverage"):
            words = words[1:]
            if words and words[0] == "run":
                words = words[1:]
            while words and words[0].startswith("-") and words[0] != "-m":
                words = words[1:]
            words = ["python", *words]  # `run -m pytest` or `run script.py`
        elif re.match(r"^(\{env(python|bindir)\}.*|python[\d.]*|\S*/python[\d.]*)$", head):
            rest = words[1:]
            while rest and rest[0] in ("-u", "-W", "-X", "-b", "-bb", "-B", "-E", "-I", "-O"):
                rest = rest[2:] if rest[0] in ("-W", "-X") else rest[1:]
            if len(rest) >= 2 and rest[0] == "-m" and rest[1] == "coverage":
                words = ["coverage", *rest[2:]]
                continue
            if rest and rest[0] == "-m":
                return [rest[1], *rest[2:]] if len(rest) > 1 else []
            return ["python", *rest]
        else:
            return words
    return words


def _recognise(words: list[str], root: Path, source: str, rank: int) -> TestCommand | None:
    head = words[0]
    if head in ("pytest", "py.test") or head.endswith(("/pytest", "/py.test")):
        paths = [w for w in words[1:] if _existing(w, root)]
        return TestCommand("pytest", tuple(paths), source, rank)
    if head == "unittest":
        return _unittest(words[1:], root, source, rank)
    if _MODULE.match(head) and _own_module(head, root):
        # `python -m pkg.test.runtests` (tornado 6.1's runtests.sh): a test-runner module of
        # the project's own tree, run as the project runs it
        if re.search(r"test", head, re.I) and not _BENCHMARK.search(head):
            return TestCommand("script", ("-m", head), source, rank)
        return None
    if head == "python" and len(words) > 1:
        script = words[1]
        if script in ("setup.py", "./setup.py") or not script.endswith(".py"):
            return None
        benchmark = _BENCHMARK.search(Path(script).name) is not None
        if _existing(script, root) and re.search(r"test", script, re.I) and not benchmark:
            return TestCommand("script", (script.removeprefix("./"),), source, rank)
    return None


def _unittest(words: list[str], root: Path, source: str, rank: int) -> TestCommand | None:
    if words and words[0] == "discover":
        args = ["discover"]
        rest = words[1:]
        values: dict[str, str] = {}
        positional: list[str] = []
        i = 0
        while i < len(rest):
            word = rest[i]
            flag = {"--start-directory": "-s", "--pattern": "-p", "--top-level-directory": "-t"}
            name = flag.get(word, word)
            if name in ("-s", "-p", "-t") and i + 1 < len(rest):
                values[name] = rest[i + 1]
                i += 2
                continue
            if not word.startswith("-"):
                positional.append(word)
            i += 1
        for name, value in zip(("-s", "-p", "-t"), positional, strict=False):
            values.setdefault(name, value)
        start = values.get("-s", ".")
        if start != "." and not _existing(start, root):
            return None
        args += ["-s", start.removeprefix("./") or "."]
        pattern = values.get("-p")
        if pattern is not None:
            if not _PATTERN.match(pattern):
                return None
            args += ["-p", pattern]
        top = values.get("-t")
        if top is not None and (top == "." or _existing(top, root)):
            args += ["-t", top]
        return TestCommand("unittest", tuple(args), source, rank)
    modules = [w for w in words if not w.startswith("-")]
    if modules and all(_MODULE.match(m) or _existing(m, root) for m in modules):
        return TestCommand("unittest", tuple(modules), source, rank)
    if not words:
        return TestCommand("unittest", ("discover",), source, rank)
    return None


def _own_module(name: str, root: Path) -> bool:
    """A module (`a.b.c`) whose file is in the tree: a/b/c.py or a/b/c/__main__.py, at the
    root or under src/."""
    path = name.replace(".", "/")
    return any(
        _existing(f"{base}{path}{end}", root)
        for base in ("", "src/")
        for end in (".py", "/__main__.py")
    )


def _existing(word: str, root: Path) -> bool:
    """A relative path inside the tree that exists (a test file or folder, maybe ::node)."""
    path = word.split("::")[0].removeprefix("./").rstrip("/")
    if not path or not _SAFE_PATH.match(path) or ".." in path.split("/"):
        return False
    target = (root / path).resolve()
    return target.exists() and target.is_relative_to(root.resolve())


# -- reading the files ---------------------------------------------------------------------------


def _candidate_lines(root: Path) -> list[tuple[str, str, str]]:
    out: list[tuple[str, str, str]] = []
    workflows = root / ".github" / "workflows"
    if workflows.is_dir():
        for path in sorted(workflows.glob("*.y*ml")):
            if _BENCHMARK.search(path.stem):
                continue
            for line in _yaml_run_lines(_read(path)):
                out.append(("ci", f"CI workflow {path.name}", line))
    travis = root / ".travis.yml"
    if travis.is_file():
        for line in _yaml_run_lines(_read(travis), keys=("script",)):
            out.append(("ci", "CI .travis.yml", line))
    out += [("tox", "tox.ini", line) for line in _tox_commands(root / "tox.ini")]
    nox = root / "noxfile.py"
    if nox.is_file():
        for args in re.findall(r"session\.run\(([^)]*)\)", _read(nox)):
            words = re.findall(r"['\"]([^'\"]+)['\"]", args)
            if words:
                out.append(("nox", "noxfile.py", shlex.join(words)))
    out += [("scripts", label, line) for label, line in _scripts(root / "pyproject.toml")]
    for name in ("Makefile", "makefile", "GNUmakefile", "justfile", "Justfile"):
        path = root / name
        if path.is_file():
            out += [("make", name, line) for line in _recipe(_read(path))]
    for path in sorted(root.glob("*.sh")):
        # A shell script at the root that runs the tests (tornado 6.1's runtests.sh)
        if re.search(r"test", path.stem, re.I) and not _BENCHMARK.search(path.stem):
            for line in _read(path).splitlines():
                if line.strip() and not line.lstrip().startswith("#"):
                    out.append(("shell", path.name, line))
    cfg = root / "setup.cfg"
    if cfg.is_file():
        parser = configparser.ConfigParser(interpolation=None, strict=False)
        try:
            parser.read_string(_read(cfg))
            if parser.has_option("aliases", "test"):
                out.append(("setup.cfg", "setup.cfg [aliases]", parser.get("aliases", "test")))
        except configparser.Error:
            pass
    for name in ("README.md", "README.rst", "README.txt", "README", "CONTRIBUTING.md"):
        path = root / name
        if path.is_file():
            for line in _readme_lines(_read(path), root):
                out.append(("readme", name, line))
    return out


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")[:200_000]
    except OSError:
        return ""


def _yaml_run_lines(text: str, keys: tuple[str, ...] = ("run",)) -> list[str]:
    """The shell lines of `run:` steps (one line or a `|` block), read without a YAML parser
    (workflow files use anchors and expressions a strict loader may reject)."""
    lines = text.splitlines()
    out: list[str] = []
    i = 0
    key = "|".join(re.escape(k) for k in keys)
    while i < len(lines):
        match = re.match(rf"^(\s*)(?:-\s+)?(?:{key}):\s*(.*)$", lines[i])
        i += 1
        if not match:
            continue
        indent, value = len(match.group(1)), match.group(2).strip()
        if value and value[0] not in "|>":
            out.append(_unquoted(value))
            continue
        while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > indent):
            stripped = lines[i].strip()
            if stripped:
                out.append(_unquoted(stripped.lstrip("- ")) if keys != ("run",) else stripped)
            i += 1
    return out


def _unquoted(value: str) -> str:
    """A YAML scalar without its surrounding quotes (only a matching pair)."""
    value = value.strip()
    if len(value) > 1 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _tox_commands(path: Path) -> list[str]:
    if not path.is_file():
        return []
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(_read(path))
    except configparser.Error:
        return []
    out: list[str] = []
    for section in parser.sections():
        if (section == "testenv" or section.startswith("testenv:")) and parser.has_option(
            section, "commands"
        ):
            for line in parser.get(section, "commands").splitlines():
                line = re.sub(r"\{posargs[^}]*\}", "", line).strip()
                line = re.sub(r"^[\w,-]+:\s*", "", line)  # a factor-conditional line
                if line:
                    out.append(line)
    return out


# A script that runs a unittest suite itself: a `__main__` guard and a runner call.
_MAIN_GUARD = re.compile(r"^if __name__ == ['\"]__main__['\"]\s*:", re.M)
_RUNS_UNITTEST = re.compile(r"\bunittest\.main\(|\bTextTestRunner\(")
_TEST_MODULE = re.compile(r"^test.*\.py$|_tests?\.py$")


def suite_scripts(root: Path, test_dirs: list[str]) -> list[TestCommand]:
    """Scripts at the top of the test folders that run a unittest suite themselves (a
    `__main__` guard and `unittest.main(`/`TextTestRunner(`), benchmarks left out: feedparser
    6.0.8's `tests/runtests.py` builds its tests from data files under its guard, and no file
    has a name discovery looks for. Run from the root, as `python tests/runtests.py`."""
    out: list[TestCommand] = []
    for folder in test_dirs:
        for path in sorted((root / folder).glob("*.py")):
            if _BENCHMARK.search(path.name) or _TEST_MODULE.match(path.name):
                continue  # a test module discovery would have found is not a suite script
            text = _read(path)
            if _MAIN_GUARD.search(text) and _RUNS_UNITTEST.search(text):
                rel = path.relative_to(root).as_posix()
                out.append(TestCommand("script", (rel,), "a suite script in the test folder"))
    return out


def _scripts(path: Path) -> list[tuple[str, str]]:
    if not path.is_file():
        return []
    try:
        data = tomllib.loads(_read(path))
    except tomllib.TOMLDecodeError:
        return []
    tool = data.get("tool") or {}
    out: list[tuple[str, str]] = []
    for env_name, env in ((tool.get("hatch") or {}).get("envs") or {}).items():
        for name, script in ((env or {}).get("scripts") or {}).items():
            if re.search(r"test|cov|check", name):
                for line in script if isinstance(script, list) else [script]:
                    out.append((f"hatch env {env_name} script {name}", str(line)))
    tables = ((tool.get("pdm") or {}).get("scripts") or {}, (tool.get("poe") or {}).get("tasks"))
    for label, table in zip(("pdm", "poe"), tables, strict=True):
        for name, script in (table or {}).items():
            if not re.search(r"test", name):
                continue
            if isinstance(script, dict):
                script = script.get("cmd") or script.get("shell") or ""
            if isinstance(script, str):
                out.append((f"{label} script {name}", script))
    return out


def _recipe(text: str) -> list[str]:
    """The recipe lines of a `test`/`tests`/`check` target (Make and just)."""
    out: list[str] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if re.match(r"^(test|tests|check|unittest|pytest)\s*:(?!=)", line):
            for body in lines[i + 1 :]:
                if not body.strip():
                    continue
                if not body.startswith(("\t", "    ")):
                    break
                out.append(body.strip().lstrip("@-"))
    return out


def _readme_lines(text: str, root: Path) -> list[str]:
    """Shell lines in code blocks that run a test runner or a test script. A `cd DIR` line
    before them (docutils 0.17: `cd <archive_directory_path>/test` then `./alltests.py`) names
    the folder they run in: the longest tail of DIR that is a folder of the tree, so the script
    is found as `test/alltests.py` (run from the root; a script that needs its own folder as
    the working directory changes to it, as the old ones do)."""
    out = []
    folder = ""
    for raw in text.splitlines():
        if raw.strip() and not raw[0].isspace() and not raw.lstrip().startswith(("$", ">")):
            folder = ""  # prose: a `cd` in an earlier block does not carry over
        line = raw.strip().lstrip("$> ").strip()
        cd = re.match(r"^cd\s+(\S+)\s*$", line)
        if cd:
            folder = _tree_folder(cd.group(1), root)
            continue
        if re.match(r"^(python[\d.]*\s+-m\s+(pytest|unittest)|pytest|py\.test)\b", line):
            out.append(line)
            continue
        script = re.match(r"^(?:python[\d.]*\s+|\./)([\w.-]*test[\w.-]*\.py)\b", line, re.I)
        if script:
            path = f"{folder}/{script.group(1)}" if folder else script.group(1)
            out.append(f"python {path}")
    return out


def _tree_folder(path: str, root: Path) -> str:
    """The longest tail of a `cd` argument that is a folder of the tree ("" when none)."""
    parts = [p for p in re.split(r"[\\/]", path) if p and p != "."]
    for start in range(len(parts)):
        tail = "/".join(parts[start:])
        if _existing(tail, root) and (root / tail).is_dir():
            return tail
    return ""
