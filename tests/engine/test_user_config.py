"""The user's config file gives the docker defaults; a broken one is one sentence, never a crash."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from backends.base import BackendError
from backends.docker.options import DEFAULT_IMAGE, DockerOptions
from simulator.user_config import docker_options

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("REPOSIM_DOCKER_IMAGE", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    path = tmp_path / "reposim" / "config.toml"
    path.parent.mkdir()
    return path


def test_image_and_limits_come_from_the_caller_then_env_then_config(
    config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert docker_options().image == DEFAULT_IMAGE
    config.write_text('[docker]\nimage = "from/config:1"\nmemory = "4g"\ncpus = 1\ndisk = "1g"\n')
    options = docker_options()
    assert (options.image, options.memory, options.cpus, options.disk) == (
        "from/config:1",
        "4g",
        1,
        "1g",
    )
    monkeypatch.setenv("REPOSIM_DOCKER_IMAGE", "from/env:2")
    assert docker_options().image == "from/env:2"
    assert docker_options({"image": "given:3", "memory": None}).image == "given:3"
    assert docker_options({"memory": "1g"}).memory == "1g"


def test_the_default_cpu_limit_leaves_the_host_a_core() -> None:
    cores = len(os.sched_getaffinity(0))
    assert DockerOptions().cpus == max(1, cores - 1)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'[docker]\nimage = "caf\xe9"\n', r"is not UTF-8 text \(byte 0xe9 on line 2\)"),
        (b'docker = "x"\n', r"`docker` must be a table"),
        (b"[docker\n", r"is not valid TOML"),
        (b"[docker]\nmemory = 4\n", r"docker.memory must be a str, not int"),
        (b"[docker]\ncpus = true\n", r"docker.cpus must be a int or float, not bool"),
        (b"[docker]\ncolour = 'blue'\n", r"\[docker\] has no setting 'colour'"),
        (b"[docker]\ndisk = 'huge'\n", r"The disk limit 'huge' is not a size"),
    ],
)
def test_a_broken_config_is_one_sentence(config: Path, content: bytes, message: str) -> None:
    config.write_bytes(content)
    with pytest.raises(BackendError, match=message) as raised:
        docker_options()
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize("content", [b"[docker]\nimage = 'caf\xe9'\n", b'docker = "x"\n'])
def test_the_cli_says_so_without_a_traceback(config: Path, tmp_path: Path, content: bytes) -> None:
    config.write_bytes(content)
    result = subprocess.run(
        [sys.executable, "-m", "reposim", "exec", "--backend", "docker", str(tmp_path), "--",
         "true"],
        capture_output=True, text=True, cwd=ROOT, env=dict(os.environ), timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(f"reposim: error: {config}") or "config.toml" in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
