"""The header of a trajectory file (schema `reposim.trajectory/1`): its record types, the check
that a file's first line is one we read, and the depth limit every line is parsed under.

Apart from the reader and writer (simulator/trajectory.py, which re-exports all of it) so that
the importers of other tools' files (simulator/interop/) build headers without importing the
reader that calls them.
"""

from __future__ import annotations

from dataclasses import field
from datetime import UTC, datetime
from typing import Any

from simulator.wire import Record, WireError, optional, record

SCHEMA = "reposim.trajectory/1"
MAX_DEPTH = 100
"""How deeply a line's JSON may nest; deeper lines are refused as corrupt."""


class TrajectoryError(Exception):
    """A trajectory that cannot be read; the message is one clear sentence."""


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@record
class RepoInfo(Record):
    """Where a session's workspace came from."""

    source: str | None = None
    git: bool = False
    commit: str | None = optional()
    branch: str | None = optional()
    dirty: bool | None = optional()


@record
class BackendInfo(Record):
    """Where the commands ran (`Backend.describe()`); backends add their own fields."""

    REST = "extra"
    kind: str | None = None
    workspace: str | None = optional()
    image: str | None = optional()
    image_id: str | None = optional()
    container: str | None = optional()
    limits: dict[str, Any] | None = optional()
    extra: dict[str, Any] = field(default_factory=dict)


@record
class AgentInfo(Record):
    REST = "extra"
    model: str | None = None
    mode: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@record
class ParentInfo(Record):
    """The trajectory this one forks, resumes or re-executes."""

    file: str
    step: int | None = None
    resumed: bool = optional(False)
    replay: str | None = optional()
    foreign: bool = optional(False)
    """The parent was not provably recorded here: what this one re-ran came from elsewhere,
    so this file is not sealed either (a re-execution must not launder a stranger's commands)."""


@record
class ImportInfo(Record):
    """For a file converted from another tool: which, and what of it has no event."""

    REST = "extra"
    format: str
    file: str
    extra: dict[str, Any] = field(default_factory=dict)


@record
class TrajectoryHeader(Record):
    """Line 1 of a trajectory. Build one with `TrajectoryHeader.new`."""

    REST = "extra"
    schema: str
    session: str
    created: str
    repo: RepoInfo
    backend: BackendInfo
    agent: AgentInfo | None
    reposim: str
    host: str | None = optional()
    """Older files: a digest of machine id and uid, which anyone can compute; never trusted."""
    seal: str | None = optional()
    """HMAC of the rest of the header under this user's key; the events under it are chained
    from it (simulator.provenance)."""
    parent: ParentInfo | None = optional()
    imported: ImportInfo | None = optional()
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def new(
        cls,
        session: str,
        *,
        repo: RepoInfo | None = None,
        backend: BackendInfo | None = None,
        agent: AgentInfo | None = None,
        parent: ParentInfo | None = None,
        imported: ImportInfo | None = None,
    ) -> TrajectoryHeader:
        """The header of a trajectory written now, on this machine. The writer seals it unless
        it is imported or re-runs a foreign parent (see `sealable`)."""
        from simulator import __version__

        return cls(
            schema=SCHEMA,
            session=session,
            created=now_iso(),
            repo=repo or RepoInfo(),
            backend=backend or BackendInfo(),
            agent=agent,
            reposim=__version__,
            parent=parent,
            imported=imported,
        )

    @property
    def sealable(self) -> bool:
        """Whether a file with this header is this user's own recording."""
        return self.imported is None and not (self.parent is not None and self.parent.foreign)

    @property
    def sealed_here(self) -> bool:
        """Whether this header was sealed with this user's key. The header alone: it says
        nothing of the events under it (anyone holding a sealed file could put others there);
        whether a file's commands are this user's is `simulator.replay.untrusted_line`, line by
        line. The `host` field of older files is no evidence at all: anyone can compute it."""
        from simulator.provenance import sealed_here

        return self.seal is not None and sealed_here(self.to_dict())


def check_header(data: Any, where: str) -> TrajectoryHeader:
    """The header of a file, checked; TrajectoryError (one sentence) if it is not one we read."""
    if not isinstance(data, dict) or "schema" not in data:
        raise TrajectoryError(
            f"{where} is not a RepoSim trajectory (its first line has no schema)."
        )
    schema = data["schema"]
    if schema != SCHEMA:
        if isinstance(schema, str) and schema.startswith("reposim.trajectory/"):
            raise TrajectoryError(
                f"{where} uses schema {schema}; this version of RepoSim reads {SCHEMA} only."
            )
        raise TrajectoryError(f"{where} has schema {clip(repr(schema))}, not {SCHEMA}.")
    try:
        return TrajectoryHeader.from_dict(data, "its header")
    except WireError as exc:
        raise TrajectoryError(f"{where} cannot be read: {exc}.") from None


def clip(text: str, width: int = 80) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


# -- writing -----------------------------------------------------------------------------------


def json_depth(value: Any) -> int:
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        if deepest > MAX_DEPTH:
            return deepest
        stack.extend((child, level + 1) for child in children)
    return deepest
