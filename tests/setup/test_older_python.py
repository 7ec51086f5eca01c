"""A project that needs a Python older than the image's, on a real container: Debian's PyPy
(the Python 3.9 language) is installed as root and the ladder runs again in a venv of it."""

from __future__ import annotations

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
