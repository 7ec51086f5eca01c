"""A project that needs a Python older than the image's, on a real container: Debian's PyPy
(the Python 3.9 language) is installed as root and the ladder runs again in a venv of it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from simulator.setup.detect import detect
from simulator.setup.envimage import dockerfile_text
from simulator.setup.ladder import _needs_older_python
from simulator.setup.oracle import Category, Tier, Verdict
from tests.setup import repos
from tests.setup.conftest import SetUp

PYPROJECT = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "oldsig"
version = "0.1"
classifiers = [
    "Programming Language :: Python :: 3",
    "Programming Language :: Python :: 3.6",
]

[tool.setuptools]
packages = ["oldsig"]
"""


@pytest.mark.docker
@pytest.mark.slow
async def test_a_project_that_needs_an_older_python_is_ready_on_debians_pypy(
    tmp_path: Path, set_up: SetUp
) -> None:
    """autograd 1.3 and parsimonious 0.8.1 in the hard corpus call `inspect.getargspec` (gone in
    Python 3.11) as they import, and declare Python 3.6 at the newest: python-version, "not
    fixable here", since bookworm has no python3.10 and PyPI's interpreter fetchers download
    from elsewhere. Bookworm's `pypy3` is the Python 3.9 language: installed as root, a venv of
    it runs the suite. The verdict is ready, the notes and the result say which interpreter,
    and the generated Dockerfile installs it and makes its venv from it. About 4 minutes at
    load ~15 (the PyPy install byte-compiles its standard library: 143 s at load 16)."""
    repo = repos.write_repo(
        tmp_path / "oldsig",
        {
            "pyproject.toml": PYPROJECT,
            "oldsig/__init__.py": (
                "import inspect\n\n\n"
                "def arity(f):\n    return len(inspect.getargspec(f).args)\n\n\n"
                "ARITY = arity(lambda a, b: a)\n"
            ),
            "tests/test_arity.py": "".join(
                f"from oldsig import arity\n\n\ndef test_{n}():\n"
                f"    assert arity(lambda {', '.join(f'x{i}' for i in range(n))}: 0) == {n}\n\n"
                for n in range(1, 13)
            ),
        },
    )
    session, result = await set_up(repo)
    verdict = result.verdict
    assert verdict.ready, (verdict.line(), result.notes)
    assert verdict.tests.get("passed") == 12, verdict.tests
    assert result.interpreter == "pypy3", result.interpreter
    assert "pypy3" in result.system_packages, result.system_packages
    assert any("ran again on Debian's pypy3" in n for n in result.notes), result.notes
    assert [r["fix"] for r in result.repairs if r["ok"]][:1] == ["interpreter"], result.repairs
    implementation = await session.exec(f"{result.python} -c 'import sys; print(sys.version)'")
    assert "PyPy" in implementation.output.decode(), implementation.output
    text = dockerfile_text(result, "reposim/base:bookworm-2", "0" * 40)
    assert "pypy3" in text and "--python pypy3" in text, text


def _python_version(evidence: str) -> Verdict:
    return Verdict(Tier.INSTALLED, Category.PYTHON_VERSION, evidence)


def test_which_python_version_verdicts_an_older_python_can_remove(tmp_path: Path) -> None:
    """Only a project that needs an *older* Python goes to Debian's PyPy (Python 3.9): its own
    code failing while it declares 3.10 at the newest, a python_requires that excludes 3.11 but
    admits 3.9, or (editdistance 0.6.0: a build of C generated for Pythons before 3.11) a
    python-version verdict of a project whose classifiers stop at 3.9. Not one that needs a
    newer Python, nor one that declares 3.11."""
    plain = repos.write_repo(tmp_path / "plain", {"setup.py": "from setuptools import setup\n"})
    declared = _python_version("a.py: TypeError (the project declares Python 3.9 at the newest)")
    assert _needs_older_python(declared, detect(plain))
    newer = _python_version(
        "a.py: X (the project declares Python 3.11 at the newest; this is 3.12)"
    )
    assert not _needs_older_python(newer, detect(plain))
    assert not _needs_older_python(_python_version("requires a different Python"), detect(plain))

    made: list[str] = []

    def project(python_requires: str, classifiers: str = "") -> Path:
        text = (
            "from setuptools import setup\n"
            f"setup(name='p', python_requires={python_requires!r}, classifiers=[{classifiers}])\n"
        )
        made.append(text)
        return repos.write_repo(tmp_path / f"p{len(made)}", {"setup.py": text})

    build = _python_version("fatal error: longintrepr.h: No such file or directory")
    assert _needs_older_python(build, detect(project(">=3.6,<3.11")))
    assert not _needs_older_python(build, detect(project(">=3.12")))
    assert not _needs_older_python(build, detect(project(">=3.5")))
    old_classifiers = "'Programming Language :: Python :: 3.9'"
    assert _needs_older_python(build, detect(project(">=3.5", old_classifiers)))
    new_classifiers = "'Programming Language :: Python :: 3.11'"
    assert not _needs_older_python(build, detect(project(">=3.5", new_classifiers)))
    ready = Verdict(Tier.READY, None, None)
    assert not _needs_older_python(ready, detect(project(">=3.6,<3.11")))


TWICE_CPP = """\
#include <Python.h>
#if !defined(PYPY_VERSION)
#include "longintrepr.h"
#endif

static PyObject *twice(PyObject *self, PyObject *arg) {
    return PyLong_FromLong(2 * PyLong_AsLong(arg));
}

static PyMethodDef methods[] = {{"twice", twice, METH_O, NULL}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_twice", NULL, -1, methods};

PyMODINIT_FUNC PyInit__twice(void) { return PyModule_Create(&module); }
"""


@pytest.mark.docker
@pytest.mark.slow
async def test_a_cpp_extension_pypy_cannot_link_with_todays_setuptools_builds_with_its_eras(
    tmp_path: Path, set_up: SetUp
) -> None:
    """editdistance 0.6.0 in the hard corpus (2021): its C++ includes CPython's longintrepr.h,
    gone in 3.11, so the ladder ran again on Debian's pypy3, where the compile passed and the
    link failed inside setuptools (`linker = (` ... `TypeError: 'NoneType' object is not
    subscriptable`): setuptools 72.2 links C++ with the LDCXXSHARED PyPy's sysconfig does not
    have (pypa/distutils#283). A regression in a build tool: the build takes the newest
    setuptools before it (not the date's, 58.2.0, which has no editable installs: the project's
    own tree, with no extension built in it, then shadowed the installed one). The fixture: a
    2021 commit with such a C++ extension and 12 tests. Before: none [build] on pypy3 too, not
    ready; now ready on pypy3, built with setuptools below 72.2."""
    repo = repos.write_repo(
        tmp_path / "twice",
        {
            "setup.py": (
                "from setuptools import Extension, setup\n\n"
                "setup(name='twice', version='0.1', packages=['twice'],\n"
                "      ext_modules=[Extension('twice._twice', ['twice/_twice.cpp'])],\n"
                "      classifiers=['Programming Language :: Python :: 3.9'])\n"
            ),
            "twice/__init__.py": "from twice._twice import twice\n",
            "twice/_twice.cpp": TWICE_CPP,
            "tests/test_twice.py": "import pytest\n\nfrom twice import twice\n\n\n"
            "@pytest.mark.parametrize('n', range(12))\n"
            "def test_twice(n):\n    assert twice(n) == 2 * n\n",
        },
    )
    _, result = await set_up(_dated(repo, "2021-10-09T06:05:56+00:00"))
    verdict = result.verdict
    assert verdict.ready and verdict.tests.get("passed") == 12, (verdict.line(), result.notes)
    assert result.interpreter == "pypy3", result.interpreter
    assert "setuptools<72.2" in result.build_constraints, result.build_constraints
    assert any("setuptools 72.2 removed linking C++" in n for n in result.notes), result.notes


def _dated(repo: Path, date: str) -> Path:
    """Re-commit the fixture as of `date` (author and committer)."""
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
         "--amend", "--no-edit", "--date", date],
        check=True,
        env={**os.environ, "GIT_COMMITTER_DATE": date, "GIT_AUTHOR_DATE": date},
    )  # fmt: skip
    return repo
