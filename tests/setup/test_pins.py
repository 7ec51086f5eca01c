"""Choosing the release to pin when a dependency removed a name old code uses: the index's
releases split at the project's date, and the bisection for the newest that still has it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from simulator.setup.pins import candidates, nearest_moment, nearest_with, newest_with

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


async def test_with_no_release_before_the_date_the_nearest_later_one_that_has_it_is_chosen() -> (
    None
):
    """quantities 0.12.4 (2020-01-08) and numpy, whose first cp311 wheels are 1.23.2's: the walk
    starts at the release nearest the date, passes over one that does not import here, and stops
    at the first that has the name; a release that lacks it ends the walk (the name went before
    it); past `tries` releases that do not import, the rest is left for a bisection."""
    asked: list[str] = []

    def answers(code: dict[str, int]) -> Callable[[str], Awaitable[int]]:
        async def has(version: str) -> int:
            asked.append(version)
            return code[version]

        return has

    numpy = {"1.23.2": 2, "1.23.3": 0, "1.24.0": 0, "2.3.5": 0, "2.4.1": 1}
    found = await nearest_with(list(numpy), answers(numpy))
    assert (found.chosen, found.rest, asked) == ("1.23.3", (), ["1.23.2", "1.23.3"])
    asked.clear()
    gone = {"1.23.2": 1, "1.23.3": 0}
    assert await nearest_with(list(gone), answers(gone)) == type(found)(None, ())
    assert asked == ["1.23.2"]
    broken = {"1.0": 2, "1.1": 2, "1.2": 0, "1.3": 0}
    found = await nearest_with(list(broken), answers(broken), tries=2)
    assert (found.chosen, found.rest) == (None, ("1.2", "1.3"))


def test_the_nearest_moment_is_the_first_wheel_here_after_the_date_with_a_days_slack() -> None:
    """filterpy 1.4.5 (2018-10-10): the first cp311 wheels of matplotlib came in 3.6.2's list
    here; a release before the date does not count, and none after gives None."""
    numpy = [("1.16.0", "2019-01-14T00:00:00Z"), ("1.23.2", "2022-08-14T00:17:33.693577Z")]
    assert nearest_moment(numpy, "2019-06-01T00:00:00+00:00") == "2022-08-15T00:17:33Z"
    assert nearest_moment(MATPLOTLIB, "2018-10-10T15:35:48+00:00") == "2022-11-04T01:10:03Z"
    assert nearest_moment(numpy, "2023-01-01T00:00:00+00:00") is None


def _removed_from(*args: str) -> object:
    import json
    import subprocess
    import sys

    from simulator.setup.pins import REMOVED_FROM_SCRIPT

    proc = subprocess.run(
        [sys.executable, "-c", REMOVED_FROM_SCRIPT, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_distribution_a_removed_name_belongs_to_is_found_in_a_real_interpreter() -> None:
    """Run by this test's own interpreter, where click is installed from the index and reposim
    (the packages simulator, widgets...) from its tree. numdifftools 0.9.39 declares no
    requirement in its metadata: the class (numpy's finfo) is found among what its code
    imports, passed after the project's name."""
    module = _removed_from("click.core:gone", "")
    assert module == {"dist": "click", "module": "click.core", "object": "", "attr": "gone"}
    found = _removed_from("object:Command:gone", "no-such-project", "click")
    assert found == {"dist": "click", "module": "click", "object": "Command", "attr": "gone"}
    # A class that still has the attribute is not the one that lost it.
    assert _removed_from("object:Command:invoke", "no-such-project", "click") is None
    # Not imported by the project, not declared: not searched.
    assert _removed_from("object:Command:gone", "no-such-project") is None
    # The interpreter's own modules and the project itself are never pinned.
    assert _removed_from("inspect:getargspec", "") is None
    assert _removed_from("simulator.session:gone", "") is None


def test_names_removed_from_two_dependencies_of_an_old_project_take_the_nearest_date_first() -> (
    None
):
    """seaborn 0.11.2 (stop 41, run C): matplotlib pinned for register_cmap in round 1, then its
    failures showed pandas' iteritems and SciPy's trapz; each took a round and a run of the
    whole suite, and the nearest-date rung, which moves them all to one moment, came last.
    Names removed from two or more of the dependencies the rung resolves (pinned already, or
    shown now) take it first; names from one dependency alone (networkx 2.5: two of NumPy's)
    keep the pin."""
    from simulator.setup.ladder import _next_fix
    from simulator.setup.oracle import Tier, Verdict, failure_causes
    from simulator.setup.repair import RepairState

    iteritems = "AttributeError: 'DataFrame' object has no attribute 'iteritems'"
    nan = "AttributeError: `np.NaN` was removed in the NumPy 2.0 release. Use `np.nan` instead."
    numpy_float = "AttributeError: module 'numpy' has no attribute 'float'."

    def short(*messages: str) -> Verdict:
        causes = failure_causes(list(messages))
        first = causes[0]
        return Verdict(Tier.RUNS, first.category, first.evidence, first.subject, causes=causes)

    def state(moved: set[str] = set()) -> RepairState:  # noqa: B006 (read only)
        return RepairState(nearest=("matplotlib>=2.2", "numpy>=1.15", "pandas"), moved=set(moved))

    two = _next_fix(short(nan, iteritems), state())
    assert two is not None and two.kind == "nearest-date", two
    assert "(numpy, pandas)" in two.reason, two.reason
    after_a_pin = _next_fix(short(iteritems), state({"matplotlib"}))
    assert after_a_pin is not None and after_a_pin.kind == "nearest-date", after_a_pin
    one = _next_fix(short(nan, numpy_float), state())
    assert one is not None and one.kind == "downgrade", one
    not_old = RepairState(moved={"matplotlib"})  # nothing left at today's releases by the date
    pin = _next_fix(short(nan, iteritems), not_old)
    assert pin is not None and pin.kind == "downgrade", pin
    tried = state()
    tried.tried.add(two.key)
    assert (_next_fix(short(nan, iteritems), tried) or two).kind == "downgrade"


def test_once_the_whole_suite_was_ready_only_fixes_that_add_are_taken() -> None:
    """networkx 2.5 (stop 44): the whole suite was ready+ (95.9%) with two test modules left out
    for missing system libraries; after libglib2.0-0 the retest of those two files alone was
    short of ready, its failures named removed NumPy and pandas names, and the nearest-date rung
    it took then brought NumPy 2 and a pytest that does not start here back: `installed`. With
    the whole suite ready, a fix that moves what is installed is not taken; a Debian package
    for a library is."""
    from simulator.setup.ladder import _next_fix
    from simulator.setup.oracle import Tier, Verdict, failure_causes
    from simulator.setup.repair import RepairState

    iteritems = "AttributeError: 'DataFrame' object has no attribute 'iteritems'"
    nan = "AttributeError: `np.NaN` was removed in the NumPy 2.0 release. Use `np.nan` instead."
    xrender = "E   ImportError: libXrender.so.1: cannot open shared object file: No such file"
    causes = failure_causes([nan, iteritems])
    retest = Verdict(Tier.RUNS, causes[0].category, causes[0].evidence, causes[0].subject,
                     causes=causes)  # fmt: skip
    state = RepairState(nearest=("numpy>=1.15", "pandas"))
    moving = _next_fix(retest, state)
    assert moving is not None and moving.kind == "nearest-date", moving
    assert _next_fix(retest, state, additive_only=True) is None
    library = failure_causes([xrender])
    short = Verdict(Tier.RUNS, library[0].category, library[0].evidence, library[0].subject,
                    causes=[*library, *causes])  # fmt: skip
    added = _next_fix(short, state, additive_only=True)
    assert added is not None and added.kind == "system", added
    assert added.system_packages == ("libxrender1",), added
