"""The workspace index read through the session: listing rules, refresh, nothing recorded."""

from __future__ import annotations

from pathlib import Path

from simulator.analysis.session_index import (
    MAX_FILE_BYTES,
    WorkspaceIndex,
    build_index,
    call_hierarchy,
    list_sources,
    refresh,
)
from simulator.events import Event, Kind
from simulator.session import Session
from tests.analysis.nav_project import NAV_FILES
from tests.conftest import RepoFactory


async def test_listing_honours_gitignore_and_skips_vendored_and_big_files(
    make_repo: RepoFactory, tmp_path: Path
) -> None:
    repo = make_repo(
        {
            ".gitignore": "generated/\n*_pb2.py\n",
            "app/main.py": "def main():\n    pass\n",
            "app/.gitignore": "local_*.py\n",
            "app/local_settings.py": "X = 1\n",
            "app/msg_pb2.py": "Y = 2\n",
            "generated/out.py": "Z = 3\n",
            "node_modules/lib/x.c": "int x(void) { return 0; }\n",
            "build/lib/copy.py": "def copy():\n    pass\n",
            "dist/pkg.py": "A = 1\n",
            ".venv/lib/site.py": "B = 1\n",
            "native/fast.c": "int fast(void) { return 1; }\n",
            "native/fast.h": "int fast(void);\n",
            "README.md": "# readme\n",
        },
        commit=False,
    )
    (repo / "app" / "huge.py").write_text("N = 1\n" * (MAX_FILE_BYTES // 6 + 10))
    session = await Session.open(repo, trajectory_path=tmp_path / "run.jsonl")
    try:
        paths = await list_sources(session)
    finally:
        await session.close()
    assert paths == ["app/main.py", "native/fast.c", "native/fast.h"]


async def test_build_records_no_file_reads(session: Session) -> None:
    events: list[Event] = []
    session.subscribe(events.append)
    index = await build_index(session)
    assert sorted(index.files) == NAV_FILES
    assert [e for e in events if e.kind == Kind.FILE_READ] == []
    location = index.definition_at("pkg/a.py", 5, 12)
    assert location is not None and (location.path, location.line) == ("pkg/b.py", 4)


async def test_refresh_follows_writes_creates_and_deletes(session: Session) -> None:
    index = await build_index(session)
    await session.write("pkg/b.py", "def helper(x):\n    return x\n\n\ndef extra():\n    pass\n")
    assert await refresh(session, index, "pkg/b.py")
    assert [s.name for s in index.outline("pkg/b.py")] == ["helper", "extra"]
    await session.create("pkg/c.py", "from pkg.b import extra\n\n\ndef go():\n    extra()\n")
    assert await refresh(session, index, "pkg/c.py")
    assert [(r.path, r.line) for r in index.callers("extra")] == [("pkg/c.py", 5)]
    await session.delete("pkg/c.py")
    assert await refresh(session, index, "pkg/c.py")
    assert "pkg/c.py" not in index.files
    assert index.callers("extra") == []
    assert not await refresh(session, index, "README.md")


async def test_workspace_index_queries_wait_for_the_build(session: Session) -> None:
    workspace = WorkspaceIndex(session)
    assert not workspace.ready
    assert not await workspace.refresh("pkg/a.py")  # nothing to refresh before the build
    await workspace.build()
    outline = await workspace.query(lambda index: index.outline("pkg/b.py"))
    assert [(s.name, s.kind, s.depth) for s in outline] == [
        ("helper", "function", 0),
        ("Box", "class", 0),
        ("size", "method", 1),
    ]
    await session.write("pkg/a.py", "from pkg.b import helper\n\n\ndef twice():\n    helper(2)\n")
    assert await workspace.refresh("pkg/a.py")
    callers = await workspace.query(lambda index: index.callers("helper", "pkg/b.py"))
    assert [(c.path, c.line) for c in callers] == [("pkg/a.py", 5), ("pkg/b.py", 10)]


async def test_resync_after_a_command_picks_up_only_what_changed(session: Session) -> None:
    workspace = WorkspaceIndex(session)
    await workspace.build()
    assert await workspace.resync() == []
    script = (
        "printf 'def made():\\n    pass\\n' > pkg/made.py && rm src/util.c && "
        "printf 'int square(int x);\\nint cube(int x);\\n' > src/util.h"
    )
    result = await session.exec(script)
    assert result.exit_code == 0
    assert await workspace.resync() == ["pkg/made.py", "src/util.c", "src/util.h"]
    names = await workspace.query(lambda index: [s.name for s in index.outline("src/util.h")])
    assert names == ["square", "cube"]
    assert await workspace.query(lambda index: "src/util.c" not in index.files)


async def test_call_hierarchy_in_c_resolves_through_the_header(session: Session) -> None:
    index = await build_index(session)
    # On the call `square(4)` in main.c: the hierarchy is square's, defined in util.c.
    on_call = call_hierarchy(index, "src/main.c", 4, 12)
    assert on_call is not None
    assert (on_call.function.path, on_call.function.qualname) == ("src/util.c", "square")
    assert [(c.path, c.line, c.caller) for c in on_call.callers] == [
        ("src/main.c", 4, "src/main.c::main")
    ]
    # Inside main's body but not on a call: main's own hierarchy, its callee resolved.
    inside = call_hierarchy(index, "src/main.c", 4, 4)
    assert inside is not None and inside.function.qualname == "main"
    assert [(c.expr, c.location.path if c.location else None) for c in inside.callees] == [
        ("square", "src/util.c")
    ]
    assert call_hierarchy(index, "src/util.h", 1, 0) is None  # not in any function
