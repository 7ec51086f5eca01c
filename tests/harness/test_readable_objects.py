"""Object values the corpus kept as pickles that a constructor expression rebuilds (issue 22
item 7; marshmallow 3.20.1 and jsonpath-ng 1.6.0 samples, stop 36: 57% and 25% of cases
readable): a bound method of an object that holds it (ply's lexer rules, a schema's hooks),
a field named `path` (jsonpath-ng's DatumInContext), a datetime whose tzinfo's class is made
at run time (pytz: one class per zone, rebuilt by its own `__reduce__`), a functools.partial;
and a token holding the lexer the test is still reading, which checking its expression must
not read. A small real repository has each; its harnesses are readable (no pickle) and catch a
bug planted in each target that the repository's own tests catch."""

from __future__ import annotations

import datetime
import functools
from pathlib import Path

from simulator.harness.runtime import reposim_harness_support as support
from simulator.harness.runtime.reposim_tracer import encode
from tests.conftest import RepoFactory
from tests.harness.planted import check_planted

RULES = '''\
"""Events on a timeline, read from text by a small lexer."""

import datetime
import functools


class Zone(datetime.tzinfo):
    """A fixed-offset zone; its class is made on first use, as pytz makes one per zone."""

    def utcoffset(self, when):
        return datetime.timedelta(hours=self.hours)

    def dst(self, when):
        return datetime.timedelta(0)

    def tzname(self, when):
        return self.zone

    def __reduce__(self):
        return zone, (self.zone,)


_ZONES = {}


def zone(name):
    if name not in _ZONES:
        hours = {"UTC": 0, "CET": 1, "EST": -5}[name]
        _ZONES[name] = type(name, (Zone,), {"zone": name, "hours": hours})()
    return _ZONES[name]


class Event:
    def __init__(self, name, when, path):
        self.name = name
        self.when = when
        self.path = path
        self.on_change = self.touch  # a bound method of the object that holds it

    def touch(self):
        self.path = self.path + "!"


def local_time(event, name):
    """The event's time in the zone `name`."""
    return event.when.astimezone(zone(name))


def renamed(events, rename):
    """The events' names through `rename`, touching each event."""
    names = []
    for event in events:
        event.on_change()
        names.append(rename(event.name))
    return names


def prefixed(name, prefix=""):
    return prefix + name


class Lexer:
    """Words of a text, read one at a time."""

    def __init__(self, text):
        self.words = text.split()
        self.position = 0

    def __iter__(self):
        return self

    def __next__(self):
        try:
            word = self.words[self.position]
        except IndexError:
            raise StopIteration from None
        self.position += 1
        return Token(word, self)


class Token:
    def __init__(self, value, lexer):
        self.value = value
        self.lexer = lexer


def shout(token):
    """The token's word in capitals, marked when it is the lexer's last."""
    last = token.lexer.position == len(token.lexer.words)
    return token.value.upper() + ("!" if last else "")
'''

TESTS = """\
import datetime
import functools

from timeline.rules import Event, Lexer, local_time, prefixed, renamed, shout, zone


def test_local_time():
    event = Event("launch", datetime.datetime(2013, 11, 10, 14, 20, tzinfo=zone("UTC")), "a/b")
    assert local_time(event, "CET").hour == 15
    assert local_time(event, "EST").hour == 9
    assert local_time(event, "UTC").hour == 14


def test_renamed():
    when = datetime.datetime(2013, 11, 10, tzinfo=zone("CET"))
    events = [Event("a", when, "x"), Event("b", when, "y")]
    assert renamed(events, functools.partial(prefixed, prefix="n-")) == ["n-a", "n-b"]
    assert [e.path for e in events] == ["x!", "y!"]


def test_shout():
    assert [shout(t) for t in Lexer("one two three")] == ["ONE", "TWO", "THREE!"]
"""

PLANTED = {
    "local_time": ("astimezone(zone(name))", "replace(tzinfo=zone(name))"),
    "renamed": ("event.on_change()", "pass"),
    "shout": ("== len(token.lexer.words)", "== len(token.lexer.words) - 1"),
}

SHOWN = {
    # the pytz-like zone by its own reduction, the datetime by its fields
    "local_time": [
        "C('datetime:datetime', 2013, 11, 10, 14, 20, tzinfo=C('timeline.rules:zone', 'UTC'))",
        "path='a/b'",
    ],
    # a bound method inside the object that holds it; a partial by its function and arguments
    "renamed": [
        "on_change=C('builtins:getattr', R(",
        "C('functools:partial', named('timeline.rules:prefixed'), prefix='n-')",
    ],
    "shout": ["O('timeline.rules:Token', value='one'", "value='three'"],
}


async def test_object_values_are_rebuilt_readably_and_catch_planted_bugs(
    make_repo: RepoFactory, tmp_path: Path
) -> None:
    """Before: every case of local_time and renamed held a pickle, and checking a token's
    expression read the test's own lexer (the test failed under the tracer: shout had one
    call, not three)."""
    await check_planted(make_repo, tmp_path, "timeline", (RULES, TESTS), PLANTED, SHOWN)


class Owner:
    def __init__(self, path: str) -> None:
        self.path = path
        self.hook = self.run

    def run(self) -> str:
        return self.path


def test_a_bound_method_of_its_own_holder_and_a_path_field_are_rebuilt() -> None:
    owner = Owner("p")
    encoded = encode(owner, 2000)
    assert "r" in encoded, encoded
    rebuilt = eval(encoded["r"], vars(support))
    assert rebuilt.hook.__self__ is rebuilt and rebuilt.hook() == "p"
    method = encode(owner.run, 2000)  # the method on its own: its object is joined up too
    assert "r" in method, method
    assert eval(method["r"], vars(support))() == "p"


class Tables:
    """A lexer's tables, as ply keeps them: a set of token names."""

    def __init__(self, names: set[str]) -> None:
        self.names = names


def test_a_set_of_many_names_is_rebuilt_readably() -> None:
    """ply's lexers keep `lextokens_all`, a set of 26 names: the dump showed the first 24 in
    iteration order, which a rebuilt copy does not share, so every jsonpath-ng token holding
    its lexer was pickled (stop 36: 70% of cases readable)."""
    names = {f"TOKEN_{i}" for i in range(400)}
    names -= {f"TOKEN_{i}" for i in range(30, 400)}  # its table stays big: another order
    rebuilt = set(sorted(names))
    assert support.dump(rebuilt) == support.dump(names)
    encoded = encode(Tables(names), 20000)
    assert "r" in encoded, encoded
    assert support.same(eval(encoded["r"], vars(support)), Tables(rebuilt))


def test_dates_and_partials_are_written_by_their_fields() -> None:
    when = datetime.datetime(2013, 11, 10, 14, 20, 58)
    assert encode(when, 2000) == {"r": "C('datetime:datetime', 2013, 11, 10, 14, 20, 58)"}
    assert encode(datetime.date(2013, 1, 2), 2000) == {"r": "C('datetime:date', 2013, 1, 2)"}
    assert encode(functools.partial(int, base=2), 2000) == {
        "r": "C('functools:partial', named('builtins:int'), base=2)"
    }


def test_times_in_other_zones_are_other_values() -> None:
    """`==` on aware datetimes compares instants: 15:20 CET equals 14:20 UTC, and a harness
    could not tell a result in the wrong zone from the right one (the self-check said blind)."""
    utc = datetime.datetime(2013, 11, 10, 14, 20, tzinfo=datetime.UTC)
    cet = utc.astimezone(datetime.timezone(datetime.timedelta(hours=1)))
    assert utc == cet and not support.same(cet, utc)
    assert support.same(cet, cet.replace()) and not support.same(cet, cet.replace(fold=1))
    # marshmallow's get_fixed_timezone names its zones "+0100": a mutant's "-0100" survived
    plus = datetime.timezone(datetime.timedelta(hours=1), "+0100")
    minus = datetime.timezone(datetime.timedelta(hours=1), "-0100")
    assert plus == minus and not support.same(minus, plus)
    assert support.same(plus, datetime.timezone(datetime.timedelta(hours=1), "+0100"))
