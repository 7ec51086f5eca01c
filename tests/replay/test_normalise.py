"""Normalisation of volatile output: what is ignored by default, and how users change it."""

from __future__ import annotations

import pytest

from simulator.replay.normalise import Normaliser


def test_defaults_ignore_timings_paths_addresses_pids_and_dates() -> None:
    normalise = Normaliser().with_paths(["/home/u/.cache/reposim/workspaces/repo-abc"])
    a = (
        "<object object at 0x7f3a2c1b0e40> pid 4242 in /tmp/pytest-of-u/pytest-7/x.py"
        " ===== 3 passed in 0.42s ===== 2026-01-02T03:04:05.123Z "
        "/home/u/.cache/reposim/workspaces/repo-abc/calc/ops.py"
    )
    b = (
        "<object object at 0x7f00000b0e99> pid 17 in /tmp/pytest-of-u/pytest-9/x.py"
        " ===== 3 passed in 12.01s ===== 2026-03-04T05:06:07.999Z <workspace>/calc/ops.py"
    )
    assert normalise(a) == normalise(b)
    assert "3 passed" in normalise(a)


def test_real_differences_survive_normalisation() -> None:
    normalise = Normaliser()
    assert normalise("3 passed, 1 failed") != normalise("4 passed")
    assert normalise("exit 1") != normalise("exit 2")


def test_user_patterns_and_dropping_rules() -> None:
    assert Normaliser().with_patterns([r"seed=\d+"])("seed=1") == "<ignored>"
    kept = Normaliser().without(["hex-addresses"])
    assert kept("0xdeadbeef") == "0xdeadbeef"
    with pytest.raises(ValueError, match="not a valid regular expression"):
        Normaliser().with_patterns(["("])
    with pytest.raises(ValueError, match="Unknown normalisation rule"):
        Normaliser().without(["nope"])


def test_file_listing_times_are_volatile_but_names_and_sizes_are_not() -> None:
    normalise = Normaliser()
    before = "-rw-r--r-- 1 u u 120 Nov 22 04:10 ops.py\ndrwxr-xr-x 2 u u 4096 Jan  3  2025 old"
    after = "-rw-r--r-- 1 u u 120 Nov 22 04:11 ops.py\ndrwxr-xr-x 2 u u 4096 Jan  3  2025 old"
    assert normalise(before) == normalise(after)
    assert normalise(before) != normalise(after.replace("ops.py", "ops2.py"))
    assert normalise(before) != normalise(after.replace(" 120 ", " 121 "))
