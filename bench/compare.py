"""Comparing two 5,000-step runs of one task: read both, align them step by step, summarise.

Design target (issue 27): the aligned comparison of two 5,000-step runs in <= 1 s. The runs are
synthetic trajectories written with the real writer: the model's turn, then the agent's command
(a vocabulary of 60, so actions repeat as in real runs: "run the tests" again and again) or edit;
the second run is the first with 2% of its steps dropped, 2% new steps inserted and 5% of the
outcomes changed. Reference, same run: difflib.SequenceMatcher over the same action keys (what a
viewer would reach for first), autojunk off, as repeated actions need.

    uv run python bench/compare.py [--steps 5000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from difflib import SequenceMatcher
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._report import ms, table
from bench._synthetic import SyntheticTrajectory
from simulator.compare import compare_runs, read_run

VOCABULARY = [f"grep -rn name{i} src | head" for i in range(50)] + [
    "python -m pytest -q",
    "git status --short",
    "git diff",
    "ls src",
    "cat setup.cfg",
    "python reproduce.py",
    "pip list",
    "head -50 src/core.py",
    "find . -name '*.py' | wc -l",
    "make test",
]


def plan(steps: int, seed: int) -> list[tuple[str, int]]:
    """(command, exit code) per step; a command "edit src/modN.py" is an edit instead."""
    rng = random.Random(seed)
    return [
        (f"edit src/mod{rng.randrange(7)}.py", 0)
        if rng.random() < 0.05
        else (rng.choice(VOCABULARY), rng.randrange(3))
        for _ in range(steps)
    ]


def perturb(actions: list[tuple[str, int]], seed: int) -> list[tuple[str, int]]:
    rng = random.Random(seed)
    out: list[tuple[str, int]] = []
    for command, code in actions:
        roll = rng.random()
        if roll < 0.02:
            continue
        if roll < 0.04:
            out.append((f"echo detour {rng.randrange(10**6)}", 0))
        out.append((command, code if rng.random() > 0.05 else code + 1))
    return out


def write_run(path: Path, actions: list[tuple[str, int]]) -> None:
    run = SyntheticTrajectory(path, path.stem)
    for command, code in actions:
        # The model's turn before each action, as an agent's trajectory has it.
        turn = run.seq + 1
        run.add(
            "llm.response",
            {
                "content": f"Next I will run `{command}` to see what it says. " * 4,
                "tool_calls": [
                    {
                        "id": f"call-{turn}",
                        "name": "bash",
                        "arguments": json.dumps({"command": command}),
                    }
                ],
                "usage": {"prompt_tokens": 1000 + turn, "completion_tokens": 40},
                "latency": 0.5,
                "model": "bench/model",
            },
        )
        if command.startswith("edit "):
            body = f"value = {code}\n"
            run.add(
                "file.edit",
                {
                    "path": command.split()[1],
                    "diff": f"+{body}",
                    "old": "x",
                    "new": body,
                    "before_sha256": "0" * 64,
                    "after_sha256": f"{code:064x}",
                    "content": None,
                },
            )
            continue
        action = run.add("exec", {"command": command})
        run.add(
            "exec.result",
            {"exit_code": code, "output": f"{command}: {code}\n" * 3, "duration": 0.01},
            cause=action,
        )
    run.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        a_path, b_path = Path(tmp) / "a.jsonl", Path(tmp) / "b.jsonl"
        actions = plan(args.steps, 1)
        write_run(a_path, actions)
        write_run(b_path, perturb(actions, 2))
        ours, reads, refs = [], [], []
        for _ in range(args.repeat):
            start = time.perf_counter()
            a, b = read_run(a_path), read_run(b_path)
            read_done = time.perf_counter()
            comparison = compare_runs([a, b])
            ours.append(time.perf_counter() - start)
            reads.append(read_done - start)
            keys_a, keys_b = [s.key for s in a.steps], [s.key for s in b.steps]
            start = time.perf_counter()
            matcher = SequenceMatcher(None, keys_a, keys_b, autojunk=False)
            ref_matched = sum(block.size for block in matcher.get_matching_blocks())
            refs.append(time.perf_counter() - start)
        matched = sum(1 for row in comparison.rows if all(row.cells))
        print(f"load average {os.getloadavg()[0]:.1f}; steps A {len(a.steps)}, B {len(b.steps)}")
        print(
            table(
                f"two {args.steps}-step runs, {args.repeat} repeats (median, max)",
                [
                    (
                        "align only (SequenceMatcher vs ours)",
                        f"{ms(statistics.median(refs))}, max {ms(max(refs))}",
                        f"{ms(statistics.median(o - r for o, r in zip(ours, reads, strict=True)))}",
                    ),
                    (
                        "read both + align + summary (target <= 1 s)",
                        "-",
                        f"{ms(statistics.median(ours))}, max {ms(max(ours))}",
                    ),
                    ("steps matched", str(ref_matched), str(matched)),
                ],
            )
        )
        print(
            f"first divergence at row {comparison.first_divergence}; "
            f"met: {'yes' if statistics.median(ours) <= 1.0 else 'no'}"
        )


if __name__ == "__main__":
    main()
