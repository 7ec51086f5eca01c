"""Small repositories on disk that each need one thing of setup to reach "ready"."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path


def write_repo(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    subprocess.run(
        [
            "git",
            "-C",
            str(root),
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "init",
        ],
        check=True,
    )
    return root


def setuptools_pyproject(
    name: str,
    dependencies: list[str] | None = None,
    *,
    package: str | None = None,
    more: str = "",
) -> str:
    """A pyproject.toml that setuptools builds: project NAME 0.1 with `dependencies` (the key left
    out when None), `[tool.setuptools] packages = [PACKAGE]` when a package is named (a src
    layout names none), then `more` (other tables, as TOML)."""
    lines = [
        "[build-system]",
        'requires = ["setuptools>=61"]',
        'build-backend = "setuptools.build_meta"',
        "",
        "[project]",
        f'name = "{name}"',
        'version = "0.1"',
    ]
    if dependencies is not None:
        lines.append("dependencies = [" + ", ".join(f'"{d}"' for d in dependencies) + "]")
    if package is not None:
        lines += ["", "[tool.setuptools]", f'packages = ["{package}"]']
    text = "\n".join(lines) + "\n"
    return text + "\n" + textwrap.dedent(more).lstrip() if more else text


def package_repo(root: Path, package: str, code: str, files: dict[str, str]) -> Path:
    """A setuptools project (pyproject.toml, no dependencies) named PACKAGE whose one package
    PACKAGE has `code` as its __init__.py, plus `files` (tests, config), committed."""
    project = {
        "pyproject.toml": setuptools_pyproject(package, [], package=package),
        f"{package}/__init__.py": code,
    }
    return write_repo(root, {**project, **files})


def syntax_error_repo(root: Path) -> Path:
    """No requirement file; one module still in Python 2 syntax; another imports tabulate."""
    return write_repo(
        root,
        {
            "report/__init__.py": "",
            "report/legacy.py": "import six\n\ndef broken(:\n    return six.PY2\n",
            "report/table.py": """
                from tabulate import tabulate


                def render(rows):
                    return tabulate(rows, headers=["name", "n"], tablefmt="plain")
            """,
            "tests/test_table.py": """
                from report.table import render


                def test_render_has_headers():
                    assert render([["a", 1]]).splitlines()[0].split() == ["name", "n"]


                def test_render_has_rows():
                    assert "a" in render([["a", 1]])
            """,
        },
    )


def extras_repo(root: Path) -> Path:
    """The test dependency is declared only in [project.optional-dependencies] test."""
    return write_repo(
        root,
        {
            "pyproject.toml": """
                [build-system]
                requires = ["setuptools>=61"]
                build-backend = "setuptools.build_meta"

                [project]
                name = "wordcount"
                version = "0.1.0"
                requires-python = ">=3.9"

                [project.optional-dependencies]
                test = ["pytest", "toolz"]

                [tool.setuptools]
                packages = ["wordcount"]
            """,
            "wordcount/__init__.py": """
                def count(text):
                    counts = {}
                    for word in text.split():
                        counts[word] = counts.get(word, 0) + 1
                    return counts
            """,
            "tests/test_count.py": """
                import toolz

                from wordcount import count


                def test_count_matches_toolz_frequencies():
                    text = "a b a c"
                    assert count(text) == toolz.frequencies(text.split())
            """,
        },
    )


def plugin_repo(root: Path) -> Path:
    """A test takes the `mocker` fixture, which only pytest-mock provides."""
    return write_repo(
        root,
        {
            "setup.py": """
                from setuptools import setup

                setup(name="clock", version="1.0", py_modules=["clock"])
            """,
            "clock.py": """
                import time


                def stamp():
                    return f"t={time.time():.0f}"
            """,
            "tests/test_clock.py": """
                import clock


                def test_stamp_uses_time(mocker):
                    mocker.patch("clock.time.time", return_value=42.0)
                    assert clock.stamp() == "t=42"
            """,
        },
    )


def yaml_repo(root: Path) -> Path:
    """Imports `yaml` with no requirement file anywhere: the distribution is PyYAML."""
    return write_repo(
        root,
        {
            "settings/__init__.py": """
                import yaml


                def load(text):
                    return yaml.safe_load(text) or {}
            """,
            "tests/test_settings.py": """
                from settings import load


                def test_load_reads_mapping():
                    assert load("a: 1\\nb: [x, y]\\n") == {"a": 1, "b": ["x", "y"]}


                def test_load_empty_is_empty():
                    assert load("") == {}
            """,
        },
    )


def env_var_repo(root: Path) -> Path:
    """Its tests need APP_MODE=test in the environment: nothing the ladder can know."""
    return write_repo(
        root,
        {
            "modes/__init__.py": """
                import os


                def mode():
                    return os.environ.get("APP_MODE", "production")
            """,
            "tests/test_modes.py": """
                from modes import mode


                def test_runs_in_test_mode():
                    assert mode() == "test"
            """,
        },
    )


C_SOURCES = {
    "calc.c": "int add(int a, int b) { return a + b; }\nint mul(int a, int b) { return a * b; }\n",
    "test_calc.c": """
        #include <stdio.h>
        #include <string.h>
        int add(int, int);
        int mul(int, int);
        int main(int argc, char **argv) {
            if (argc > 1 && strcmp(argv[1], "mul") == 0) return mul(3, 4) == 12 ? 0 : 1;
            return add(2, 3) == 5 ? 0 : 1;
        }
    """,
}


def cmake_repo(root: Path) -> Path:
    """A C library with two ctest tests."""
    return write_repo(
        root,
        {
            **C_SOURCES,
            "CMakeLists.txt": """
                cmake_minimum_required(VERSION 3.10)
                project(calc C)
                enable_testing()
                add_library(calc calc.c)
                add_executable(test_calc test_calc.c)
                target_link_libraries(test_calc calc)
                add_test(NAME add COMMAND test_calc add)
                add_test(NAME mul COMMAND test_calc mul)
            """,
        },
    )


def cmake_broken_configure_repo(root: Path) -> Path:
    """zlib as Debian ships it: a CMakeLists.txt naming a file the tree lacks (zlib's
    win32/zlib1.rc), beside a hand-written ./configure that writes a working Makefile."""
    repo = write_repo(
        root,
        {
            **C_SOURCES,
            "CMakeLists.txt": """
                cmake_minimum_required(VERSION 3.10)
                project(calc C)
                enable_testing()
                add_library(calc SHARED calc.c win32/calc1.rc)
                add_executable(test_calc test_calc.c)
                target_link_libraries(test_calc calc)
                add_test(NAME add COMMAND test_calc add)
            """,
            "configure": """
                #!/bin/sh
                # Not autoconf: a script writing the Makefile from Makefile.in, as zlib's does.
                sed -e 's/@CC@/cc/' Makefile.in > Makefile && echo 'Checking for cc... Yes.'
            """,
            "Makefile.in": (
                "all: test_calc\n\n"
                "test_calc: calc.c test_calc.c\n\t@CC@ -o test_calc calc.c test_calc.c\n\n"
                "check: test_calc\n"
                "\t./test_calc add && ./test_calc mul && echo '2 passed, 0 failed'\n"
            ),
        },
    )
    (repo / "configure").chmod(0o755)
    subprocess.run(["git", "-C", str(repo), "add", "configure"], check=True)
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"],
        check=True,
    )
    return repo


def make_repo(root: Path) -> Path:
    """A C program with a Makefile whose `check` target runs its test binary."""
    return write_repo(
        root,
        {
            **C_SOURCES,
            "Makefile": (
                "all: test_calc\n\n"
                "test_calc: calc.c test_calc.c\n\tcc -o test_calc calc.c test_calc.c\n\n"
                "check: test_calc\n"
                "\t./test_calc add && ./test_calc mul && echo '2 passed, 0 failed'\n"
            ),
        },
    )
