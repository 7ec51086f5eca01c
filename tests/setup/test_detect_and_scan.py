"""Project detection, the import scan, the oracle's taxonomy and the repair rules, on real files."""

from __future__ import annotations

from pathlib import Path

from simulator.setup.detect import detect
from simulator.setup.imports import distribution_for, scan
from simulator.setup.oracle import (
    Category,
    Diagnosis,
    Tier,
    count_generic,
    diagnose,
    verdict_from_tests,
)
from simulator.setup.repair import Fix, RepairState, defined_classes, nose_style_classes, plan
from tests.setup import repos


def test_scan_survives_a_syntax_error_and_skips_local_and_stdlib(tmp_path: Path) -> None:
    repo = repos.syntax_error_repo(tmp_path / "r")
    found = scan(repo)
    assert "report/legacy.py" in found.files_with_errors
    assert {"six", "tabulate"} <= set(found.required)  # six is in the broken file
    assert "report" not in found.required and "os" not in found.required


def test_guarded_imports_are_optional_and_names_map_to_distributions(tmp_path: Path) -> None:
    repo = repos.write_repo(
        tmp_path / "r",
        {
            "m.py": "import yaml\ntry:\n    import ujson\nexcept ImportError:\n    ujson = None\n"
            "def f():\n    import cv2\n",
        },
    )
    found = scan(repo)
    assert set(found.required) == {"yaml"}
    assert set(found.optional) == {"ujson", "cv2"}
    assert found.distributions(optional=True) == {
        "PyYAML": "yaml",
        "opencv-python": "cv2",
        "ujson": "ujson",
    }
    assert distribution_for("sklearn.linear_model") == "scikit-learn"


def test_detect_reads_extras_groups_plugins_and_requirements(tmp_path: Path) -> None:
    repo = repos.write_repo(
        tmp_path / "r",
        {
            "pyproject.toml": """
                [build-system]
                requires = ["hatchling"]
                build-backend = "hatchling.build"
                [project]
                name = "p"
                version = "1"
                requires-python = ">=3.10"
                [project.optional-dependencies]
                test = ["pytest"]
                docs = ["sphinx"]
                [dependency-groups]
                dev = ["hypothesis"]
                [tool.pytest.ini_options]
                addopts = "--cov=p -n 2"
                asyncio_mode = "auto"
            """,
            "requirements-test.txt": "freezegun\n",
            "requirements-docs.txt": "sphinx\n",
            "tests/conftest.py": "def test_x(mocker):\n    pass\n",
            "p/__init__.py": "",
        },
    )
    project = detect(repo)
    assert project.language == "python" and project.build_backend == "hatch"
    assert project.extras == ["test"] and project.python_requires == ">=3.10"
    assert "hypothesis" in project.extra_requirements
    assert project.requirement_files == ["requirements-test.txt"]
    assert {"pytest-cov", "pytest-xdist", "pytest-asyncio", "pytest-mock"} <= set(
        project.pytest_plugins
    )


def test_detect_c_build_systems(tmp_path: Path) -> None:
    cmake = repos.write_repo(tmp_path / "c1", {"CMakeLists.txt": "project(x C)\n", "x.c": ""})
    make = repos.write_repo(tmp_path / "c2", {"Makefile": "test:\n\ttrue\n", "x.c": ""})
    assert (detect(cmake).language, detect(cmake).c_build) == ("c", "cmake")
    assert detect(make).c_build == "make"


def test_taxonomy_picks_the_deciding_line() -> None:
    out = "collecting ...\nE   ModuleNotFoundError: No module named 'yaml'\nERROR tests/x.py\n"
    diagnosis = diagnose(out)
    assert diagnosis == Diagnosis(
        Category.MODULE_NOT_FOUND, "E   ModuleNotFoundError: No module named 'yaml'", "yaml"
    )
    attr = diagnose("AttributeError: module 'numpy' has no attribute 'float'")
    assert (attr.category, attr.subject) == (Category.ATTRIBUTE_ERROR, "numpy:float")
    version = diagnose("ERROR: Package 'x' requires a different Python: 3.11.2 not in '>=3.12'")
    assert version.category is Category.PYTHON_VERSION
    build = diagnose("  src/c.c:1:10: fatal error: ffi.h: No such file or directory")
    assert (build.category, build.subject) == (Category.BUILD, "ffi.h")
    plugin = diagnose("E       fixture 'mocker' not found")
    assert plugin.category is Category.MISSING_PLUGIN


def test_tiers_from_counts() -> None:
    ready = verdict_from_tests(
        {"passed": 96, "failed": 4}, output="", exit_code=1, timed_out=False, command="c"
    )
    assert ready.tier is Tier.READY_PLUS and ready.ready
    few = verdict_from_tests({"passed": 3}, output="", exit_code=0, timed_out=False, command="c")
    assert few.tier is Tier.READY
    runs = verdict_from_tests(
        {"passed": 90, "failed": 10},
        output="FAILED t::x - assert 1",
        exit_code=1,
        timed_out=False,
        command="c",
    )
    assert (runs.tier, runs.category) == (Tier.RUNS, Category.TEST_FAILURES)
    assert runs.evidence is not None and runs.evidence.startswith("10 of 100 tests failed")
    none = verdict_from_tests(
        {}, output="collected 0 items\n", exit_code=5, timed_out=False, command="c"
    )
    assert (none.tier, none.category) == (Tier.COLLECTS, Category.NO_TESTS)


def test_generic_counts_read_ctest_automake_and_unittest() -> None:
    assert count_generic("67% tests passed, 1 tests failed out of 3", 8)["passed"] == 2
    assert count_generic("# PASS:  4\n# FAIL:  1\n", 2) == {
        "passed": 4,
        "failed": 1,
        "error": 0,
        "skipped": 0,
    }
    assert count_generic("Ran 5 tests in 0.1s\n\nFAILED (failures=1, errors=1)\n", 1)["passed"] == 3


def test_repairs_match_their_errors() -> None:
    state = RepairState(local={"mypkg"}, versions={"numpy": "2.1.0"})
    install = plan(Diagnosis(Category.MODULE_NOT_FOUND, "e", "yaml"), state)
    assert install is not None and install.requirements == ("PyYAML",)
    assert plan(Diagnosis(Category.MODULE_NOT_FOUND, "e", "mypkg.sub"), state) is None
    # np.float went in NumPy 1.24 (the table), np.NaN in 2.0 (the error text names it)
    removed = plan(Diagnosis(Category.ATTRIBUTE_ERROR, "e", "numpy:float"), state)
    assert removed is not None and removed.requirements == ("numpy<1.24",)
    named = plan(Diagnosis(Category.ATTRIBUTE_ERROR, "e", "numpy:NaN:<2.0"), state)
    assert named is not None and named.requirements == ("numpy<2.0",)
    # a name no table knows: first a release that has it, chosen from the index (pins.py)
    chosen = plan(Diagnosis(Category.ATTRIBUTE_ERROR, "e", "numpy:somefunc"), state)
    assert chosen is not None and chosen.kind == "removed", chosen
    assert chosen.modules == ("numpy:somefunc",)
    state.tried.add(chosen.key)
    # the standard library's (autograd 1.3: inspect.getargspec) is the interpreter: no pin
    assert plan(Diagnosis(Category.IMPORT_ERROR, "e", "inspect:getargspec"), state) is None
    older = plan(Diagnosis(Category.ATTRIBUTE_ERROR, "e", "numpy:somefunc"), state)
    assert older is not None and older.requirements == ("numpy<2",)
    state.tried.add(older.key)
    state.versions["numpy"] = "1.26.4"
    # the major pin was tried and the error stays: below the installed minor next
    minor = plan(Diagnosis(Category.ATTRIBUTE_ERROR, "e", "numpy:somefunc"), state)
    assert minor is not None and minor.requirements == ("numpy<1.26",)
    plugin = plan(Diagnosis(Category.MISSING_PLUGIN, "E  fixture 'benchmark' not found"), state)
    assert plugin is not None and plugin.requirements == ("pytest-benchmark",)


def test_an_attribute_of_pytests_own_py_module_installs_the_py_library() -> None:
    """cffi 1.15.0: `module 'py' has no attribute 'test'`. pytest (>= 7.2) ships a `py` module
    of its own with only py.path and py.error; the rest is the py library's. Not a removal to
    pin: the py library is installed, once, and not when it is installed already."""
    state = RepairState(versions={"pytest": "9.0.1"})
    fix = plan(Diagnosis(Category.ATTRIBUTE_ERROR, "e", "py:test"), state)
    assert fix is not None and (fix.kind, fix.requirements) == ("install", ("py",)), fix
    assert "py.path and py.error" in fix.reason
    # py.path is the stand-in's own: a missing attribute of it is no reason to add the library
    path = plan(Diagnosis(Category.ATTRIBUTE_ERROR, "e", "py:path"), state)
    assert path is None or path.requirements != ("py",), path
    state.tried.add(fix.key)
    again = plan(Diagnosis(Category.ATTRIBUTE_ERROR, "e", "py:test"), state)
    assert again is None or again.requirements != ("py",), again
    installed = RepairState(versions={"pytest": "9.0.1", "py": "1.11.0"})
    fix = plan(Diagnosis(Category.ATTRIBUTE_ERROR, "e", "py:code"), installed)
    assert fix is None or fix.requirements != ("py",), fix


def test_a_nose_style_test_class_missing_its_setup_attribute_takes_the_pytest_below_8() -> None:
    """hmmlearn 0.2.7: `'TestMultinomailHMM' object has no attribute 'n_components'`, set in
    the class's `def setup(self)`, which pytest 8 no longer calls. Only for a class the test
    files give such a method, and only while pytest is 8 or newer."""
    source = (
        "import unittest\n\nclass TestHMM:\n    def setup(self):\n        self.n = 3\n\n"
        "    def test_n(self):\n        assert self.n == 3\n\n"
        "class TestPlain(object):\n    def test_x(self):\n        pass\n\n"
        "class TestCase2(unittest.TestCase):\n    def setup(self):\n        pass\n"
    )
    assert nose_style_classes([source]) == {"TestHMM"}
    state = RepairState(versions={"pytest": "9.2.0"}, nose_classes={"TestHMM"})
    fix = plan(Diagnosis(Category.ATTRIBUTE_ERROR, "e", "object:TestHMM:n"), state)
    assert fix is not None and fix.requirements == ("pytest<8",), fix
    assert "nose-style setup()" in fix.reason
    other = plan(Diagnosis(Category.ATTRIBUTE_ERROR, "e", "object:TestPlain:n"), state)
    assert other is None or other.requirements != ("pytest<8",), other
    state.versions["pytest"] = "7.4.4"
    older = plan(Diagnosis(Category.ATTRIBUTE_ERROR, "e", "object:TestHMM:n"), state)
    assert older is None or older.requirements != ("pytest<8",), older


def test_tox_extras_for_one_factor_are_left_out(tmp_path: Path) -> None:
    repo = repos.write_repo(
        tmp_path / "r",
        {
            "setup.py": "from setuptools import setup\nsetup(name='t')\n",
            "tox.ini": (
                "[testenv]\nextras =\n    tests\n    mypy: tests-mypy\ndeps = pytest-xdist\n"
            ),
        },
    )
    project = detect(repo)
    assert project.extras == ["tests"] and project.extra_requirements == ["pytest-xdist"]


def test_a_module_that_importorskips_a_name_makes_its_imports_of_it_optional(
    tmp_path: Path,
) -> None:
    """pint's dask tests: `pytest.importorskip("dask")`, then `from dask.distributed import
    Client` at module level. The tests skip without dask; setup must not install it up front
    (dask and distributed made the suite much slower and were not what the project needs)."""
    repo = repos.write_repo(
        tmp_path / "r",
        {
            "setup.py": "from setuptools import setup\nsetup(name='units')\n",
            "units/__init__.py": "X = 1\n",
            "units/tests/test_dask.py": (
                "import pytest\n\n"
                'dask = pytest.importorskip("dask", reason="no dask")\n'
                "from dask.distributed import Client\n"
                "import tabulate\n\n"
                "def test_x():\n    assert Client\n"
            ),
        },
    )
    found = scan(repo)
    assert "dask" in found.optional and "dask" not in found.required
    assert "tabulate" in found.required


def test_a_cut_summary_line_gives_way_to_the_traceback_line_that_names_the_release() -> None:
    """pytest's short summary cuts NumPy 2's message; the `E` line above has it whole, so the
    repair pins below the release the message names."""
    output = (
        "    def test_nan():\n"
        ">       assert math.isnan(np.NaN)\n"
        "E       AttributeError: `np.NaN` was removed in the NumPy 2.0 release. "
        "Use `np.nan` instead.\n"
        "=========================== short test summary info ============================\n"
        "FAILED tests/test_num.py::test_nan - AttributeError: `np.NaN` was removed in ...\n"
        "1 failed, 3 passed in 1.28s\n"
    )
    assert _removed_name_fix(output, "numpy:NaN:<2.0").requirements == ("numpy<2.0",)


def _removed_name_fix(output: str, subject: str) -> Fix:
    """The fix planned for a name NumPy 2 removed, the diagnosis checked to name `subject`."""
    diagnosis = diagnose(output)
    assert diagnosis.category is Category.ATTRIBUTE_ERROR
    assert diagnosis.subject == subject
    fix = plan(diagnosis, RepairState(versions={"numpy": "2.1.0"}))
    assert fix is not None
    return fix


def test_a_class_attribute_a_dependency_removed_names_the_class() -> None:
    """quantities 0.12.4 (a fresh sdist in the hard corpus) stops at import under NumPy 2 with
    `AttributeError: type object 'numpy.ndarray' has no attribute 'ptp'` (2.0 removed the
    method): the subject names the class and its attribute, so the repair looks for the
    release of the dependency that still has it, as for `'DataFrame' object has no ...`."""
    output = (
        '  File "/workspace/quantities/quantity.py", line 608, in Quantity\n'
        "    @with_doc(np.ndarray.ptp)\n"
        "AttributeError: type object 'numpy.ndarray' has no attribute 'ptp'\n"
    )
    fix = _removed_name_fix(output, "object:ndarray:ptp")
    assert fix.kind == "removed" and fix.modules == ("object:ndarray:ptp",)


def test_the_packages_uv_says_have_nothing_usable_before_the_date_are_named() -> None:
    from simulator.setup.ladder import unavailable_as_of

    output = (
        "error: No solution found when resolving dependencies\n"
        "  cause: Because there are no versions of contourpy and all of:\n"
        "             matplotlib>=3.6.0rc1,<=3.9.0\n"
        "hint: Wheels are required for `matplotlib` because building from source is disabled\n"
        "hint: `fonttools` was filtered by `exclude-newer` to only include packages uploaded "
        "before 2021-03-22T04:02:02Z.\n"
        "hint: Wheels are required for `--index-url` because\n"
    )
    assert unavailable_as_of(output) == ["contourpy", "matplotlib", "fonttools"]


def test_a_missing_header_wins_over_the_installers_closing_lines() -> None:
    """bitarray 2.3.5 on the base image: pip's log ends with "Failed to build installable
    wheels for some pyproject.toml based projects"; the cause is the compiler's missing
    Python.h. The repair installs python3-dev, and never a distribution named "installable"."""
    output = (
        "      bitarray/_bitarray.c:12:10: fatal error: Python.h: No such file or directory\n"
        '         12 | #include "Python.h"\n'
        "      error: command '/usr/bin/x86_64-linux-gnu-gcc' failed with exit code 1\n"
        "  ERROR: Failed building wheel for bitarray\n"
        "Failed to build bitarray\n"
        "ERROR: Failed to build installable wheels for some pyproject.toml based projects\n"
    )
    diagnosis = diagnose(output)
    assert diagnosis.category is Category.BUILD and diagnosis.subject == "Python.h"
    fix = plan(diagnosis, RepairState())
    assert fix is not None and fix.kind == "system" and fix.system_packages == ("python3-dev",)
    closing = diagnose("× Failed to build installable wheels for some pyproject.toml projects\n")
    assert plan(closing, RepairState()) is None
    uv = plan(diagnose("  × Failed to build `bitarray==2.3.5`\n"), RepairState())
    assert uv is not None and uv.requirements == ("bitarray",)


def test_a_cmake_tree_with_python_helper_scripts_is_a_c_project(tmp_path: Path) -> None:
    """cJSON (Debian source): CMakeLists.txt, C sources, and two Python scripts under tests/
    that generate data. It was taken for a Python project (pytest, then "Ran 0 tests")."""
    repo = repos.write_repo(
        tmp_path / "cjson",
        {
            "CMakeLists.txt": "project(cjson C)\nadd_library(cjson cJSON.c)\n",
            "cJSON.c": "int cjson(void) { return 0; }\n",
            "cJSON.h": "int cjson(void);\n",
            "test.c": "int main(void) { return 0; }\n",
            "tests/json_patch_tests.py": "print('generate')\n",
            "tests/helper.py": "X = 1\n",
        },
    )
    project = detect(repo)
    assert project.language == "c" and project.c_build == "cmake"
    python = repos.write_repo(
        tmp_path / "tool",
        {"Makefile": "test:\n\tpython -m pytest\n", "tool.py": "X = 1\n", "ext.c": "int x;\n"},
    )
    assert detect(python).language == "python"  # as many Python files as C ones: Python


def test_a_second_missing_system_package_is_not_taken_as_already_tried() -> None:
    """Two different system fixes are two fixes: once libffi-dev was installed for `ffi.h`, a
    build that then stops at `openssl/ssl.h` gets libssl-dev, and a module that then misses
    `libgomp.so.1` gets libgomp1 (every system fix used to share one key, so the second was
    skipped as tried)."""
    state = RepairState()
    first = plan(
        Diagnosis(Category.BUILD, "src/c.c:1:10: fatal error: ffi.h: No such file", "ffi.h"),
        state,
    )
    assert first is not None and first.system_packages == ("libffi-dev",)
    state.tried.add(first.key)
    header = plan(
        Diagnosis(
            Category.BUILD,
            "src/t.c:2:10: fatal error: openssl/ssl.h: No such file",
            "openssl/ssl.h",
        ),
        state,
    )
    assert header is not None and header.system_packages == ("libssl-dev",), header
    library = plan(Diagnosis(Category.SYSTEM_LIBRARY, "e", "libgomp.so.1"), state)
    assert library is not None and library.system_packages == ("libgomp1",), library
    state.tried.add(library.key)
    assert plan(Diagnosis(Category.SYSTEM_LIBRARY, "e", "libgomp.so.1"), state) is None


def test_a_name_missing_on_a_class_the_project_defines_is_no_removal_to_pin() -> None:
    """tornado 6.1 (stop 44's fresh pins): pytest collected its own test mixin alone,
    `'TestIOStreamMixin' object has no attribute 'io_loop'`, and the removed-name rule looked
    for a dependency release to pin. A class the project's own files define is never a
    dependency's: no fix. A class the project does not define still gets the rule."""
    sources = [
        "import unittest\n\nclass TestIOStreamMixin(object):\n    def test_x(self):\n"
        "        self.io_loop\n\n\nclass IOStreamTest(TestIOStreamMixin, unittest.TestCase):\n"
        "    pass\n",
        "def f():\n    class Inner:\n        pass\n",
    ]
    own = defined_classes(sources)
    assert own == {"TestIOStreamMixin", "IOStreamTest", "Inner"}, own
    evidence = "E   AttributeError: 'TestIOStreamMixin' object has no attribute 'io_loop'"
    mixin = Diagnosis(Category.ATTRIBUTE_ERROR, evidence, "object:TestIOStreamMixin:io_loop")
    assert plan(mixin, RepairState(own_classes=own)) is None
    fix = plan(mixin, RepairState())
    assert fix is not None and fix.kind == "removed", fix
    frame = Diagnosis(Category.ATTRIBUTE_ERROR, "E   AttributeError", "object:DataFrame:append")
    fix = plan(frame, RepairState(own_classes=own))
    assert fix is not None and fix.requirements == ("pandas<2",), fix


def test_failures_opening_files_of_their_own_folder_by_relative_paths_are_named(
    tmp_path: Path,
) -> None:
    """bitstring 3.1.9 (stop 44's fresh pins): its tests open `smalltestfile`, which sits in
    test/ beside them, by a relative path, and raised in the project's code (`file`), not the
    test's. Named when they are at least half of the failures; a file the root has, or one
    in no test's folder, is not this cause."""
    from simulator.setup.ladder import relative_reads
    from simulator.testrun import TestOutcome, TestRunResult

    root = repos.write_repo(
        tmp_path / "r",
        {"test/smalltestfile": "x", "test/test_a.py": "", "rooted.txt": "", "lib.py": ""},
    )

    def run(*messages: str) -> TestRunResult:
        tests = [
            TestOutcome(
                id=f"test/test_a.py::T::test_{i}",
                outcome="failed",
                duration=0.0,
                message=m,
                file="lib.py",
                line=3,
            )
            for i, m in enumerate(messages)
        ]
        tests.append(TestOutcome(id="test/test_a.py::T::test_ok", outcome="passed", duration=0))
        return TestRunResult("pytest", 1, 1.0, "", True, tests)

    missing = "FileNotFoundError: [Errno 2] No such file or directory: '{}'\n…"
    found = relative_reads(run(missing.format("smalltestfile"), "KeyError: 'filename'"), root)
    assert found is not None and "smalltestfile in test/" in found, found
    assert found.startswith("1 of 2 failed tests"), found
    for message in (missing.format("rooted.txt"), missing.format("nowhere.bin")):
        assert relative_reads(run(message), root) is None, message
    assert relative_reads(run(missing.format("/abs/smalltestfile")), root) is None
    two_of_five = [missing.format("smalltestfile")] * 2 + ["AssertionError"] * 3
    assert relative_reads(run(*two_of_five), root) is None


def test_a_builds_evidence_reaches_past_the_installers_wrapper_to_its_cause() -> None:
    """numexpr 2.7.3 (stop 44's fresh pins): the evidence was pip's `error:
    subprocess-exited-with-error`; the TypeError the build raised is printed under it (uv's
    `Failed to build` likewise). A compiler's first error when nothing was raised; a missing
    header stays the evidence as it was."""
    pip = (
        "  error: subprocess-exited-with-error\n\n"
        "  × Getting requirements to build wheel did not run successfully.\n"
        "  ╰─> [3 lines of output]\n"
        '      File "numpy/distutils/ccompiler.py", line 792, in new_compiler\n'
        "      TypeError: Compiler.__init__() takes from 1 to 3 positional arguments but 4 were "
        "given\n      [end of output]\n"
        "  note: This error originates from a subprocess, and is likely not a problem with pip.\n"
    )
    found = diagnose(pip)
    assert found.category is Category.BUILD, found
    assert found.evidence.startswith("TypeError: Compiler.__init__() takes from 1 to 3"), found
    assert found.evidence.endswith("(error: subprocess-exited-with-error)"), found
    uv = (
        "  × Failed to build `oldc @ file:///workspace`\n"
        "  ╰─▶ Call to `setuptools.build_meta.build_wheel` failed (exit status: 1)\n"
        "      src/a.c:3:5: error: unknown type name 'PyFoo'\n"
        "      src/a.c:9:1: error: expected ';'\n"
        "      error: command '/usr/bin/gcc' failed with exit code 1\n"
    )
    found = diagnose(uv)
    assert found.evidence.startswith("src/a.c:3:5: error: unknown type name 'PyFoo'"), found
    header = "src/c.c:1:10: fatal error: ffi.h: No such file or directory\n" + pip
    assert diagnose(header).evidence.startswith("src/c.c:1:10: fatal error: ffi.h"), header


def test_the_c_an_old_cython_generated_is_found_only_beside_its_pyx(tmp_path: Path) -> None:
    """PyWavelets 1.1.1's _pywt.c (Cython's first line, _pywt.pyx beside it) can be written
    again; editdistance 0.6.0's generated C without its .pyx, and hand-written C, cannot."""
    from simulator.setup.ladder import cython_generated

    head = "/* Generated by Cython 0.29.21 */\n"
    root = repos.write_repo(
        tmp_path / "r",
        {
            "pywt/_pywt.c": head,
            "pywt/_pywt.pyx": "",
            "pywt/_cpp.cpp": head,
            "pywt/_cpp.pyx": "",
            "ed/bycy.c": head,
            "src/hand.c": "int x;\n",
            "src/hand.pyx": "",
        },
    )
    assert cython_generated(root) == ["pywt/_cpp.cpp", "pywt/_pywt.c"]


def test_a_numpy_binary_mismatch_pins_numpy_below_2() -> None:
    """xarray 0.16.2 in the hard corpus: time travel kept pandas 1.5.3 (built for NumPy 1.x)
    while numpy took today's 2.x; pandas did not import. It was an import-error with no fix."""
    output = (
        '  File "pandas/_libs/interval.pyx", line 1, in init pandas._libs.interval\n'
        "ValueError: numpy.dtype size changed, may indicate binary incompatibility. "
        "Expected 96 from C header, got 88 from PyObject\n"
    )
    diagnosis = diagnose(output, fallback=Category.IMPORT_ERROR)
    fix = plan(diagnosis, RepairState(versions={"numpy": "2.3.1"}))
    assert fix is not None and fix.requirements == ("numpy<2",), (diagnosis, fix)
    assert plan(diagnosis, RepairState(versions={"numpy": "1.26.4"})) is None


def test_a_conftest_hook_todays_pytest_rejects_takes_the_pytest_below_its_major() -> None:
    """html5lib 1.1 in the hard corpus: its conftest's `pytest_collect_file(path, parent)` is
    refused by pytest 9 (the `path` argument is gone), so its one test command failed at
    start-up ("1 of 1 tests failed") and nothing was repaired."""
    evidence = (
        "1 of 1 tests failed; pluggy._manager.PluginValidationError: Plugin "
        "'/workspace/html5lib/tests/conftest.py' for hook 'pytest_collect_file'"
    )
    state = RepairState(versions={"pytest": "9.2.0"})
    fix = plan(Diagnosis(Category.TEST_FAILURES, evidence), state)
    assert fix is not None and fix.requirements == ("pytest<9",), fix


def test_pytest_refusing_the_projects_conftest_at_start_up_is_a_collection_failure() -> None:
    """pytest 9 refusing a conftest's hook exits 1 with a traceback and runs nothing: that was
    taken for `no-tests` (and the unittest fallback then said "Ran 0 tests"), so the repair
    above never saw the refusal."""
    output = (
        'Traceback (most recent call last):\n  File "/venv/lib/python3.11/site-packages/'
        'pluggy/_manager.py", line 448, in _verify_hook\n    raise PluginValidationError(\n'
        "pluggy._manager.PluginValidationError: Plugin '/workspace/tests/conftest.py' for hook "
        "'pytest_collect_file'\nhookimpl definition: pytest_collect_file(path, parent)\n"
        "Argument(s) {'path'} are declared in the hookimpl but can not be found in the hookspec\n"
    )
    verdict = verdict_from_tests({}, output=output, exit_code=1, timed_out=False, command="pytest")
    assert verdict.category is Category.COLLECTION, verdict.line()
    assert "conftest.py' for hook" in (verdict.evidence or ""), verdict.line()
    fix = plan(
        Diagnosis(verdict.category, verdict.evidence or ""),
        RepairState(versions={"pytest": "9.2.0"}),
    )
    assert fix is not None and fix.requirements == ("pytest<9",), fix


def test_a_parametrized_argument_is_no_plugin_fixture(tmp_path: Path) -> None:
    """opt-einsum 3.3.0 in the hard corpus parametrizes an argument named `benchmark`; it was
    taken for pytest-benchmark's fixture, the plugin went in, and pytest stopped with an
    INTERNALERROR ('DOT' must be a BenchmarkFixture instance)."""
    root = repos.write_repo(
        tmp_path / "repo",
        {
            "setup.py": "from setuptools import setup\n\nsetup(name='blas')\n",
            "tests/test_blas.py": (
                "import pytest\n\n"
                '@pytest.mark.parametrize("inp,benchmark", [("a", "DOT")])\n'
                "def test_can_blas(inp, benchmark):\n    assert benchmark\n"
            ),
        },
    )
    assert "pytest-benchmark" not in detect(root).pytest_plugins
    # Nor is a helper's parameter (its test_paths.py: `def check_path(test_output, benchmark)`).
    (root / "tests" / "test_paths.py").write_text(
        "def check_path(test_output, benchmark):\n    return test_output == benchmark\n"
    )
    assert "pytest-benchmark" not in detect(root).pytest_plugins
    (root / "tests" / "test_speed.py").write_text(
        "def test_speed(benchmark):\n    benchmark(sum, [1, 2])\n"
    )
    assert "pytest-benchmark" in detect(root).pytest_plugins


def test_a_test_run_killed_before_it_reported_is_not_no_tests() -> None:
    """lz4 3.1.10 in the hard corpus: pytest was SIGKILLed after 6 s (its tests allocate
    gigabytes; the container has a memory limit), reported nothing, and was called `no-tests`
    (then unittest's "Ran 0 tests")."""
    output = "bash: line 55:   414 Killed                  ( cd '/workspace' && pytest -q )\n"
    verdict = verdict_from_tests({}, output=output, exit_code=137, timed_out=False, command="pt")
    assert verdict.category is Category.KILLED, verdict.line()
    assert "memory limit" in (verdict.evidence or ""), verdict.line()


def test_a_conftest_refused_while_collecting_a_folder_takes_the_pytest_below_its_major() -> None:
    """html5lib 1.1 again, once it had a pytest that starts: its conftest sits in a test folder,
    so the refusal is a collection error of that folder, and pytest's summary cuts the path."""
    evidence = "ERROR html5lib/tests - pluggy._manager.PluginValidationError: Plugin '/worksp..."
    state = RepairState(versions={"pytest": "9.2.0"})
    fix = plan(Diagnosis(Category.COLLECTION, evidence), state)
    assert fix is not None and fix.requirements == ("pytest<9",), fix


def test_the_test_a_killed_verbose_run_was_in_is_the_last_id_with_no_outcome() -> None:
    """pytest -v prints a test's id when it starts and its outcome when it ends; bash's
    `Killed` line can land on the same line as the id of the test that was running."""
    from simulator.setup.oracle import killed_test

    killed = (
        "tests/test_a.py::test_one PASSED                                    [ 25%]\n"
        "tests/test_a.py::test_two[big data] PASSED                          [ 50%]\n"
        "tests/test_b.py::test_huge bash: line 9:   41 Killed    ( cd /workspace && pytest )\n"
    )
    assert killed_test(killed) == "tests/test_b.py::test_huge"
    between = "tests/test_a.py::test_one PASSED   [ 50%]\nbash: line 9:   41 Killed   ( pytest )\n"
    assert killed_test(between) is None
    assert killed_test("bash: line 9:   41 Killed    ( cd /workspace && pytest )\n") is None
