"""Fixtures of the analysis tests: a small C repository whose answers are known."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.analysis.nav_project import NAV_REPO
from tests.conftest import project_fixtures

C_PROJECT = {
    "include/vec.h": (
        "#ifndef VEC_H\n"
        "#define VEC_H\n"
        "#define VEC_MAX 64\n"
        "#define SQUARE(x) ((x) * (x))\n"
        "typedef struct vec { double x, y; } vec_t;\n"
        "double vec_dot(vec_t a, vec_t b);\n"
        "double vec_norm2(vec_t a);\n"
        "void vec_missing(void);\n"
        "static inline double vec_sum(vec_t a) { return a.x + a.y; }\n"
        "#endif\n"
    ),
    "src/vec.c": (
        '#include "../include/vec.h"\n'
        "\n"
        "/* Dot product of two vectors. */\n"
        "double vec_dot(vec_t a, vec_t b) {\n"
        "    return a.x * b.x + a.y * b.y;\n"
        "}\n"
        "\n"
        "static double scale(double v) { return v * VEC_MAX; }\n"
        "\n"
        "double vec_norm2(vec_t a) {\n"
        "    if (a.x > 0 && a.y > 0) { return scale(vec_dot(a, a)); }\n"
        "    return SQUARE(a.x) + vec_sum(a);\n"
        "}\n"
    ),
    "src/main.c": (
        "#include <stdio.h>\n"
        '#include "vec.h"\n'
        "\n"
        "static double scale(double v) { return v / 2; }\n"
        "\n"
        "int main(void) {\n"
        "    vec_t v = {3, 4};\n"
        '    printf("%f\\n", vec_norm2(v) + scale(1));\n'
        "    vec_missing();\n"
        "    void (*cb)(void) = 0;\n"
        "    cb();\n"
        "    return 0;\n"
        "}\n"
    ),
    "src/broken.c": (
        '#include "vec.h"\n'
        "int good_before(int a) { return a + 1; }\n"
        "int broken(int a) { return a + ; }}\n"
        "int good_after(int b) { return good_before(b) * 2; }\n"
    ),
}


@pytest.fixture
def c_repo(make_repo: Callable[..., Path]) -> Path:
    return make_repo(C_PROJECT, name="vec")


nav_repo, session = project_fixtures(
    NAV_REPO, repo="nav_repo", name="navrepo", trajectory="run.jsonl"
)
