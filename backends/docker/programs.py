"""The programs RepoSim runs inside the container, kept as package data beside these modules.

reaper.sh (the root process reaper), identity.sh + shell_start.sh (the command shell's start),
identity.sh + pty_start.sh (the terminal's), ensure_user.sh (a passwd entry for images without
our uid), file_functions.sh (file operations without python3) and file_service.py (the file
service, a module checked like the rest). Read at run time and passed to `bash -c` / `python3 -c`.
"""

from __future__ import annotations

from importlib import resources


def program_text(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")
