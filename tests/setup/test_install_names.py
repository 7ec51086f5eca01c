"""The install-name rules (shared by setup and `perf compare --setup`): only the project's own
code is scanned, import names map to distributions through the table or the index, and no name
ever reaches the installer as an option."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from simulator.setup.imports import project_code_files, scan
from simulator.setup.names import (
    checked_requirement,
    install_argv,
    resolve_imports,
    valid_distribution_name,
)
from tests.setup import repos
from tests.setup.conftest import SetUp

# Test data of a formatter or linter imports made-up names on purpose, and real but unrelated
# ones; docs, examples and fixtures import what only they need.
NOT_THE_PROJECTS = {
    "tests/data/case_imports.py": "import shadok\nimport middleman\nimport numpy\nimport library\n",
    "tests/fixtures/sample.py": "import scipy\nfrom some_library import x\n",
    "tests/functional/u/unused.py": "import mymodule\n",
    "docs/conf.py": "import sphinx\n",
    "examples/demo.py": "import matplotlib.pyplot as plt\n",
    "fmt/_vendor/oldlib.py": "import requests\n",
}


def _formatter_repo(root: Path) -> Path:
    return repos.write_repo(
        root,
        {
            "pyproject.toml": repos.setuptools_pyproject("fmt", package="fmt"),
            "fmt/__init__.py": (
                "from toolz import identity\n\ndef fmt(s):\n    return identity(s)\n"
            ),
            # An underscore-prefixed import from source text: `-house` once reached the
            # installer as an option.
            "fmt/extra.py": "import _house\n",
            "tests/test_fmt.py": (
                "from fmt import fmt\n\ndef test_fmt():\n    assert fmt('a') == 'a'\n"
            ),
            **NOT_THE_PROJECTS,
        },
    )


def test_the_scan_reads_only_the_projects_own_code(tmp_path: Path) -> None:
    repo = _formatter_repo(tmp_path / "r")
    files = {str(p.relative_to(repo)) for p in project_code_files(repo)}
    assert files == {"fmt/__init__.py", "fmt/extra.py", "tests/test_fmt.py"}
    found = scan(repo)
    assert set(found.required) == {"toolz", "_house"}


def test_a_flat_project_without_metadata_keeps_its_root_modules_and_tests(tmp_path: Path) -> None:
    repo = repos.write_repo(
        tmp_path / "r",
        {
            "slug.py": "import unidecode\n",
            "test.py": "import unittest\nimport parameterized\n",
            "data/gen.py": "import faker\n",
        },
    )
    assert set(scan(repo).required) == {"unidecode", "parameterized"}


def test_names_are_validated_and_passed_after_double_dash() -> None:
    assert valid_distribution_name("ruamel.yaml") and valid_distribution_name("a")
    assert not valid_distribution_name("-house") and not valid_distribution_name("_house")
    assert checked_requirement("numpy<2; python_version<'3.13'") is not None
    for bad in ("-house", "--index-url=http://x", "-e .", "git+https://x/y", "pkg @ file:///x"):
        assert checked_requirement(bad) is None, bad
    argv = install_argv(["uv", "pip", "install"], ["-e", ".[test]"], ["toolz", "PyYAML>=5"])
    assert argv == ["uv", "pip", "install", "-e", ".[test]", "--", "toolz", "PyYAML>=5"]
    with pytest.raises(ValueError):
        install_argv(["pip", "install"], [], ["-house"])


async def test_unknown_names_go_to_the_index_never_straight_to_the_installer() -> None:
    asked: list[list[str]] = []

    async def probe(names: list[str]) -> dict[str, list[str] | None]:
        asked.append(names)
        return {"toolz": ["tlz", "toolz"], "library": ["other"], "shadok": None}

    result = await resolve_imports(["yaml", "toolz", "library", "shadok", "_house"], probe)
    assert result.distributions == {"yaml": "PyYAML", "toolz": "toolz"}
    assert set(result.unresolved) == {"library", "shadok", "_house"}
    assert asked == [["library", "shadok", "toolz"]]  # `_house` is never even asked for


@pytest.mark.docker
@pytest.mark.slow
async def test_setup_installs_nothing_from_test_data_and_no_name_as_an_option(
    tmp_path: Path, set_up: SetUp
) -> None:
    repo = _formatter_repo(tmp_path / "repo")
    session, result = await set_up(repo)
    assert result.verdict.ready, result.verdict.line()
    script = (
        "import importlib.metadata as m, json; "
        "print(json.dumps([d.metadata['Name'] for d in m.distributions()]))"
    )
    listed = await session.exec(f"{result.python} -c {shlex.quote(script)}")
    installed = {n.lower() for n in json.loads(listed.output.decode().strip().splitlines()[-1])}
    assert "toolz" in installed  # the project's own import, resolved through the index
    for unrelated in (
        "numpy",
        "scipy",
        "sphinx",
        "matplotlib",
        "requests",
        "shadok",
        "middleman",
        "library",
        "mymodule",
        "some-library",
    ):
        assert unrelated not in installed, unrelated
    assert "_house" in result.unresolved_imports
    await session.close()
    commands = [
        json.loads(line)["payload"].get("command", "")
        for line in session.trajectory_path.read_text().splitlines()[1:]
        if '"command"' in line
    ]
    installs = [c for c in commands if " install " in c]
    assert installs and not any("house" in c for c in installs), installs
    # every requirement an install names comes after `--`
    for command in installs:
        words = command.split()
        if "--" in words:
            assert all(
                not w.startswith("-") for w in words[words.index("--") + 1 :] if w not in ("2>&1",)
            ), command
