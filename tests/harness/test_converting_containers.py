"""Objects in tomlkit's shape that the corpus kept as pickles (issue 22 item 7; tomlkit 0.12.1,
stop 40: 22% of 523 cases readable): a dict subclass whose own methods convert what they are
given and whose fields hold keys that point at themselves (tomlkit's Container and SingleKey),
inside an object its own reduction rebuilds by calling its class with that container (tomlkit's
Table, whose `__init__` reads each key's name). Three defects of the expressions' references
made each fall back to a pickle: a shared key met again was a reference even once made, and
Table's `__init__` got a reference where it read `.name`; joining the references up changed the
container's content through its own `clear`/`update` (its `__delitem__` rewrote its fields); and
the fields of a dict or list subclass were never joined up (a key still held a reference to
itself, and compared unequal). A small real repository has each; its harnesses are readable (no
pickle) and catch a bug planted in each target that the repository's own tests catch."""

from __future__ import annotations

from pathlib import Path

from simulator.harness.runtime import reposim_harness_support as support
from simulator.harness.runtime.reposim_tracer import encode
from tests.conftest import RepoFactory
from tests.harness.planted import check_planted

RULES = '''\
"""A document of named values, in order, as tomlkit keeps one."""

from collections.abc import MutableMapping


class Key:
    """A key that knows its parts: itself, for a plain key (tomlkit's SingleKey._keys)."""

    def __init__(self, name):
        self.name = name
        self.parts = [self]

    def __hash__(self):
        return hash(self.name)

    def __eq__(self, other):
        return isinstance(other, Key) and other.name == self.name


class Item:
    def __init__(self, value):
        self.value = value


def item(value):
    """What a container keeps of a value (tomlkit's item()): it refuses other kinds."""
    if isinstance(value, Item):
        return value
    if isinstance(value, int | str):
        return Item(value)
    raise TypeError(f"cannot keep a {type(value).__name__}")


class Container(MutableMapping, dict):
    """Values by name, in order, with their keys; every change goes through add and remove."""

    def __init__(self):
        dict.__init__(self)
        self.map = {}
        self.body = []

    def add(self, key, value):
        """Append `value` under `key` (a Key or a name)."""
        if isinstance(key, str):
            key = Key(key)
        value = item(value)
        if key in self.map:
            raise KeyError(f"{key.name} is already there")
        self.map[key] = len(self.body)
        self.body.append((key, value))
        dict.__setitem__(self, key.name, value.value)
        return self

    def remove(self, name):
        index = self.map.pop(Key(name))
        self.body[index] = (None, None)
        dict.__delitem__(self, name)

    def __getitem__(self, name):
        return dict.__getitem__(self, name)

    def __setitem__(self, name, value):
        if name in self:
            self.remove(name)
        self.add(Key(name), value)

    def __delitem__(self, name):
        self.remove(name)

    def __iter__(self):
        return iter(dict.keys(self))

    def __len__(self):
        return dict.__len__(self)

    def __reduce_ex__(self, protocol):  # (a copy, a pickle: the fields, then the content)
        return self.__class__, (), (self.map, self.body)

    def __setstate__(self, state):
        self.map, self.body = state
        for key, value in self.body:
            if key is not None:
                dict.__setitem__(self, key.name, value.value)


class Table(dict):
    """A named table of a container's values, rebuilt by its own reduction (as tomlkit's is):
    made from the container, it reads each key's name."""

    def __init__(self, container, name):
        dict.__init__(self)
        self.container = container
        self.name = name
        for key, value in container.body:
            if key is not None:
                dict.__setitem__(self, key.name, value.value)

    def __reduce__(self):
        return Table, (self.container, self.name)

    def append(self, key, value):
        """Append `value` under `key` to the table."""
        self.container.add(key, value)
        name = key if isinstance(key, str) else key.name
        dict.__setitem__(self, name, self.container[name])
        return self
'''

TESTS = """\
import pytest

from doc.rules import Container, Key, Table


def test_add():
    document = Container()
    document.add("a", 1).add(Key("b"), "x")
    assert dict(document) == {"a": 1, "b": "x"}
    assert [key.name for key, _ in document.body] == ["a", "b"]
    with pytest.raises(KeyError):
        document.add("a", 2)


def test_table():
    table = Table(Container().add("a", 1), "t")
    table.append("b", 2).append(Key("c"), "z")
    assert dict(table) == {"a": 1, "b": 2, "c": "z"}
    assert list(table.container) == ["a", "b", "c"]
"""

PLANTED = {
    "Container.add": ("self.body.append((key, value))", "self.body.insert(0, (key, value))"),
    "Table.append": ("dict.__setitem__(self, name, ", "dict.__setitem__(self, name.upper(), "),
}

SHOWN = {
    # the container by its content and fields, its keys each pointing at itself
    "Container.add": ["S('doc.rules:Container', {'a': 1}", "parts=[R("],
    # the table by its own reduction, given the container whole
    "Table.append": ["C('doc.rules:Table', S('doc.rules:Container', {'a': 1}"],
}


async def test_converting_containers_are_rebuilt_readably_and_catch_planted_bugs(
    make_repo: RepoFactory, tmp_path: Path
) -> None:
    """Before: every case of both targets held a pickle."""
    await check_planted(make_repo, tmp_path, "doc", (RULES, TESTS), PLANTED, SHOWN)


def test_a_table_over_a_container_of_self_referring_keys_is_rebuilt_whole(
    tmp_path: Path,
) -> None:
    (tmp_path / "doc_unit").mkdir()
    (tmp_path / "doc_unit" / "__init__.py").write_text("")
    (tmp_path / "doc_unit" / "rules.py").write_text(RULES)
    import sys

    sys.path.insert(0, str(tmp_path))
    try:
        from doc_unit.rules import Container, Table  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(tmp_path))
    table = Table(Container().add("a", 1).add("b", "x"), "t")
    encoded = encode(table, 20_000)
    assert "r" in encoded, encoded
    rebuilt = eval(encoded["r"], vars(support))
    assert support.same(rebuilt, table)
    keys = [key for key, _ in rebuilt.container.body]
    assert [key.parts[0] is key for key in keys] == [True, True]
    assert list(rebuilt.container.map) == keys  # one key object in the map and in the body
    assert dict(rebuilt) == dict(rebuilt.container) == {"a": 1, "b": "x"}
