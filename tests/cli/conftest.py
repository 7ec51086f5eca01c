"""Fixtures of the command-line tests: the real `reposim` entry point in real processes."""

from __future__ import annotations

# Every command here runs away from the user's ~/.config/reposim (themes, keymap, docker).
from tests.ui.conftest import config_home  # noqa: F401
