"""The ladder on real containers: four repositories that a naive install leaves short of ready."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from simulator.setup import Tier
from tests.setup import repos
from tests.setup.conftest import SetUp

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def _steps(trajectory: Path) -> list[dict[str, object]]:
    events = [json.loads(line) for line in trajectory.read_text().splitlines()[1:]]
    return [e["payload"] for e in events if e["kind"] == "workflow.step"]


@pytest.mark.parametrize(
    ("build", "needed"),
    [
        (repos.syntax_error_repo, "tabulate"),  # found past a file with a syntax error
        (repos.extras_repo, "-e .[test]"),  # the extra from [project.optional-dependencies]
        (repos.plugin_repo, "pytest-mock"),  # the `mocker` fixture's plugin
        (repos.yaml_repo, "PyYAML"),  # `import yaml`, no requirement file
    ],
    ids=["syntax-error", "test-extras", "pytest-plugin", "yaml-import"],
)
async def test_repository_reaches_ready(
    tmp_path: Path,
    set_up: SetUp,
    build: Callable[[Path], Path],
    needed: str,
) -> None:
    repo = build(tmp_path / "repo")
    session, result = await set_up(repo)

    assert result.verdict.tier is Tier.READY, result.verdict.line()
    assert result.verdict.tests["failed"] == 0 and result.verdict.tests["passed"] >= 1
    assert any(needed in item for item in result.installed), result.installed
    # The session now runs the tests the oracle found, in the environment it built.
    rerun = await session.run_tests()
    assert rerun.exit_code == 0 and rerun.counts()["passed"] == result.verdict.tests["passed"]
    await session.close()
    steps = _steps(session.trajectory_path)
    names = [s["step"] for s in steps if s["status"] != "running"]
    assert names[:6] == [
        "detect",
        "environment",
        "project",
        "requirements",
        "test-runner",
        "imports",
    ]
    assert "oracle" in names


async def test_a_broken_dependency_is_categorised_with_its_evidence(
    tmp_path: Path, set_up: SetUp
) -> None:
    repo = repos.write_repo(
        tmp_path / "repo",
        {
            "pyproject.toml": repos.setuptools_pyproject(
                "needs-missing", ["reposim-no-such-distribution-xyz==1.0"], package="needs"
            ),
            "needs/__init__.py": "import reposim_no_such_distribution_xyz\n",
            "tests/test_needs.py": "import needs\n\ndef test_it():\n    assert needs\n",
        },
    )
    _, result = await set_up(repo)
    assert not result.verdict.ready
    assert result.verdict.category is not None
    assert "reposim-no-such-distribution-xyz" in (result.verdict.evidence or "").lower() or (
        "reposim_no_such_distribution_xyz" in (result.verdict.evidence or "")
    ), result.verdict.line()


async def test_a_test_the_memory_limit_kills_is_named_and_the_rest_of_the_suite_decides(
    tmp_path: Path,
) -> None:
    """lz4 3.1.10 in the hard corpus: one test (test_huge) allocates 4 GB, the container's memory
    limit kills pytest, and nothing is reported (`killed`, never ready). A person runs the rest of
    the suite and names the test the limit kills: so does setup. A 300 MB container, one test of
    800 MB among four small ones, and a test module that allocates 800 MB as it is imported
    (lz4's run of the corpus was killed while pytest collected: found by collecting each test
    module alone, and left out with its name). Over 60 s (78 s at load 9, 156 s at load 100):
    the whole ladder in a container, and five test runs (killed, verbose, three collections
    alone...); no smaller fixture shows both kills."""
    from simulator.backend_factory import BackendOptions, make_backend
    from simulator.session import Session
    from simulator.setup import run_setup
    from tests.setup.conftest import SETUP_IMAGE, docker_or_skip

    docker_or_skip()
    repo = repos.package_repo(
        tmp_path / "repo",
        "hungry",
        "def double(x):\n    return 2 * x\n",
        {
            "tests/test_small.py": (
                "from hungry import double\n\n"
                "def test_one():\n    assert double(1) == 2\n\n"
                "def test_two():\n    assert double(2) == 4\n"
            ),
            "tests/test_zbig.py": (
                "from hungry import double\n\n"
                "def test_three():\n    assert double(3) == 6\n\n"
                "def test_huge():\n    assert len(b'x' * (800 * 2**20)) > 0\n\n"
                "def test_four():\n    assert double(4) == 8\n"
            ),
            "tests/test_zload.py": (
                "DATA = b'y' * (800 * 2**20)\n\ndef test_data():\n    assert DATA\n"
            ),
        },
    )
    backend = make_backend(
        "docker", repo, options=BackendOptions(image=SETUP_IMAGE, network=True, memory="300m")
    )
    session = await Session.open(repo, backend=backend, trajectory_path=tmp_path / "t.jsonl")
    try:
        result = await run_setup(session)
    finally:
        await session.close()
    verdict = result.verdict
    assert verdict.ready, verdict.line()
    assert verdict.tests["passed"] == 4 and verdict.tests["failed"] == 0, verdict.line()
    assert any("tests/test_zbig.py::test_huge" in s and "killed" in s for s in verdict.skipped)
    assert any(s.startswith("tests/test_zload.py: ") for s in verdict.skipped), verdict.skipped
    assert "--deselect" in (verdict.test_command or "")


async def test_an_option_of_a_plugin_nothing_provides_is_ignored_and_the_rest_of_the_config_kept(
    tmp_path: Path, set_up: SetUp
) -> None:
    """numdifftools 0.9.39 in the hard corpus: its pytest config's addopts carries `--pep8`
    (pytest-pep8, last released in 2014, which no pytest of today loads), so pytest stops with
    `unrecognized arguments: --pep8` and no test runs. A person deletes the flag and keeps the
    rest of the config; setup accepts the flag and ignores it (a plugin of its own, named in the
    notes), so the rest of addopts still applies: here `--doctest-modules`, one test more.
    About 50 s at load 44: the whole ladder in a container (pytest from the index)."""
    repo = repos.package_repo(
        tmp_path / "repo",
        "lint",
        'def double(x):\n    """\n    >>> double(2)\n    4\n    """\n    return 2 * x\n',
        {
            "setup.cfg": "[tool:pytest]\naddopts =\n    --doctest-modules\n    --pep8\n",
            "tests/test_lint.py": (
                "from lint import double\n\ndef test_double():\n    assert double(3) == 6\n"
            ),
        },
    )
    _, result = await set_up(repo)
    assert result.verdict.ready, result.verdict.line()
    assert result.verdict.tests["passed"] == 2, result.verdict.line()  # the doctest ran too
    assert any("--pep8" in note for note in result.notes), result.notes


async def test_a_library_the_build_could_not_find_is_installed_from_debian_and_the_build_redone(
    tmp_path: Path, set_up: SetUp
) -> None:
    """Pillow 8.4.0 in the hard corpus: its build stops with "The headers or library files could
    not be found for jpeg, a required dependency when compiling Pillow from source." (no header
    named, so no fix was tried: none/build). The fixture's setup.py checks for the JPEG library
    as Pillow's does and prints the same; the library's Debian development package goes in as
    root and the project builds. Over 10 s: an apt-get install (about a minute at load 10)."""
    check = (
        "import glob, sys\n"
        "from setuptools import setup\n\n"
        "if not glob.glob('/usr/lib/*/libjpeg.so') + glob.glob('/usr/lib/libjpeg.so'):\n"
        "    sys.exit('The headers or library files could not be found for jpeg,\\n'\n"
        "             'a required dependency when compiling jpegcheck from source.')\n"
        "setup(name='jpegcheck', version='0.1', packages=['jpegcheck'])\n"
    )
    repo = repos.write_repo(
        tmp_path / "repo",
        {
            "setup.py": check,
            "jpegcheck/__init__.py": "def ok():\n    return True\n",
            "tests/test_ok.py": "from jpegcheck import ok\n\ndef test_ok():\n    assert ok()\n",
        },
    )
    _, result = await set_up(repo)
    assert result.verdict.ready, result.verdict.line()
    assert "libjpeg-dev" in result.system_packages, (result.system_packages, result.notes)


async def test_a_suite_written_for_nose_runs_under_the_pytest_that_still_ran_nose_tests(
    tmp_path: Path, set_up: SetUp
) -> None:
    """deap 1.3.1 in the hard corpus: its tests use nose's `with_setup` (setup and teardown
    functions on a test function), which pytest ran until 8.0 removed its nose support; under
    today's pytest the setup never runs and 4 of 27 tests fail (KeyError: 'IND_TYPE'). A suite
    that imports nose gets the pytest before 8, as a person would run it."""
    repo = repos.package_repo(
        tmp_path / "repo",
        "nosey",
        "def ready(state):\n    return state['ready']\n",
        {
            "tests/test_nosey.py": (
                "from nose.tools import with_setup\n\nfrom nosey import ready\n\nSTATE = {}\n\n\n"
                "def set_up():\n    STATE['ready'] = True\n\n\n"
                "def tear_down():\n    STATE.clear()\n\n\n"
                "@with_setup(set_up, tear_down)\ndef test_ready():\n    assert ready(STATE)\n"
            ),
        },
    )
    _, result = await set_up(repo)
    assert result.verdict.ready, result.verdict.line()
    assert any(item.startswith("pytest<8") for item in result.installed), result.installed
