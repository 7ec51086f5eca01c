"""`reposim image bootstrap`: its errors, and where it finds the Debian mirror."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from backends.images import DEFAULT_MIRROR, configured_mirror

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-c", "from reposim.cli import main; main()"]


def test_the_mirror_comes_from_apt_sources(tmp_path: Path) -> None:
    apt = tmp_path / "apt"
    (apt / "sources.list.d").mkdir(parents=True)
    assert configured_mirror(apt) == DEFAULT_MIRROR
    (apt / "sources.list").write_text(
        "# comment\ndeb http://security.debian.org/debian-security bookworm-security main\n"
        "deb [arch=amd64] http://mirror.example/debian bookworm main\n"
    )
    assert configured_mirror(apt) == "http://mirror.example/debian"
    (apt / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\nURIs: http://deb822.example/debian\nSuites: bookworm\n\n"
        "Types: deb\nURIs: http://deb822.example/debian-security\nSuites: bookworm-security\n"
    )
    assert configured_mirror(apt) == "http://deb822.example/debian"


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a process as another user")
def test_bootstrap_without_root_says_so() -> None:
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv (util-linux) is not installed")
    result = subprocess.run(
        [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", *CLI,
         "image", "bootstrap", "--force", "--tag", "reposim/never:x"],
        capture_output=True, text=True, cwd=ROOT, check=False, timeout=120,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.startswith("reposim: error: Building an image needs root")
    assert "Traceback" not in result.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="the root check comes first")
def test_bootstrap_without_debootstrap_says_how_to_install_it() -> None:
    python_dir = str(Path(sys.executable).parent)
    result = subprocess.run(
        [*CLI, "image", "bootstrap", "--force", "--tag", "reposim/never:x"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PATH": f"{python_dir}:/nonexistent"},
        check=False,
        timeout=120,
    )
    assert result.returncode == 2
    assert "debootstrap is not installed" in result.stderr
    assert "apt-get install debootstrap" in result.stderr
