"""`perf compare`: one API (or command) timed at two revisions, with statistics worth trusting.

    result = await compare(CompareRequest(repo, "v1.0", "v1.1", api="pkg.mod.func"))

Two environments (each a recorded Session checked out at its revision) run the same harness.
pyperf does the measuring: a calibration run fixes the number of loops per value, then rounds
alternate between the sides (A B, B A, A B, ...) so that a drift of the machine during the
measurement falls on both sides alike; in each round each side runs a fresh pyperf worker
process (started directly in `--worker` mode), warm-ups, then the values, every worker pinned
to the same CPU. Both sides' runs are stored as pyperf JSON beside the result. The verdict
(speed-up, its bootstrap confidence interval over the rounds' A/B pairs, a paired t-test)
comes from `stats`, and the machine's state (CPU, load,
Python, isolation) goes with it, with the reasons not to trust it when there are some.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import re
import statistics
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pyperf

from simulator.agent.models import LiteLLMClient, ModelClient, ModelError
from simulator.paths import data_dir
from simulator.perf import envcache
from simulator.perf import harness as harnesses
from simulator.perf.capture import SCALE_ITEMS
from simulator.perf.environment import PerfEnvironment, QuickcheckReport, shared_tools
from simulator.perf.stats import (
    LOADED_PER_CPU,
    NOISY_CV,
    SYSTEMATIC,
    SideStats,
    Verdict,
    compare_runs,
    group_verdicts,
    load_benchmark,
    most_changed,
    noise_reasons,
    pairs_needed,
    pyperf_metadata,
    run_means,
    side_stats,
    systematic_half,
)
from simulator.session import Subscriber
from simulator.workflow import WorkflowFailure, WorkflowRun

WORKFLOW = "perf.compare"
# seconds of command runs per worker process: its start-up (~0.1 s of CPU) is then a few % of it
COMMAND_WORKER_SECONDS = 3.0


@dataclass(frozen=True)
class MeasureSettings:
    """How much measuring: rounds of `processes` pyperf workers per side, interleaved A B, B A.

    Adaptive by default (`rounds` None), in two stages (Stein's): the first `min_rounds` rounds'
    spread sets how many rounds bring the 95% interval's half-width to `precision` of the
    speed-up (`stats.pairs_needed`), and the rounds go on in pairs until that many are done,
    `max_rounds` are or the `budget` (seconds of measuring) would be exceeded; the interval is
    then at least as wide as the first rounds' spread gives (`stats._paired_verdict`), not the
    narrowest that chance offered on the way, and holds `systematic` (the sd in log of an
    offset each compare carries that its pairs do not show, `stats.SYSTEMATIC`; the rounds aim
    at what of `precision` it leaves). `rounds` N measures exactly N rounds, with the plain
    t interval of their pairs (as a by-hand ABBA).
    `values`/`warmups` None: 3 values after 1 warm-up per worker for an API; for a command no
    warm-up and as many values as fill about `COMMAND_WORKER_SECONDS` (2 to 10, from its
    quickcheck's time): each value is a fresh process of the command already, like a run of a
    by-hand ABBA, and the worker's own start-up (~0.1 s of CPU, pyperf's import and metadata)
    is paid once per worker, so short commands take more values per worker."""

    rounds: int | None = None
    processes: int = 1  # worker processes per side and round
    values: int | None = None  # timed values per worker
    warmups: int | None = None  # values run and thrown away first, per worker
    min_time: float = 0.1  # seconds a value should last; sets the loops at calibration
    affinity: str | None = None  # CPU list for the workers; None: one CPU chosen here
    timeout: float = 1800.0  # seconds per pyperf invocation
    # wall: elapsed time (what a user waits); cpu: the CPU time of the code under test, which
    # other processes competing for the CPU do not inflate (CPU-bound code on a busy machine);
    # auto: wall, or cpu when the machine is busy (at the start, or wall-time runs too noisy)
    timer: str = "auto"
    min_rounds: int = 6
    max_rounds: int = 60
    precision: float = 0.02  # target half-width of the 95% interval, relative to the speed-up
    budget: float = 120.0  # seconds of measuring (calibration and rounds) at most
    systematic: float = SYSTEMATIC  # adaptive rounds only: see `stats._paired_verdict`
    busy_load: float = LOADED_PER_CPU  # load average per CPU from which `auto` takes CPU time
    # after its values, each worker of a traced harness also times the call groups (each test's
    # calls, and on scaled inputs) alone, for about half of its values' time
    groups: bool = True

    def group_budget(self, values: int) -> float:
        """Seconds a worker spends on the call groups (0: none)."""
        return values * self.min_time / 2 if self.groups else 0.0

    @classmethod
    def quick(cls, timer: str = "wall") -> MeasureSettings:
        """Rough answers quickly (tests, a first look): 4 runs per side, in 2 rounds."""
        return cls(rounds=2, processes=2, values=3, warmups=1, min_time=0.01, timer=timer)

    @property
    def runs(self) -> int:
        """Runs per side at least (fixed rounds, or the adaptive minimum)."""
        return (self.rounds or self.min_rounds) * self.processes

    def per_worker(self, command: bool, command_seconds: float | None = None) -> tuple[int, int]:
        """(values, warm-ups) per worker; `command_seconds`: one run of the command (its
        quickcheck), for a command."""
        values = self.values
        if values is None and not command:
            values = 3
        elif values is None:
            seconds = command_seconds or COMMAND_WORKER_SECONDS
            values = max(2, min(10, math.ceil(COMMAND_WORKER_SECONDS / seconds)))
        warmups = self.warmups if self.warmups is not None else (0 if command else 1)
        return values, warmups

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class NoTracedHarness(WorkflowFailure):
    """No test of the repository gives a traced harness for the API: `why`, and the two ways
    on (the CLI's flags here; the UI says its own)."""

    def __init__(self, why: str) -> None:
        super().__init__(
            f"{why}; write a harness (--harness FILE) or let a model write one (--model)."
        )
        self.why = why


@dataclass
class CompareRequest:
    repo: Path
    a: str
    b: str
    api: str | None = None
    harness: Path | None = None  # a harness file to use as it is
    command: str | None = None  # time a shell command instead of an API
    cwd: str | None = None  # where the command runs: relative to the checkout's root (default)
    model: str | None = None  # write the harness with this model instead of tracing tests
    api_base: str | None = None
    api_key: str | None = None
    fix_rounds: int = 3  # repairs of a model-written harness that fails its quickcheck
    out_dir: Path | None = None
    settings: MeasureSettings = field(default_factory=MeasureSettings)
    backend: str = "local"
    backend_options: dict[str, Any] = field(default_factory=dict)  # e.g. the docker image
    python: str | None = None  # the interpreter that runs the harness (default: this one)
    setup: bool = False  # run the setup workflow at each revision and time in its environment
    # environments the user made for one side: an interpreter (local) or an image (docker)
    python_a: str | None = None
    python_b: str | None = None
    image_a: str | None = None
    image_b: str | None = None

    def python_for(self, label: str) -> str | None:
        return (self.python_a if label == "A" else self.python_b) or self.python

    def own_environment(self, label: str) -> bool:
        """The user made this side's environment (--python-a/--env-a...): no setup for it."""
        return bool(
            self.python_a or self.image_a if label == "A" else self.python_b or self.image_b
        )

    def target(self) -> str:
        return self.api or self.command or (self.harness.stem if self.harness else "?")

    def check(self) -> None:
        if not self.repo.is_dir():
            raise WorkflowFailure(f"{self.repo} is not a directory.")
        if (self.api is None) == (self.command is None):
            raise WorkflowFailure("Give exactly one of --api and --command.")
        if self.command is not None and (self.harness is not None or self.model is not None):
            raise WorkflowFailure("--harness and --model go with --api, not with --command.")
        if self.cwd is not None and self.command is None:
            raise WorkflowFailure("--cwd goes with --command.")
        if self.cwd is not None and (self.cwd.startswith("/") or ".." in Path(self.cwd).parts):
            raise WorkflowFailure(
                f"--cwd {self.cwd!r} must be a directory inside the checkout, relative to its root."
            )
        if self.harness is not None and not self.harness.is_file():
            raise WorkflowFailure(f"The harness {self.harness} is not a file.")
        if self.api is not None and not re.fullmatch(r"[A-Za-z_][\w.]*\.[A-Za-z_]\w*", self.api):
            raise WorkflowFailure(f"{self.api!r} is not a dotted name such as pkg.module.func.")
        if self.settings.timer not in ("wall", "cpu", "auto"):
            raise WorkflowFailure("The timer is wall, cpu or auto.")
        if self.settings.budget <= 0:
            raise WorkflowFailure("The budget must be more than zero seconds.")
        if self.settings.runs < 2:
            raise WorkflowFailure("Measure at least two runs per side (rounds x processes).")


@dataclass
class CompareResult:
    repo: str
    target: str
    kind: str  # api | command
    rev_a: str
    rev_b: str
    commit_a: str
    commit_b: str
    a: SideStats
    b: SideStats
    verdict: Verdict
    environment: dict[str, Any]
    noise: list[str]
    harness: dict[str, Any]
    files: dict[str, str]
    settings: dict[str, Any]
    actions: list[str] = field(default_factory=list)  # what the protocol did, and why
    # each call group timed alone (stats.group_verdicts): a test's calls, or on scaled inputs
    groups: list[dict[str, Any]] = field(default_factory=list)

    @property
    def noisy(self) -> bool:
        return bool(self.noise)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": "reposim.perf.compare/1",
            "repo": self.repo,
            "target": self.target,
            "kind": self.kind,
            "rev_a": self.rev_a,
            "rev_b": self.rev_b,
            "commit_a": self.commit_a,
            "commit_b": self.commit_b,
            "a": self.a.to_dict(),
            "b": self.b.to_dict(),
            "verdict": self.verdict.to_dict(),
            "environment": self.environment,
            "noise": self.noise,
            "noisy": self.noisy,
            "harness": self.harness,
            "files": self.files,
            "settings": self.settings,
            "actions": self.actions,
            "groups": self.groups,
            "most_changed": most_changed(self.groups),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CompareResult:
        return cls(
            repo=data["repo"],
            target=data["target"],
            kind=data["kind"],
            rev_a=data["rev_a"],
            rev_b=data["rev_b"],
            commit_a=data["commit_a"],
            commit_b=data["commit_b"],
            a=SideStats.from_dict(data["a"]),
            b=SideStats.from_dict(data["b"]),
            verdict=Verdict.from_dict(data["verdict"]),
            environment=dict(data["environment"]),
            noise=list(data["noise"]),
            harness=dict(data["harness"]),
            files=dict(data["files"]),
            settings=dict(data["settings"]),
            actions=list(data.get("actions") or []),
            groups=list(data.get("groups") or []),
        )

    def summary(self) -> str:
        """What a person reads at the end of `reposim perf compare`."""
        env = self.environment
        lines = [
            f"{self.target} in {Path(self.repo).name}: {self.rev_a} ({self.commit_a[:10]}) vs "
            f"{self.rev_b} ({self.commit_b[:10]})",
            f"  A  {_seconds(self.a.mean)} +- {_seconds(self.a.std)}  "
            f"({self.a.runs} runs, {self.a.values} values, {self.a.loops} loops each)",
            f"  B  {_seconds(self.b.mean)} +- {_seconds(self.b.std)}  "
            f"({self.b.runs} runs, {self.b.values} values, {self.b.loops} loops each)",
            f"  {self.verdict.sentence()}; opt {self.verdict.opt_pct:.2f}% "
            f"(std {self.verdict.opt_pct_std:.2f})",
            f"  machine: {env.get('cpu_model')}, {env.get('cpu_count')} CPUs, "
            f"Python {env.get('python')}; {env.get('isolation')}",
        ]
        if self.harness.get("timed"):
            lines.append(f"  timed: {self.harness['timed']}")
        if self.harness.get("reaches_change") is False:
            lines.append(
                f"  change not reached: the chosen tests execute none of the "
                f"{self.harness.get('changed_lines')} line(s) changed between A and B, so the "
                "timing may not see the change"
            )
        lines += [f"  protocol: {action}" for action in self.actions]
        lines += group_lines(self.groups)
        if self.noise:
            lines.append("  noise: " + "; ".join(self.noise))
        lines.append(f"  results: {self.files.get('result')}")
        return "\n".join(lines)


def group_lines(groups: list[dict[str, Any]]) -> list[str]:
    """The summary's lines on the call groups: the one that changed most, and what scaled
    means when its inputs were scaled."""
    top = most_changed(groups)
    if top is None:
        return []
    verdict = Verdict.from_dict(top["verdict"])
    compared = sum(1 for g in groups if g.get("compared"))
    lines = [
        f"  most changed of {compared} call group(s) timed alone: {top['label']} "
        f"({top['calls']} call(s)): {verdict.sentence()}",
    ]
    if top.get("scale"):
        low, high = top["scale"]
        factor = f"x{low}" if low == high else f"x{low}-{high}"
        lines.append(
            f"    its inputs were scaled {factor} (lists and tuples repeated, ranges extended, "
            f"to about {SCALE_ITEMS} items): not the tests' own inputs"
        )
    return lines


def set_aside_sentence(a: tuple[float, ...], b: tuple[float, ...], verdict: Verdict) -> str:
    """What the verdict left out (stats.outlier_rounds) and why, in one sentence."""
    kept = [k for k in range(len(a)) if k not in verdict.set_aside]
    usual = statistics.median(a[k] / b[k] for k in kept)
    rounds = ", ".join(
        f"{k + 1} (A {_seconds(a[k])}, B {_seconds(b[k])}: A/B {a[k] / b[k]:.2f})"
        for k in verdict.set_aside
    )
    return (
        f"set aside {len(verdict.set_aside)} of {len(a)} paired runs as accidents of their "
        f"round, far from the others' usual A/B of {usual:.2f}: {rounds}; the speed-up and "
        f"its interval come from the other {len(kept)} (a.json and b.json keep every run)"
    )


def _seconds(value: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if value >= scale:
            return f"{value / scale:.3f} {unit}"
    return f"{value / 1e-9:.1f} ns"


def _duration(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes}m{rest:02d}s" if minutes else f"{rest}s"


def _cv(means: list[float]) -> float:
    mean = statistics.fmean(means)
    return statistics.stdev(means) / mean if len(means) > 1 and mean else 0.0


def _noisy(a: list[float], b: list[float]) -> bool:
    return max(_cv(a), _cv(b)) >= NOISY_CV


def default_out_dir(repo: Path, target: str) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    safe = re.sub(r"[^\w.-]+", "_", target)[:40]
    return data_dir() / "perf" / f"{stamp}-{repo.name}-{safe}"


def choose_affinity(requested: str | None) -> tuple[str | None, str]:
    """The CPU list for pyperf's workers, and one sentence on what isolation there is."""
    try:
        isolated = Path("/sys/devices/system/cpu/isolated").read_text().strip()
    except OSError:
        isolated = ""
    if requested:
        return requested, f"workers pinned to CPU {requested} as asked; isolated CPUs: " + (
            isolated or "none"
        )
    if isolated:
        # pyperf pins to isolated CPUs by itself when the kernel has some (isolcpus=).
        return None, f"workers on the isolated CPUs {isolated} (isolcpus)"
    allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if not allowed:
        return None, "no CPU affinity on this system; workers run wherever the OS puts them"
    cpu = str(allowed[-1])
    return cpu, (
        f"no isolated CPUs (no isolcpus); every worker of both sides pinned to CPU {cpu}, "
        "which other processes still share"
    )


def _cpu_list(text: str) -> list[int]:
    cpus: list[int] = []
    for part in text.split(","):
        first, _, last = part.partition("-")
        cpus += range(int(first), int(last or first) + 1)
    return cpus


def common_loops(loops: dict[str, int]) -> dict[str, int]:
    """The loops per value each side is timed at, from each side's own calibration: both at the
    larger when the two are within 2x (identical or near-identical code). A value of more loops
    lies later in its process, which is still getting faster (stop 44: ~4% from a run's first
    value to its third), so unequal loops tilted identical code toward the side with more
    (64/128: 1.045x and 1.041x, significant). Further apart, each side keeps its own: A's loops
    for a 500x slower B made one value of B last about a minute."""
    low, high = min(loops.values(), default=0), max(loops.values(), default=0)
    if len(loops) == 2 and high <= 2 * low:
        return dict.fromkeys(loops, high)
    return dict(loops)


def loops_of_one(command_seconds: dict[str, float], settings: MeasureSettings) -> bool:
    """A command that lasts at least twice `min_time` at both sides (its quickcheck showed):
    one run per value, which is what a calibration would find, so none is run."""
    return bool(command_seconds) and min(command_seconds.values()) >= 2 * settings.min_time


def cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown CPU"


async def compare(
    request: CompareRequest,
    *,
    on_event: Subscriber | None = None,
    client: ModelClient | None = None,
) -> CompareResult:
    """Run the comparison; every step lands in the two environments' trajectories."""
    request.check()
    repo = request.repo.resolve()
    out = (request.out_dir or default_out_dir(repo, request.target())).resolve()
    out.mkdir(parents=True, exist_ok=True)
    tools = shared_tools()
    affinity, isolation = choose_affinity(request.settings.affinity)
    options = dict(request.backend_options)
    if request.backend == "docker" and affinity:
        # both containers on the same CPU(s), the one(s) pyperf pins its workers to
        options.setdefault("cpuset", affinity)
        options.setdefault("cpus", float(len(_cpu_list(affinity))))
        isolation += f"; each container pinned to CPU {options['cpuset']} (docker cpuset)"
    envs: list[PerfEnvironment] = []
    leases: list[envcache.TreeLease] = []
    try:
        for label, rev in (("A", request.a), ("B", request.b)):
            # Each side runs on its revision's own tree, so setup detects that revision's
            # project (its python_requires, requirement files, test tools), not HEAD's.
            commit = envcache.resolve(repo, rev, label)
            # held by this side alone until it closes (a busy tree: a private clone)
            lease = await asyncio.to_thread(envcache.lease_tree, repo, commit)
            leases.append(lease)
            tree = lease.path
            side_options = dict(options)
            key: envcache.EnvKey | None = None
            cached: envcache.CachedEnv | None = None
            if request.setup and not request.own_environment(label):
                key = envcache.EnvKey.of(
                    repo, commit, tree, python=request.python or "", backend=request.backend
                )
                cached = envcache.lookup(key)
                if cached is not None and cached.image:
                    side_options["image"] = cached.image
                elif request.backend == "docker":
                    # the setup installs from the package index: a container without network
                    # set nothing up, never reached ready, so no image was ever saved to reuse
                    side_options.setdefault("network", True)
            image = request.image_a if label == "A" else request.image_b
            if image:
                side_options["image"] = image
            env = await PerfEnvironment.open(
                label,
                tree,
                rev,
                tools=tools,
                trajectory_path=out / f"trajectory-{label.lower()}.jsonl",
                backend=request.backend,
                backend_options=side_options,
                python=(cached.python if cached is not None else None) or request.python_for(label),
                subscriber=on_event,
                commit=commit,
            )
            env.cache_key, env.cached = key, cached
            env.private_venv = lease.private_venv
            envs.append(env)
        env_a, env_b = envs
        params = {
            "repo": str(repo),
            "a": request.a,
            "b": request.b,
            "target": request.target(),
            "kind": "command" if request.command else "api",
            "model": request.model,
            "settings": request.settings.to_dict(),
            "out": str(out),
        }
        with (
            WorkflowRun(env_a.session, WORKFLOW, {**params, "side": "A"}) as run_a,
            WorkflowRun(env_b.session, WORKFLOW, {**params, "side": "B"}) as run_b,
        ):
            runs = {"A": run_a, "B": run_b}
            result = await _compare(
                request, repo, out, env_a, env_b, runs, client, (affinity, isolation)
            )
            payload = result.to_dict()
            run_a.result(**payload)
            run_b.result(**payload)
        (out / "result.json").write_text(json.dumps(payload, indent=2) + "\n")
        return result
    finally:
        for env in envs:
            await env.close()
        for lease in leases:
            lease.release()


async def _compare(
    request: CompareRequest,
    repo: Path,
    out: Path,
    env_a: PerfEnvironment,
    env_b: PerfEnvironment,
    runs: dict[str, WorkflowRun],
    client: ModelClient | None,
    pinning: tuple[str | None, str],
) -> CompareResult:
    envs = (env_a, env_b)
    cpus_seen: dict[str, str] = {}
    for env in envs:
        with runs[env.label].stage("checkout", rev=env.rev) as detail:
            detail["commit"] = await env.checkout()
            await env.install()
        if env.cached is None and env.cache_key is not None and env.local:
            # A vs A: the other side may have just made this very environment
            env.cached = envcache.lookup(env.cache_key)
            if env.cached is not None and request.python is None:
                env.python = env.cached.python
        if env.cached is not None:
            with runs[env.label].stage("setup", reused=True) as detail:
                detail.update(reused=True, **env.cached.detail())
        elif env.cache_key is not None:
            with runs[env.label].stage("setup") as detail:
                detail.update(
                    await _setup(env, env.cache_key, keep_python=request.python is not None)
                )
        with runs[env.label].stage("environment") as detail:
            detail["python"] = env.python
            detail["cpus"] = cpus_seen[env.label] = await env.visible_cpus()

    command_seconds: dict[str, float] = {}
    if request.command is not None:
        # The command runs once at each side before any timing: a command that fails shows
        # its output now, not "exit code 1" after minutes of calibration and rounds.
        for env in envs:
            with runs[env.label].stage("quickcheck", command=request.command) as detail:
                ran = await env.command_check(
                    request.command, request.cwd, timeout=request.settings.timeout
                )
                detail.update(ran.detail())
                if not ran.ok:
                    detail["failed"] = True
            if not ran.ok:
                what = "did not finish" if ran.timed_out else f"exits with status {ran.exit_code}"
                raise WorkflowFailure(
                    f"The command {what} at {env.label} ({env.rev}) in {ran.cwd}, before any "
                    f"timing; its last output:\n{ran.tail()}"
                )
            command_seconds[env.label] = ran.seconds

    harness_path: Path | None = None
    source = harnesses.HarnessSource("command")
    if request.api is not None:
        with runs["A"].stage("harness", api=request.api) as detail:
            harness_path, source = await _harness(request, out, env_a, env_b, runs, client)
            detail.update(path=str(harness_path), **source.to_dict())

    affinity, isolation = pinning
    settings = replace(request.settings, affinity=affinity)
    inside = {
        env.label: await env.put(harness_path) if harness_path is not None else None for env in envs
    }
    name = request.target()
    files = {
        "a": out / "a.json",
        "b": out / "b.json",
        "calibration_a": out / "calibration-a.json",
        "calibration_b": out / "calibration-b.json",
        "groups_a": out / "a.groups.jsonl",  # the workers' call groups, beside a.json
        "groups_b": out / "b.groups.jsonl",
    }
    for path in files.values():
        path.unlink(missing_ok=True)
    pinned = ["--affinity", affinity] if affinity else []
    load: list[float] = [os.getloadavg()[0]]
    cpus = os.cpu_count() or 1
    actions: list[str] = []
    timer = settings.timer
    if timer == "auto":
        busy = load[0] > settings.busy_load * cpus
        timer = "cpu" if busy else "wall"
        if busy:
            actions.append(
                f"timed CPU time, not elapsed time: the machine was busy at the start (load "
                f"{load[0]:.1f} on {cpus} CPUs), and CPU time does not count the other "
                "processes' share (--timer wall to time elapsed time anyway)"
            )
    values, warmups = settings.per_worker(
        request.command is not None, max(command_seconds.values(), default=None)
    )
    # a command's every value is a fresh process of it: the unit of the statistics
    each_value = request.command is not None

    async def measure(env: PerfEnvironment, output: Path, options: list[str]) -> None:
        await env.pyperf(
            output,
            name=name,
            harness=inside[env.label],
            command=request.command,
            options=[*options, *pinned, "--timer", timer],
            timeout=settings.timeout,
            cwd=request.cwd,
        )

    started = time.monotonic()
    # Each side is calibrated: pyperf's values are per loop, so the sides may differ in loops;
    # A's loops for B made one value of a 500x slower B last about a minute (50 s per value).
    loops: dict[str, int] = {}

    async def calibrate(env: PerfEnvironment) -> None:
        """`env`'s loops per value: as many as make a value last `min_time` in the timer now
        in use (`measure` passes it)."""
        calibration = files[f"calibration_{env.label.lower()}"]
        await env.discard(calibration)  # pyperf appends: the run of an earlier calibration
        with runs[env.label].stage("calibrate", min_time=settings.min_time, timer=timer) as detail:
            await measure(
                env,
                calibration,
                [
                    "--calibrate-loops",
                    "--values",
                    "1",
                    "--warmups",
                    str(warmups),
                    "--min-time",
                    str(settings.min_time),
                ],
            )
            await env.fetch(calibration)
            loops[env.label] = int(load_benchmark(calibration).get_metadata().get("loops") or 1)
            detail["loops"] = loops[env.label]

    for env in envs:
        if loops_of_one(command_seconds, settings):
            # a command of 2 x min_time or more: one run per value, as its quickcheck showed
            with runs[env.label].stage("calibrate", min_time=settings.min_time) as detail:
                loops[env.label] = 1
                detail.update(
                    loops=1, by="the command's quickcheck", command_seconds=command_seconds
                )
            continue
        await calibrate(env)

    equalized = ""  # said among the actions, before the stop, for the last calibrations

    def equalize() -> None:
        """Both sides at the larger loops where `common_loops` says so."""
        nonlocal equalized
        own = dict(loops)
        loops.update(common_loops(own))
        equalized = (
            f"timed both sides at {loops['A']} loops per value (calibrated {own['A']} (A) / "
            f"{own['B']} (B), within 2x): a value of more loops lies later in its process, "
            "which runs faster as it goes on, so unequal loops would favour the side with more"
            if loops != own
            else ""
        )

    equalize()

    per_worker = ["--values", str(values), "--warmups", str(warmups)]
    if harness_path is not None and settings.groups:
        per_worker += ["--group-budget", str(settings.group_budget(values))]
    # A command of a run per value is timed run by run, the sides alternating A B B A as a
    # by-hand ABBA does (see `_time_runs`); otherwise each side's pyperf worker in turn.
    direct = request.command is not None and all(count == 1 for count in loops.values())
    timed = _TimedRuns(name, request.command or "")
    per_round = 2 * math.ceil(values * settings.processes / 2)  # runs per side, ABBA blocks
    fixed = settings.rounds
    limit = fixed or settings.max_rounds
    done = 0
    round_seconds: list[float] = []
    pilot, pilot_rounds = 0, 0  # pairs (rounds) of the first look (since a restart)
    by_pilot = False  # the rounds stopped where the first look's spread said
    stop = ""
    while done < limit:
        order = envs if done % 2 == 0 else envs[::-1]
        t0 = time.monotonic()
        if direct:
            await _time_runs(
                order,
                per_round,
                timed,
                request,
                runs,
                number=done + 1,
                of=limit,
                timeout=settings.timeout,
                affinity=affinity,
            )
        else:
            for env in order:
                with runs[env.label].stage("measure", round=done + 1, of=limit):
                    loop_option = ["--loops", str(loops[env.label])]
                    for _ in range(settings.processes):
                        await measure(env, files[env.label.lower()], [*per_worker, *loop_option])
        round_seconds.append(time.monotonic() - t0)
        load.append(os.getloadavg()[0])
        done += 1
        if fixed or done < settings.min_rounds or done % 2:
            continue
        if direct:
            means_a, means_b = timed.values("A", timer), timed.values("B", timer)
        else:
            await env_a.fetch(files["a"])
            await env_b.fetch(files["b"])
            means_a = run_means(load_benchmark(files["a"]), each_value=each_value)
            means_b = run_means(load_benchmark(files["b"]), each_value=each_value)
        if settings.timer == "auto" and timer == "wall" and _noisy(means_a, means_b):
            worst = max(_cv(means_a), _cv(means_b))
            timer = "cpu"
            if direct:
                # every run was timed both ways: its CPU times are there already
                actions.append(
                    f"switched to CPU time after {done} rounds: the elapsed-time runs varied "
                    f"by {worst:.0%} of their mean (other processes competing for the CPU); "
                    "the same runs' CPU times were kept, nothing was run again"
                )
                means_a, means_b = timed.values("A", timer), timed.values("B", timer)
            else:
                # The loops were calibrated in elapsed time, which the competition inflated:
                # kept, a CPU-time value lasted a fraction of min_time (CI: 4 loops, ~1 ms of
                # CPU where 10 ms was asked), so each side is calibrated again in CPU time.
                before = dict(loops)
                for env in envs:
                    await calibrate(env)
                equalize()
                actions.append(
                    f"switched to CPU time after {done} rounds: the elapsed-time runs varied "
                    f"by {worst:.0%} of their mean (other processes competing for the CPU); "
                    "the elapsed-time rounds were set aside, each side calibrated again in "
                    f"CPU time ({before['A']} -> {loops['A']} (A) / {before['B']} -> "
                    f"{loops['B']} (B) loops per value) and the rounds started again"
                )
                for env in envs:
                    for kind in ("", "groups_"):
                        await env.discard(files[f"{kind}{env.label.lower()}"])
                done, pilot = 0, 0
                continue
        # The first rounds' spread decides how many rounds run, once (the wall-clock runs' if
        # the timer switched since is no matter: the same pairs' CPU times are taken now)
        if not pilot:
            pilot, pilot_rounds = len(means_a), done
        per_pair_round = len(means_a) / done
        needed = pairs_needed(
            means_a[:pilot], means_b[:pilot], settings.precision, systematic=settings.systematic
        )
        target = math.ceil(needed / per_pair_round)
        target += target % 2
        check = compare_runs(
            means_a, means_b, paired=True, pilot=pilot, systematic=settings.systematic
        )
        half = (check.ci_high - check.ci_low) / 2 / check.speedup
        offset = (
            f" (+-{systematic_half(settings.systematic):.1%} of it held for an offset "
            "between compares that no pair shows)"
            if settings.systematic
            else ""
        )
        if done >= target:
            by_pilot = True
            stop = (
                f"stopped after {done} rounds, as many as the first {pilot_rounds} "
                f"rounds' spread called for to bring the 95% interval within "
                f"+-{settings.precision:.0%} of the speed-up{offset}; it is +-{half:.1%}"
            )
            break
        spent = time.monotonic() - started
        if spent + 2 * statistics.fmean(round_seconds[-2:]) > settings.budget:
            # the budget, not the first look's spread, set the rounds: no floor (see below)
            check = compare_runs(means_a, means_b, paired=True, systematic=settings.systematic)
            half = (check.ci_high - check.ci_low) / 2 / check.speedup
            stop = (
                f"stopped at the budget ({_duration(settings.budget)}) after {done} rounds with "
                f"the 95% interval at +-{half:.1%} of the speed-up (asked "
                f"+-{settings.precision:.0%}); a larger --budget narrows it"
            )
            break
    if equalized:
        actions.append(equalized)
    if fixed:
        stop = f"{fixed} rounds, as asked"
    elif not stop:
        stop = f"stopped at the most rounds ({settings.max_rounds}) before the interval narrowed"
    elif done > settings.min_rounds:
        stop = stop.replace(
            "stopped", f"added rounds beyond the first {settings.min_rounds}; stopped", 1
        )
    actions.append(stop)
    measured = time.monotonic() - started

    if direct:
        timed.dump("A", timer, files["a"])
        timed.dump("B", timer, files["b"])
    else:
        await env_a.fetch(files["a"])
        await env_b.fetch(files["b"])
    groups = await _group_verdicts(env_a, env_b, files)
    bench_a, bench_b = load_benchmark(files["a"]), load_benchmark(files["b"])
    stats_a = side_stats(bench_a, each_value=each_value)
    stats_b = side_stats(bench_b, each_value=each_value)
    # The k-th runs of A and B ran in the same round: compared in pairs (see stats). Stein's
    # floor (the first look's spread over all pairs) is for rounds that stopped where that
    # spread said: their number hangs on it. Rounds the budget or the most rounds stopped
    # take the t interval of all pairs: it held the truth 94.7-97.1% of the time simulated
    # (bench/perf_stop_rules.py, "t at the cap": pilot 6 and 12, cap 20 and 30, offset sd
    # 0.007, 20 cases), and on the 52 recorded compares of stops 40-42 that the budget
    # stopped 51 times (52 with the floor) at 0.61x the same-width cost on average.
    verdict = compare_runs(
        list(stats_a.run_means),
        list(stats_b.run_means),
        paired=True,
        pilot=pilot if by_pilot else 0,
        systematic=0.0 if fixed else settings.systematic,
    )
    if verdict.set_aside:
        actions.append(set_aside_sentence(stats_a.run_means, stats_b.run_means, verdict))
    settings = replace(settings, timer=timer)
    for bench in (bench_a, bench_b):
        load += [
            float(run.get_metadata()["load_avg_1min"])
            for run in bench.get_runs()
            if "load_avg_1min" in run.get_metadata()
        ]
    metadata = pyperf_metadata(files["a"])
    environment = {
        "cpu_model": metadata.get("cpu_model_name") or cpu_model(),
        "cpu_count": cpus,
        "cpu_freq": metadata.get("cpu_freq"),
        "affinity": affinity,
        "isolation": isolation,
        "cpus_visible": cpus_seen,
        "load_avg": {"start": load[0], "max": max(load), "samples": len(load)},
        "python": str(metadata.get("python_version", sys.version.split()[0])),
        "python_executable": metadata.get("python_executable"),
        "platform": metadata.get("platform"),
        "pyperf": pyperf.__version__,
        "backend": request.backend,
        "revisions": {
            "a": {"rev": env_a.rev, "commit": env_a.commit},
            "b": {"rev": env_b.rev, "commit": env_b.commit},
        },
        "timer": timer,
        "measure_seconds": round(measured, 1),
        "protocol": (
            f"{timer} time; {done} interleaved rounds of {per_round} runs of the command per "
            "side, alternating run by run (A B B A, then B A A B, ...); no calibration (the "
            "quickcheck showed one run per value)"
            if direct
            else f"{timer} time; calibration at each side, then {done} interleaved "
            f"rounds (A B, B A, ...) of {settings.processes} worker process(es) per side, "
            f"{warmups} warm-up + {values} value(s) each, "
            f"{loops['A']} (A) / {loops['B']} (B) loops per value"
        ),
    }
    return CompareResult(
        repo=str(repo),
        target=name,
        kind="command" if request.command else "api",
        rev_a=env_a.rev,
        rev_b=env_b.rev,
        commit_a=env_a.commit,
        commit_b=env_b.commit,
        a=stats_a,
        b=stats_b,
        verdict=verdict,
        environment=environment,
        noise=noise_reasons(stats_a, stats_b, load, cpus),
        actions=actions,
        harness={"path": str(harness_path) if harness_path else None, **source.to_dict()},
        files={
            "a": str(files["a"]),
            "b": str(files["b"]),
            "calibration_a": str(files["calibration_a"]),
            "calibration_b": str(files["calibration_b"]),
            "result": str(out / "result.json"),
            "trajectory_a": str(env_a.session.trajectory_path),
            "trajectory_b": str(env_b.session.trajectory_path),
            **{k: str(files[k]) for k in ("groups_a", "groups_b") if files[k].exists()},
        },
        settings=settings.to_dict(),
        groups=groups,
    )


async def _group_verdicts(
    env_a: PerfEnvironment, env_b: PerfEnvironment, files: dict[str, Path]
) -> list[dict[str, Any]]:
    """The call groups' verdicts from the workers' `*.groups.jsonl` (none: no groups)."""
    runs: list[list[list[dict[str, Any]]]] = []
    for env, path in ((env_a, files["groups_a"]), (env_b, files["groups_b"])):
        with contextlib.suppress(Exception):
            await env.fetch(path)  # written only when the harness has groups
        lines = path.read_text().splitlines() if path.exists() else []
        runs.append([json.loads(line)["groups"] for line in lines if line.strip()])
    return group_verdicts(runs[0], runs[1])


class _TimedRuns:
    """A command's runs timed one by one at each side, both timers kept, written at the end
    as pyperf JSON (a run of one value each, in the order they ran), as a worker would have."""

    def __init__(self, name: str, command: str) -> None:
        self.name = name
        self.command = command
        self.runs: dict[str, list[tuple[float, float, float, str]]] = {"A": [], "B": []}
        self._machine: dict[str, Any] | None = None

    def add(self, label: str, wall: float, cpu: float) -> None:
        self.runs[label].append((wall, cpu, os.getloadavg()[0], time.strftime("%Y-%m-%d %H:%M:%S")))

    def values(self, label: str, timer: str) -> list[float]:
        return [run[1] if timer == "cpu" else run[0] for run in self.runs[label]]

    def machine(self) -> dict[str, Any]:
        """pyperf's metadata of this machine, those that every run of a benchmark shares (its
        Python's are not: the command runs whatever interpreter it names)."""
        if self._machine is None:
            collected = pyperf.Run([1.0], collect_metadata=True).get_metadata()
            kept = ("platform", "hostname", "aslr", "boot_time", "cpu_model_name", "cpu_count")
            self._machine = {key: collected[key] for key in kept if key in collected}
        return self._machine

    def dump(self, label: str, timer: str, path: Path) -> None:
        shared = {
            **self.machine(),
            "name": self.name,
            "loops": 1,
            "command": self.command,
            "reposim_timer": timer,
            "perf_version": pyperf.__version__,
        }
        runs = [
            pyperf.Run(
                [cpu if timer == "cpu" else wall],
                metadata={**shared, "load_avg_1min": load, "date": date},
                collect_metadata=False,
            )
            for wall, cpu, load, date in self.runs[label]
        ]
        pyperf.Benchmark(runs).dump(str(path), replace=True)


async def _time_runs(
    order: tuple[PerfEnvironment, ...] | list[PerfEnvironment],
    per_round: int,
    timed: _TimedRuns,
    request: CompareRequest,
    runs: dict[str, WorkflowRun],
    *,
    number: int,
    of: int,
    timeout: float,
    affinity: str | None,
) -> None:
    """One round of a command: `per_round` runs per side alternating run by run in blocks of
    first, second, second, first. The k-th run of A and the k-th of B (compared in pairs) are
    then neighbours, as in a by-hand ABBA: a worker per side timing k runs in a row put them
    k runs apart, and the machine's drift over that gap doubled the variance of a pair."""
    first, second = order
    sequence = [first, second, second, first] * (per_round // 2)
    for env in sequence:
        with runs[env.label].stage("measure", round=number, of=of):
            wall, cpu = await env.time_command(
                request.command or "", request.cwd, timeout=timeout, affinity=affinity
            )
        timed.add(env.label, wall, cpu)


async def _setup(
    env: PerfEnvironment, key: envcache.EnvKey, *, keep_python: bool
) -> dict[str, Any]:
    """The shared setup ladder (simulator.setup.run_setup) at this revision, in the session
    opened on the revision's own tree; its interpreter then runs the harness, and the
    environment is kept under `key` for the next compare, mine or batch of this revision."""
    from simulator.setup import SetupOptions, run_setup

    private = env.private_venv is not None
    venv = env.private_venv or (envcache.venv_dir(key) if env.local else None)
    if venv is not None and not private:
        envcache.discard(key)  # a half-made venv of an interrupted setup
        venv.parent.mkdir(parents=True, exist_ok=True)
    result = await run_setup(
        env.session,
        SetupOptions(venv_dir=str(venv) if venv is not None else None),
        params={"for": WORKFLOW, "rev": env.rev, "commit": env.commit},
    )
    if result.python and not keep_python:
        env.python = result.python
    detail: dict[str, Any] = {
        "reused": False,
        "tier": str(result.verdict.tier),
        "python": result.python,
        "setup_seconds": round(result.seconds, 1),
    }
    if not result.python:
        return detail
    if env.local:
        if private:
            detail["cache"] = "not kept: made on a private clone (the cached tree was in use)"
        elif Path(result.python).exists():
            envcache.record(key, python=result.python, tier=detail["tier"])
            detail["cache"] = str(key.directory)
    elif result.verdict.ready:
        from simulator.setup.envimage import save_environment

        saved = await save_environment(env.session, result, name=f"perf-{key.repo.name}")
        envcache.record(key, python=result.python, tier=detail["tier"], image=saved.tag)
        detail.update(image=saved.tag, cache=str(key.directory))
    return detail


async def _harness(
    request: CompareRequest,
    out: Path,
    env_a: PerfEnvironment,
    env_b: PerfEnvironment,
    runs: dict[str, WorkflowRun],
    client: ModelClient | None,
) -> tuple[Path, harnesses.HarnessSource]:
    """The harness file, written (traced or by a model) unless given, and quickchecked."""
    api = request.api or ""
    path = out / "harness.py"
    if request.harness is not None:
        if request.harness.resolve() != path:
            path.write_text(request.harness.read_text())
        source = harnesses.HarnessSource("file")
        await _quickcheck_or_fail(path, (env_a, env_b), runs, "Edit it and run again.", source)
        return path, source

    if request.model is None and client is None:
        # the lines A..B changed (at B): the tests that execute them are preferred, and the
        # result says when none of the chosen tests reaches the change
        changed = harnesses.changed_lines(
            Path(env_b.tree or env_b.root), env_a.commit, env_b.commit
        )
        lines_file = out / "changed-lines.json"
        lines_file.write_text(json.dumps(changed))
        traces = []
        for env in (env_a, env_b):
            with runs[env.label].stage("trace-tests", api=api) as detail:
                trace = await env.trace(
                    api,
                    out / f"trace-{env.label.lower()}.json",
                    lines=lines_file if changed and env is env_b else None,
                )
                calling = [t["nodeid"] for t in trace["tests"] if t.get("calls")]
                detail.update(tests=len(trace["tests"]), calling=len(calling))
                collection = harnesses.collection_failure(trace)
                if collection:
                    detail["collection_errors"] = len(trace["collection_errors"])
                traces.append(trace)
        tests = harnesses.usable_tests(traces)
        replay: tuple[str, str] | None = None
        first: tuple[PerfEnvironment, ...] = (env_a, env_b)
        calls_file: Path | None = None
        if not tests:
            # no test calls it at both revisions under one name (renamed, split): the tests
            # of one revision (B's first: the change's) give the calls, replayed at both
            for env, trace in ((env_b, traces[1]), (env_a, traces[0])):
                tests = harnesses.usable_tests([trace])
                if tests:
                    calls_file = out / "calls.pickle"
                    calls_file.unlink(missing_ok=True)
                    replay = (env.path_for(calls_file), env.label)
                    first = (env, env_b if env is env_a else env_a)
                    break
        if not tests:
            for env, trace in zip((env_a, env_b), traces, strict=True):
                collection = harnesses.collection_failure(trace)
                if collection:
                    raise WorkflowFailure(
                        f"The tests could not be collected at {env.label} ({env.rev}): "
                        f"{collection}; no test calling {api} could be traced there."
                    )
            calling = [t for trace in traces for t in trace["tests"] if t.get("calls")]
            if calling and not any(t.get("plain") for t in calling):
                raise NoTracedHarness(
                    f"{len({t['nodeid'] for t in calling})} test(s) call {api}, but each needs "
                    "what a traced harness does not replay (a pytest fixture or a parameter)"
                )
            raise NoTracedHarness(
                f"No test of the repository calls {api} without fixtures and passes at both "
                "revisions"
            )
        revisions = f"{env_a.commit[:10]} and {env_b.commit[:10]}"
        root = Path(first[0].root)
        path.write_text(harnesses.traced_harness(api, tests, root, revisions, replay))
        source = harnesses.HarnessSource("traced", tests=[t.nodeid for t in tests])
        if changed and (replay is None or first[0] is env_b):
            source.changed_lines = sum(len(v) for v in changed.values())
            source.reaches_change = any(t.reached for t in tests)
        # with a replay, the revision whose tests give the calls goes first: it writes them,
        # and they are carried to the other side (another container on Docker) before its turn
        await _quickcheck_or_fail(
            path, first, runs, "Edit it or pass --model.", source, carry=calls_file
        )
        return path, source

    model = client or LiteLLMClient(
        request.model or "", api_base=request.api_base, api_key=request.api_key
    )
    if client is None and isinstance(model, LiteLLMClient):
        model.check()
    try:
        context = harnesses.sliced_context(Path(env_b.root), api)
    except KeyError as exc:
        raise WorkflowFailure(str(exc.args[0])) from None
    writer = harnesses.HarnessWriter(model, api, context)
    source = harnesses.HarnessSource("model", model=model.model)
    try:
        code = await writer.write()
        for attempt in range(request.fix_rounds + 1):
            path.write_text(code)
            failure = await _first_failure(path, (env_a, env_b), runs, attempt, source)
            if failure is None:
                break
            env, report = failure
            if attempt == request.fix_rounds:
                raise WorkflowFailure(
                    f"The harness still fails at {env.label} ({env.rev}) after "
                    f"{request.fix_rounds} repairs: {report.error}; see {path}."
                )
            code = await writer.repair(
                f"The harness fails at revision {env.label} ({env.rev}):\n"
                f"{report.traceback or report.error}\nWrite the whole file again, fixed, so "
                "that it works at both revisions."
            )
    except ModelError as exc:
        raise WorkflowFailure(str(exc)) from None
    source.rounds, source.tokens = writer.rounds, writer.tokens
    return path, source


async def _first_failure(
    path: Path,
    envs: tuple[PerfEnvironment, ...],
    runs: dict[str, WorkflowRun],
    attempt: int = 0,
    source: harnesses.HarnessSource | None = None,
    carry: Path | None = None,
) -> tuple[PerfEnvironment, QuickcheckReport] | None:
    """The first side whose quickcheck of the harness fails, with its report. `carry`: a file
    the first side's quickcheck writes (the captured calls) that the other sides read: copied
    out of the first side's environment and into theirs (no-ops on the local backend)."""
    for env in envs:
        with runs[env.label].stage("quickcheck", attempt=attempt) as detail:
            report = await env.quickcheck(await env.put(path))
            detail.update(report.detail())
            if not report.ok:
                detail["failed"] = True
        if not report.ok:
            return env, report
        if source is not None:
            source.timed = report.timed
        if carry is not None and env is envs[0]:
            await env.fetch(carry)
            for other in envs[1:]:
                await other.put(carry)
    return None


async def _quickcheck_or_fail(
    path: Path,
    envs: tuple[PerfEnvironment, ...],
    runs: dict[str, WorkflowRun],
    advice: str,
    source: harnesses.HarnessSource | None = None,
    carry: Path | None = None,
) -> None:
    failure = await _first_failure(path, envs, runs, source=source, carry=carry)
    if failure is not None:
        env, report = failure
        raise WorkflowFailure(
            f"The harness {path} fails at {env.label} ({env.rev}): {report.error}. {advice}"
        )


def run(request: CompareRequest, **kwargs: Any) -> CompareResult:
    """The synchronous entry (batch workers, scripts)."""
    return asyncio.run(compare(request, **kwargs))
