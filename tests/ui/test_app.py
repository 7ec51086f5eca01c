"""The app shell driven like a user would: keys through Textual's Pilot, a real session on a real
repository, and checks on the workspace on disk and on the recorded trajectory."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from textual.widgets import OptionList, TabbedContent

from simulator.events import Actor
from simulator.session import Session
from tests.conftest import SessionOn, reposim
from tests.ui.helpers import (
    f5_run,
    notices,
    palette_highlights,
    quit_prompt_with_an_edit,
    recorded,
    running,
    wait_for,
    wait_quiet,
    workspace,
)
from widgets.agent_pane import AgentPane
from widgets.app import RepoSimApp
from widgets.changes_view import ChangesView
from widgets.editor_pane import EditorPane
from widgets.file_tree import FileTree
from widgets.help_screen import HelpScreen
from widgets.status_bar import StatusBar
from widgets.terminal_pane import TerminalPane
from widgets.tests_panel import TestsPanel

RepoFactory = Callable[..., Path]


def current_row(app: RepoSimApp) -> int:
    area = app.query_one(EditorPane).current_editor
    assert area is not None
    return area.cursor_location[0]


async def test_open_from_tree_edit_save_is_on_disk_and_recorded(session: Session) -> None:
    async with running(session) as (app, pilot):
        tree = app.query_one(FileTree)
        await wait_for(pilot, lambda: "calc" in tree.nodes_by_path, "the root listing")
        assert app.focused is tree
        await pilot.press("enter")  # the cursor starts on the first entry: calc/
        await wait_for(pilot, lambda: "calc/ops.py" in tree.nodes_by_path, "calc/ listed")
        await pilot.press("down", "down", "enter")  # calc/__init__.py, calc/ops.py
        editor = app.query_one(EditorPane)
        await wait_for(pilot, lambda: editor.current_path == "calc/ops.py", "ops.py opened")
        await pilot.press("z", "z", "ctrl+s")
        on_disk = workspace(session) / "calc" / "ops.py"
        await wait_for(pilot, lambda: on_disk.read_text().startswith("zzdef add"), "the save")
        await wait_for(pilot, lambda: tree.status.get("calc/ops.py") == "M", "the M mark")
        assert tree.status.get("calc") == "•"
        await wait_for(pilot, lambda: app.query_one(StatusBar).changed == 1, "the change count")
    writes = [e for e in recorded(session.trajectory_path) if e["kind"] == "file.write"]
    assert [(e["actor"], e["payload"]["path"]) for e in writes] == [("human", "calc/ops.py")]
    assert "+zzdef add(a, b):" in writes[0]["payload"]["diff"]


async def test_gitignored_files_and_git_dir_are_hidden(
    make_repo: RepoFactory, tmp_path: Path
) -> None:
    repo = make_repo(
        {
            ".gitignore": "*.log\nbuild/\n",
            "app.py": "print('hi')\n",
            "debug.log": "noise\n",
            "build/out.bin": "x",
            "pkg/keep.py": "",
            "pkg/.gitignore": "generated.py\n",
            "pkg/generated.py": "",
        }
    )
    session = await Session.open(repo, trajectory_path=tmp_path / "t.jsonl")
    try:
        async with running(session) as (app, pilot):
            tree = app.query_one(FileTree)
            await wait_for(pilot, lambda: "app.py" in tree.nodes_by_path, "the root listing")
            tree.nodes_by_path["pkg"].expand()
            await wait_for(pilot, lambda: "pkg/keep.py" in tree.nodes_by_path, "pkg/ listed")
            listed = set(tree.nodes_by_path)
        # The app never closes the session it shows: its launcher does (reposim.ui.run_ui).
        assert not session.closed
    finally:
        await session.close()
    assert {"app.py", "pkg", ".gitignore", "pkg/keep.py"} <= listed
    assert not {".git", "debug.log", "build", "pkg/generated.py"} & listed


async def test_a_huge_folder_is_paged_and_more_entries_come_on_enter(
    make_repo: RepoFactory,
    tmp_path: Path,
) -> None:
    files = {f"big/f{i:05d}.txt": "" for i in range(4500)}
    files["small.txt"] = ""
    repo = make_repo(files)
    async with await Session.open(repo, trajectory_path=tmp_path / "t.jsonl") as session:
        app = RepoSimApp(session)
        async with app.run_test(size=(120, 40)) as pilot:
            tree = app.query_one(FileTree)
            await wait_for(pilot, lambda: "big" in tree.nodes_by_path, "the root listing")
            big = tree.nodes_by_path["big"]
            big.expand()
            await wait_for(pilot, lambda: "big/f01999.txt" in tree.nodes_by_path, "the first page")
            assert "big/f02000.txt" not in tree.nodes_by_path
            more = big.children[-1]
            assert more.data is not None and more.data.kind == "more"
            assert "2500 more" in str(more.label)
            tree.focus()

            def on_more() -> bool:
                # Node line numbers are only known once the tree has laid out its new rows.
                tree.move_cursor(more)
                return tree.cursor_node is more

            await wait_for(pilot, on_more, "the cursor on the more row")
            await pilot.press("enter")
            await wait_for(pilot, lambda: "big/f03999.txt" in tree.nodes_by_path, "the second page")
            # The tree keeps answering keys while it holds thousands of rows.
            await pilot.press("ctrl+b")
            assert not app.query_one("#sidebar").display


async def test_terminal_command_runs_in_the_workspace_and_the_tree_shows_its_file(
    session: Session,
) -> None:
    async with running(session) as (app, pilot):
        terminal = app.query_one(TerminalPane)
        await wait_for(pilot, lambda: terminal.pty is not None, "the shell")
        await pilot.press("ctrl+@")  # Ctrl+` as legacy terminals send it
        assert terminal.has_focus
        await pilot.press(*"echo made > made.txt", "enter")
        made = workspace(session) / "made.txt"
        await wait_for(pilot, made.exists, "the command's file")
        tree = app.query_one(FileTree)
        await wait_for(pilot, lambda: "made.txt" in tree.nodes_by_path, "the tree refresh")
        await wait_for(pilot, lambda: tree.status.get("made.txt") == "A", "the A mark")
        # A command that stays silent for a while before changing the workspace: the tree looks
        # again when the prompt comes back.
        await pilot.press(*"sleep 2; echo late > late.txt", "enter")
        await wait_for(pilot, lambda: "late.txt" in tree.nodes_by_path, "the late file")
        await pilot.press("ctrl+@")  # a second press hides the panel
        assert not app.query_one("#panel").display
    inputs = "".join(
        e["payload"]["data"]
        for e in recorded(session.trajectory_path)
        if e["kind"] == "terminal.input"
    )
    assert "echo made > made.txt\r" in inputs
    assert "sleep 2; echo late > late.txt\r" in inputs


async def test_f5_runs_the_tests_and_enter_opens_the_failure_at_its_line(
    session: Session,
) -> None:
    async with running(session) as (app, pilot):
        await pilot.press("f5")
        panel = app.query_one("#panel", TabbedContent)
        assert panel.active == "panel-tests"
        tests = app.query_one(TestsPanel)
        await wait_for(pilot, lambda: tests.result is not None, "the test run")
        assert tests.result is not None
        assert tests.result.counts() == {"passed": 1, "failed": 1, "error": 1, "skipped": 1}
        await pilot.press("alt+3")  # focus the panel's list
        assert isinstance(app.focused, OptionList)
        await pilot.press("enter")  # failures come first: test_mean
        editor = app.query_one(EditorPane)
        await wait_for(pilot, lambda: editor.current_path == "tests/test_ops.py", "the jump")
        failing = next(t for t in tests.result.tests if t.outcome == "failed")
        assert failing.line is not None
        assert current_row(app) == failing.line - 1
        source = (workspace(session) / "tests/test_ops.py").read_text().splitlines()
        assert "assert mean([1, 2, 3]) == 2" in source[failing.line - 1]
        assert "tests: 1 passed, 1 failed" in str(app.query_one(StatusBar).render())


async def test_quick_open_palette_opens_a_file_by_name(session: Session) -> None:
    async with running(session) as (app, pilot):
        await pilot.press("ctrl+p")
        await pilot.press(*"calc/ops")
        await wait_for(pilot, lambda: palette_highlights(app, "ops.py"), "the palette's hit")
        await pilot.press("enter")
        editor = app.query_one(EditorPane)
        await wait_for(pilot, lambda: editor.current_path == "calc/ops.py", "the file to open")
        tree = app.query_one(FileTree)

        def revealed() -> bool:
            node = tree.cursor_node
            return node is not None and node.data is not None and node.data.path == "calc/ops.py"

        await wait_for(pilot, revealed, "the tree to reveal the file")
        assert tree.nodes_by_path["calc"].is_expanded


async def test_command_palette_switches_and_saves_the_theme(
    session: Session, config_home: Path
) -> None:
    async with running(session) as (app, pilot):
        assert app.theme == "reposim-dark"
        app.open_path("calc/ops.py")
        editor = app.query_one(EditorPane)
        await wait_for(pilot, lambda: editor.current_editor is not None, "the editor")
        area = editor.current_editor
        assert area is not None
        await wait_for(pilot, lambda: area.theme == "editor-reposim-dark", "editor colours")
        await pilot.press("f2")
        await pilot.press(*"reposim-light")
        await wait_for(pilot, lambda: palette_highlights(app, "reposim-light"), "the theme hit")
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.theme == "reposim-light", "the theme switch")
        assert area.theme == "editor-reposim-light"
        assert app.current_theme.dark is False
    assert 'theme = "reposim-light"' in (config_home / "config.toml").read_text()


async def test_theme_and_keymap_come_from_the_config_files(
    session: Session, config_home: Path
) -> None:
    config_home.mkdir(parents=True, exist_ok=True)  # the session keeps its trajectory key here
    (config_home / "config.toml").write_text('# mine\n[ui]\ntheme = "reposim-light"\n')
    (config_home / "keymap.toml").write_text('"app.toggle_tree" = "ctrl+e"\n"app.nope" = "f9"\n')
    async with running(session) as (app, pilot):
        assert app.theme == "reposim-light"
        assert any("app.nope" in notice for notice in notices(app))
        sidebar = app.query_one("#sidebar")
        await pilot.press("ctrl+b")  # no longer bound
        assert sidebar.display
        await pilot.press("ctrl+e")
        assert not sidebar.display
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)
        rows = app.screen.rows
        assert ("App", "Ctrl+e", "Show or hide the file tree", "app.toggle_tree") in rows
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


async def test_agent_edits_reach_the_changes_view_the_open_buffer_and_the_agent_pane(
    session: Session,
) -> None:
    async with running(session, (160, 48)) as (app, pilot):
        assert app.query_one(AgentPane).display  # wide enough for the agent pane
        app.open_path("calc/ops.py")
        editor = app.query_one(EditorPane)
        await wait_for(pilot, lambda: editor.current_editor is not None, "the editor")
        await session.edit("calc/ops.py", "(len(values) - 1)", "len(values)", actor=Actor.AGENT)
        area = editor.current_editor
        assert area is not None
        await wait_for(pilot, lambda: "/ len(values)\n" in area.text, "the buffer reload")
        await pilot.press("f7")
        changes = app.query_one(ChangesView)
        await wait_for(pilot, lambda: [c.path for c in changes.changes] == ["calc/ops.py"], "list")
        diff = app.query_one("#changes-diff")
        await wait_for(
            pilot, lambda: "+    return sum(values) / len(values)" in str(diff.render()), "the diff"
        )
        app.open_path("tests/test_ops.py")
        await wait_for(pilot, lambda: editor.current_path == "tests/test_ops.py", "other file")
        await pilot.press("alt+3", "enter")
        await wait_for(pilot, lambda: editor.current_path == "calc/ops.py", "open from changes")
        await pilot.press("ctrl+j")
        assert not app.query_one(AgentPane).display


async def test_search_in_files_opens_the_match_at_its_line(session: Session) -> None:
    async with running(session) as (app, pilot):
        await pilot.press("f6")
        await pilot.press(*"fixture exploded", "enter")
        await wait_for(pilot, lambda: bool(getattr(app.screen, "matches", None)), "matches")
        await pilot.press("down", "enter")
        editor = app.query_one(EditorPane)
        await wait_for(pilot, lambda: editor.current_path == "tests/test_ops.py", "the jump")
        lines = (workspace(session) / "tests/test_ops.py").read_text().splitlines()
        assert "fixture exploded" in lines[current_row(app)]


async def test_small_terminal_hides_the_agent_pane_and_fits(session: Session) -> None:
    async with running(session, (80, 24)) as (app, pilot):
        await wait_for(pilot, lambda: app.query_one(EditorPane).size.height >= 10, "the layout")
        assert not app.query_one(AgentPane).display
        editor_height = app.query_one(EditorPane).size.height
        assert editor_height >= 10
        await pilot.press("ctrl+j")
        assert app.query_one(AgentPane).display
        await pilot.press("alt+left")
        assert app.query_one("#sidebar").styles.width is not None


def test_open_reports_a_missing_path_in_one_sentence(tmp_path: Path) -> None:
    proc = reposim("open", str(tmp_path / "missing"))
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"reposim: error: {tmp_path / 'missing'} does not exist."


def test_open_reports_an_unknown_theme_in_one_sentence(sample_repo: Path) -> None:
    proc = reposim("open", str(sample_repo), "--theme", "neon")
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("reposim: error: There is no theme named 'neon'")
    assert len(proc.stderr.strip().splitlines()) == 1


async def test_ctrl_q_with_unsaved_edits_asks_and_cancel_keeps_them(session: Session) -> None:
    from widgets.editor_pane import ChoiceScreen

    async with running(session) as (app, pilot):
        editor = app.query_one(EditorPane)
        await editor.open_file("calc/ops.py")
        await pilot.press("z", "z")
        await wait_for(pilot, lambda: editor.is_dirty("calc/ops.py"), "the dirty tab")
        await pilot.press("ctrl+q")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen), "the quit prompt")
        assert "calc/ops.py" in str(app.screen.query_one("#question").render())
        await pilot.press("escape")  # Cancel: back in the editor, the edit still there
        await wait_for(pilot, lambda: not isinstance(app.screen, ChoiceScreen), "the prompt gone")
        assert app.is_running and editor.is_dirty("calc/ops.py")
        await pilot.press("ctrl+q")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen), "the prompt again")
        await pilot.click("#save")
        await wait_for(pilot, lambda: not app.is_running, "the app to exit after saving")
    on_disk = workspace(session) / "calc" / "ops.py"
    assert on_disk.read_text().startswith("zzdef add")


async def test_ctrl_q_discard_quits_without_writing(session: Session) -> None:

    async with running(session) as (app, pilot):
        await quit_prompt_with_an_edit(app, pilot)
        await pilot.click("#discard")
        await wait_for(pilot, lambda: not app.is_running, "the app to exit")
    assert (workspace(session) / "calc" / "ops.py").read_text().startswith("def add")


async def test_the_quit_prompts_buttons_move_with_the_arrow_keys(session: Session) -> None:
    from textual.widgets import Button

    async with running(session) as (app, pilot):
        await quit_prompt_with_an_edit(app, pilot)

        def focused() -> str:
            return app.focused.id or "" if isinstance(app.focused, Button) else ""

        start = focused()
        await pilot.press("right")
        assert focused() != start
        await pilot.press("left")
        assert focused() == start
        for _ in range(3):  # Cancel, Discard, Save
            if focused() == "discard":
                break
            await pilot.press("right")
        assert focused() == "discard"
        await pilot.press("enter")
        await wait_for(pilot, lambda: not app.is_running, "the app to exit")
    assert (workspace(session) / "calc" / "ops.py").read_text().startswith("def add")


def test_esc_digit_from_tmux_is_alt_digit_not_a_character() -> None:
    """tmux and xterm send Alt+1 as ESC 1; it must reach the bindings as alt+1, not type "¡"."""
    from textual._xterm_parser import XTermParser

    import widgets.app  # noqa: F401  (installs the routing)

    for digit in "1234":
        keys = [(e.key, e.character) for e in XTermParser().feed(f"\x1b{digit}")]  # type: ignore[attr-defined]
        assert keys == [(f"alt+{digit}", None)]
    assert [e.key for e in XTermParser().feed("£")] == ["pound_sign"]  # type: ignore[attr-defined]


async def test_alt_3_again_walks_the_panel_to_the_tests_and_changes_lists(
    session: Session,
) -> None:
    async with running(session) as (app, pilot):
        panel = app.query_one("#panel", TabbedContent)
        await pilot.press("alt+3")
        await wait_for(pilot, lambda: app.focused is app.query_one(TerminalPane), "terminal")
        await pilot.press("alt+3")
        await wait_for(pilot, lambda: panel.active == "panel-tests", "the Tests tab")
        await wait_for(pilot, lambda: app.focused is app.query_one("#tests-list"), "tests list")
        await pilot.press("alt+3")
        await wait_for(pilot, lambda: app.focused is app.query_one("#changes-files"), "changes")
        await pilot.press("alt+2", "alt+1")
        await wait_for(pilot, lambda: app.focused is app.query_one(FileTree), "the tree")


async def test_a_collection_error_shows_why_in_the_tests_panel(
    make_repo: RepoFactory, session_on: SessionOn
) -> None:
    repo = make_repo(
        {
            "tests/test_uses_absl.py": "import absl_missing_dep\n\n\ndef test_x():\n    pass\n",
            "tests/test_ok.py": "def test_ok():\n    assert True\n",
        },
        name="needs-dep",
    )
    session = await session_on(repo, "t.jsonl")
    async with running(session) as (app, pilot):
        await f5_run(pilot, app)
        rows = app.query_one("#tests-list", OptionList)
        first = str(rows.get_option_at_index(0).prompt)
        assert "No module named 'absl_missing_dep'" in first
        detail = app.query_one("#tests-detail")
        await wait_for(pilot, lambda: detail.has_class("-shown"), "the failure's detail")
        text = str(app.query_one("#tests-detail-text").render())
        assert "import absl_missing_dep" in text and "ModuleNotFoundError" in text


async def test_enter_on_a_failure_opens_the_frame_that_raised(
    make_repo: RepoFactory, session_on: SessionOn
) -> None:
    repo = make_repo(
        {
            "calc/__init__.py": "",
            "calc/ops.py": (
                "import json\n\n\n"
                "def parse(text):\n    return json.loads(text)\n\n\n"
                "def ratio(a, b):\n    return a / b\n"
            ),
            "tests/test_ops.py": (
                "from calc.ops import parse, ratio\n\n\n"
                "def test_parse():\n    assert parse('{') == {}\n\n\n"
                "def test_ratio():\n    assert ratio(1, 0) == 0\n"
            ),
        },
        name="raises",
    )
    session = await session_on(repo, "t.jsonl")
    async with running(session) as (app, pilot):
        await f5_run(pilot, app)
        await pilot.press("alt+3")
        await wait_for(pilot, lambda: isinstance(app.focused, OptionList), "the list")
        editor = app.query_one(EditorPane)
        lines = (workspace(session) / "calc/ops.py").read_text().splitlines()
        # ZeroDivisionError: raised in calc/ops.py's `return a / b`, not in the test.
        await pilot.press("down", "enter")
        await wait_for(pilot, lambda: editor.current_path == "calc/ops.py", "the jump")
        assert lines[current_row(app)].strip() == "return a / b"
        # json's error is raised in the standard library: the innermost frame of the
        # repository's own code is the call of json.loads.
        await pilot.press("alt+3", "up", "enter")
        await wait_for(
            pilot, lambda: lines[current_row(app)].strip() == "return json.loads(text)", "jump"
        )
        rows = app.query_one("#tests-list", OptionList)
        assert "calc/ops.py:9" in str(rows.get_option_at_index(1).prompt)


async def test_tool_caches_stay_out_of_the_file_tree_after_f5(
    make_repo: RepoFactory, session_on: SessionOn
) -> None:
    """pytest's cache, bytecode and pytest-benchmark's folder are the tools' (VS Code's
    files.exclude idea): F5 must not add them to the tree a person reads."""
    repo = make_repo(
        {
            "calc.py": "def one():\n    return 1\n",
            "tests/test_calc.py": "from calc import one\n\n\ndef test_one():\n    assert one()\n",
            ".benchmarks/Linux-CPython-3.11-64bit/0001_run.json": "{}\n",
        }
    )
    session = await session_on(repo, "t.jsonl")
    async with running(session) as (app, pilot):
        tree = app.query_one(FileTree)
        await wait_for(pilot, lambda: "calc.py" in tree.nodes_by_path, "the root listing")
        await f5_run(pilot, app)
        assert (workspace(session) / ".pytest_cache").is_dir()  # made by the run
        tree.nodes_by_path["tests"].expand()
        await wait_for(pilot, lambda: "tests/test_calc.py" in tree.nodes_by_path, "tests/")
        tree.relist_loaded()
        await wait_quiet(pilot, app)
        listed = set(tree.nodes_by_path)
    assert {"calc.py", "tests", "tests/test_calc.py"} <= listed
    assert not {".pytest_cache", ".benchmarks", "__pycache__", "tests/__pycache__"} & listed
