"""Making observations comparable across runs: the volatile parts of output become placeholders.

A re-executed command's output differs from the recorded one in ways nobody cares about: timings,
temporary and workspace paths, memory addresses, process ids, dates. Each `Rule` rewrites one such
thing; `Normaliser` applies them in order. The defaults are public so a user can keep some, drop
some (`without`) and add their own patterns (`with_patterns`, or `--ignore REGEX` on the CLI).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Rule:
    name: str
    pattern: re.Pattern[str]
    replacement: str

    def apply(self, text: str) -> str:
        return self.pattern.sub(self.replacement, text)


def rule(name: str, pattern: str, replacement: str, flags: int = 0) -> Rule:
    return Rule(name, re.compile(pattern, flags), replacement)


DEFAULT_RULES: tuple[Rule, ...] = (
    rule("carriage-returns", r"\r\n", "\n"),
    rule(
        "timestamps",
        r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?",
        "<timestamp>",
    ),
    rule("clock-times", r"\b\d{1,2}:\d{2}:\d{2}(?:\.\d+)?\b", "<clock>"),
    # `ls -l` shows "Nov 22 04:10" (or "Nov 22  2025"): a minute boundary between recording
    # and re-execution must not make a listing differ.
    rule(
        "listing-times",
        r"\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +\d{1,2}"
        r" +(?:\d{1,2}:\d{2}|\d{4})\b",
        "<mtime>",
    ),
    rule("temp-paths", r"(?:/private)?/(?:tmp|var/tmp|var/folders)/[^\s'\":,)\]]*", "<tmp>"),
    rule("hex-addresses", r"\b0x[0-9a-fA-F]{4,16}\b", "<addr>"),
    rule("pids", r"\b(pid|PID|process|Process)([ =:#]+)\d+\b", r"\1\2<pid>"),
    rule(
        "durations",
        r"\b\d+(?:\.\d+)?\s?(?:ns|us|µs|ms|s|sec|secs|seconds?|minutes?|m|h)\b",
        "<duration>",
    ),
    rule("pytest-duration", r"\bin <duration>(?: \(<clock>\))?", "in <duration>"),
)


@dataclass(frozen=True)
class Normaliser:
    rules: tuple[Rule, ...] = DEFAULT_RULES
    paths: tuple[str, ...] = field(default_factory=tuple)
    """Literal paths (the recorded and the new workspace) replaced by `<workspace>` first."""

    def with_paths(self, paths: Iterable[str | None]) -> Normaliser:
        clean = tuple(
            sorted({p.rstrip("/") for p in paths if p and p.strip("/")}, key=len, reverse=True)
        )
        return Normaliser(self.rules, self.paths + clean)

    def with_patterns(self, patterns: Iterable[str]) -> Normaliser:
        """Add user patterns (regular expressions) whose matches are ignored."""
        added = []
        for index, pattern in enumerate(patterns, start=1):
            try:
                added.append(Rule(f"user-{index}", re.compile(pattern), "<ignored>"))
            except re.error as exc:
                raise ValueError(
                    f"--ignore pattern {pattern!r} is not a valid regular expression ({exc})."
                ) from None
        return Normaliser(self.rules + tuple(added), self.paths)

    def without(self, names: Iterable[str]) -> Normaliser:
        drop = set(names)
        unknown = drop - {r.name for r in self.rules}
        if unknown:
            known = ", ".join(r.name for r in DEFAULT_RULES)
            raise ValueError(f"Unknown normalisation rule {sorted(unknown)[0]!r}; known: {known}.")
        return Normaliser(tuple(r for r in self.rules if r.name not in drop), self.paths)

    def __call__(self, text: str) -> str:
        for path in self.paths:
            text = text.replace(path, "<workspace>")
        for item in self.rules:
            text = item.apply(text)
        return text


STRICT = Normaliser(rules=())
