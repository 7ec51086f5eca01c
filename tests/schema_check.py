"""Checking trajectories against docs/trajectory.schema.json (the committed file, not the types
it is generated from: what other tools read is what is checked)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

from simulator.schema import SCHEMA_FILE
from simulator.trajectory import SCHEMA


@cache
def _validators() -> tuple[Any, Any]:
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))

    def part(name: str) -> Any:
        return jsonschema.Draft202012Validator(
            {"$schema": schema["$schema"], "$defs": schema["$defs"], "$ref": f"#/$defs/{name}"}
        )

    return part("header"), part("event")


def problems(path: Path) -> list[str]:
    """What in `path` breaks the schema, one line each (empty: the file is valid). A file whose
    first line is not a reposim.trajectory/1 header is not ours and is skipped; an incomplete
    last line (a writer killed mid-line) is left to the reader's own checks."""
    header_validator, event_validator = _validators()
    found: list[str] = []
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.endswith(b"\n") or not raw.strip():
                continue
            try:
                data = json.loads(raw)
            except ValueError as exc:
                if number == 1:
                    return []
                found.append(f"{path}:{number}: not JSON ({exc})")
                continue
            if number == 1:
                if not (isinstance(data, dict) and data.get("schema") == SCHEMA):
                    return []
                validator = header_validator
            else:
                validator = event_validator
            error = jsonschema.exceptions.best_match(validator.iter_errors(data))
            if error is not None:
                where = "/".join(str(p) for p in error.absolute_path) or "(the line)"
                found.append(f"{path}:{number}: {where}: {error.message[:300]}")
    return found


def problems_under(root: Path) -> list[str]:
    return [problem for path in sorted(root.rglob("*.jsonl")) for problem in problems(path)]
