"""A small Python + C repository with known definitions and calls, for the code index and the
code-navigation UI."""

# a.py calls helper() from b.py through `from pkg.b import helper`; main.c calls util.h's square.
NAV_REPO = {
    "pkg/__init__.py": "",
    "pkg/b.py": (
        '"""Helpers."""\n\n\n'
        "def helper(x):\n"
        "    return x * 2\n\n\n"
        "class Box:\n"
        "    def size(self):\n"
        "        return helper(3)\n"
    ),
    "pkg/a.py": (
        "from pkg.b import helper\n\n\n"
        "def run(value):\n"
        "    total = helper(value)\n"
        "    return total + 1\n"
    ),
    "src/util.h": "#ifndef UTIL_H\n#define UTIL_H\nint square(int x);\n#endif\n",
    "src/util.c": '#include "util.h"\n\nint square(int x) {\n    return x * x;\n}\n',
    "src/main.c": ('#include "util.h"\n\nint main(void) {\n    return square(4);\n}\n'),
}

NAV_FILES = ["pkg/__init__.py", "pkg/a.py", "pkg/b.py", "src/main.c", "src/util.c", "src/util.h"]
"""What an index of NAV_REPO lists, sorted: every file of it, and nothing else."""
