"""Typed records that travel as JSON: one dataclass describes a record's fields once, and from
that come its dict form (`to_dict`), its checked parse (`from_dict`, one-sentence errors) and
its JSON Schema (`json_schema`).

Trajectory headers and event payloads are `Record`s (see `simulator/events.py` and
`simulator/trajectory.py`); docs/trajectory.schema.json is generated from them. A hand-written
converter rather than pydantic: the engine must start fast (the UI's first frame waits for
`simulator.events`), and the types here are plain JSON shapes.

Field conventions:
- a field without a default must be present; one with a default may be absent when read (and
  is then its default), and is always written unless its metadata says `OPTIONAL`, in which
  case it is left out while it equals its default;
- `dict[str, Any]` / `Any` fields are opaque JSON (other tools' messages, backend extras);
- `from_dict` ignores keys it does not know unless the class says `STRICT = True`.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import types
import typing
from collections.abc import Callable, Iterable, Iterator
from typing import Any, ClassVar, Literal, Self, Union

OPTIONAL = {"optional": True}
"""Field metadata: the key may be absent, and is left out when the value is its default."""


class WireError(ValueError):
    """A value that does not have the shape its record declares; the message says where."""


def optional(default: Any = None) -> Any:
    """A field that may be absent from the dict (and is omitted while it equals `default`)."""
    return dataclasses.field(default=default, metadata=OPTIONAL)


@dataclasses.dataclass(frozen=True)
class _Field:
    name: str
    hint: Any
    required: bool
    omit_default: bool
    default: Any


R = typing.TypeVar("R", bound="Record")


@typing.dataclass_transform(field_specifiers=(dataclasses.field,))
def record(cls: type[R]) -> type[R]:
    """`@dataclass` for a mutable Record, whose `__eq__` and `__repr__` are the Record base's:
    they compare and print as a dataclass's generated ones do, and generating those two for
    each class (a compile each) was 40% of what importing `simulator.events` cost the UI's
    cold start (~10 ms; issue 29)."""
    return dataclasses.dataclass(eq=False, repr=False)(cls)


class Record:
    """Base of the JSON records; subclasses are dataclasses (`@record`, or `@dataclass`)."""

    STRICT: ClassVar[bool] = False
    """Whether the schema refuses keys the record does not declare."""
    REST: ClassVar[str | None] = None
    """A `dict[str, Any]` field that keeps the keys the record does not declare (written back
    beside the declared ones), for records other programs extend (backend descriptions)."""
    TITLE: ClassVar[str] = ""

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        names = _compared(type(self))
        return tuple(getattr(self, n) for n in names) == tuple(getattr(other, n) for n in names)

    __hash__ = None  # type: ignore[assignment]  # mutable and compared by value, as dataclasses

    def __repr__(self) -> str:
        shown = (f for f in dataclasses.fields(self) if f.repr)  # type: ignore[arg-type]
        inner = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in shown)
        return f"{type(self).__qualname__}({inner})"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in _fields(type(self)):
            value = getattr(self, f.name)
            if f.name == self.REST:
                out.update(value or {})
                continue
            if f.omit_default and value == f.default:
                continue
            out[f.name] = _dump(value)
        return out

    @classmethod
    def from_dict(cls, data: Any, where: str = "") -> Self:
        fast = _fast_loader(cls)(data)
        if fast is not _FAIL:
            return fast  # type: ignore[no-any-return]
        # The careful path, only to say what is wrong (it raises).
        where = where or _title(cls)
        if not isinstance(data, dict):
            raise WireError(f"{where} must be an object, not {_json_type(data)}")
        values: dict[str, Any] = {}
        fields = _fields(cls)
        if cls.REST is not None:
            known = {f.name for f in fields}
            values[cls.REST] = {k: v for k, v in data.items() if k not in known}
        for f in fields:
            if f.name == cls.REST:
                continue
            if f.name not in data:
                if f.required:
                    raise WireError(f"{where} has no `{f.name}`")
                continue
            values[f.name] = _load(f.hint, data[f.name], f"{where}: `{f.name}`")
        return cls(**values)

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        properties: dict[str, Any] = {}
        required: list[str] = []
        for f in _fields(cls):
            if f.name == cls.REST:
                continue
            properties[f.name] = _schema(f.hint)
            if f.required:
                required.append(f.name)
        schema: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            schema["required"] = required
        schema["additionalProperties"] = not cls.STRICT
        return schema


_FAIL = object()
"""What a fast loader returns for a value of the wrong shape (no exception, no message)."""
_LOADERS: dict[Any, Any] = {}


def _fast_loader(hint: Any) -> Any:
    """A function value -> converted value, or _FAIL: the checks of `_load` compiled once per
    type, without building messages (trajectories are read a line at a time, 100k lines)."""
    key = hint
    try:
        cached = _LOADERS.get(key)
    except TypeError:  # an unhashable annotation
        cached, key = None, None
    if cached is not None:
        return cached
    loader = _compile(hint)
    if key is not None:
        _LOADERS[key] = loader
    return loader


def _compile(hint: Any) -> Any:
    fail = _FAIL
    if hint is Any:
        return lambda v: v
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        options = [_fast_loader(a) for a in typing.get_args(hint)]

        def union(v: Any) -> Any:
            for option in options:
                out = option(v)
                if out is not fail:
                    return out
            return fail

        return union
    if hint is type(None):
        return lambda v: v if v is None else fail
    if hint is bool:
        return lambda v: v if type(v) is bool else fail
    if hint is int:
        return lambda v: v if type(v) is int else fail
    if hint is float:
        return lambda v: v if type(v) is float else float(v) if type(v) is int else fail
    if hint is str:
        return lambda v: v if type(v) is str else fail
    if origin is Literal:
        allowed = typing.get_args(hint)
        return lambda v: v if v in allowed else fail
    if origin is list:
        (item,) = typing.get_args(hint) or (Any,)
        if item is Any:
            return lambda v: list(v) if type(v) is list else fail
        each = _fast_loader(item)

        def listed(v: Any) -> Any:
            if type(v) is not list:
                return fail
            out = [each(i) for i in v]
            return fail if any(o is fail for o in out) else out

        return listed
    if origin is tuple:
        parts = [_fast_loader(a) for a in typing.get_args(hint)]

        def tupled(v: Any) -> Any:
            if type(v) is not list or len(v) != len(parts):
                return fail
            out = tuple(p(i) for p, i in zip(parts, v, strict=True))
            return fail if any(o is fail for o in out) else out

        return tupled
    if origin is dict or hint is dict:
        args = typing.get_args(hint)
        if not args or args[1] is Any:
            return lambda v: dict(v) if type(v) is dict else fail
        value_loader = _fast_loader(args[1])

        def mapped(v: Any) -> Any:
            if type(v) is not dict:
                return fail
            out = {k: value_loader(i) for k, i in v.items()}
            return fail if any(o is fail for o in out.values()) else out

        return mapped
    if isinstance(hint, type) and issubclass(hint, Record):
        return _record_loader(hint)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        members = {m.value: m for m in hint}
        return lambda v: members.get(v, fail) if isinstance(v, str | int) else fail
    raise TypeError(f"unsupported field type {hint!r}")  # pragma: no cover


def _record_loader(cls: type[Record]) -> Any:
    fail = _FAIL
    rest = cls.REST
    known = {f.name for f in _fields(cls)}
    plan = [(f.name, _fast_loader(f.hint), f.required) for f in _fields(cls) if f.name != rest]

    def record(data: Any) -> Any:
        if type(data) is not dict:
            return fail
        values: dict[str, Any] = {}
        for name, loader, required in plan:
            if name in data:
                value = loader(data[name])
                if value is fail:
                    return fail
                values[name] = value
            elif required:
                return fail
        if rest is not None:
            values[rest] = {k: v for k, v in data.items() if k not in known}
        return cls(**values)

    return record


_FIELDS: dict[type[Record], tuple[_Field, ...]] = {}
_COMPARED: dict[type[Record], tuple[str, ...]] = {}


def _compared(cls: type[Record]) -> tuple[str, ...]:
    """The fields `==` compares (as a dataclass's: those with `compare`)."""
    names = _COMPARED.get(cls)
    if names is None:
        fields = dataclasses.fields(cls)  # type: ignore[arg-type]
        _COMPARED[cls] = names = tuple(f.name for f in fields if f.compare)
    return names


def _fields(cls: type[Record]) -> tuple[_Field, ...]:
    cached = _FIELDS.get(cls)
    if cached is not None:
        return cached
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        optional_key = bool(f.metadata.get("optional"))
        has_default = (
            f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        )
        default = f.default if f.default is not dataclasses.MISSING else None
        if f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        out.append(
            _Field(
                name=f.name,
                hint=hints[f.name],
                required=not has_default,
                omit_default=optional_key,
                default=default,
            )
        )
    _FIELDS[cls] = result = tuple(out)
    return result


def _title(cls: type[Record]) -> str:
    return cls.TITLE or cls.__name__


def _dump(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Record):
        return value.to_dict()
    if isinstance(value, list | tuple):
        return [_dump(v) for v in value]
    if isinstance(value, dict):
        return {k: _dump(v) for k, v in value.items()}
    return value


def _clip(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _describe(hint: Any) -> str:
    origin = typing.get_origin(hint)
    if hint is str:
        return "a string"
    if hint is int:
        return "an integer"
    if hint is float:
        return "a number"
    if hint is bool:
        return "a boolean"
    if hint is type(None):
        return "null"
    if origin is list:
        return "a list"
    if origin is dict or hint is dict:
        return "an object"
    if origin is Literal:
        return " or ".join(repr(a) for a in typing.get_args(hint))
    if origin in (Union, types.UnionType):
        return " or ".join(_describe(a) for a in typing.get_args(hint))
    if isinstance(hint, type) and issubclass(hint, Record):
        return "an object"
    return "a JSON value"


def _load(hint: Any, value: Any, where: str) -> Any:
    if hint is Any:
        return value
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        for arg in typing.get_args(hint):
            try:
                return _load(arg, value, where)
            except WireError:
                continue
        raise WireError(f"{where} must be {_describe(hint)}, not {_json_type(value)}")
    if hint is type(None):
        if value is None:
            return None
    elif hint is bool:
        if isinstance(value, bool):
            return value
    elif hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif hint is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value) if isinstance(value, int) else value
    elif hint is str:
        if isinstance(value, str):
            return value
    elif origin is Literal:
        if value in typing.get_args(hint):
            return value
    elif origin is list:
        if isinstance(value, list):
            (item,) = typing.get_args(hint) or (Any,)
            if item is Any:
                return list(value)
            return [_load(item, v, f"{where}[{i}]") for i, v in enumerate(value)]
    elif origin is tuple:
        args = typing.get_args(hint)
        if isinstance(value, list) and len(value) == len(args):
            return tuple(
                _load(a, v, f"{where}[{i}]")
                for i, (a, v) in enumerate(zip(args, value, strict=True))
            )
    elif origin is dict or hint is dict:
        if isinstance(value, dict):
            args = typing.get_args(hint)
            if not args or args[1] is Any:
                return dict(value)
            return {k: _load(args[1], v, f"{where}.{k}") for k, v in value.items()}
    elif isinstance(hint, type) and issubclass(hint, Record):
        return hint.from_dict(value, where)
    elif isinstance(hint, type) and issubclass(hint, enum.Enum):
        try:
            return hint(value)
        except ValueError:
            choices = " or ".join(repr(m.value) for m in hint)
            raise WireError(f"{where} must be {choices}, not {_clip(repr(value))}") from None
    else:  # pragma: no cover - a declaration this module does not support
        raise TypeError(f"unsupported field type {hint!r}")
    raise WireError(f"{where} must be {_describe(hint)}, not {_json_type(value)}")


def _schema(hint: Any) -> dict[str, Any]:
    if hint is Any:
        return {}
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        return {"anyOf": [_schema(a) for a in typing.get_args(hint)]}
    if hint is type(None):
        return {"type": "null"}
    if hint is bool:
        return {"type": "boolean"}
    if hint is int:
        return {"type": "integer"}
    if hint is float:
        return {"type": "number"}
    if hint is str:
        return {"type": "string"}
    if origin is Literal:
        return {"enum": list(typing.get_args(hint))}
    if origin is list:
        (item,) = typing.get_args(hint) or (Any,)
        return {"type": "array", "items": _schema(item)}
    if origin is tuple:
        args = typing.get_args(hint)
        return {
            "type": "array",
            "prefixItems": [_schema(a) for a in args],
            "minItems": len(args),
            "maxItems": len(args),
        }
    if origin is dict or hint is dict:
        args = typing.get_args(hint)
        if not args or args[1] is Any:
            return {"type": "object"}
        return {"type": "object", "additionalProperties": _schema(args[1])}
    if isinstance(hint, type) and issubclass(hint, Record):
        return {"$ref": f"#/$defs/{hint.__name__}"}
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return {"enum": [m.value for m in hint]}
    raise TypeError(f"unsupported field type {hint!r}")  # pragma: no cover


def referenced(record: type[Record]) -> list[type[Record]]:
    """`record` and every record type its fields refer to (for a schema's `$defs`)."""
    seen: list[type[Record]] = []

    def visit(hint: Any) -> None:
        if isinstance(hint, type) and issubclass(hint, Record):
            if hint in seen:
                return
            seen.append(hint)
            for f in _fields(hint):
                visit(f.hint)
            return
        for arg in typing.get_args(hint):
            visit(arg)

    visit(record)
    return seen


__all__ = ["OPTIONAL", "Record", "WireError", "optional", "referenced"]


def json_lines(
    lines: Iterable[str], not_json: Callable[[int, str], Exception], *, start: int = 1
) -> Iterator[tuple[int, Any]]:
    """(line number, value) of each non-blank line of a JSON-lines text, numbered from `start`;
    a line that is not JSON raises `not_json(number, the parser's message)`."""
    for number, line in enumerate(lines, start=start):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise not_json(number, exc.msg) from None
        yield number, value
