"""The pip fallback and the repairs by traceback, on real containers with fixtures that fail
before (each names the rule it exercises)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simulator.setup import SetupResult, run_setup
from simulator.setup.ladder import SetupOptions
from tests.setup import repos
from tests.setup.conftest import SessionFactory, SetUp

pytestmark = [pytest.mark.docker, pytest.mark.slow]


async def test_uv_settings_that_do_not_build_fall_back_to_pip_and_say_why(
    tmp_path: Path, set_up: SetUp
) -> None:
    """The project's [tool.uv] makes uv build a Rust core from source (no toolchain here);
    pip takes the published wheel. The venv has pip (`--seed`), so the fallback works."""
    repo = repos.write_repo(
        tmp_path / "repo",
        {
            "pyproject.toml": repos.setuptools_pyproject(
                "rusty",
                ["rpds-py"],
                package="rusty",
                more="""
                    [tool.uv]
                    no-binary-package = ["rpds-py"]
                """,
            ),
            "rusty/__init__.py": "import rpds\n\ndef m():\n    return rpds.HashTrieMap({'a': 1})\n",
            "tests/test_rusty.py": (
                "from rusty import m\n\ndef test_m():\n    assert m()['a'] == 1\n"
            ),
        },
    )
    _, result = await set_up(repo)
    assert result.verdict.ready, result.verdict.line()
    assert any(" -m pip install " in c and "-e" in c for c in result.commands), result.commands
    assert any("installed as pip would" in n for n in result.notes), result.notes


async def test_the_pip_fallback_builds_with_compiled_build_dependencies_outside_noexec_tmp(
    tmp_path: Path, set_up: SetUp
) -> None:
    """numexpr 2.7.3 (stop 44's fresh pins): pip's fallback built in /tmp/pip-build-env-*, and
    /tmp in RepoSim's containers is mounted noexec, so NumPy, a build dependency with compiled
    modules, did not import in the build ("failed to map segment from shared object"). pip now
    builds in a folder beside the venv. The fixture: uv cannot install (its settings build a
    Rust core from source), and the build imports NumPy."""
    repo = repos.write_repo(
        tmp_path / "repo",
        {
            "pyproject.toml": repos.setuptools_pyproject(
                "npbuilt",
                ["rpds-py"],
                package="npbuilt",
                more="""
                    [tool.uv]
                    no-binary-package = ["rpds-py"]
                """,
            ).replace('requires = ["setuptools>=61"]', 'requires = ["setuptools>=61", "numpy"]'),
            "setup.py": (
                "import numpy\nfrom setuptools import setup\n\n"
                "assert numpy.get_include()\nsetup()\n"
            ),
            "npbuilt/__init__.py": (
                "import rpds\n\ndef m():\n    return rpds.HashTrieMap({'a': 1})\n"
            ),
            "tests/test_npbuilt.py": (
                "from npbuilt import m\n\ndef test_m():\n    assert m()['a'] == 1\n"
            ),
        },
    )
    _, result = await set_up(repo)
    assert result.verdict.ready, result.verdict.line()
    assert any(" -m pip install " in c and "-e" in c for c in result.commands), result.commands


def _package(name: str, dependencies: list[str], files: dict[str, str]) -> dict[str, str]:
    return {"pyproject.toml": repos.setuptools_pyproject(name, dependencies, package=name), **files}


async def test_rule_pkg_resources_installs_a_setuptools_that_still_ships_it(
    tmp_path: Path, set_up: SetUp
) -> None:
    """`No module named 'pkg_resources'` in a fresh venv: today's setuptools (>= 82) dropped it;
    the rule installs `setuptools<82`, not the setuptools already there."""
    repo = repos.write_repo(
        tmp_path / "repo",
        _package(
            "oldmeta",
            [],
            {
                "oldmeta/__init__.py": (
                    "def version():\n"
                    "    import pkg_resources\n"
                    "    return pkg_resources.parse_version('1.2').release\n"
                ),
                "tests/test_meta.py": (
                    "from oldmeta import version\n\ndef test_v():\n    assert version() == (1, 2)\n"
                ),
            },
        ),
    )
    _, result = await set_up(repo)
    assert result.verdict.ready, result.verdict.line()
    assert any("setuptools<82" in item for item in result.installed), result.installed


async def test_rule_numpy_2_removed_attribute_pins_below_the_release_named(
    tmp_path: Path, set_up: SetUp
) -> None:
    """NumPy 2's own message ("`np.NaN` was removed in the NumPy 2.0 release") names the
    release: the rule pins numpy<2.0."""
    repo = repos.write_repo(
        tmp_path / "repo",
        _package(
            "oldnum",
            ["numpy"],
            {
                "oldnum/__init__.py": "import numpy as np\n\nMISSING = np.NaN\n",
                "tests/test_num.py": (
                    "import math\nfrom oldnum import MISSING\n\n"
                    "def test_nan():\n    assert math.isnan(MISSING)\n"
                ),
            },
        ),
    )
    _, result = await set_up(repo)
    assert result.verdict.ready, result.verdict.line()
    assert [r["fix"] for r in result.repairs] == ["downgrade"], result.repairs
    assert any("numpy<2.0" in item for item in result.installed), result.installed


async def test_rule_py_test_of_pytests_own_py_module_installs_the_py_library(
    tmp_path: Path, set_up: SetUp
) -> None:
    """cffi 1.15.0 in the hard corpus: 255 of 738 tests failed on `AttributeError: module 'py'
    has no attribute 'test'`; its tests call `py.test.raises`. pytest (>= 7.2) ships a `py`
    module of its own with only py.path and py.error; `py.test` is the py library's (an alias
    of pytest). The rule installs the py library; before, the ladder took it for a removal to
    pin and the tests kept failing."""
    tests = "".join(
        f"def test_bad_{i}():\n    with py.test.raises(ValueError):\n        parse('x{i}')\n\n"
        for i in range(8)
    )
    repo = repos.write_repo(
        tmp_path / "repo",
        _package(
            "oldraise",
            [],
            {
                "oldraise/__init__.py": "def parse(text):\n    return int(text)\n",
                "tests/test_parse.py": (
                    "import py\nfrom oldraise import parse\n\n"
                    + "".join(
                        f"def test_ok_{i}():\n    assert parse('{i}') == {i}\n\n" for i in range(4)
                    )
                    + tests
                ),
            },
        ),
    )
    _, result = await set_up(repo)
    assert result.verdict.ready and result.verdict.tests["passed"] == 12, result.verdict.line()
    assert any(r["fix"] == "install" for r in result.repairs), result.repairs
    assert "py" in result.installed, result.installed


async def test_rule_a_downgrade_moves_the_packages_that_require_a_newer_release(
    tmp_path: Path, set_up: SetUp
) -> None:
    """networkx 2.5 in the hard corpus: `numpy<2.0` alone left today's pandas (which needs
    numpy>=2.0.2) installed and broken ("C extension: None not built"), so every test module
    importing pandas failed. The downgrade resolves pandas with it: pandas moves to a release
    that agrees with the pin, and its tests pass."""
    repo = repos.write_repo(
        tmp_path / "repo",
        _package(
            "oldframe",
            ["numpy", "pandas"],
            {
                "oldframe/__init__.py": "import numpy as np\n\nMISSING = np.NaN\n",
                "tests/test_frame.py": (
                    "import math\nimport pandas as pd\nfrom oldframe import MISSING\n\n"
                    "def test_nan():\n    assert math.isnan(MISSING)\n\n"
                    "def test_frame():\n    assert pd.Series([1.0, 2.0]).sum() == 3.0\n"
                ),
            },
        ),
    )
    _, result = await set_up(repo)
    assert result.verdict.ready, result.verdict.line()
    assert result.verdict.tests.get("passed") == 2, result.verdict.line()
    assert [r["fix"] for r in result.repairs] == ["downgrade"], result.repairs
    downgrade = next(item for item in result.installed if "numpy<2.0" in item)
    assert "pandas" in downgrade.split(), result.installed
    assert any(p.startswith("numpy==1.") for p in result.lock), result.lock


async def test_rule_missing_system_library_installs_its_debian_package_as_root(
    tmp_path: Path, set_up: SetUp
) -> None:
    """A module loads libgobject (in the table) at import and a test loads libonig (not in
    the table: looked up in the container by its file list); both packages are installed as
    root during setup and recorded for the Dockerfile."""
    from simulator.setup.envimage import dockerfile_text

    repo = repos.write_repo(
        tmp_path / "repo",
        _package(
            "graphs",
            [],
            {
                "graphs/__init__.py": (
                    "import ctypes\n\nGOBJECT = ctypes.CDLL('libgobject-2.0.so.0')\n"
                ),
                "tests/test_graphs.py": (
                    "import ctypes\nimport graphs\n\n"
                    "def test_gobject():\n    assert graphs.GOBJECT\n\n"
                    "def test_jansson():\n    assert ctypes.CDLL('libonig.so.5')\n"
                ),
            },
        ),
    )
    _, result = await set_up(repo)
    assert result.verdict.ready, result.verdict.line()
    assert result.system_packages == ["libglib2.0-0", "libonig5"], result.repairs
    dockerfile = dockerfile_text(result, "reposim/base:bookworm-2", "abc")
    assert "apt-get install -y --no-install-recommends libglib2.0-0 libonig5" in dockerfile


async def _set_up(
    set_up: SetUp, root: Path, files: dict[str, str], *, as_of: str = ""
) -> SetupResult:
    """The `set_up` fixture on a repository of `files` (committed as of `as_of`)."""
    repo = repos.write_repo(root, files)
    _, result = await set_up(_dated(repo, as_of) if as_of else repo)
    return result


def _dated(repo: Path, date: str) -> Path:
    """Re-commit the fixture as of `date` (author and committer)."""
    import os
    import subprocess

    env = {**os.environ, "GIT_COMMITTER_DATE": date, "GIT_AUTHOR_DATE": date}
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
         "--amend", "--no-edit", "--date", date],
        check=True,
        env=env,
    )  # fmt: skip
    return repo


async def test_dependencies_resolve_as_of_the_commits_date(tmp_path: Path, set_up: SetUp) -> None:
    """A 2021-01-01 commit that needs `packaging`: the newest release of that date (20.8, a
    pure-Python wheel) is installed, not today's, and the result and Dockerfile say so."""
    from simulator.setup.envimage import dockerfile_text

    repo = _dated(
        repos.write_repo(
            tmp_path / "repo",
            _package(
                "oldpack",
                ["packaging"],
                {
                    "oldpack/__init__.py": "import packaging\n\nVERSION = packaging.__version__\n",
                    "tests/test_v.py": "from oldpack import VERSION\n\ndef test_v():\n"
                    "    assert VERSION\n",
                },
            ),
        ),
        "2021-01-01T00:00:00+00:00",
    )
    _, result = await set_up(repo)
    assert result.verdict.ready, result.verdict.line()
    assert result.resolution["mode"] == "as-of-commit", result.resolution
    assert "packaging==20.8" in result.lock, result.lock
    assert "as of the commit's date (2021-01-01" in dockerfile_text(result, "base", "c")


async def test_time_travel_falls_back_to_today_when_that_date_has_no_wheel_here(
    tmp_path: Path, set_up: SetUp
) -> None:
    """numpy as of 2019 has no wheel for this Python: today's index, with the reason."""
    repo = _dated(
        repos.write_repo(
            tmp_path / "repo",
            _package(
                "oldnp",
                ["numpy"],
                {
                    "oldnp/__init__.py": "import numpy\n",
                    "tests/test_np.py": "import oldnp\n\ndef test_np():\n    assert oldnp\n",
                },
            ),
        ),
        "2019-01-01T00:00:00+00:00",
    )
    _, result = await set_up(repo)
    assert result.verdict.ready, result.verdict.line()
    assert result.resolution["mode"] == "today" and "no installable set" in result.resolution.get(
        "reason", ""
    ), result.resolution


async def test_a_dependency_with_no_wheel_then_takes_todays_and_the_rest_travel(
    tmp_path: Path, set_up: SetUp
) -> None:
    """A 2021-03-22 commit needing numpy and tabulate: numpy of that date has no wheel for this
    Python (it used to send the whole resolution back to today's index); now numpy alone takes
    today's releases, tabulate stays as of the date (0.8.9), and the result names numpy."""
    repo = _dated(
        repos.write_repo(
            tmp_path / "repo",
            _package(
                "oldmix",
                ["numpy", "tabulate"],
                {
                    "oldmix/__init__.py": "import numpy\nimport tabulate\n",
                    # 2021 code: np.NaN went in NumPy 2.0. The repair's numpy<2.0 must not be
                    # refused by a time-travel pin of today's numpy (pint 0.17 in the corpus).
                    "tests/test_mix.py": "import math\nimport numpy as np\nimport oldmix\n\n"
                    "def test_mix():\n    assert oldmix and math.isnan(np.NaN)\n",
                },
            ),
        ),
        "2021-03-22T04:02:02+00:00",
    )
    _, result = await set_up(repo)
    assert result.verdict.ready, result.verdict.line()
    assert result.resolution["mode"] == "as-of-commit", result.resolution
    assert result.resolution.get("today") == ["numpy"], result.resolution
    assert "tabulate==0.8.9" in result.lock, result.lock
    assert [r["fix"] for r in result.repairs] == ["downgrade"], result.repairs
    assert any(p.startswith("numpy==1.") for p in result.lock), result.lock


async def test_a_runner_as_of_the_commit_that_does_not_start_takes_todays_release(
    tmp_path: Path, set_up: SetUp
) -> None:
    """pint 0.17 in the hard corpus declares pytest in its test extra; as of its 2021 commit
    that is pytest 6.2.2 with py 1.10, which dies on this Python (`AttributeError: __spec__`)
    before collecting a test. The runner alone takes today's release; the project's own
    dependencies stay as of the date."""
    repo = _dated(
        repos.write_repo(
            tmp_path / "repo",
            {
                "pyproject.toml": repos.setuptools_pyproject(
                    "oldtested",
                    ["tabulate"],
                    package="oldtested",
                    more='[project.optional-dependencies]\ntest = ["pytest"]\n',
                ),
                "oldtested/__init__.py": "import tabulate\n\nVERSION = tabulate.__version__\n",
                "tests/test_old.py": (
                    "import oldtested\n\ndef test_v():\n    assert oldtested.VERSION == '0.8.9'\n"
                ),
            },
        ),
        "2021-03-22T04:02:02+00:00",
    )
    _, result = await set_up(repo)
    assert result.verdict.ready, result.verdict.line()
    assert result.resolution["mode"] == "as-of-commit", result.resolution
    assert "tabulate==0.8.9" in result.lock, result.lock
    assert not any(p.startswith("pytest==6.") for p in result.lock), result.lock
    assert any("does not run on this Python" in n for n in result.notes), result.notes


def _pinned_test_extra(root: Path, name: str, test_extra: list[str]) -> Path:
    """A package NAME whose test extra pins the runner (and its plugins) as TEST_EXTRA, with two
    passing tests."""
    extra = ", ".join(f'"{r}"' for r in test_extra)
    return repos.write_repo(
        root,
        {
            "pyproject.toml": repos.setuptools_pyproject(
                name, package=name, more=f"[project.optional-dependencies]\ntest = [{extra}]\n"
            ),
            f"{name}/__init__.py": "def double(x):\n    return 2 * x\n",
            "tests/test_double.py": (
                f"from {name} import double\n\n"
                "def test_double():\n    assert double(2) == 4\n\n"
                "def test_zero():\n    assert double(0) == 0\n"
            ),
        },
    )


async def test_a_runner_the_project_pins_below_what_runs_here_takes_a_newer_release(
    tmp_path: Path, set_up: SetUp
) -> None:
    """pyrsistent 0.18.0 in the hard corpus pins `pytest<5` (its tests_require), with no time
    travel: pytest 4.6 starts (`--version` passes) but cannot rewrite a test module on this
    Python (`required field "lineno" missing from alias`), so nothing collects. A person lifts
    the pin on the runner and says so; the project's own pins stay."""
    repo = _pinned_test_extra(tmp_path / "repo", "pinnedrunner", ["pytest<5"])
    _, result = await set_up(repo)
    assert result.verdict.ready, result.verdict.line()
    assert result.verdict.tests.get("passed") == 2, result.verdict.tests
    assert not any(p.startswith("pytest==4.") for p in result.lock), result.lock
    assert any("pytest 4." in n and "does not run on this Python" in n for n in result.notes), (
        result.notes
    )


async def test_a_lifted_runner_takes_its_plugins_along(tmp_path: Path, set_up: SetUp) -> None:
    """pint 0.17 in the hard corpus: the lifted pytest (9) would not load the plugin as of the
    commit (pytest-mpl 0.13: `PluginValidationError` for `pytest_report_header`), so no test
    ran. Here the project pins both below what runs on 3.11 (pytest 5.4: `required field
    "lineno" missing from alias`); pytest-html 2.1 is no plugin pytest 9 loads, so it moves
    with the runner."""
    repo = _pinned_test_extra(tmp_path / "repo", "pinnedplugin", ["pytest<6", "pytest-html<2.2"])
    _, result = await set_up(repo)
    assert result.verdict.ready, result.verdict.line()
    assert result.verdict.tests.get("passed") == 2, result.verdict.tests
    assert not any(p.startswith("pytest-metadata==1.") for p in result.lock), result.lock
    assert any(
        "pytest-metadata" in n and "does not run on this Python" in n for n in result.notes
    ), result.notes


@pytest.mark.timeout(1800)  # two builds and an apt-get install: 621 s at load 38
async def test_a_c_extension_missing_python_h_gets_python3_dev_as_root(
    tmp_path: Path, set_up: SetUp
) -> None:
    """An sdist with a C extension on an image without Python's headers (bitarray 2.3.5 in the
    hard corpus): pip's log ends with "Failed to build installable wheels", which the repair
    read as a distribution named "installable"; the compiler's missing Python.h is the cause,
    python3-dev is installed as root and the project builds."""
    repo = repos.write_repo(
        tmp_path / "repo",
        {
            "setup.py": (
                "from setuptools import Extension, setup\n\n"
                "setup(name='cfast', version='0.1', packages=['cfast'],\n"
                "      ext_modules=[Extension('cfast._speed', ['cfast/_speed.c'])])\n"
            ),
            "cfast/__init__.py": "from cfast._speed import answer\n",
            "cfast/_speed.c": (
                "#include <Python.h>\n"
                "static PyObject *answer(PyObject *s, PyObject *a)\n"
                "{ return PyLong_FromLong(42); }\n"
                'static PyMethodDef m[] = {{"answer", answer, METH_NOARGS, ""}, {0}};\n'
                'static struct PyModuleDef d = {PyModuleDef_HEAD_INIT, "_speed", 0, -1, m};\n'
                "PyMODINIT_FUNC PyInit__speed(void) { return PyModule_Create(&d); }\n"
            ),
            "tests/test_speed.py": (
                "from cfast import answer\n\ndef test_answer():\n    assert answer() == 42\n"
            ),
        },
    )
    session, result = await set_up(repo)
    assert result.verdict.ready, result.verdict.line()
    assert "python3-dev" in result.system_packages, result.system_packages
    assert not any("installable" in item for item in result.installed), result.installed
    # setup.py builds an extension and the image has no Python.h: the headers go in before the
    # project, so it builds once (pip and the other install variants never compile the same
    # code against the same missing header: once eight builds).
    builds = [
        c
        for c in _commands(session.trajectory_path)
        if " install " in c and (" -e " in c or c.rstrip().endswith((" .", "'.'")))
    ]
    assert len(builds) == 1, builds


@pytest.mark.timeout(1800)  # two apt-get installs and two builds
async def test_a_build_missing_a_system_header_gets_its_package_before_any_test_runs(
    tmp_path: Path, set_up: SetUp
) -> None:
    """A C extension that includes ffi.h (cffi 1.15.0 in the hard corpus), on an image with
    libffi's runtime but not its headers: the build fails, libffi-dev goes in as root and the
    project builds again before the first test run. Before, the oracle's first run was the
    whole suite on the tree the failed build left (570 s of cffi's 1,200-s budget, every test
    needing the missing extension), and the repair came after it."""
    repo = repos.write_repo(
        tmp_path / "repo",
        {
            "setup.py": (
                "from setuptools import Extension, setup\n\n"
                "setup(name='ffiabi', version='0.1', packages=['ffiabi'],\n"
                "      ext_modules=[Extension('ffiabi._abi', ['ffiabi/_abi.c'],"
                " libraries=['ffi'])])\n"
            ),
            "ffiabi/__init__.py": "from ffiabi._abi import default_abi\n",
            "ffiabi/_abi.c": (
                "#include <Python.h>\n"
                "#include <ffi.h>\n"
                "static PyObject *default_abi(PyObject *s, PyObject *a)\n"
                "{ return PyLong_FromLong(FFI_DEFAULT_ABI); }\n"
                'static PyMethodDef m[] = {{"default_abi", default_abi, METH_NOARGS, ""}, {0}};\n'
                'static struct PyModuleDef d = {PyModuleDef_HEAD_INIT, "_abi", 0, -1, m};\n'
                "PyMODINIT_FUNC PyInit__abi(void) { return PyModule_Create(&d); }\n"
            ),
            "tests/test_abi.py": "from ffiabi import default_abi\n\n"
            + "".join(
                f"def test_{n}():\n    assert default_abi() + {n} > {n}\n\n" for n in range(12)
            ),
        },
    )
    session, result = await set_up(repo)
    assert result.verdict.ready, result.verdict.line()
    assert result.verdict.tests.get("passed") == 12, result.verdict.line()
    assert "libffi-dev" in result.system_packages, result.system_packages
    ffi = [r for r in result.repairs if r["fix"] == "system"]
    assert [r["round"] for r in ffi] == [0], result.repairs
    # No test ran on the tree the failed build left: the first test run comes after libffi-dev.
    events = [json.loads(line) for line in session.trajectory_path.read_text().splitlines()]
    kinds = [
        "test"
        if e.get("kind") == "test.run"
        else "libffi-dev"
        if e.get("kind") == "workflow.step"
        and (e.get("payload") or {}).get("step") == "repair"
        and "libffi-dev" in str((e.get("payload") or {}).get("detail"))
        else None
        for e in events
    ]
    assert "test" in kinds and "libffi-dev" in kinds, kinds
    assert kinds.index("libffi-dev") < kinds.index("test"), result.notes
    assert any("installed before any test ran" in n for n in result.notes), result.notes


@pytest.mark.timeout(1800)  # three lookups, three apt-get installs and four builds
async def test_each_missing_header_gets_a_round_and_a_header_no_table_names_is_looked_up(
    tmp_path: Path, set_up: SetUp
) -> None:
    """A C extension that includes gmp.h, mpfr.h and mpc.h (gmpy2 2.1.2, stop 44's fresh pins),
    on an image with the three libraries' runtime (gcc's) but none of their headers: the build
    shows one missing header at a time, and each gets its Debian package before the next build.
    mpfr.h and mpc.h are in no table: their packages are looked up in the container, each
    candidate's file list checked for the header. Before, mpfr.h matched no rule after
    libgmp-dev, and the verdict was none/build on `mpfr.h: No such file or directory`."""
    repo = repos.write_repo(
        tmp_path / "repo",
        {
            "setup.py": (
                "from setuptools import Extension, setup\n\n"
                "setup(name='mpcabi', version='0.1', packages=['mpcabi'],\n"
                "      ext_modules=[Extension('mpcabi._v', ['mpcabi/_v.c'],"
                " libraries=['mpc', 'mpfr', 'gmp'])])\n"
            ),
            "mpcabi/__init__.py": "from mpcabi._v import prec\n",
            "mpcabi/_v.c": (
                "#include <Python.h>\n"
                "#include <gmp.h>\n"
                "#include <mpfr.h>\n"
                "#include <mpc.h>\n"
                "static PyObject *prec(PyObject *s, PyObject *a)\n"
                "{ mpc_t z; mpc_init2(z, 64); long p = (long)mpfr_get_prec(mpc_realref(z));\n"
                "  mpc_clear(z); return PyLong_FromLong(p + (long)sizeof(mp_limb_t) * 0); }\n"
                'static PyMethodDef m[] = {{"prec", prec, METH_NOARGS, ""}, {0}};\n'
                'static struct PyModuleDef d = {PyModuleDef_HEAD_INIT, "_v", 0, -1, m};\n'
                "PyMODINIT_FUNC PyInit__v(void) { return PyModule_Create(&d); }\n"
            ),
            "tests/test_prec.py": "from mpcabi import prec\n\n"
            + "".join(
                f"def test_{n}():\n    assert prec() + {n} == 64 + {n}\n\n" for n in range(8)
            ),
        },
    )
    _, result = await set_up(repo)
    assert result.verdict.ready, result.verdict.line()
    assert result.verdict.tests.get("passed") == 8, result.verdict.line()
    for package in ("libgmp-dev", "libmpfr-dev", "libmpc-dev"):
        assert package in result.system_packages, (package, result.system_packages)
    system = [r for r in result.repairs if r["fix"] == "system"]
    assert [r["round"] for r in system] == [0, 0, 0], result.repairs
    assert sum("looking up" in r["reason"] for r in system) == 2, result.repairs


async def test_tests_that_open_files_of_their_own_folder_run_in_that_folder(
    tmp_path: Path, set_up: SetUp
) -> None:
    """bitstring 3.1.9 (stop 44's fresh pins, runs/test-failures, 33 of 546 failed from the
    root): its tests open data files beside them in test/ by relative paths. Each test now
    runs in its file's folder (setup's plugin, -p reposim_test_folder). The fixture: 6 tests
    whose setUp reads `smalltestfile` from test/ through the package, 6 that read nothing."""
    repo = repos.write_repo(
        tmp_path / "repo",
        {
            "pyproject.toml": repos.setuptools_pyproject("relbits", [], package="relbits"),
            "relbits/__init__.py": (
                "def read_bits(name):\n    with open(name, 'rb') as f:\n        return f.read()\n"
            ),
            "test/smalltestfile": "abcd",
            "test/test_bits.py": (
                "import unittest\n\nfrom relbits import read_bits\n\n\n"
                "class FileBased(unittest.TestCase):\n"
                "    def setUp(self):\n        self.data = read_bits('smalltestfile')\n\n"
                + "".join(
                    f"    def test_{n}(self):\n        self.assertEqual(self.data[{n % 4}:], "
                    f"b'abcd'[{n % 4}:])\n\n"
                    for n in range(6)
                )
                + "\nclass Plain(unittest.TestCase):\n"
                + "".join(
                    f"    def test_{n}(self):\n        self.assertEqual({n} + 1, {n + 1})\n\n"
                    for n in range(6)
                )
            ),
        },
    )
    _, result = await set_up(repo)
    verdict = result.verdict
    assert verdict.ready and verdict.tests.get("passed") == 12, verdict.line()
    assert "-p reposim_test_folder" in (verdict.test_command or ""), verdict.test_command
    assert any("in their own folder" in n for n in result.notes), result.notes
    from simulator.setup.envimage import dockerfile_text

    dockerfile = dockerfile_text(result, "reposim/base:bookworm-2", "c")
    assert "reposim_test_folder" in dockerfile.split("\nCMD ")[0], dockerfile


def _commands(path: Path) -> list[str]:
    """The commands the session ran, in order, from its trajectory."""
    import json

    out = []
    for line in path.read_text().splitlines():
        event = json.loads(line)
        if event.get("kind") == "exec":
            out.append(str((event.get("payload") or {}).get("command")))
    return out


async def test_the_installed_packages_are_imported_and_python_2_test_modules_are_named(
    tmp_path: Path, set_up: SetUp
) -> None:
    """regex 2021.11.10 in the hard corpus: setup.py maps the package `regex` to regex_3/ on
    Python 3 and ships regex_2/ (Python 2 source, with its own test module) beside it. The
    oracle imported every folder holding an __init__.py, so `import regex_2` raised a
    SyntaxError and the project was not ready. It now imports what the installed distribution
    provides (its top_level.txt), and the Python 2 test module is named, not counted."""
    cases = "".join(
        f"    def test_{i}(self):\n        self.assertEqual(mapped.twice({i}), {2 * i})\n"
        for i in range(12)
    )
    repo = repos.write_repo(
        tmp_path / "repo",
        {
            "setup.py": (
                "import sys\nfrom setuptools import setup\n\n"
                "setup(name='mapped', version='1.0', packages=['mapped'],\n"
                "      package_dir={'mapped': 'mapped_%i' % sys.version_info[0]})\n"
            ),
            "mapped_2/__init__.py": "def twice(x):\n    print 'old'\n    return 2 * x\n",
            "mapped_2/test_mapped.py": (
                "import unittest\nimport mapped\n\nclass T(unittest.TestCase):\n"
                "    def test_old(self):\n        try:\n            mapped.twice(1)\n"
                "        except ValueError, e:\n            pass\n"
            ),
            "mapped_3/__init__.py": "def twice(x):\n    return 2 * x\n",
            "mapped_3/test_mapped.py": (
                f"import unittest\nimport mapped\n\nclass T(unittest.TestCase):\n{cases}"
            ),
        },
    )
    _, result = await set_up(repo)
    assert result.verdict.ready, result.verdict.line()
    assert result.verdict.tests.get("passed") == 12, result.verdict.line()
    assert [s.split(":")[0] for s in result.verdict.skipped] == ["mapped_2/test_mapped.py"]
    assert "written for another Python" in result.verdict.line()


async def test_code_that_fails_on_a_python_newer_than_it_declares_is_python_version(
    tmp_path: Path, docker_session: SessionFactory
) -> None:
    """patsy 0.5.2 in the hard corpus: its own eval.py compares each __future__ feature's
    mandatory release with sys.version_info, which raises a TypeError on 3.11 (annotations has
    none); it declares Python 3.6-3.9. That is not an import error to repair but the
    interpreter: python-version, and the evidence names the file and the declared Python.
    With a budget too small for the older interpreter (Debian's PyPy, minutes to install;
    tests/setup/test_older_python.py), the verdict stays so and the notes say it was not
    tried and why."""
    repo = repos.write_repo(
        tmp_path / "repo",
        {
            "setup.py": (
                "from setuptools import setup\n\n"
                "setup(name='oldeval', version='0.1', packages=['oldeval'], classifiers=[\n"
                "    'Programming Language :: Python :: 3.8',\n"
                "    'Programming Language :: Python :: 3.9'])\n"
            ),
            "oldeval/__init__.py": "from oldeval.flags import FLAGS\n",
            "oldeval/flags.py": (
                "import __future__\nimport sys\n\n"
                "FLAGS = [n for n in __future__.all_feature_names\n"
                "         if getattr(__future__, n).getMandatoryRelease() > sys.version_info]\n"
            ),
            "tests/test_flags.py": "from oldeval import FLAGS\n\ndef test_f():\n    assert FLAGS\n",
        },
    )
    session = await docker_session(repo)
    result = await run_setup(session, SetupOptions(budget=240.0))
    assert not result.verdict.ready
    assert result.verdict.category == "python-version", result.verdict.line()
    assert "oldeval/flags.py" in (result.verdict.evidence or ""), result.verdict.line()
    assert "declares Python 3.9" in (result.verdict.evidence or ""), result.verdict.line()
    assert any("not tried: Debian's pypy3" in n for n in result.notes), result.notes


async def test_c_code_generated_for_pythons_before_3_11_is_python_version(
    tmp_path: Path, set_up: SetUp
) -> None:
    """editdistance 0.6.0 in the hard corpus ships C++ that Cython 0.29.5 generated, which
    includes CPython's longintrepr.h (moved in 3.11), and no .pyx to generate it again: the
    build cannot succeed on this Python, whatever Debian package goes in."""
    repo = repos.write_repo(
        tmp_path / "repo",
        {
            "setup.py": (
                "from setuptools import Extension, setup\n\n"
                "setup(name='olddist', version='0.1', packages=['olddist'],\n"
                "      ext_modules=[Extension('olddist._c', ['olddist/_c.c'])])\n"
            ),
            "olddist/__init__.py": "from olddist._c import *\n",
            "olddist/_c.c": '#include "longintrepr.h"\n#include "Python.h"\n',
            "tests/test_c.py": "import olddist\n\ndef test_c():\n    assert olddist\n",
        },
    )
    _, result = await set_up(repo)
    assert not result.verdict.ready
    assert result.verdict.category == "python-version", result.verdict.line()
    assert "longintrepr.h" in (result.verdict.evidence or ""), result.verdict.line()


@pytest.mark.timeout(1800)  # an apt-get install and a build: minutes at load 30
async def test_a_c_extension_the_build_leaves_out_quietly_gets_python_h_first(
    tmp_path: Path, set_up: SetUp
) -> None:
    """pyrsistent 0.18.0 in the hard corpus: its C extension (pvectorc) is optional, so with no
    Python.h in the image the build fails quietly, the install succeeds, and the project's own
    module listed in top_level.txt does not import (`No module named 'pvectorc'`); no wheel of
    that name exists. A project whose setup.py builds extensions gets the Python headers
    before it is installed, so the extension is built."""
    repo = repos.write_repo(
        tmp_path / "repo",
        {
            "setup.py": """
                from setuptools import Extension, setup
                from setuptools.command.build_ext import build_ext


                class optional_build_ext(build_ext):
                    def run(self):
                        try:
                            build_ext.run(self)
                        except Exception as error:
                            print("WARNING: the C extension could not be compiled:", error)

                    def build_extension(self, ext):
                        try:
                            build_ext.build_extension(self, ext)
                        except Exception as error:
                            print("WARNING: the C extension could not be compiled:", error)


                setup(
                    name="fastcalc",
                    version="0.1",
                    packages=["calc"],
                    ext_modules=[Extension("fastcalcc", ["fastcalcmodule.c"])],
                    cmdclass={"build_ext": optional_build_ext},
                )
            """,
            "fastcalcmodule.c": """
                #include <Python.h>
                static PyObject *twice(PyObject *self, PyObject *arg) {
                    long x = PyLong_AsLong(arg);
                    return PyLong_FromLong(2 * x);
                }
                static PyMethodDef methods[] = {
                    {"twice", twice, METH_O, ""}, {NULL, NULL, 0, NULL}
                };
                static struct PyModuleDef module = {
                    PyModuleDef_HEAD_INIT, "fastcalcc", "", -1, methods
                };
                PyMODINIT_FUNC PyInit_fastcalcc(void) { return PyModule_Create(&module); }
            """,
            "calc/__init__.py": """
                try:
                    from fastcalcc import twice
                except ImportError:
                    def twice(x):
                        return 2 * x
            """,
            "tests/test_calc.py": "".join(
                f"from calc import twice\n\ndef test_{i}():\n    assert twice({i}) == {2 * i}\n\n"
                for i in range(4)
            ),
        },
    )
    session, result = await set_up(repo)
    assert result.verdict.ready, result.verdict.line()
    assert "python3-dev" in result.system_packages, result.system_packages
    probe = await session.exec(f"{result.python} -c 'import fastcalcc; print(fastcalcc.twice(21))'")
    assert probe.output.decode().strip() == "42", probe.output


async def test_an_import_check_cut_at_its_time_limit_is_a_timeout_not_an_import_error(
    tmp_path: Path, docker_session: SessionFactory
) -> None:
    """lmfit 1.0.2 in the hard corpus, at load ~50: `import lmfit` (scipy, ...) was still
    going when the check's 120 s ran out; the shell's `Killed` line became the evidence of an
    `import-error`. An import cut by its time limit is a `timeout`, named as such."""
    from simulator.setup.ladder import SetupOptions
    from simulator.setup.oracle import Category

    repo = repos.write_repo(
        tmp_path / "slowimport",
        {
            "setup.py": (
                "from setuptools import setup\nsetup(name='slowimp', packages=['slowimp'])\n"
            ),
            "slowimp/__init__.py": "import time\n\ntime.sleep(30)\n",
            "tests/test_slow.py": "import slowimp\n\ndef test_it():\n    assert slowimp\n",
        },
    )
    session = await docker_session(repo)
    result = await run_setup(session, SetupOptions(import_timeout=5, install_imports=False))
    assert result.verdict.category is Category.TIMEOUT, result.verdict.line()
    assert "import slowimp" in (result.verdict.evidence or ""), result.verdict.evidence


async def test_a_build_that_needs_its_eras_setuptools_builds_with_the_tools_of_its_date(
    tmp_path: Path, set_up: SetUp
) -> None:
    """deap 1.3.1 in the hard corpus: its setup.py passes `use_2to3=True`, which setuptools 58
    made an error ("use_2to3 is invalid"), so no install works with today's build tools. The
    build runs again with setuptools as of the commit's date (2020-01-23: 45.1.0, below 58),
    the notes say why and with what, and the Dockerfile builds with the same constraint.
    The build's 2to3 converts the package, and its tests inside it, as it installs them (deap
    1.3.1: `print` statements in deap/tests, `dict.iteritems` in deap/tools): the tests run
    in that converted copy (`python -P -m pytest --pyargs oldtwo`), not in the Python 2 tree.
    Over 60 s under load (126 s at load 30, 267 s at 70): the build fails with today's
    setuptools, builds again with the era's, and pytest comes from the index; no smaller
    fixture shows it."""
    from simulator.setup.envimage import dockerfile_text

    files = {
        "setup.py": (
            "from setuptools import setup\n\n"
            "setup(name='oldtwo', version='0.1', packages=['oldtwo', 'oldtwo.tests'],\n"
            "      use_2to3=True)\n"
        ),
        "oldtwo/__init__.py": (
            "def half(x):\n    return x / 2\n\ndef pairs(d):\n    return sorted(d.iteritems())\n"
        ),
        "oldtwo/tests/__init__.py": "",
        "oldtwo/tests/test_half.py": (
            "from oldtwo import half, pairs\n\n"
            "def test_half():\n    assert half(3) == 1.5\n\n"
            "def test_pairs():\n    print 'pairs'\n    assert pairs({'a': 1}) == [('a', 1)]\n"
        ),
    }
    result = await _set_up(set_up, tmp_path / "repo", files, as_of="2020-01-23T10:00:00+00:00")
    assert result.verdict.ready, result.verdict.line()
    assert result.verdict.tests["passed"] == 2, result.verdict.line()
    assert "--pyargs oldtwo" in (result.verdict.test_command or ""), result.verdict.test_command
    assert result.build_constraints == ["setuptools==45.1.0"], (result.notes, result.commands)
    note = next((n for n in result.notes if "use_2to3" in n), "")
    assert "setuptools 58 removed use_2to3" in note and "2020-01-23" in note, result.notes
    dockerfile = dockerfile_text(result, "reposim/base:bookworm-2", "abc")
    assert "setuptools==45.1.0" in dockerfile and "--build-constraints" in dockerfile, dockerfile


async def test_a_build_on_numpy_distutils_compilers_builds_with_the_setuptools_of_its_date(
    tmp_path: Path, set_up: SetUp
) -> None:
    """numexpr 2.7.3 (stop 44's fresh pins, 2021): numpy.distutils makes its compiler as
    `klass(None, dry_run, force)`, the positional `verbose` today's setuptools dropped from
    distutils' CCompiler: `TypeError: Compiler.__init__() takes from 1 to 3 positional
    arguments but 4 were given`, under the installer's `error: subprocess-exited-with-error`,
    which was all the evidence said. The fixture's build makes its compiler the same way; the
    build runs again with setuptools as of the commit's date (below 60), and the evidence of
    the first build names the TypeError."""
    files = {
        "setup.py": (
            "from setuptools import setup\n"
            "from distutils.unixccompiler import UnixCCompiler\n\n"
            "UnixCCompiler(None, 0, 0)  # as numpy.distutils' new_compiler makes one\n\n"
            "setup(name='oldcc', version='0.1', packages=['oldcc'])\n"
        ),
        "oldcc/__init__.py": "def triple(x):\n    return 3 * x\n",
        "tests/test_triple.py": "from oldcc import triple\n\n"
        + "".join(f"def test_{n}():\n    assert triple({n}) == {3 * n}\n\n" for n in range(5)),
    }
    result = await _set_up(set_up, tmp_path / "repo", files, as_of="2021-02-01T10:00:00+00:00")
    assert result.verdict.ready, result.verdict.line()
    assert result.verdict.tests["passed"] == 5, result.verdict.line()
    pins = [p for p in result.build_constraints if p.lower().startswith("setuptools")]
    assert pins and int(pins[0].split("==")[1].split(".")[0]) < 60, result.build_constraints
    note = next((n for n in result.notes if "CCompiler" in n), "")
    assert "setuptools 60 removed" in note and "TypeError: Compiler.__init__()" in note, note


_OLD_CYTHON_SETUP = """\
import os

from setuptools import Extension, setup

try:
    from Cython.Build import cythonize
except ImportError:
    cythonize = None
if cythonize is None and not os.path.exists('oldcy/_fast.c'):
    raise RuntimeError('Cython must be installed when the generated C is not there')
source = 'oldcy/_fast.pyx' if cythonize is not None else 'oldcy/_fast.c'
modules = [Extension('oldcy._fast', [source])]
if cythonize is not None:
    modules = cythonize(modules, language_level=3)
setup(name='oldcy', version='0.1', packages=['oldcy'], ext_modules=modules)
"""


@pytest.mark.timeout(1800)  # two builds and Cython from the index
async def test_c_an_old_cython_generated_is_generated_again_with_the_cython_of_its_era(
    tmp_path: Path, set_up: SetUp
) -> None:
    """PyWavelets 1.1.1 (stop 44's fresh pins): its sdist ships the C an old Cython generated,
    which includes CPython's internal longintrepr.h (moved in 3.11), and its setup.py compiles
    that C unless Cython is importable (not in an isolated build); the ladder then tried PyPy.
    The fixture's C begins as old Cython output does and includes longintrepr.h; its .pyx is
    beside it. The C goes, the build runs again without isolation with Cython below 3, before
    any other interpreter."""
    repo = repos.write_repo(
        tmp_path / "repo",
        {
            "setup.py": _OLD_CYTHON_SETUP,
            "oldcy/__init__.py": "from oldcy._fast import twice\n",
            "oldcy/_fast.pyx": "def twice(x):\n    return 2 * x\n",
            "oldcy/_fast.c": (
                "/* Generated by Cython 0.29.21 */\n\n"
                '#define PY_SSIZE_T_CLEAN\n#include "Python.h"\n#include "longintrepr.h"\n'
            ),
            "tests/test_twice.py": "from oldcy import twice\n\n"
            + "".join(f"def test_{n}():\n    assert twice({n}) == {2 * n}\n\n" for n in range(6)),
        },
    )
    _, result = await set_up(repo)
    assert result.verdict.ready and result.verdict.tests.get("passed") == 6, result.verdict.line()
    assert result.interpreter == "python3", result.notes
    assert any("oldcy/_fast.c removed" in n and "cython<3" in n for n in result.notes), result.notes
    assert any("--no-build-isolation" in c for c in result.commands), result.commands


async def test_a_cpp_build_against_todays_pybind11_builds_with_the_pybind11_of_its_date(
    tmp_path: Path, set_up: SetUp
) -> None:
    """hmmlearn 0.2.7 in the hard corpus: its C++11 extension copies a GIL guard (`auto nogil =
    py::gil_scoped_release{};`), which pybind11 2.10.4 made non-copyable, so every install
    failed with today's pybind11 ("use of deleted function 'pybind11::gil_scoped_release::
    gil_scoped_release(const ...&)'") and the verdict was none/build. pybind11 comes in by
    setup_requires, as there. The build runs again with the pybind11 of the commit's date
    (2022-01-10: 2.9.0), which gets past the copy but predates Python 3.11's frame API
    (`invalid use of incomplete type 'PyFrameObject'`): then with the newest release below
    2.10.4, which builds."""
    cases = "".join(
        f"def test_twice_{i}():\n    assert twice({i}) == {2 * i}\n\n" for i in range(12)
    )
    files = {
        "setup.py": (
            "from setuptools import setup\n"
            "from setuptools.command.build_ext import build_ext\n\n\n"
            "class build_ext(build_ext):\n"
            "    def finalize_options(self):\n"
            "        from pybind11.setup_helpers import Pybind11Extension\n"
            "        self.distribution.ext_modules[:] = [Pybind11Extension(\n"
            "            'nogil._core', ['src/core.cpp'], cxx_std=11)]\n"
            "        super().finalize_options()\n\n\n"
            "setup(name='nogil', version='0.1', packages=['nogil'],\n"
            "      cmdclass={'build_ext': build_ext}, ext_modules=[Extension('', [])],\n"
            "      setup_requires=['pybind11>=2.6'])\n"
        ).replace("from setuptools import setup", "from setuptools import Extension, setup"),
        "src/core.cpp": (
            "#include <pybind11/pybind11.h>\nnamespace py = pybind11;\n\n"
            "int twice(int x) {\n    auto nogil = py::gil_scoped_release{};\n"
            "    return 2 * x;\n}\n\n"
            'PYBIND11_MODULE(_core, m) { m.def("twice", &twice); }\n'
        ),
        "nogil/__init__.py": "from nogil._core import twice\n",
        "tests/test_twice.py": "from nogil import twice\n\n" + cases,
    }
    result = await _set_up(set_up, tmp_path / "repo", files, as_of="2022-01-10T10:00:00+00:00")
    assert result.verdict.ready and result.verdict.tests["passed"] == 12, result.verdict.line()
    assert result.build_constraints == ["pybind11<2.10.4"], (result.build_constraints, result.notes)
    note = next((n for n in result.notes if "pybind11 2.10.4 removed" in n), "")
    assert "2022-01-10" in note, result.notes
    assert any("as of the project's date failed otherwise" in n for n in result.notes), result.notes


async def test_a_nose_style_test_class_setup_takes_the_pytest_that_still_calls_it(
    tmp_path: Path, set_up: SetUp
) -> None:
    """hmmlearn 0.2.7 in the hard corpus: its test classes set themselves up in nose-style
    `def setup(self)` methods, which pytest 8 stopped calling, so 70 of 201 tests failed on
    `'TestMultinomailHMM' object has no attribute 'n_components'` and nothing was repaired.
    The rule takes the pytest below 8."""
    cases = "".join(
        f"    def test_{i}(self):\n        assert self.twice({i}) == {2 * i}\n\n" for i in range(12)
    )
    repo = repos.write_repo(
        tmp_path / "repo",
        _package(
            "nosey",
            [],
            {
                "nosey/__init__.py": "def twice(x):\n    return 2 * x\n",
                "tests/test_twice.py": (
                    "from nosey import twice\n\n\nclass TestTwice:\n"
                    "    def setup(self):\n        self.twice = twice\n\n" + cases
                ),
            },
        ),
    )
    _, result = await set_up(repo)
    assert result.verdict.ready and result.verdict.tests["passed"] == 12, result.verdict.line()
    assert any("pytest<8" in item for item in result.installed), result.installed


async def test_a_name_a_dependency_removed_pins_it_at_its_release_before_the_projects_date(
    tmp_path: Path, set_up: SetUp
) -> None:
    """seaborn 0.11.2 in the hard corpus: `matplotlib.cm.register_cmap` is gone from today's
    matplotlib, the traceback ends in seaborn's own code and seaborn declares Python up to 3.9,
    so the verdict said python-version and nothing was tried. A name a dependency removed is
    no interpreter problem: the dependency is pinned at the newest release before the
    project's date that has it, from the index's releases. The fixture: a 2021-06-01 commit
    doing `from jinja2 import Markup` (gone in Jinja2 3.1) with today's Jinja2 from its
    requirements file: Jinja2 3.0.1 (2021-05-18) is pinned and the tests pass."""
    files = {
        "setup.py": (
            "from setuptools import setup\n\n"
            "setup(name='oldtpl', version='0.1', packages=['oldtpl'], classifiers=[\n"
            "    'Programming Language :: Python :: 3.8',\n"
            "    'Programming Language :: Python :: 3.9'])\n"
        ),
        "requirements.txt": "jinja2\n",
        "oldtpl/__init__.py": (
            "from jinja2 import Markup\n\ndef bold(text):\n    return Markup('<b>%s</b>') % text\n"
        ),
        "tests/test_bold.py": (
            "from oldtpl import bold\n\ndef test_bold():\n"
            "    assert bold('<x>') == '<b>&lt;x&gt;</b>'\n"
        ),
    }
    result = await _set_up(set_up, tmp_path / "repo", files, as_of="2021-06-01T00:00:00+00:00")
    assert result.verdict.ready, result.verdict.line()
    assert "jinja2==3.0.1" in [p.lower() for p in result.lock], result.lock
    note = next((n for n in result.notes if "pinned" in n), "")
    assert "jinja2.Markup is gone from" in note and "before the project's date" in note, (
        result.notes
    )


async def test_with_no_release_of_the_projects_time_here_the_pin_is_the_nearest_later_one(
    tmp_path: Path, set_up: SetUp
) -> None:
    """quantities 0.12.4 in the hard corpus (2020-01-08, no declared requirements, so today's
    NumPy from the import scan): `np.ndarray.ptp` is gone from NumPy 2.4, and no NumPy of 2020
    has a wheel for Python 3.11. The pin took the newest release that still has the name,
    2.3.5, which kept NumPy 2's behaviour, and 30 of its 160 tests failed on it. With no
    release of the project's time here, the pin is the release nearest its date that has a
    wheel here and the name (NumPy 1.23.x). The fixture: a 2019 commit subclassing ndarray with
    `ndarray.ptp`'s docstring and testing the scalar repr NumPy 2 changed (`1.5`, now
    `np.float64(1.5)`): before, 6 of 12 failed under 2.3.5; now 12 pass."""
    files = {
        "setup.py": (
            "from setuptools import setup\n\n"
            "setup(name='oldarr', version='0.1', packages=['oldarr'])\n"
        ),
        "oldarr/__init__.py": (
            "import numpy as np\n\n\n"
            "class Table(np.ndarray):\n"
            "    spread_doc = np.ndarray.ptp.__doc__\n\n\n"
            "def show(x):\n    return repr(np.float64(x))\n"
        ),
        "tests/test_oldarr.py": (
            "import pytest\nfrom oldarr import show\n\n"
            "@pytest.mark.parametrize('x', [0.5, 1.5, 2.5, 3.5, 4.5, 5.5])\n"
            "def test_show(x):\n    assert show(x) == str(x)\n\n"
            "@pytest.mark.parametrize('x', range(6))\n"
            "def test_plain(x):\n    assert x + 1 > x\n"
        ),
    }
    result = await _set_up(set_up, tmp_path / "repo", files, as_of="2019-06-01T00:00:00+00:00")
    assert result.verdict.ready and result.verdict.tests["passed"] == 12, result.verdict.line()
    numpy = next((p for p in result.lock if p.lower().startswith("numpy==")), "")
    assert numpy.startswith("numpy==1.23."), result.lock
    note = next((n for n in result.notes if "pinned numpy" in n), "")
    assert "nearest the project's date (2019-06-01)" in note, result.notes


async def test_a_dependency_with_no_wheel_here_at_the_projects_date_is_tried_at_the_nearest_date(
    tmp_path: Path, set_up: SetUp
) -> None:
    """filterpy 1.4.5 in the hard corpus (2018-10-10) declares numpy, scipy and matplotlib; none
    had a wheel for Python 3.11 then, so time travel took today's releases, and 10 of its 68
    tests failed on NumPy 2's and SciPy's newer behaviour, with nothing a rule could name. The
    rung: its requirements resolved as of its date, those with no wheel here then as of the
    nearest date they had one. The fixture: a 2019 commit declaring numpy and testing the
    scalar repr NumPy 2 changed (`1.5`, now `np.float64(1.5)`). Before: 6 of 12 failed under
    today's NumPy, not ready; now NumPy 1.23.x (its first wheels for 3.11) and 12 pass."""
    files = {
        "setup.py": (
            "from setuptools import setup\n\n"
            "setup(name='oldrepr', version='0.1', packages=['oldrepr'],\n"
            "      install_requires=['numpy'])\n"
        ),
        "oldrepr/__init__.py": (
            "import numpy as np\n\n\ndef show(x):\n    return repr(np.float64(x))\n"
        ),
        "tests/test_oldrepr.py": (
            "import pytest\nfrom oldrepr import show\n\n"
            "@pytest.mark.parametrize('x', [0.5, 1.5, 2.5, 3.5, 4.5, 5.5])\n"
            "def test_show(x):\n    assert show(x) == str(x)\n\n"
            "@pytest.mark.parametrize('x', range(6))\n"
            "def test_plain(x):\n    assert x + 1 > x\n"
        ),
    }
    result = await _set_up(set_up, tmp_path / "repo", files, as_of="2019-06-01T00:00:00+00:00")
    assert result.verdict.ready and result.verdict.tests["passed"] == 12, result.verdict.line()
    numpy = next((p for p in result.lock if p.lower().startswith("numpy==")), "")
    assert numpy.startswith("numpy==1.23."), result.lock
    assert [r["fix"] for r in result.repairs] == ["nearest-date"], result.repairs
    assert result.resolution.get("nearest", {}).get("packages") == ["numpy"], result.resolution
    note = next((n for n in result.notes if "the nearest date" in n), "")
    assert "(2019-06-01)" in note and "numpy as of 2022-08" in note, result.notes


# A 2019 project declaring numpy and pandas and using a name each removed since (`np.NaN`,
# `DataFrame.iteritems`): the nearest-date cases below; `_oldframe` writes its setup.py.
OLDFRAME = {
    "oldframe/__init__.py": (
        "import numpy as np\n\n\ndef missing():\n    return np.NaN\n\n\n"
        "def columns(frame):\n    return [name for name, _ in frame.iteritems()]\n"
    ),
    "tests/test_oldframe.py": (
        "import math\n\nimport pandas as pd\nimport pytest\n\n"
        "from oldframe import columns, missing\n\n"
        "@pytest.mark.parametrize('i', range(4))\n"
        "def test_missing(i):\n    assert math.isnan(missing())\n\n"
        "@pytest.mark.parametrize('i', range(4))\n"
        "def test_columns(i):\n"
        "    assert columns(pd.DataFrame({'a': [i], 'b': [i]})) == ['a', 'b']\n\n"
        "@pytest.mark.parametrize('i', range(4))\n"
        "def test_plain(i):\n    assert i + 1 > i\n"
    ),
}


def _oldframe(extra: str = "") -> dict[str, str]:
    """OLDFRAME with its setup.py (`extra`: more keyword arguments of setup())."""
    setup_py = (
        "from setuptools import setup\n\n"
        "setup(name='oldframe', version='0.1', packages=['oldframe'],\n"
        f"      install_requires=['numpy', 'pandas']{extra})\n"
    )
    return {"setup.py": setup_py, **OLDFRAME}


async def test_names_removed_from_two_old_dependencies_take_the_nearest_date_before_a_pin_each(
    tmp_path: Path, set_up: SetUp
) -> None:
    """seaborn 0.11.2 in the hard corpus (2021; matplotlib, pandas, NumPy and SciPy had no
    wheel for Python 3.11 then, so today's): one pin a round for each name today's releases
    removed (register_cmap, iteritems, NumPy 2's binary interface, trapz, GrouperView.join),
    each followed by a run of the whole suite, and the budget ran out before the nearest-date
    rung, which came last. When the failures show removed names from two of those
    dependencies, the rung comes first. The fixture: a 2019 commit declaring numpy and pandas,
    using `np.NaN` (gone in NumPy 2) and `DataFrame.iteritems` (gone in pandas 2). Before: two
    downgrades, a round each; now one nearest-date round (NumPy 1.23.x, pandas 1.5.x, their
    first releases with wheels for 3.11) and 12 pass."""
    files = _oldframe()
    result = await _set_up(set_up, tmp_path / "repo", files, as_of="2019-06-01T00:00:00+00:00")
    assert result.verdict.ready and result.verdict.tests["passed"] == 12, result.verdict.line()
    assert [r["fix"] for r in result.repairs] == ["nearest-date"], result.repairs
    assert "(numpy, pandas)" in result.repairs[0]["reason"], result.repairs
    lock = {p.split("==")[0].lower(): p.split("==")[-1] for p in result.lock if "==" in p}
    assert lock.get("numpy", "").startswith("1.23."), result.lock
    assert lock.get("pandas", "").startswith("1.5."), result.lock


async def test_the_nearest_date_rung_leaves_a_test_runner_that_starts(
    tmp_path: Path, set_up: SetUp
) -> None:
    """hmmlearn 0.2.7 in the hard corpus (stop 44): the nearest-date rung resolves the project's
    declared requirements with its test extra, so it took pytest back to the date's release
    (9.2.0 to 7.0.0, pluggy 1.7.0 to 1.0.0), which the test-runner stage had lifted for not
    starting here; the retest stopped at start-up and the verdict was no-tests. The fixture:
    the nearest-date case above (a 2019 commit using `np.NaN` and `DataFrame.iteritems`) with a
    `test` extra of pytest, whose 2019 release cannot rewrite a test module on 3.11. Before:
    not ready after the rung; now the runner is lifted again after it and 12 pass."""
    files = _oldframe(",\n      extras_require={'test': ['pytest']}")
    result = await _set_up(set_up, tmp_path / "repo", files, as_of="2019-06-01T00:00:00+00:00")
    assert result.verdict.ready and result.verdict.tests["passed"] == 12, result.verdict.line()
    assert "nearest-date" in [r["fix"] for r in result.repairs], result.repairs
    lock = {p.split("==")[0].lower(): p.split("==")[-1] for p in result.lock if "==" in p}
    assert lock.get("numpy", "").startswith("1.23."), result.lock
    assert int(lock.get("pytest", "0").split(".")[0]) >= 7, result.lock


async def test_a_suite_already_ready_is_only_added_to_not_moved(
    tmp_path: Path, set_up: SetUp
) -> None:
    """networkx 2.5 in the hard corpus (stop 44): the whole suite was ready+ with two test
    modules left out for missing system libraries; after the first library's package, the
    retest of the left-out files alone was short of ready on removed NumPy names, and the fix it
    took (the nearest-date rung) moved NumPy back to 2 and the verdict fell to `installed`. The
    fixture: 30 tests of code that needs NumPy 2 (`np.bitwise_count`), and a test module that
    loads libgobject at import (not in the image) and uses `np.NaN` (gone in NumPy 2). Before:
    libglib2.0-0, then `numpy<2` for the retest's failure, and the 30 fail. Now the package goes
    in, the downgrade is not taken (the notes say so), and 30 of 31 pass: ready."""
    repo = repos.write_repo(
        tmp_path / "repo",
        _package(
            "newnp",
            ["numpy"],
            {
                "newnp/__init__.py": (
                    "import numpy as np\n\n\n"
                    "def ones(x):\n    return int(np.bitwise_count(np.uint8(x)))\n"
                ),
                "tests/test_ones.py": "from newnp import ones\n\n"
                + "".join(
                    f"def test_{n}():\n    assert ones({n}) == {bin(n).count('1')}\n\n"
                    for n in range(30)
                ),
                "tests/test_gui.py": (
                    "import ctypes\n\nimport numpy as np\n\n"
                    "GOBJECT = ctypes.CDLL('libgobject-2.0.so.0')\n\n\n"
                    "def test_nan():\n    assert np.isnan(np.NaN)\n"
                ),
            },
        ),
    )
    _, result = await set_up(repo)
    assert result.verdict.ready, result.verdict.line()
    assert result.verdict.tests.get("passed") == 30, result.verdict.line()
    assert "libglib2.0-0" in result.system_packages, result.repairs
    assert "downgrade" not in [r["fix"] for r in result.repairs], result.repairs
    assert any("whole suite was ready" in n for n in result.notes), result.notes
    lock = {p.split("==")[0].lower(): p.split("==")[-1] for p in result.lock if "==" in p}
    assert int(lock.get("numpy", "0").split(".")[0]) >= 2, result.lock


async def test_tests_that_load_what_they_build_in_a_noexec_tmp_get_a_temporary_folder_that_loads(
    tmp_path: Path, set_up: SetUp
) -> None:
    """cffi 1.15.0 in the hard corpus (stop 43 run E): its tests compile C into /tmp and load
    it, and /tmp in RepoSim's containers is a tmpfs mounted noexec (Docker's default), so the
    loader refused them (`failed to map segment from shared object`): 18 of the 24 failures
    of a cut run, 94 of the 100 of its sample. The tests get a temporary folder beside the
    venv (setup's plugin module, -p), and the generated Dockerfile writes it. The fixture: 6
    tests that build a shared object in `tempfile.mkdtemp()` and load it with ctypes, 6 plain.
    Before: 6 of 12 failed, not ready; now ready 12/12 after one exec-tmp round."""
    from simulator.setup.envimage import dockerfile_text

    files = {
        "setup.py": (
            "from setuptools import setup\n\nsetup(name='native', version='0.1', "
            "packages=['native'])\n"
        ),
        "native/__init__.py": (
            "import ctypes\nimport os\nimport subprocess\nimport tempfile\n\n\n"
            "def built(n):\n    folder = tempfile.mkdtemp()\n"
            "    source = os.path.join(folder, 'f.c')\n"
            "    with open(source, 'w') as out:\n"
            "        out.write('int f(void) { return %d; }\\n' % n)\n"
            "    library = os.path.join(folder, 'libf.so')\n"
            "    subprocess.run(['cc', '-shared', '-fPIC', '-o', library, source], check=True)\n"
            "    return ctypes.CDLL(library).f()\n"
        ),
        "tests/test_native.py": (
            "import pytest\n\nfrom native import built\n\n"
            "@pytest.mark.parametrize('n', range(6))\n"
            "def test_built(n):\n    assert built(n) == n\n\n"
            "@pytest.mark.parametrize('n', range(6))\n"
            "def test_plain(n):\n    assert n + 1 > n\n"
        ),
    }
    result = await _set_up(set_up, tmp_path / "repo", files)
    assert result.verdict.ready and result.verdict.tests["passed"] == 12, result.verdict.line()
    assert [r["fix"] for r in result.repairs] == ["exec-tmp"], result.repairs
    assert result.exec_tmp and "-p reposim_exec_tmp" in (result.test_command or ""), result
    text = dockerfile_text(result, "reposim/base:bookworm-2", "0" * 40)
    assert "reposim_exec_tmp" in text, text


async def test_tests_that_mark_a_fixture_take_the_pytest_before_9(
    tmp_path: Path, set_up: SetUp
) -> None:
    """seaborn 0.11.2 in the hard corpus (stop 43 run F): its test_core.py marks a fixture,
    which pytest 8 warned about and pytest 9 refuses while collecting (`Failed: Marks cannot be
    applied to fixtures.`), so the module was left out and the verdict not ready. The pytest
    below 9. The fixture: one module of 6 plain tests, one of 6 tests using a marked fixture.
    Before: that module did not import, not ready; now pytest<9 and 12 pass."""
    files = {
        "setup.py": (
            "from setuptools import setup\n\nsetup(name='marked', version='0.1', "
            "packages=['marked'])\n"
        ),
        "marked/__init__.py": "def twice(n):\n    return 2 * n\n",
        "tests/test_plain.py": (
            "import pytest\n\nfrom marked import twice\n\n"
            "@pytest.mark.parametrize('n', range(6))\n"
            "def test_plain(n):\n    assert twice(n) == n + n\n"
        ),
        "tests/test_marked.py": (
            "import pytest\n\nfrom marked import twice\n\n\n"
            "@pytest.fixture\n@pytest.mark.slow\ndef two():\n    return 2\n\n\n"
            "@pytest.mark.parametrize('n', range(6))\n"
            "def test_marked(two, n):\n    assert twice(n) == two * n\n"
        ),
    }
    result = await _set_up(set_up, tmp_path / "repo", files)
    assert result.verdict.ready and result.verdict.tests["passed"] == 12, result.verdict.line()
    assert any("pytest<9" in item for item in result.installed), result.installed


async def test_a_plugin_no_pytest_release_here_loads_is_removed_and_the_suite_runs(
    tmp_path: Path, set_up: SetUp
) -> None:
    """opt-einsum 3.3.0 in the hard corpus: its test extra brings pytest-pep8 (last released
    2014), which today's pytest rejects at start-up (`PluginValidationError: Plugin 'pep8' for
    hook 'pytest_collect_file'`) and which no newer release fixes, so no test ran and the
    verdict was `collection`. The plugin named by that error is uninstalled, as a person
    would; the notes say so."""
    files = {
        "setup.py": (
            "from setuptools import setup\n\n"
            "setup(name='peppy', version='0.1', packages=['peppy'],\n"
            "      extras_require={'tests': ['pytest', 'pytest-pep8']})\n"
        ),
        "peppy/__init__.py": "def add(a, b):\n    return a + b\n",
        "tests/test_add.py": "from peppy import add\n\ndef test_add():\n    assert add(2, 3)\n",
    }
    result = await _set_up(set_up, tmp_path / "repo", files)
    assert result.verdict.ready, result.verdict.line()
    assert any("pytest-pep8" in n and "removed" in n for n in result.notes), result.notes


async def test_a_private_extension_the_build_left_out_is_not_an_import_failure(
    tmp_path: Path, set_up: SetUp
) -> None:
    """PyYAML 5.4.1 in the hard corpus: its `_yaml` extension needs libyaml, which the image
    lacks, so the build leaves it out (as PyYAML means it to: `yaml` falls back to pure
    Python); but `_yaml` is in top_level.txt, and `import _yaml` failing made the verdict
    `installed` (module-not-found) with nothing to repair. Private top-level names are imported
    by the public packages when they need them, and are not checked on their own."""
    files = {
        "setup.py": (
            "from setuptools import Extension, setup\n\n"
            "setup(name='purefall', version='0.1', packages=['purefall'],\n"
            "      ext_modules=[Extension('_purefall', ['ext/missing.c'], optional=True)])\n"
        ),
        "purefall/__init__.py": (
            "try:\n    from _purefall import twice\nexcept ImportError:\n"
            "    def twice(x):\n        return 2 * x\n"
        ),
        "tests/test_twice.py": (
            "from purefall import twice\n\ndef test_twice():\n    assert twice(2) == 4\n"
        ),
    }
    result = await _set_up(set_up, tmp_path / "repo", files)
    assert result.verdict.ready, result.verdict.line()


async def test_a_conftest_hook_todays_pytest_refuses_takes_the_pytest_below_its_major(
    tmp_path: Path, set_up: SetUp
) -> None:
    """html5lib 1.1 in the hard corpus: its conftest implements `pytest_collect_file(path,
    parent)`, which pytest 9 refuses at start-up (the `path` argument is gone from the
    hookspec); the pytest below the installed major takes it."""
    files = {
        "setup.py": "from setuptools import setup\n\nsetup(name='hooked', packages=['hooked'])\n",
        "hooked/__init__.py": "VALUE = 3\n",
        "tests/conftest.py": "def pytest_collect_file(path, parent):\n    return None\n",
        "tests/test_value.py": (
            "from hooked import VALUE\n\ndef test_value():\n    assert VALUE == 3\n"
        ),
    }
    result = await _set_up(set_up, tmp_path / "repo", files)
    assert result.verdict.ready, result.verdict.line()
    assert [r["fix"] for r in result.repairs] == ["downgrade"], result.repairs


async def test_rule_an_optional_import_the_code_warns_is_missing_is_installed(
    tmp_path: Path, set_up: SetUp
) -> None:
    """numdifftools 0.9.39 in the hard corpus: its profiletools module imports line_profiler in
    a try block and, without it, warns `UserWarning: No module named 'line_profiler'` and
    profiles nothing; two tests failed on that (`assert 0 > 0`). The import is guarded, so the
    scan left it out, and the failures named nothing a rule acted on. The rule: a run short of
    ready whose output has the project's own warning that a module it imports is missing
    installs that module's distribution. Here a guarded `import tomli_w` (12 tests pass, 2 need
    it: 12 of 14 is below the 95% a ready verdict needs)."""
    repo = repos.write_repo(
        tmp_path / "repo",
        _package(
            "optwarn",
            [],
            {
                "optwarn/__init__.py": (
                    "import warnings\n\ntry:\n    import tomli_w\nexcept ImportError as error:\n"
                    "    tomli_w = None\n    warnings.warn(str(error))\n\n\n"
                    "def render(data):\n"
                    "    return tomli_w.dumps(data) if tomli_w is not None else ''\n\n\n"
                    "def twice(x):\n    return 2 * x\n"
                ),
                "tests/test_render.py": (
                    "from optwarn import render\n\n\n"
                    "def test_render_one():\n    assert len(render({'a': 1})) > 0\n\n\n"
                    "def test_render_two():\n    assert 'b = 2' in render({'b': 2})\n"
                ),
                "tests/test_plain.py": "from optwarn import twice\n\n"
                + "".join(
                    f"def test_{n}():\n    assert twice({n}) == {2 * n}\n\n" for n in range(12)
                ),
            },
        ),
    )
    _, result = await set_up(repo)
    verdict = result.verdict
    assert verdict.ready and verdict.tests.get("passed") == 14, (verdict.line(), result.repairs)
    assert any("tomli" in item for item in result.installed), result.installed
    assert any("No module named 'tomli_w'" in r["reason"] for r in result.repairs), result.repairs


async def test_independent_fixes_one_run_shows_go_in_one_round(
    tmp_path: Path, set_up: SetUp
) -> None:
    """cffi 1.15.0 and numdifftools 0.9.39 in the hard corpus (stop 41): each needed two fixes
    that only add to the environment (cffi: libffi-dev and the `py` library; numdifftools:
    hypothesis's deadline off and line_profiler), and each fix had a round of its own, with a
    whole-suite run or a sample (450 s and 310 s at a quarter of a CPU) between: the budget ran
    out before the second. Fixes that only add (a distribution, a Debian package, setup's
    plugins) now go in one round, then one run tells. Here a hypothesis example past its
    deadline and a guarded `import tomli_w` the code warns about (12 plain tests pass)."""
    repo = repos.write_repo(
        tmp_path / "repo",
        _package(
            "twoadd",
            ["hypothesis"],
            {
                "twoadd/__init__.py": (
                    "import warnings\n\ntry:\n    import tomli_w\nexcept ImportError as error:\n"
                    "    tomli_w = None\n    warnings.warn(str(error))\n\n\n"
                    "def render(data):\n"
                    "    return tomli_w.dumps(data) if tomli_w is not None else ''\n\n\n"
                    "def twice(x):\n    return 2 * x\n"
                ),
                "tests/test_render.py": (
                    "from twoadd import render\n\n\n"
                    "def test_render_one():\n    assert len(render({'a': 1})) > 0\n"
                ),
                "tests/test_prop.py": (
                    "import time\nfrom hypothesis import given, settings, strategies as st\n"
                    "from twoadd import twice\n\n\n"
                    "@settings(max_examples=3)\n@given(st.integers())\n"
                    "def test_twice(x):\n    time.sleep(0.3)\n    assert twice(x) == x + x\n"
                ),
                "tests/test_plain.py": "from twoadd import twice\n\n"
                + "".join(
                    f"def test_{n}():\n    assert twice({n}) == {2 * n}\n\n" for n in range(12)
                ),
            },
        ),
    )
    _, result = await set_up(repo)
    verdict = result.verdict
    assert verdict.ready and verdict.tests.get("passed") == 14, (verdict.line(), result.repairs)
    fixes = sorted((r["round"], r["fix"]) for r in result.repairs)
    assert fixes == [(1, "install"), (1, "no-deadline")], result.repairs
