"""`reposim extract`: functions, call graph and dependency-sliced context of a repository."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import IO, Any

import click

from reposim.cli.batch import BatchSettings, batch_options, run_batch_cli
from reposim.cli.common import CliError, existing_dir
from reposim.cli.options import choice_option, json_option, number_option
from simulator.analysis.export import ContextMode, Extraction, ExtractOptions, file_record
from simulator.analysis.filters import DEFAULT_PRESET, FILTERS, PRESETS, FilterSpec
from simulator.analysis.index import CodeIndex
from simulator.analysis.model import FileRecord, Lang
from simulator.analysis.project import discover, extract_tree


def _languages(value: str) -> list[Lang]:
    langs: list[Lang] = []
    for item in value.split(","):
        item = item.strip().lower()
        if not item:
            continue
        try:
            langs.append(Lang(item))
        except ValueError:
            raise CliError(f"unknown language {item!r}; use python, c or python,c.") from None
    if not langs:
        raise CliError("give at least one language with --lang (python, c).")
    return langs


def _filters_help() -> str:
    lines = ["Filters (switch on with --filter NAME[=VALUE], repeatable or comma-separated):", ""]
    for f in FILTERS.values():
        lines.append(f"  {f.name:<20} {f.help}")
    lines.append("")
    for name, members in PRESETS.items():
        default = " (the default)" if name == DEFAULT_PRESET else ""
        lines.append(f"  {name:<20} preset{default}: {', '.join(members)}")
    lines.append(f"  {'none':<20} no filter: every function")
    lines += ["", "Rules, sources and the reasons for each difference: docs/extract-filters.md"]
    return "\n".join(lines)


def _dump(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False)


@click.command("extract")
@click.argument("path")
@batch_options(".reposim-extract-results.jsonl")
@click.option(
    "--lang",
    "lang",
    default="python,c",
    show_default=True,
    help="Languages to analyse, comma-separated.",
)
@click.option(
    "--filter",
    "filters",
    multiple=True,
    metavar="NAME[=VALUE]",
    help="Keep only functions passing this filter (repeatable). Presets: `reposim` (the "
    "default), `r2e` (R2E's rules exactly); `none` keeps every function. See --list-filters.",
)
@click.option("--list-filters", is_flag=True, help="Describe the filters and exit.")
@choice_option(
    "--context",
    "context",
    choices=[m.value for m in ContextMode],
    default="sliced",
    help="Context per function: its dependency slice, its whole file, or nothing.",
)
@number_option(
    "--budget",
    minimum=0,
    default=4000,
    help="Token budget of a sliced context (the function itself is always kept).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(),
    help="Write here instead of stdout (a folder when PATH lists repositories).",
)
@json_option("Stream JSON lines (header, files, functions, summary) instead of one document.")
def extract_command(
    path: str,
    lang: str,
    filters: tuple[str, ...],
    list_filters: bool,
    context: str,
    budget: int,
    output: str | None,
    as_json: bool,
    batch: BatchSettings,
) -> None:
    """Extract functions, the call graph and each function's context from the repository at PATH.

    Python and C, with tree-sitter: a file with syntax errors still yields the functions that
    parse, and the output names it. A progress bar goes to stderr.

        reposim extract ./repo --filter r2e --budget 2000 -o functions.json

    PATH may also be a file listing repositories (one path a line, # for comments): each is
    extracted as JSON lines to OUTPUT_DIR/<name>.jsonl (-o names the folder) through the batch
    layer, so a rerun skips what is done (--results) and --jobs runs several at once. For one
    repository, --jobs is the number of parsing processes (default: up to 2).
    """
    if list_filters:
        click.echo(_filters_help())
        return
    langs = _languages(lang)
    try:
        spec = FilterSpec.parse(filters) if filters else FilterSpec.default()
    except ValueError as exc:
        raise CliError(str(exc)) from None
    if Path(path).is_file():
        _run_list(Path(path), langs, filters, context, budget, output, batch)
        return
    root = existing_dir(path)
    started = time.perf_counter()
    paths = discover(root, langs)
    if not paths:
        raise CliError(f"no {' or '.join(str(x) for x in langs)} files under {path}.")

    out: IO[str] = sys.stdout
    if output is not None and Path(output).is_dir():
        raise CliError(f"{output} is a folder; -o names the file to write.")
    if output is not None:
        try:
            out = Path(output).open("w", encoding="utf-8")  # noqa: SIM115 - closed below
        except OSError as exc:
            raise CliError(f"cannot write {output}: {exc.strerror}.") from None
    try:
        _run(
            root,
            paths,
            langs,
            spec,
            ContextMode(context),
            budget,
            out,
            as_json,
            batch.jobs,
            started,
        )
    finally:
        if out is not sys.stdout:
            out.close()


def _run(
    root: Path,
    paths: list[str],
    langs: list[Lang],
    spec: FilterSpec,
    context: ContextMode,
    budget: int,
    out: IO[str],
    as_json: bool,
    jobs: int | None,
    started: float,
) -> None:
    options = ExtractOptions(filters=spec, context=context, budget=budget)
    file_lines: list[str] = []

    with click.progressbar(length=len(paths), label="Parsing", file=sys.stderr) as bar:

        def on_file(record: FileRecord) -> None:
            file_lines.append(_dump(file_record(record)))
            bar.update(1)

        records = extract_tree(root, paths, workers=jobs, on_file=on_file)
    index = CodeIndex({r.path: r for r in records})
    extraction = Extraction(index, str(root), [str(x) for x in langs], options)
    header = extraction.header()
    click.echo("Resolving calls...", err=True)
    selected = extraction.selected()

    if as_json:
        out.write(_dump({"type": "header", **header}) + "\n")
        for line in file_lines:
            out.write('{"type": "file", ' + line[1:] + "\n")
    else:
        out.write("{\n")
        for key, value in header.items():
            out.write(f"  {_dump(key)}: {_dump(value)},\n")
        out.write('  "files": [\n    ' + ",\n    ".join(file_lines) + "\n  ],\n")
        out.write('  "functions": [\n')
    label = "Slicing" if context is ContextMode.SLICED else "Writing"
    with click.progressbar(
        extraction.records(selected), length=len(selected), label=label, file=sys.stderr
    ) as items:
        for i, item in enumerate(items):
            if as_json:
                out.write(_dump({"type": "function", **item}) + "\n")
            else:
                out.write(("    " if i == 0 else ",\n    ") + _dump(item))
    summary = extraction.summary(len(selected), time.perf_counter() - started)
    if as_json:
        out.write(_dump({"type": "summary", **summary}) + "\n")
    else:
        out.write(("\n" if selected else "") + '  ],\n  "summary": ' + _dump(summary) + "\n}\n")
    out.flush()
    broken = summary["files_with_errors"]
    click.echo(
        f"{summary['files']} files, {summary['functions']} functions "
        f"({summary['selected']} selected), {summary['calls']} calls "
        f"({summary['resolved_calls']} resolved) in {summary['seconds']:.1f} s.",
        err=True,
    )
    if broken:
        shown = ", ".join(broken[:5]) + (f" and {len(broken) - 5} more" if len(broken) > 5 else "")
        click.echo(
            f"{len(broken)} file(s) had syntax errors (the rest of each was extracted): {shown}.",
            err=True,
        )


def _run_list(
    listing: Path,
    langs: list[Lang],
    filters: tuple[str, ...],
    context: str,
    budget: int,
    output: str | None,
    batch: BatchSettings,
) -> None:
    from simulator.analysis.batch import extract_repository, extraction_task

    if output is None:
        raise CliError("with a list of repositories, -o names the folder for their outputs.")
    out_dir = Path(output)
    if out_dir.exists() and not out_dir.is_dir():
        raise CliError(f"{output} is a file; with a list of repositories -o names a folder.")
    try:
        lines = listing.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"cannot read {listing}: {exc}.") from None
    repos = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    if not repos:
        raise CliError(f"{listing} lists no repositories.")
    options = {
        "langs": [str(x) for x in langs],
        "filters": list(filters),
        "context": context,
        "budget": budget,
    }
    tasks = [
        extraction_task((listing.parent / repo).expanduser().resolve(), out_dir, options)
        for repo in repos
    ]
    summary = run_batch_cli(tasks, extract_repository, batch, label="extract")
    if any(record.status != "ok" for record in summary.records):
        sys.exit(1)


def register(group: click.Group) -> None:
    group.add_command(extract_command)
