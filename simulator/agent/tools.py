"""The agent's tools. Each one acts through the Session as the agent, so every effect is in the
trajectory, and answers with an observation the model reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from backends.base import BackendError
from simulator.events import Actor
from simulator.session import ActionDenied, Session, SessionError

# Characters of one observation the model sees; longer ones keep their head and tail.
OBSERVATION_LIMIT = 12_000
# Seconds a bash command may run unless the model asks for less.
BASH_TIMEOUT = 120.0
VIEW_MAX_LINES = 400


def truncate(text: str, limit: int = OBSERVATION_LIMIT, already: int = 0) -> tuple[str, int]:
    """The text cut to its head and tail around a note of how much was left out, and that
    count (0 when nothing was). `already`: what was left out of `text` before (a command's
    output is a window on it once it is large), counted in the note."""
    if len(text) <= limit:
        return text, already
    head = limit * 2 // 3
    tail = limit - head
    elided = len(text) - head - tail + already
    return (
        f"{text[:head]}\n[... {elided} characters elided ...]\n{text[-tail:]}",
        elided,
    )


def _schema(name: str, description: str, properties: dict[str, Any], required: list[str]) -> Any:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


_PATH = {"type": "string", "description": "Path relative to the repository root."}

TOOL_SCHEMAS: list[dict[str, Any]] = [
    _schema(
        "view",
        "Show a file with line numbers (optionally only lines start_line..end_line), "
        "or list a directory.",
        {
            "path": _PATH,
            "start_line": {"type": "integer", "description": "First line to show (1-based)."},
            "end_line": {"type": "integer", "description": "Last line to show (inclusive)."},
        },
        ["path"],
    ),
    _schema(
        "edit",
        "Change a file. command=str_replace replaces old_str (which must occur exactly once) "
        "with new_str; command=insert inserts text after line insert_line (0 = at the top); "
        "command=undo reverts your last change to the file.",
        {
            "command": {"type": "string", "enum": ["str_replace", "insert", "undo"]},
            "path": _PATH,
            "old_str": {"type": "string"},
            "new_str": {"type": "string"},
            "insert_line": {"type": "integer"},
            "text": {"type": "string"},
        },
        ["command", "path"],
    ),
    _schema(
        "create",
        "Create a new file with the given content (fails if it exists; use edit).",
        {"path": _PATH, "content": {"type": "string"}},
        ["path", "content"],
    ),
    _schema(
        "search",
        "Find lines containing a text (or a regular expression with regex=true) in the "
        "repository's files.",
        {
            "pattern": {"type": "string"},
            "path": {"type": "string", "description": "Directory or file to search (default .)."},
            "regex": {"type": "boolean"},
        },
        ["pattern"],
    ),
    _schema(
        "bash",
        "Run a shell command in the repository (a persistent shell: cd and variables persist).",
        {
            "command": {"type": "string"},
            "timeout": {"type": "number", "description": f"Seconds (at most {BASH_TIMEOUT:.0f})."},
        },
        ["command"],
    ),
    _schema(
        "run_tests",
        "Run the test suite (or the tests a pytest selector names) and get per-test results.",
        {"selector": {"type": "string", "description": "e.g. tests/test_x.py::test_y"}},
        [],
    ),
    _schema(
        "finish",
        "Say the task is done, with a short summary of what you changed and why.",
        {"summary": {"type": "string"}},
        ["summary"],
    ),
]

TOOL_NAMES = frozenset(s["function"]["name"] for s in TOOL_SCHEMAS)
_REQUIRED = {s["function"]["name"]: s["function"]["parameters"]["required"] for s in TOOL_SCHEMAS}


class ToolFormatError(ValueError):
    """A tool call the model got wrong (unknown tool, bad or missing arguments)."""


@dataclass
class Observation:
    output: str
    ok: bool = True
    finished: bool = False
    elided: int = 0
    rejected: bool = False


@dataclass
class ToolBox:
    """Runs tool calls for the agent against a session."""

    session: Session
    bash_timeout: float = BASH_TIMEOUT
    observation_limit: int = OBSERVATION_LIMIT
    # Earlier contents of each file the agent changed, newest last (None: it did not exist).
    _history: dict[str, list[str | None]] = field(default_factory=dict)

    def check(self, name: str, arguments: dict[str, Any]) -> None:
        if name not in TOOL_NAMES:
            raise ToolFormatError(
                f"There is no tool named {name!r}; the tools are {', '.join(sorted(TOOL_NAMES))}."
            )
        missing = [key for key in _REQUIRED[name] if key not in arguments]
        if missing:
            raise ToolFormatError(f"{name} needs the argument(s) {', '.join(missing)}.")

    async def run(self, name: str, arguments: dict[str, Any]) -> Observation:
        self.check(name, arguments)
        try:
            handler = getattr(self, f"_{name}")
            observation: Observation = await handler(**_known(name, arguments))
        except ActionDenied as exc:
            observation = Observation(f"The person rejected this action: {exc}", ok=False)
            observation.rejected = True
        except (SessionError, BackendError) as exc:
            observation = Observation(f"Error: {exc}", ok=False)
        except (TypeError, ValueError) as exc:
            raise ToolFormatError(f"{name}: {exc}") from None
        observation.output, observation.elided = truncate(
            observation.output, self.observation_limit, observation.elided
        )
        return observation

    async def _view(
        self, path: str, start_line: int | None = None, end_line: int | None = None
    ) -> Observation:
        info = await self.session.stat(path)
        if info.kind == "dir":
            entries = await self.session.list_dir(path)
            names = sorted(e.name + ("/" if e.kind == "dir" else "") for e in entries)
            return Observation("\n".join(names) or "(empty directory)")
        text = await self.session.read(path, actor=Actor.AGENT)
        lines = text.splitlines()
        first = max(1, int(start_line or 1))
        last = min(len(lines), int(end_line) if end_line else first + VIEW_MAX_LINES - 1)
        if not lines:
            return Observation(f"{path} is empty.")
        if first > len(lines):
            return Observation(f"{path} has only {len(lines)} lines.", ok=False)
        width = len(str(last))
        body = "\n".join(f"{n:>{width}}  {lines[n - 1]}" for n in range(first, last + 1))
        more = f"\n[{len(lines) - last} more lines]" if last < len(lines) else ""
        return Observation(body + more)

    async def _edit(
        self,
        command: str,
        path: str,
        old_str: str | None = None,
        new_str: str | None = None,
        insert_line: int | None = None,
        text: str | None = None,
    ) -> Observation:
        path = self.session.normalize(path)
        if command == "undo":
            history = self._history.get(path)
            if not history:
                return Observation(f"You have made no change to {path} to undo.", ok=False)
            previous = history[-1]
            if previous is None:
                await self.session.delete(path, actor=Actor.AGENT)
            else:
                await self.session.write(path, previous, actor=Actor.AGENT)
            history.pop()
            return Observation(f"Reverted your last change to {path}.")
        before = await self._current(path)
        if command == "str_replace":
            if old_str is None:
                raise ValueError("str_replace needs old_str")
            event = await self.session.edit(path, old_str, new_str or "", actor=Actor.AGENT)
        elif command == "insert":
            if insert_line is None or text is None:
                raise ValueError("insert needs insert_line and text")
            if before is None:
                return Observation(f"{path} does not exist; use create.", ok=False)
            lines = before.splitlines(keepends=True)
            at = int(insert_line)
            if not 0 <= at <= len(lines):
                return Observation(
                    f"insert_line must be between 0 and {len(lines)} for {path}.", ok=False
                )
            if lines and not lines[-1].endswith("\n") and at == len(lines):
                lines[-1] += "\n"
            block = text if text.endswith("\n") else text + "\n"
            event = await self.session.write(
                path, "".join([*lines[:at], block, *lines[at:]]), actor=Actor.AGENT
            )
        else:
            raise ValueError(f"unknown command {command!r}; use str_replace, insert or undo")
        self._history.setdefault(path, []).append(before)
        return Observation(f"Edited {path}:\n{event.payload.get('diff', '')}")

    async def _current(self, path: str) -> str | None:
        if not await self.session.exists(path):
            return None
        return (await self.session.read_bytes(path)).decode("utf-8", "replace")

    async def _create(self, path: str, content: str) -> Observation:
        path = self.session.normalize(path)
        await self.session.create(path, content, actor=Actor.AGENT)
        self._history.setdefault(path, []).append(None)
        return Observation(f"Created {path} ({len(content.splitlines())} lines).")

    async def _search(self, pattern: str, path: str = ".", regex: bool = False) -> Observation:
        matches = await self.session.search(pattern, path, regex=bool(regex), actor=Actor.AGENT)
        if not matches:
            return Observation(f"No matches for {pattern!r}.")
        lines = [f"{m.path}:{m.line}: {m.text}" for m in matches]
        return Observation(f"{len(matches)} matches:\n" + "\n".join(lines))

    async def _bash(self, command: str, timeout: float | None = None) -> Observation:
        limit = min(float(timeout), self.bash_timeout) if timeout else self.bash_timeout
        result = await self.session.exec(command, actor=Actor.AGENT, timeout=limit)
        output = result.output.decode("utf-8", "replace")
        notes = []
        if result.timed_out:
            notes.append(f"timed out after {limit:.0f}s and was killed")
        if result.interrupted:
            notes.append("interrupted by the person")
        if result.shell_restarted:
            notes.append("the shell was restarted")
        if result.output_capped:
            notes.append(f"stopped: its output reached the {result.output_size}-byte cap")
        status = f"exit code {result.exit_code}" + (f" ({'; '.join(notes)})" if notes else "")
        return Observation(
            f"{output.rstrip()}\n[{status}]".lstrip(),
            ok=result.exit_code == 0,
            elided=result.output_elided,
        )

    async def _run_tests(self, selector: str | None = None) -> Observation:
        run = await self.session.run_tests(selector or None, actor=Actor.AGENT)
        return Observation(
            f"{run.output.rstrip()}\n[tests: {run.summary()}; exit code {run.exit_code}]",
            ok=run.exit_code == 0,
        )

    async def _finish(self, summary: str) -> Observation:
        return Observation(summary, finished=True)


def _known(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The arguments the tool takes; extra keys some models add are dropped, not fatal."""
    schema = next(s for s in TOOL_SCHEMAS if s["function"]["name"] == name)
    allowed = schema["function"]["parameters"]["properties"]
    return {k: v for k, v in arguments.items() if k in allowed}
