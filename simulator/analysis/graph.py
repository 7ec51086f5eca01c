"""Name resolution and the call graph, for Python and C.

Every call site becomes an `Edge`: resolved to a symbol id (`path::qualname`) of this
repository, or left unresolved with the reason (a builtin, an external module, a local
variable, a call through a pointer, an ambiguous C symbol...). Nothing is guessed: a name
that could mean two things stays unresolved and says so.
"""

from __future__ import annotations

import builtins
import posixpath
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import NamedTuple

from simulator.analysis.model import (
    ClassRecord,
    FileRecord,
    FunctionRecord,
    GlobalRecord,
    ImportRecord,
    Lang,
)

BUILTINS = frozenset(dir(builtins))
# Method names the builtin types have: `x.get()` on a value of unknown type is as likely a dict.
BUILTIN_METHODS = frozenset(
    name
    for kind in (object, str, bytes, int, float, complex, list, dict, set, frozenset, tuple)
    for name in dir(kind)
)
MAX_DEPTH = 12  # re-exports followed through at most this many modules


@dataclass(frozen=True, slots=True)
class Target:
    """A symbol of the repository a name resolves to."""

    kind: str  # function, method, class, module, variable, macro, function-macro, type, ...
    path: str
    name: str  # qualname in the file (module name for modules)
    line: int
    end_line: int
    id: str  # "path::qualname" ("path" alone for a module)
    by_name: bool = False  # a method found by its name alone (the only class defining it)


@dataclass(frozen=True, slots=True)
class Unresolved:
    reason: str


@dataclass(frozen=True, slots=True)
class External:
    """A name that comes from outside the repository (`os.path.join`)."""

    dotted: str


@dataclass(frozen=True, slots=True)
class Instance:
    """`self`/`cls` in a method: attribute lookups go to the class and its bases."""

    cls: Target


Value = Target | Unresolved | External | Instance


class Edge(NamedTuple):
    """One call site and what it resolved to (a tuple: cheap to build and to pickle)."""

    caller: str
    expr: str
    line: int
    col: int
    target: str | None  # symbol id, None when unresolved
    target_kind: str | None  # function, method, class (instantiation), macro, function-macro
    reason: str | None  # why it is unresolved (or "external: os.path.join")

    def as_dict(self) -> dict[str, object]:
        return {
            "expr": self.expr,
            "line": self.line,
            "col": self.col,
            "target": self.target,
            "kind": self.target_kind,
            "reason": self.reason,
        }


def symbol_id(path: str, qualname: str) -> str:
    return f"{path}::{qualname}"


@dataclass(slots=True)
class _PyModule:
    record: FileRecord
    names: dict[str, Value | ImportRecord | GlobalRecord] = field(default_factory=dict)
    stars: list[str] = field(default_factory=list)


class CallGraph:
    """Symbols of a set of extracted files, name resolution and resolved call edges."""

    def __init__(self, files: Iterable[FileRecord]) -> None:
        self.files: dict[str, FileRecord] = {f.path: f for f in files}
        self.functions: dict[str, FunctionRecord] = {}
        self.classes: dict[str, ClassRecord] = {}
        self.modules: dict[str, _PyModule] = {}
        self._by_path: dict[str, _PyModule] = {}
        # Names bound inside a function (nested defs, imports), by the function's symbol id.
        self._locals: dict[str, dict[str, Value | ImportRecord]] = defaultdict(dict)
        self._c_defs: dict[str, list[str]] = defaultdict(list)  # name -> non-static ids
        self._c_headers: dict[str, list[str]] = defaultdict(list)  # basename -> header paths
        self._visible: dict[str, list[str]] = {}
        self._c_tables: dict[str, dict[str, Target]] = {}
        self._mro: dict[str, list[Target]] = {}
        self._external_bases: dict[str, list[str]] = {}
        # Module-level resolutions, by (path, expr): most calls name module-level things.
        self._cache: dict[tuple[str, str], Value] = {}
        self._scope_names: dict[str, frozenset[str]] = {}
        self._param_cache: dict[str, frozenset[str]] = {}
        self._targets: dict[str, Target] = {}
        self._attr_cache: dict[tuple[str, str, bool], Value] = {}
        self._method_classes: dict[str, Target | None] = {}
        self._typing: set[tuple[str, str]] = set()  # local variables being typed right now
        self._methods_named: dict[str, list[str]] = defaultdict(list)  # name -> Python method ids
        self.edges: dict[str, list[Edge]] = {}
        self.callers_of: dict[str, list[Edge]] = defaultdict(list)
        for record in self.files.values():
            self._index(record)
        for record in self.files.values():
            for fn in record.functions:
                self.edges[fn.id] = self._resolve_calls(record, fn)
        for edges in self.edges.values():
            for edge in edges:
                if edge.target is not None:
                    self.callers_of[edge.target].append(edge)

    # ----------------------------------------------------------------- indexing

    def _index(self, record: FileRecord) -> None:
        seen: set[str] = set()
        for fn in record.functions:
            ident = symbol_id(record.path, fn.qualname)
            if ident in seen:  # a redefinition (`if X: def f` / `else: def f`)
                ident = f"{ident}@{fn.def_line}"
            seen.add(ident)
            fn.id = ident
            self.functions[ident] = fn
        for cls in record.classes:
            self.classes.setdefault(symbol_id(record.path, cls.qualname), cls)
        if record.lang is Lang.PYTHON:
            self._index_python(record)
        else:
            for fn in record.functions:
                if not fn.is_static:
                    self._c_defs[fn.name].append(fn.id)
            if record.path.endswith(".h"):
                self._c_headers[PurePosixPath(record.path).name].append(record.path)

    def _index_python(self, record: FileRecord) -> None:
        module = _PyModule(record)
        # Lowest priority first, so that definitions win over imports over assignments.
        for glob in record.globals:
            module.names[glob.name] = glob
        for imp in record.imports:
            if imp.star:
                module.stars.append(imp.module)
            elif imp.scope is None:
                module.names[imp.name] = imp
            else:
                self._locals[symbol_id(record.path, imp.scope)][imp.name] = imp
        for cls in record.classes:
            target = self._class_target(record, cls)
            if "." not in cls.qualname:
                module.names[cls.name] = target
            elif cls.parent_qualname is not None and cls.qualname.startswith(
                cls.parent_qualname + ".<locals>."
            ):
                self._locals[symbol_id(record.path, cls.parent_qualname)][cls.name] = target
        for fn in record.functions:
            target = self._function_target(fn)
            if fn.kind == "method":
                self._methods_named[fn.name].append(fn.id)
            if fn.kind == "function" and fn.parent_qualname is None:
                existing = module.names.get(fn.name)
                if not (isinstance(existing, Target) and existing.kind == "function"):
                    module.names[fn.name] = target
            elif fn.kind == "function" and fn.parent_qualname is not None:
                self._locals[symbol_id(record.path, fn.parent_qualname)].setdefault(fn.name, target)
        self._by_path[record.path] = module
        if record.module and record.module not in self.modules:
            self.modules[record.module] = module

    def _function_target(self, fn: FunctionRecord) -> Target:
        target = self._targets.get(fn.id)
        if target is None:
            target = Target(fn.kind, fn.path, fn.qualname, fn.def_line, fn.end_line, fn.id)
            self._targets[fn.id] = target
        return target

    def _class_target(self, record: FileRecord, cls: ClassRecord) -> Target:
        ident = symbol_id(record.path, cls.qualname)
        target = self._targets.get(ident)
        if target is None:
            target = Target("class", record.path, cls.qualname, cls.start_line, cls.end_line, ident)
            self._targets[ident] = target
        return target

    def _module_target(self, name: str) -> Target:
        rec = self.modules[name].record
        return Target("module", rec.path, name, 1, max(rec.lines, 1), rec.path)

    # ----------------------------------------------------------- Python names

    def resolve_python(self, record: FileRecord, fn: FunctionRecord | None, expr: str) -> Value:
        """What the dotted expression `expr`, written inside fn (or at module level), names."""
        if expr.startswith("super()."):
            return self._super(record, fn, expr[len("super().") :])
        parts = expr.split(".")
        key: tuple[str, str] | None = None
        if fn is None or parts[0] not in self._bound_in(fn):
            key = (record.path, expr)
            cached = self._cache.get(key)
            if cached is not None:
                return cached
        if not all(p.isidentifier() for p in parts):
            value: Value = Unresolved("a computed callee (not a plain or dotted name)")
        else:
            value = self._lookup_name(record, fn, parts[0])
            if len(parts) == 2 and self._untyped(value, parts[0]):
                value = self._method_by_name(parts[1], value)
            else:
                for attr in parts[1:]:
                    value = self._attribute(value, attr)
        if key is not None:
            self._cache[key] = value
        return value

    @staticmethod
    def _untyped(value: Value, name: str) -> bool:
        """Whether `name` is a parameter or local variable whose type is not known."""
        return isinstance(value, Unresolved) and value.reason in (
            f"`{name}` is a parameter",
            f"`{name}` is a local variable",
            f"`{name}` is a local variable or not defined",
        )

    def _method_by_name(self, attr: str, unknown: Value) -> Value:
        """`value.attr()` on a value of unknown type: the method `attr` when exactly one class
        of the repository defines it (and no builtin type has it), else `unknown` as it was."""
        if attr.startswith("__") or attr in BUILTIN_METHODS:
            return unknown
        found = self._methods_named.get(attr, [])
        if len(found) != 1:
            return unknown
        fn = self.functions[found[0]]
        return Target(fn.kind, fn.path, fn.qualname, fn.def_line, fn.end_line, fn.id, True)

    def _bound_in(self, fn: FunctionRecord) -> frozenset[str]:
        """Names bound by fn and the functions around it (parameters, nested defs, imports)."""
        names = self._scope_names.get(fn.id)
        if names is None:
            own = (
                set(self._params(fn))
                | set(self._locals.get(symbol_id(fn.path, fn.qualname), ()))
                | set(fn.assigns)
            )
            parent = (
                self.functions.get(symbol_id(fn.path, fn.parent_qualname))
                if fn.parent_qualname
                else None
            )
            if parent is not None:
                own |= self._bound_in(parent)
            names = self._scope_names[fn.id] = frozenset(own)
        return names

    def _method_class(self, fn: FunctionRecord | None) -> Target | None:
        if fn is None:
            return None
        if fn.id not in self._method_classes:
            self._method_classes[fn.id] = self._method_class_uncached(fn)
        return self._method_classes[fn.id]

    def _method_class_uncached(self, fn: FunctionRecord | None) -> Target | None:
        while fn is not None:
            if fn.kind == "method" and fn.class_qualname is not None:
                cls_id = symbol_id(fn.path, fn.class_qualname)
                cls = self.classes.get(cls_id)
                if cls is None:
                    return None
                return self._class_target(self.files[fn.path], cls)
            fn = (
                self.functions.get(symbol_id(fn.path, fn.parent_qualname))
                if fn.parent_qualname
                else None
            )
        return None

    def _lookup_name(self, record: FileRecord, fn: FunctionRecord | None, name: str) -> Value:
        scope = fn
        while scope is not None:
            local = self._locals.get(symbol_id(scope.path, scope.qualname), {}).get(name)
            if local is not None:
                return self._bind(record, local, 0)
            if name in self._params(scope):
                if (
                    scope.kind == "method"
                    and name in ("self", "cls")
                    and scope.params[:1] == [name]
                ):
                    cls = self._method_class(scope)
                    if cls is not None:
                        return cls if name == "cls" else Instance(cls)
                return Unresolved(f"`{name}` is a parameter")
            if name in scope.assigns:
                return self._local_variable(record, scope, name)
            scope = (
                self.functions.get(symbol_id(scope.path, scope.parent_qualname))
                if scope.parent_qualname
                else None
            )
        return self._module_member(self._by_path[record.path], name, 0, allow_builtin=True)

    def _local_variable(self, record: FileRecord, fn: FunctionRecord, name: str) -> Value:
        """An instance when the name is only ever bound to `Class(...)` in fn, else unknown."""
        callee = fn.assigns.get(name)
        key = (fn.id, name)
        if callee is not None and key not in self._typing:  # `a = b(); b = a()` loops
            self._typing.add(key)
            try:
                value = self.resolve_python(record, fn, callee)
            finally:
                self._typing.discard(key)
            if isinstance(value, Target) and value.kind == "class":
                return Instance(value)
        return Unresolved(f"`{name}` is a local variable")

    def _module_member(
        self, module: _PyModule, name: str, depth: int, *, allow_builtin: bool = False
    ) -> Value:
        entry = module.names.get(name)
        if entry is not None:
            return self._bind(module.record, entry, depth)
        for star in module.stars:
            other = self.modules.get(star)
            if other is not None and depth < MAX_DEPTH and other is not module:
                found = self._module_member(other, name, depth + 1)
                if not isinstance(found, Unresolved):
                    return found
        if allow_builtin and name in BUILTINS:
            return External(f"builtins.{name}")
        external_stars = [s for s in module.stars if s not in self.modules]
        if external_stars:
            return External(f"{external_stars[0]}.{name}")
        if allow_builtin:
            return Unresolved(f"`{name}` is a local variable or not defined")
        return Unresolved(f"module {module.record.module} defines no `{name}`")

    def _bind(
        self, record: FileRecord, entry: Value | ImportRecord | GlobalRecord, depth: int
    ) -> Value:
        if isinstance(entry, GlobalRecord):
            return Target(
                "variable",
                record.path,
                entry.name,
                entry.start_line,
                entry.end_line,
                symbol_id(record.path, entry.name),
            )
        if isinstance(entry, ImportRecord):
            if depth >= MAX_DEPTH:
                return Unresolved("import cycle")
            if entry.attr is None:
                aliased = entry.module.split(".")[0] != entry.name
                return self._module(entry.module if aliased else entry.name)
            submodule = f"{entry.module}.{entry.attr}"
            if submodule in self.modules:
                return self._module_target(submodule)
            source = self.modules.get(entry.module)
            if source is None:
                return External(submodule)
            if source.record is record and entry.attr == entry.name:
                return Unresolved(f"`{entry.name}` imports itself")
            return self._module_member(source, entry.attr, depth + 1)
        return entry

    def _module(self, name: str) -> Value:
        return self._module_target(name) if name in self.modules else External(name)

    def _attribute(self, value: Value, attr: str) -> Value:
        if isinstance(value, Unresolved):
            return value
        if isinstance(value, External):
            return External(f"{value.dotted}.{attr}")
        if isinstance(value, Instance):
            return self._class_attribute(value.cls, attr, skip_self=False)
        if value.kind == "module":
            sub = f"{value.name}.{attr}"
            if sub in self.modules:
                return self._module_target(sub)
            return self._module_member(self.modules[value.name], attr, 0)
        if value.kind == "class":
            return self._class_attribute(value, attr, skip_self=False)
        return Unresolved(f"`{attr}` is looked up on a {value.kind} ({value.name})")

    def _params(self, fn: FunctionRecord) -> frozenset[str]:
        names = self._param_cache.get(fn.id)
        if names is None:
            names = self._param_cache[fn.id] = frozenset(
                p.lstrip("*") for p in fn.params if p not in ("*", "/")
            )
        return names

    def _class_attribute(self, cls: Target, attr: str, *, skip_self: bool) -> Value:
        key = (cls.id, attr, skip_self)
        found = self._attr_cache.get(key)
        if found is None:
            found = self._attr_cache[key] = self._class_attribute_uncached(cls, attr, skip_self)
        return found

    def _class_attribute_uncached(self, cls: Target, attr: str, skip_self: bool) -> Value:
        for klass in self.mro(cls)[1 if skip_self else 0 :]:
            ident = symbol_id(klass.path, f"{klass.name}.{attr}")
            fn = self.functions.get(ident)
            if fn is not None:
                return self._function_target(fn)
            nested = self.classes.get(ident)
            if nested is not None:
                return self._class_target(self.files[klass.path], nested)
        external = self._external_bases.get(cls.id)
        if external:
            return External(f"{external[0]}.{attr}")
        return Unresolved(f"no method `{attr}` on {cls.name} or its bases in this repository")

    def _super(self, record: FileRecord, fn: FunctionRecord | None, rest: str) -> Value:
        cls = self._method_class(fn)
        if cls is None:
            return Unresolved("super() outside a method")
        parts = rest.split(".")
        value = self._class_attribute(cls, parts[0], skip_self=True)
        for attr in parts[1:]:
            value = self._attribute(value, attr)
        return value

    def mro(self, cls: Target) -> list[Target]:
        """The class and its bases found in the repository, depth first (close to C3)."""
        cached = self._mro.get(cls.id)
        if cached is not None:
            return cached
        self._mro[cls.id] = [cls]  # guards against cycles while computing
        order = [cls]
        external: list[str] = []
        record = self.files[cls.path]
        klass = self.classes.get(cls.id)
        for base in klass.bases if klass is not None else []:
            value = self.resolve_python(record, None, base)
            if isinstance(value, Target) and value.kind == "class":
                for item in self.mro(value):
                    if item not in order:
                        order.append(item)
                external.extend(self._external_bases.get(value.id, []))
            elif isinstance(value, External) and value.dotted != "builtins.object":
                external.append(value.dotted)
        self._mro[cls.id] = order
        self._external_bases[cls.id] = external
        return order

    def member(self, cls: Target, attr: str) -> Value:
        """What `attr` names on a class (methods and nested classes, bases included)."""
        return self._class_attribute(cls, attr, skip_self=False)

    def method_class(self, fn: FunctionRecord | None) -> Target | None:
        """The class whose method fn is (or is nested in), if any."""
        return self._method_class(fn)

    def constructor(self, cls: Target) -> Target | None:
        init = self._class_attribute(cls, "__init__", skip_self=False)
        return init if isinstance(init, Target) else None

    # --------------------------------------------------------------- C names

    def visible_headers(self, path: str) -> list[str]:
        """Repository headers a C file includes, transitively, itself included."""
        cached = self._visible.get(path)
        if cached is not None:
            return cached
        order = [path]
        self._visible[path] = order
        i = 0
        while i < len(order):
            record = self.files.get(order[i])
            i += 1
            for inc in record.imports if record is not None else []:
                header = self.find_header(record.path if record else path, inc.module)
                if header is not None and header not in order:
                    order.append(header)
        return order

    def find_header(self, including: str, name: str) -> str | None:
        """The repository header `#include NAME` in file `including` refers to, if unique."""
        base = PurePosixPath(including).parent
        for candidate in (base / name, PurePosixPath(name)):
            text = posixpath.normpath(str(candidate))
            if text in self.files:
                return text
        matches = [
            h
            for h in self._c_headers.get(PurePosixPath(name).name, [])
            if h == name or h.endswith("/" + name)
        ]
        return matches[0] if len(matches) == 1 else None

    def resolve_c(self, record: FileRecord, name: str) -> Value:
        if not name.isidentifier():
            return Unresolved("a call through a pointer or an expression")
        visible = self.visible_headers(record.path)
        for path in visible:
            found = self._c_symbols(path).get(name)
            if found is not None and (
                path == record.path
                or path.endswith(".h")
                or found.kind not in ("function", "method")
            ):
                return found
        candidates = self._c_defs.get(name, [])
        if len(candidates) > 1:
            here = str(PurePosixPath(record.path).parent)
            close = [c for c in candidates if str(PurePosixPath(c.split("::")[0]).parent) == here]
            candidates = close if len(close) == 1 else candidates
        if len(candidates) == 1:
            return self._function_target(self.functions[candidates[0]])
        if candidates:
            listed = ", ".join(sorted(c.split("::")[0] for c in candidates))
            return Unresolved(f"`{name}` is defined in several files ({listed})")
        for path in visible:
            if name in self._c_prototypes(path):
                return Unresolved(f"`{name}` is declared in {path} but not defined here")
        return External(name)

    def _c_symbols(self, path: str) -> dict[str, Target]:
        """What a C file defines: functions first, then macros, types, constants, variables."""
        table = self._c_tables.get(path)
        if table is None:
            table = {}
            record = self.files[path]
            for glob in reversed(record.globals):
                if glob.kind != "prototype":
                    table[glob.name] = Target(
                        glob.kind,
                        path,
                        glob.name,
                        glob.start_line,
                        glob.end_line,
                        symbol_id(path, glob.name),
                    )
            for fn in reversed(record.functions):
                table[fn.name] = self._function_target(fn)
            self._c_tables[path] = table
        return table

    def _c_prototypes(self, path: str) -> set[str]:
        return {g.name for g in self.files[path].globals if g.kind == "prototype"}

    # ------------------------------------------------------------------ edges

    def resolve(self, record: FileRecord, fn: FunctionRecord | None, expr: str) -> Value:
        if record.lang is Lang.C:
            return self.resolve_c(record, expr)
        return self.resolve_python(record, fn, expr)

    def _resolve_calls(self, record: FileRecord, fn: FunctionRecord) -> list[Edge]:
        edges: list[Edge] = []
        # The same callee is often called many times in one body (`self.assertEqual`).
        seen: dict[str, tuple[str | None, str | None, str | None]] = {}
        for site in fn.calls:
            outcome = seen.get(site.expr)
            if outcome is None:
                outcome = seen[site.expr] = self._outcome(self.resolve(record, fn, site.expr))
            edges.append(Edge(fn.id, site.expr, site.line, site.col, *outcome))
        return edges

    def _outcome(self, value: Value) -> tuple[str | None, str | None, str | None]:
        """(target id, target kind, reason unresolved) of a resolved callee."""
        if isinstance(value, Target):
            if value.by_name:
                return value.id, value.kind, "by method name: the only class that defines it"
            if value.kind in ("function", "method", "macro", "function-macro"):
                return value.id, value.kind, None
            if value.kind == "class":
                init = self.constructor(value)
                return (init.id if init else value.id), "class", None
            return None, None, f"calls a {value.kind} ({value.name})"
        if isinstance(value, External):
            return None, None, f"external: {value.dotted}"
        if isinstance(value, Instance):
            return None, None, "calls an instance"
        return None, None, value.reason

    def callees(self, ident: str) -> list[Edge]:
        return self.edges.get(ident, [])

    def callers(self, ident: str) -> list[Edge]:
        return self.callers_of.get(ident, [])
