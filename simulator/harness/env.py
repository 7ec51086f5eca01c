"""How harness work runs in a session's backend: the project's Python, the import path, and the
runtime modules copied into the workspace."""

from __future__ import annotations

import importlib
import weakref
from dataclasses import dataclass
from pathlib import Path

from backends.shell import quote
from simulator.events import Actor
from simulator.harness.format import RUNTIME_DIR, SUPPORT_MODULE, SUPPORT_PATH
from simulator.harness.runtime import source as runtime_source
from simulator.session import Session

# Where RepoSim's own copies of coverage.py and cloudpickle go when the project's Python has
# none (every harness, tracer and mutant command has it on its path).
RUNTIME_SITE = f"{RUNTIME_DIR}/site"
DEFAULT_PYTHON = '"$(command -v python || command -v python3)"'
# pytest switches for every harness run: no cache files in the workspace, no coverage plugin
# of the project's (we measure coverage ourselves), and none of the project's addopts (which
# may ask for plugins the harness does not need).
PYTEST_FLAGS = "-p no:cacheprovider -p no:cov -o addopts= -q"
# For RepoSim's own runs of a harness, read for their outcomes: a failure's traceback as
# Python prints it, not pytest's, which parses the whole file of each frame per failure (1.4 s
# of CPU each for a 3.2 MB harness of sqlparse's; see runtime/reposim_mutants.py).
NATIVE_TRACEBACKS = "--tb=native"


@dataclass(frozen=True)
class PythonEnv:
    python: str = DEFAULT_PYTHON  # a shell word: the project's interpreter in the backend
    import_roots: tuple[str, ...] = ()  # workspace dirs the project imports from (e.g. src)

    def prefix(self, *extra: str, plugins: bool = False) -> str:
        """`PYTHONPATH=... python` for a command run from the workspace root. Harness runs
        load no third-party pytest plugins (`plugins=False`): a harness needs none, and
        autoloading a big environment's plugins costs seconds per run."""
        roots = [*extra, *self.import_roots, ".", RUNTIME_SITE]
        path = ":".join(roots)
        autoload = "" if plugins else "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 "
        return f'{autoload}PYTHONPATH={quote(path)}"${{PYTHONPATH:+:$PYTHONPATH}}" {self.python}'

    def pytest(self, *extra_paths: str) -> str:
        return f"{self.prefix(*extra_paths)} -m pytest {PYTEST_FLAGS}"


def import_root(path: str, module: str) -> str | None:
    """The directory a module is imported from, given its file path: `src` for
    ("src/pkg/mod.py", "pkg.mod"); None when the path does not end with the module's."""
    parts = path[:-3].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    names = module.split(".")
    if len(names) > len(parts) or parts[len(parts) - len(names) :] != names:
        return None
    return "/".join(parts[: len(parts) - len(names)]) or "."


async def install_runtime(session: Session) -> None:
    """Copy the runtime modules into the workspace (recorded, like any other write)."""
    for name in ("reposim_tracer", "reposim_mutants", "reposim_derive"):
        await _write_if_changed(session, f"{RUNTIME_DIR}/{name}.py", runtime_source(name))
    await _write_if_changed(session, SUPPORT_PATH, runtime_source(SUPPORT_MODULE))
    # the tracer builds and checks constructor expressions with the same support module
    await _write_if_changed(
        session, f"{RUNTIME_DIR}/{SUPPORT_MODULE}.py", runtime_source(SUPPORT_MODULE)
    )
    await _write_if_changed(session, f"{RUNTIME_DIR}/empty.coveragerc", "[run]\n")


async def _write_if_changed(session: Session, path: str, text: str) -> None:
    if await session.exists(path) and (await session.read_bytes(path)).decode() == text:
        return
    await session.write(path, text, actor=Actor.SYSTEM)


async def remove_path(session: Session, path: str) -> None:
    await session.exec(f"rm -rf {quote(path)}", actor=Actor.SYSTEM)


_checked: weakref.WeakKeyDictionary[Session, dict[str, bool]] = weakref.WeakKeyDictionary()


async def ensure_module(session: Session, env: PythonEnv, name: str) -> bool:
    """Make the pure-Python package `name` (coverage, cloudpickle) importable by the project's
    Python: when it has none (a fresh container, a venv without it), RepoSim's own copy is
    uploaded to .reposim/runtime/site, which every harness command has on its path. False when
    it still cannot be imported."""
    checked = _checked.setdefault(session, {})
    if name in checked:
        return checked[name]
    probe = f"{env.prefix()} -c 'import {name}'"
    ready = (await session.exec(probe, actor=Actor.SYSTEM)).exit_code == 0
    if not ready:
        package_module = importlib.import_module(name)
        package = Path(str(package_module.__file__)).parent
        for path in sorted(package.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                relative = path.relative_to(package.parent).as_posix()
                await session.write_helper(f"{RUNTIME_SITE}/{relative}", path.read_bytes())
        ready = (await session.exec(probe, actor=Actor.SYSTEM)).exit_code == 0
        version = getattr(package_module, "__version__", "?")
        session.note(
            f"{name} was not installed in the environment; RepoSim's copy "
            f"({name} {version}) was put in {RUNTIME_SITE}"
            + ("" if ready else ", but it does not import there either"),
            actor=Actor.SYSTEM,
        )
    checked[name] = ready
    return ready


async def ensure_coverage(session: Session, env: PythonEnv) -> bool:
    """coverage.py importable by the project's Python (see ensure_module)."""
    return await ensure_module(session, env, "coverage")
