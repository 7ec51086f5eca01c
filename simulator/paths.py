"""Where RepoSim keeps things on this machine, by the XDG base directory rules (each base
directory from its $XDG_* variable when set, else the usual place under the home directory).

    config      $XDG_CONFIG_HOME/reposim   config.toml (ui, docker), keymap.toml
    data        $XDG_DATA_HOME/reposim     trajectories/, venvs/ (what `reposim setup` made)
    cache       $XDG_CACHE_HOME/reposim    workspaces/ (the local backend's scratch copies)

Read at each call, not at import, so that a test or a user changing the variable is honoured.
"""

from __future__ import annotations

import os
from pathlib import Path

APP = "reposim"


def _base(variable: str, *default: str) -> Path:
    return Path(os.environ.get(variable) or Path.home().joinpath(*default))


def config_dir() -> Path:
    return _base("XDG_CONFIG_HOME", ".config") / APP


def data_dir() -> Path:
    return _base("XDG_DATA_HOME", ".local", "share") / APP


def cache_dir() -> Path:
    return _base("XDG_CACHE_HOME", ".cache") / APP


def config_file() -> Path:
    """The user's config.toml (`[ui]`, `[docker]`)."""
    return config_dir() / "config.toml"


def trajectories_dir() -> Path:
    """Where trajectories go unless the caller names a file."""
    return data_dir() / "trajectories"


def workspaces_dir() -> Path:
    """Where the local backend puts its scratch copies of repositories."""
    return cache_dir() / "workspaces"


def venvs_dir() -> Path:
    """Where `reposim setup` leaves each repository's ready venv for later local sessions."""
    return data_dir() / "venvs"
