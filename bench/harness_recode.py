"""The share of recorded cases a harness can keep with no pickle, old encoder against ours, on
the very same recorded calls (issue 22 item 7): a controlled before/after that needs no new
traced run.

    uv run python bench/harness_recode.py bench/out/problems-LABEL-PROJECT.jsonl [...]

For each traced harness of the problems files (written by bench/harness_corpus.py), its CASES
are loaded in the project's venv (the one `reposim setup` left) and every value kept as a
pickle is unpickled and encoded again by the working tree's tracer: a case is readable when no
value of it is still a pickle. Printed per project: cases, readable as recorded (the encoder of
the run that wrote the file), readable now.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness_corpus_build import venv_python

from bench._report import table

RUNTIME = Path(__file__).resolve().parent.parent / "simulator/harness/runtime"

CHILD = r"""
import json, sys
sys.path[:0] = [sys.argv[1], sys.argv[2]]
import reposim_harness_support as support
import reposim_tracer as tracer
out = []
for text in json.load(sys.stdin):
    block = text[text.index("CASES = [") : text.index("\n]\n", text.index("CASES = [")) + 3]
    namespace = dict(vars(support))
    paths = [l for l in text.splitlines() if l.startswith("import_paths(")]
    try:
        for line in paths:
            exec(line, namespace)
        exec(block, namespace)
    except Exception as exc:
        out.append({"error": f"{type(exc).__name__}: {exc}"[:200]})
        continue
    before = now = 0
    for case in namespace["CASES"]:
        values = []
        for key in ("args", "after", "yields"):
            values += list(case.get(key) or ())
        values += list((case.get("kwargs") or {}).values())
        if "returns" in case:
            values.append(case["returns"])
        pickles = [v for v in values if isinstance(v, support.P)]
        before += not pickles
        still = 0
        for value in pickles:
            try:
                encoded = tracer.encode(value.load(), 20000, lazy=True)  # the tracer's default
            except Exception:
                still += 1
                continue
            still += "r" not in encoded
        now += not still
    out.append({"cases": len(namespace["CASES"]), "before": before, "now": now})
print(json.dumps(out))
"""


def recode(problems: Path) -> dict[str, int]:
    rows = [json.loads(line) for line in problems.read_text().splitlines() if line.strip()]
    texts = [
        r["harness"]["text"]
        for r in rows
        if r.get("harness") and "CASES = [" in (r["harness"].get("text") or "")
    ]
    if not texts:
        return {"cases": 0, "before": 0, "now": 0, "errors": 0}
    project = rows[0]["repo"]["name"]
    source = rows[0]["repo"]["source"]
    proc = subprocess.run(
        [str(venv_python(project)), "-c", CHILD, str(RUNTIME), source],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        cwd=source,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"{problems}: {proc.stderr.strip().splitlines()[-1:]}")
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    total = {"cases": 0, "before": 0, "now": 0, "errors": 0}
    for result in results:
        if "error" in result:
            total["errors"] += 1
            continue
        for key in ("cases", "before", "now"):
            total[key] += result[key]
    return total


def main() -> int:
    rows = []
    everything = {"cases": 0, "before": 0, "now": 0}
    for name in sys.argv[1:]:
        figures = recode(Path(name))
        for key in everything:
            everything[key] += figures[key]
        cases = figures["cases"] or 1
        rows.append(
            (
                Path(name).stem,
                f"{figures['before']}/{figures['cases']} = {figures['before'] / cases:.0%}",
                f"{figures['now']}/{figures['cases']} = {figures['now'] / cases:.0%}"
                + (f" ({figures['errors']} harnesses not loadable)" if figures["errors"] else ""),
            )
        )
    cases = everything["cases"] or 1
    rows.append(
        (
            "all",
            f"{everything['before']}/{everything['cases']} = {everything['before'] / cases:.0%}",
            f"{everything['now']}/{everything['cases']} = {everything['now'] / cases:.0%}",
        )
    )
    print(table("Cases with no pickle, the same recorded calls (as recorded | ours)", rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
