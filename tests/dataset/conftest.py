"""Problems from a real pinned project, and the consumers of the exported shapes.

- `inflection-0.5.1.tar.gz` is the sdist of inflection 0.5.1 from PyPI, unchanged (MIT): a
  package whose functions live in `inflection/__init__.py` (R2E's module id
  `inflection.__init__`) and whose own tests (test_inflection.py) the traced harnesses replay.
- a small project with a method (`shapes/calc.py::Account.withdraw`, from tests/harness), for
  R2E's method records and RepoST's `Class.method` names.
- `r2e-test-server` 0.1.8 from PyPI, in a venv made once from uv's cache (like the user's pytest
  venv in tests/conftest.py): R2E's own test runner. It pins typer < 0.13, which does not run
  with click >= 8.2, so click is held below 8.2 there, as it was when that release was made.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import socket
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest

from simulator.dataset.readers import read_problems
from simulator.dataset.schema import Problem
from tests.conftest import reposim as run_reposim
from tests.harness.conftest import PROJECT as SHAPES_PROJECT

DATA = Path(__file__).parent / "data"
INFLECTION_SDIST = DATA / "inflection-0.5.1.tar.gz"
INFLECTION_TARGETS = ("humanize", "underscore", "singularize")
R2E_SERVER_VENV = Path.home() / ".cache" / "reposim-tests" / "r2e-test-server-venv"
R2E_SERVER_PACKAGES = ("r2e-test-server==0.1.8", "click<8.2")


def reposim(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_reposim(*args, cwd=cwd, timeout=900)


def harness(repo: Path, selectors: tuple[str, ...], out: Path) -> list[Problem]:
    done = reposim(
        "harness",
        str(repo),
        *selectors,
        "--repeats",
        "1",
        "--max-mutants",
        "3",
        "-o",
        str(out),
        "--trajectory",
        str(out.with_suffix(".trajectory.jsonl")),
        cwd=out.parent,
    )
    assert done.returncode == 0, done.stderr
    return read_problems(out)


@pytest.fixture(scope="session")
def inflection_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("sdist")
    with tarfile.open(INFLECTION_SDIST) as tar:
        tar.extractall(root, filter="data")
    return root / "inflection-0.5.1"


@pytest.fixture(scope="session")
def shapes_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("shapes") / "shapes"
    for name, text in SHAPES_PROJECT.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


@pytest.fixture(scope="session")
def inflection_problems(
    inflection_repo: Path, tmp_path_factory: pytest.TempPathFactory
) -> list[Problem]:
    out = tmp_path_factory.mktemp("problems") / "inflection.problems.jsonl"
    problems = harness(inflection_repo, INFLECTION_TARGETS, out)
    assert len(problems) == len(INFLECTION_TARGETS)
    return problems


@pytest.fixture(scope="session")
def method_problems(shapes_repo: Path, tmp_path_factory: pytest.TempPathFactory) -> list[Problem]:
    out = tmp_path_factory.mktemp("problems") / "shapes.problems.jsonl"
    problems = harness(shapes_repo, ("Account.withdraw",), out)
    assert [p.target["kind"] for p in problems] == ["method"]
    return problems


@pytest.fixture(scope="session")
def r2e_server_python() -> Path:
    """The Python of a venv holding r2e-test-server (made once, shared by runs and workers)."""
    venv = R2E_SERVER_VENV
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / "r2e-test-server-venv.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        ready = venv / "ready"
        if not ready.exists() or ready.read_text() != " ".join(R2E_SERVER_PACKAGES):
            shutil.rmtree(venv, ignore_errors=True)
            uv = shutil.which("uv") or "uv"
            clean = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
            subprocess.run([uv, "venv", "-q", str(venv)], check=True, env=clean)
            python = str(venv / "bin" / "python")
            subprocess.run(
                [uv, "pip", "install", "-q", "--python", python, *R2E_SERVER_PACKAGES],
                check=True,
                env=clean,
            )
            ready.write_text(" ".join(R2E_SERVER_PACKAGES))
    return venv / "bin" / "python"


# What R2E's execute_futs.setup_futs / self_equiv_futs do with a record, over rpyc, against a
# running `r2e-test-server start`: setup_repo, setup_function (R2E's `execution_fut_data`: the
# name, `Class.method` for a method, and the file's `relative_module_path`), setup_test, init,
# then (codegen mode) `execute` of a generated implementation, and submit.
R2E_CLIENT = r"""
import json, sys, time
import rpyc

port, records_path, repo, plan_path = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
records = json.load(open(records_path))
plan = json.load(open(plan_path))
deadline = time.monotonic() + 120
while True:
    try:
        rpyc.connect("127.0.0.1", port).close()
        break
    except ConnectionRefusedError:
        if time.monotonic() > deadline:
            raise
        time.sleep(0.1)
out = []
for index, code in plan:
    record = records[index]
    module = record["file"]["file_module"]
    identifier = module["module_id"]["identifier"]
    path = identifier.replace(".", "/") + ".py"  # R2E's Module.relative_module_path
    if "method_id" in record:
        name = record["parent_class_id"]["identifier"].split(".")[-1] + "." + record["method_name"]
    else:
        name = record["function_name"]
    conn = rpyc.connect("127.0.0.1", port, config={"sync_request_timeout": 600})
    service = conn.root
    service.setup_repo(json.dumps({"repo_id": None, "repo_path": repo}))
    service.setup_function(json.dumps({"funclass_names": [name], "file_path": path}))
    tests = record["test_history"]["history"][-1]["tests"]
    service.setup_test(json.dumps({"generated_tests": tests}))
    if code is not None:
        service.setup_codegen_mode()
    init = service.init()
    result = {"index": index, "name": name, "init_error": str(init["error"])}
    if not result["init_error"]:
        if code is not None:
            executed = service.execute(code)
            result["execute_error"] = str(executed["error"]) if "error" in executed else ""
        done = service.submit()
        result["logs"] = json.loads(done["logs"]) if "logs" in done else None
        result["error"] = str(done["error"]) if "error" in done else ""
    out.append(result)
    conn.close()
print(json.dumps(out))
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run_r2e_server(
    python: Path,
    repo: Path,
    records: list[dict[str, Any]],
    plan: list[tuple[int, str | None]],
    work: Path,
) -> list[dict[str, Any]]:
    """Run records' tests in r2e-test-server: `plan` lists (record index, generated code to
    put in place of the function under test, or None to run against the repository's own)."""
    (work / "records.json").write_text(json.dumps(records))
    (work / "plan.json").write_text(json.dumps(plan))
    (work / "client.py").write_text(R2E_CLIENT)
    port = free_port()
    # R2E's images have the repository installed. It stands here on PYTHONPATH through a
    # link: the server takes the repo path itself off sys.path after loading the module, and
    # recorded values (pickled instances) import the repository's modules later.
    installed = work / "site-repo"
    installed.symlink_to(repo, target_is_directory=True)
    env = {**os.environ, "PYTHONPATH": str(installed)}
    env.pop("VIRTUAL_ENV", None)
    server = subprocess.Popen(
        [str(python.parent / "r2e-test-server"), "start", "--port", str(port)],
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        done = subprocess.run(
            [
                python,
                work / "client.py",
                str(port),
                work / "records.json",
                repo,
                work / "plan.json",
            ],
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
            env=env,
        )
    finally:
        server.kill()
        server.wait(timeout=60)
    assert done.returncode == 0, done.stderr[-3000:]
    return list(json.loads(done.stdout))
