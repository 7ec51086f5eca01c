"""Choosing the release to pin when a dependency removed a name old code uses: the index's
releases split at the project's date, and the bisection for the newest that still has it."""

from __future__ import annotations

from simulator.setup.pins import candidates, newest_with

# matplotlib releases with a cp311 wheel (first upload), as the index lists them; seaborn
# 0.11.2 is dated 2021-08-15, before any of them.
MATPLOTLIB = [
    ("3.6.2", "2022-11-03T01:10:03.123Z"),
    ("3.7.0", "2023-02-13T23:31:12Z"),
    ("3.7.5", "2024-02-16T02:45:19Z"),
    ("3.8.0", "2023-09-15T02:26:19Z"),
    ("3.8.4", "2024-04-04T01:13:51Z"),
    ("3.9.0", "2024-05-16T03:07:09Z"),
    ("3.10.0", "2024-12-14T06:01:25Z"),
]


def test_the_release_before_the_date_comes_first_then_the_later_ones_below_the_installed() -> None:
    split = candidates(MATPLOTLIB, "2023-03-01T00:00:00+00:00", "3.10.0")
    assert split.before == "3.7.0"
    assert split.after == ("3.7.5", "3.8.0", "3.8.4", "3.9.0")
    none_then = candidates(MATPLOTLIB, "2021-08-15T00:00:00+02:00", "3.10.0")
    assert none_then.before is None and none_then.after[0] == "3.6.2"


async def test_the_bisection_finds_the_newest_release_that_still_has_the_name() -> None:
    # register_cmap went in 3.9; 3.6.2 was built for NumPy 1 and does not import under NumPy 2.
    code = {"3.6.2": 2, "3.7.0": 0, "3.7.5": 0, "3.8.0": 0, "3.8.4": 0, "3.9.0": 1}
    asked: list[str] = []

    async def has(version: str) -> int:
        asked.append(version)
        return code[version]

    releases = list(code)
    assert await newest_with(releases, has) == "3.8.4"
    assert len(asked) <= 3, asked  # a bisection, not a walk
    assert await newest_with(["3.9.0"], has) is None
