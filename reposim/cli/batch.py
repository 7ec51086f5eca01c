"""What every batch command shares: the same options, a live progress line, the summary.

    @click.command("setup")
    @batch_options
    def setup_command(..., batch: BatchSettings) -> None:
        summary = run_batch_cli(tasks, setup_task, batch, label="setup")

`--results FILE` is the append-only store a rerun resumes from; `--jobs`, `--timeout`,
`--retry-failed`; `--ray-address` (or `--executor ray`) runs on Ray instead of local worker
processes.
"""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from reposim.cli.common import CliError
from reposim.cli.options import choice_option, number_option
from simulator.batch import (
    BatchProgress,
    BatchSummary,
    ResultStore,
    StoreError,
    Task,
    TaskFunction,
    TaskStatus,
    run_batch,
)
from simulator.batch.ray_executor import RayUnavailable


@dataclass(frozen=True)
class BatchSettings:
    results: Path
    jobs: int | None
    timeout: float | None
    retry_failed: bool
    executor: str
    ray_address: str | None
    quiet: bool


def batch_options(default_results: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Adds the batch options to a command; it receives them as `batch: BatchSettings`."""

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        @click.option(
            "--results",
            type=click.Path(dir_okay=False, path_type=Path),
            default=default_results,
            show_default=True,
            help="Append-only JSONL results file; a rerun skips what it already holds.",
        )
        @number_option(
            "--jobs", "-j", minimum=1, whole=True, help="Tasks at once (default: one per core)."
        )
        @number_option(
            "--timeout",
            minimum=1,
            whole=False,
            help="Seconds one task may take before it is killed and recorded as timeout.",
        )
        @click.option(
            "--retry-failed",
            is_flag=True,
            help="Run again the tasks whose recorded result is 'failed'.",
        )
        @choice_option(
            "--executor",
            choices=["process", "ray"],
            default="process",
            help="Local worker processes, or Ray (a local instance started for the run).",
        )
        @click.option(
            "--ray-address",
            default=None,
            metavar="HOST:PORT",
            help="Run on this Ray cluster (implies --executor ray); see the README.",
        )
        @functools.wraps(func)
        def wrapper(
            *args: Any,
            results: Path,
            jobs: int | None,
            timeout: float | None,
            retry_failed: bool,
            executor: str,
            ray_address: str | None,
            **kwargs: Any,
        ) -> Any:
            settings = BatchSettings(
                results=results,
                jobs=jobs,
                timeout=timeout,
                retry_failed=retry_failed,
                executor="ray" if ray_address else executor,
                ray_address=ray_address,
                quiet=bool(kwargs.get("json_output")),
            )
            return func(*args, batch=settings, **kwargs)

        return wrapper

    return decorate


def run_batch_cli(
    tasks: Iterable[Task], fn: TaskFunction, settings: BatchSettings, *, label: str
) -> BatchSummary:
    """Run the batch with a progress line on stderr (when it is a terminal, or every few
    seconds otherwise) and the summary table at the end."""
    store = ResultStore(settings.results)
    printer = _ProgressPrinter(label, quiet=settings.quiet)
    try:
        summary = run_batch(
            tasks,
            fn,
            store=store,
            jobs=settings.jobs,
            timeout=settings.timeout,
            retry=frozenset({TaskStatus.FAILED}) if settings.retry_failed else frozenset(),
            on_progress=printer,
            executor=settings.executor,
            ray_address=settings.ray_address,
        )
    except (StoreError, RayUnavailable, ValueError) as exc:
        raise CliError(str(exc)) from None
    finally:
        printer.done()
    if store.skipped_lines:
        click.echo(
            f"reposim {label}: {len(store.skipped_lines)} unreadable line(s) in "
            f"{settings.results} were ignored (lines {store.skipped_lines[:5]}).",
            err=True,
        )
    if not settings.quiet:
        click.echo(summary.table(), err=True)
        click.echo(f"results: {settings.results}", err=True)
    return summary


class _ProgressPrinter:
    def __init__(self, label: str, *, quiet: bool) -> None:
        self.label = label
        self.quiet = quiet
        self.tty = sys.stderr.isatty()
        self.last_print = 0.0
        self.width = 0

    def __call__(self, progress: BatchProgress) -> None:
        if self.quiet:
            return
        now = time.monotonic()
        line = f"{self.label} {progress.line()}"
        if self.tty:
            sys.stderr.write("\r" + line.ljust(self.width))
            sys.stderr.flush()
            self.width = len(line)
        elif now - self.last_print >= 5 or progress.done + progress.skipped == progress.total:
            sys.stderr.write(line + "\n")
            sys.stderr.flush()
            self.last_print = now

    def done(self) -> None:
        if self.tty and self.width and not self.quiet:
            sys.stderr.write("\n")
            sys.stderr.flush()
