"""Which workspace paths .gitignore files hide, for everything that walks a workspace
(the file tree, quick-open, the code index). Paths are workspace-relative POSIX paths."""

from __future__ import annotations

import posixpath

import pathspec

# Never shown or walked, whatever the .gitignore files say.
ALWAYS_HIDDEN = frozenset({".git"})


def child_path(parent: str, name: str) -> str:
    return name if parent == "." else f"{parent}/{name}"


class IgnoreRules:
    """The .gitignore files found so far, each applying below its own directory."""

    def __init__(self) -> None:
        self._specs: dict[str, pathspec.GitIgnoreSpec] = {}

    def add(self, directory: str, text: str) -> None:
        """Take the .gitignore text found in `directory` ("." for the workspace root)."""
        self._specs[directory] = pathspec.GitIgnoreSpec.from_lines(text.splitlines())

    def ignored(self, path: str, is_dir: bool) -> bool:
        if posixpath.basename(path) in ALWAYS_HIDDEN:
            return True
        for directory, spec in self._specs.items():
            if directory == ".":
                rel = path
            elif path.startswith(directory + "/"):
                rel = path[len(directory) + 1 :]
            else:
                continue
            if spec.match_file(rel + "/" if is_dir else rel):
                return True
        return False
