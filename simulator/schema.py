"""The JSON Schema of `reposim.trajectory/1`, generated from the types that write and read it
(`TrajectoryHeader`, `EventRecord` and every kind's payload in `PAYLOAD_TYPES`).

A trajectory is JSONL: line 1 is valid against `#/$defs/header`, every later line against
`#/$defs/event`. docs/trajectory.schema.json is this function's output, committed; regenerate it
after changing a type:

    uv run python -m simulator.schema            # write docs/trajectory.schema.json
    uv run python -m simulator.schema --check    # exit 1 if the committed file is stale
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from simulator.events import PAYLOAD_TYPES, EventRecord, Kind
from simulator.trajectory import SCHEMA, TrajectoryHeader
from simulator.wire import Record, referenced

SCHEMA_FILE = Path(__file__).resolve().parent.parent / "docs" / "trajectory.schema.json"


def trajectory_schema() -> dict[str, Any]:
    records: list[type[Record]] = []
    for root in (TrajectoryHeader, EventRecord, *PAYLOAD_TYPES.values()):
        for record in referenced(root):
            if record not in records:
                records.append(record)
    defs: dict[str, Any] = {}
    for record in records:
        schema = record.json_schema()
        if record.__doc__ and not record.__doc__.startswith(record.__name__ + "("):
            schema = {"description": " ".join(record.__doc__.split()), **schema}
        defs[record.__name__] = schema
    header: dict[str, Any] = {
        "allOf": [{"$ref": "#/$defs/TrajectoryHeader"}],
        "properties": {"schema": {"const": SCHEMA}},
    }
    event: dict[str, Any] = {
        "allOf": [
            {"$ref": "#/$defs/EventRecord"},
            {"properties": {"kind": {"enum": [str(kind) for kind in Kind]}}},
            *(
                {
                    "if": {"properties": {"kind": {"const": str(kind)}}},
                    "then": {"properties": {"payload": {"$ref": f"#/$defs/{payload.__name__}"}}},
                }
                for kind, payload in PAYLOAD_TYPES.items()
            ),
        ]
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": SCHEMA,
        "description": (
            "One line of a RepoSim trajectory (JSONL): line 1 is a header, every later line an"
            " event. Generated from simulator/events.py and simulator/trajectory.py by"
            " `python -m simulator.schema`; docs/trajectory.md explains each field."
        ),
        "anyOf": [{"$ref": "#/$defs/header"}, {"$ref": "#/$defs/event"}],
        "$defs": {"header": header, "event": event, **defs},
    }


def schema_text() -> str:
    return json.dumps(trajectory_schema(), indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m simulator.schema", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--check", action="store_true", help="Fail if the committed file differs.")
    parser.add_argument("--output", type=Path, default=SCHEMA_FILE, help="Where to write it.")
    args = parser.parse_args(argv)
    text = schema_text()
    if args.check:
        current = args.output.read_text(encoding="utf-8") if args.output.exists() else ""
        if current != text:
            print(
                f"{args.output} is stale: run `uv run python -m simulator.schema`.", file=sys.stderr
            )
            return 1
        return 0
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
