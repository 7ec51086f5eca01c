"""Targets: the functions a harness is made for, as `reposim extract` selects them."""

from __future__ import annotations

import fnmatch
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from simulator.analysis.export import ContextMode, Extraction, ExtractOptions
from simulator.analysis.filters import FilterSpec
from simulator.analysis.index import CodeIndex
from simulator.analysis.model import Lang


@dataclass(frozen=True)
class Target:
    id: str  # path::qualname, as `reposim extract` names it
    path: str
    qualname: str
    name: str
    kind: str  # function | method
    start_line: int  # first decorator, or the def line
    def_line: int
    end_line: int
    signature: str
    docstring: str | None
    body: str  # the reference implementation's text, decorators included
    context: str  # the dependency-sliced context (the target included)
    module: str = ""  # dotted module name, as far as the file layout tells

    @property
    def slug(self) -> str:
        return re.sub(r"[^A-Za-z0-9]+", "_", f"{self.path[:-3]}__{self.qualname}").strip("_")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Target:
        fields = cls.__dataclass_fields__
        return cls(**{k: v for k, v in data.items() if k in fields})

    @classmethod
    def from_extract(cls, record: dict[str, Any], module: str = "") -> Target:
        """From a `reposim.extract/1` function record."""
        span = record["span"]
        context = record.get("context") or {}
        return cls(
            id=record["id"],
            path=record["path"],
            qualname=record["qualname"],
            name=record["name"],
            kind=record["kind"],
            start_line=span["start_line"],
            def_line=span["def_line"],
            end_line=span["end_line"],
            signature=record["signature"],
            docstring=record.get("docstring"),
            body=record["body"],
            context=str(context.get("text") or ""),
            module=module,
        )


class TargetError(Exception):
    """No target matches what was asked; the message is one clear sentence."""


def find_targets(
    root: Path,
    *,
    selectors: list[str] | None = None,
    filters: list[str] | None = None,
    budget: int | None = 4000,
) -> list[Target]:
    """The Python functions of `root` that pass `filters` (default: R2E's) and match a selector
    (an id, a qualname, or a glob over ids), each with its sliced context."""
    index = CodeIndex.build(root, langs=(Lang.PYTHON,), workers=1)
    spec = FilterSpec.parse(filters if filters is not None else ["r2e"])
    options = ExtractOptions(filters=spec, context=ContextMode.SLICED, budget=budget)
    extraction = Extraction(index, str(root), ["python"], options)
    chosen = [fn for fn in extraction.selected() if fn.parent_qualname is None]
    if selectors:
        chosen = [fn for fn in chosen if any(matches(fn.id, fn.qualname, s) for s in selectors)]
    targets = []
    for fn in chosen:
        module = index.files[fn.path].module
        targets.append(Target.from_extract(extraction.record(fn), module))
    return targets


def matches(ident: str, qualname: str, selector: str) -> bool:
    """Whether a selector (an id, a qualname, or a glob over ids) picks this target."""
    return selector in (ident, qualname) or fnmatch.fnmatchcase(ident, selector)
