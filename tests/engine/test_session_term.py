"""A session's commands see the TERM a user's terminal has (not `dumb`), pagers that never wait
for a key, no forced colour; TERM can be set per session (--term, [session] term)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from backends.base import BackendError
from simulator.backend_factory import BackendOptions, make_backend
from simulator.user_config import ConfigError

ROOT = Path(__file__).resolve().parents[2]
PROBE = (
    'printf "%s|%s|%s|%s|" "$TERM" "$PAGER" "$GIT_PAGER" "${FORCE_COLOR-unset}"; '
    "python3 -c 'import sys; print(sys.stdout.isatty())'"
)


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    path = tmp_path / "config" / "reposim" / "config.toml"
    path.parent.mkdir(parents=True)
    return path


async def _probe(repo: Path, command: str = PROBE, **options: str) -> str:
    backend = make_backend("local", repo, options=BackendOptions(**options))
    await backend.start()
    try:
        result = await backend.exec(command, timeout=30)
    finally:
        await backend.stop()
    assert result.exit_code == 0, result.output
    return result.output.decode()


async def test_commands_see_a_real_terminal_type_and_plain_pagers(
    config: Path, sample_repo: Path
) -> None:
    # What a user's terminal has; stdout is still a pipe (so colour libraries stay plain) and
    # nothing forces colour.
    assert await _probe(sample_repo) == "xterm-256color|cat|cat|unset|False\n"
    # A pager never waits for a key: `git log` and `git diff` return at once.
    log = await _probe(sample_repo, "git log --oneline | wc -l; git help -a >/dev/null; echo ok")
    assert log.split() == ["1", "ok"]


async def test_term_is_set_per_session_by_option_then_config(
    config: Path, sample_repo: Path
) -> None:
    config.write_text('[session]\nterm = "dumb"\n')
    assert (await _probe(sample_repo, 'echo "$TERM"')) == "dumb\n"
    assert (await _probe(sample_repo, 'echo "$TERM"', term="vt100")) == "vt100\n"


def test_a_bad_term_is_one_sentence(config: Path, sample_repo: Path) -> None:
    with pytest.raises(BackendError, match="not a name like xterm-256color"):
        make_backend("local", sample_repo, options=BackendOptions(term="x; rm -rf ~"))
    config.write_text("[session]\nterm = 3\n")
    with pytest.raises(ConfigError, match=r"session\.term"):
        make_backend("local", sample_repo)
    config.write_text('[session]\ncolour = "always"\n')
    with pytest.raises(ConfigError, match="no setting 'colour'"):
        make_backend("local", sample_repo)


def test_exec_takes_term_and_refuses_a_bad_one(config: Path, sample_repo: Path) -> None:
    env = {**os.environ, "XDG_CONFIG_HOME": str(config.parent.parent)}

    def reposim(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "reposim", "exec", str(sample_repo), *args],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            timeout=120,
        )

    shown = reposim("--term", "screen-256color", "--", 'echo "TERM=$TERM"')
    assert shown.returncode == 0, shown.stderr
    assert "TERM=screen-256color" in shown.stdout
    bad = reposim("--term", "bad term", "--", "true")
    assert bad.returncode == 2
    assert "not a name like xterm-256color" in bad.stderr
    assert "Traceback" not in bad.stderr
