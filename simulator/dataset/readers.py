"""Reading problems back: RepoSim JSONL, or an R2E / RepoST export made by writers.py."""

from __future__ import annotations

import json
from pathlib import Path

from simulator.dataset.schema import SCHEMA, Problem
from simulator.dataset.writers import ROUND_TRIP_KEY


class DatasetError(Exception):
    """A file that holds no problems we can read; the message is one clear sentence."""


def read_problems(path: Path) -> list[Problem]:
    """Every problem in `path`; the format is recognised from the content."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DatasetError(f"{path} does not exist.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"{path} cannot be read ({exc}).") from None
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            records = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{path} is not valid JSON (line {exc.lineno}).") from None
        problems = []
        for number, record in enumerate(records):
            embedded = record.get(ROUND_TRIP_KEY) if isinstance(record, dict) else None
            if embedded is None:
                raise DatasetError(
                    f"record {number} of {path} was not exported by RepoSim with its problem "
                    f"({ROUND_TRIP_KEY}); only RepoSim's own exports can be imported."
                )
            problems.append(Problem.from_dict(embedded))
        return problems
    problems = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            problems.append(Problem.from_dict(json.loads(line)))
        except (json.JSONDecodeError, ValueError, KeyError, TypeError) as exc:
            raise DatasetError(
                f"line {number} of {path} is not a {SCHEMA} problem ({exc})."
            ) from None
    return problems
