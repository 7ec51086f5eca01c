"""The file tree: lazy, gitignore-aware, refreshed by session events, with change marks.

Directories are listed through `session.list_dir` in workers (the local backend scans in a
thread), ignore rules are matched in a thread, and a huge folder shows its first entries with a
"more" row, so that a folder of 50k files never freezes the UI.

New file, new folder, rename and delete go through the session (`create`, `rename`, `delete`), so
they are recorded in the trajectory and replayed like an agent's. The session has no "make an
empty folder": a new folder is made with an empty `.gitkeep` in it, which is also what lets git
(the Changes list, checkpoints, replay) see it at all.
"""

from __future__ import annotations

import asyncio
import os
import posixpath
import stat as stat_mod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from rich.style import Style
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Tree
from textual.widgets.input import Selection as InputSelection
from textual.widgets.tree import TreeNode

# The first frame lists the tree from the disk; simulator.session and simulator.events load
# after it, with the session (issue 29): only the light modules are imported here.
from simulator.event_kinds import Kind
from simulator.session_errors import SessionError, opened
from simulator.workspace import BackendError, DirEntry, WorkspaceWalk, child_path
from widgets.coalesce import Coalesced
from widgets.keybindings import default_bindings
from widgets.palette import PaletteAction

if TYPE_CHECKING:
    from simulator.events import Event
    from simulator.session import Session

PAGE = 2000
"""Entries shown per page of a directory; the rest come with the "more" row."""

REFRESH_AFTER = frozenset({Kind.EXEC_RESULT, Kind.TEST_RESULT, Kind.RESTORE})
FILE_KINDS = frozenset(
    {Kind.FILE_WRITE, Kind.FILE_EDIT, Kind.FILE_CREATE, Kind.FILE_DELETE, Kind.FILE_RENAME}
)


@dataclass
class Entry:
    path: str
    """Workspace-relative POSIX path; "." is the root."""
    kind: str
    """"dir", "file" or "more" (the row that shows the next page of a big directory)."""
    loaded: bool = False
    pending: list[tuple[str, str]] | None = None
    """For a "more" row: the (name, kind) entries not shown yet."""

    @property
    def is_dir(self) -> bool:
        return self.kind == "dir"


class PromptScreen(ModalScreen[str | None]):
    """One line of text: Enter gives it, Esc gives None."""

    DEFAULT_CSS = """
    PromptScreen { align: center middle; }
    PromptScreen > Vertical {
        width: 70; max-width: 100%; height: auto; padding: 1 2;
        border: thick $primary; background: $surface;
    }
    PromptScreen Label { width: 100%; margin-bottom: 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = list(default_bindings("tree_prompt"))

    def __init__(self, question: str, value: str = "", placeholder: str = "") -> None:
        super().__init__()
        self.question = question
        self.value = value
        self.placeholder = placeholder

    def compose(self) -> ComposeResult:
        stem, dot, _suffix = self.value.rpartition(".")
        with Vertical():
            yield Label(self.question, id="prompt-question")
            # Renaming selects the name without its extension, as VS Code does.
            yield Input(
                self.value,
                placeholder=self.placeholder,
                id="prompt-input",
                select_on_focus=not (dot and stem),
            )

    def on_mount(self) -> None:
        field = self.query_one(Input)
        field.focus()
        stem, dot, _suffix = self.value.rpartition(".")
        if dot and stem:
            field.selection = InputSelection(0, len(stem))

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)


# Folders the tools a run starts write for themselves (bytecode, pytest's and the type
# checkers' caches, pytest-benchmark's saved runs): hidden like VS Code's files.exclude hides
# .git, so a test run does not add folders a person never made. Virtualenvs stay visible.
TOOL_CACHES = frozenset(
    {
        "__pycache__",
        ".pytest_cache",
        ".mypy_cache",
        ".ruff_cache",
        ".hypothesis",
        ".benchmarks",
    }
)


class SourceReader:
    """The directory a session's workspace starts as, read from the disk: what the tree lists
    while the session is still opening (issue 29: the tree is drawn before the session stack
    starts). Read-only, unrecorded; listed as the local backend lists (symlinks by what they
    point to, folders first)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, path: str) -> Path:
        relative = posixpath.normpath(path)
        if relative.startswith(("/", "../")) or relative == "..":
            raise SessionError(f"{path} is outside the workspace")
        return self.root / relative

    async def list_dir(self, path: str = ".") -> list[DirEntry]:
        def scan() -> list[DirEntry]:
            entries = []
            try:
                with os.scandir(self._path(path)) as found:
                    for item in found:
                        try:
                            st = item.stat(follow_symlinks=False)
                            kind = "dir" if stat_mod.S_ISDIR(st.st_mode) else "file"
                            if stat_mod.S_ISLNK(st.st_mode):
                                kind = "dir" if item.is_dir() else "file"
                        except OSError:
                            continue
                        entries.append(DirEntry(item.name, kind, st.st_size))
            except OSError as exc:
                raise SessionError(f"cannot list {path}: {exc.strerror}") from exc
            return sorted(entries, key=lambda e: (e.kind != "dir", e.name.lower()))

        return await asyncio.to_thread(scan)

    async def read_bytes(self, path: str) -> bytes:
        try:
            return await asyncio.to_thread(self._path(path).read_bytes)
        except OSError as exc:
            raise SessionError(f"cannot read {path}: {exc.strerror}") from exc


SESSION_ACTIONS = frozenset({"new_file", "new_folder", "rename", "delete"})
"""The tree's actions that go through the session: off until it has opened."""


class FileTree(Tree[Entry]):
    """The workspace's files; Enter or a click on a file posts `FileTree.FileChosen`.

    Made with no session (`source` instead), it lists the directory the workspace starts as
    from the disk until `attach` gives it the session, then lists through the session."""

    BINDINGS: ClassVar[list[BindingType]] = list(default_bindings("tree"))

    DEFAULT_CSS = """
    FileTree > .file-tree--modified { color: $warning; }
    FileTree > .file-tree--added { color: $success; }
    FileTree > .file-tree--deleted { color: $error; }
    FileTree > .file-tree--more { color: $text-muted; text-style: italic; }
    """
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "file-tree--modified",
        "file-tree--added",
        "file-tree--deleted",
        "file-tree--more",
    }
    ICON_NODE = "▸ "
    ICON_NODE_EXPANDED = "▾ "

    @dataclass
    class FileChosen(Message):
        path: str

    def __init__(
        self, session: Session | None, *, source: Path | None = None, id: str | None = None
    ) -> None:
        if session is not None:
            source = session.source
        assert source is not None, "a FileTree needs a session or the source it starts as"
        # Text, as every entry's label: a str would be parsed as markup (loading rich's emoji
        # table before the first frame) and a name like "[b]x" would not show as it is.
        super().__init__(Text(source.name), Entry(".", "dir"), id=id)
        self._session = session
        reader = session if session is not None else SourceReader(source)
        self.walk = WorkspaceWalk(reader, skip_dir=TOOL_CACHES.__contains__)
        self.nodes_by_path: dict[str, TreeNode[Entry]] = {".": self.root}
        self.status: dict[str, str] = {}
        """Change marks: "M" modified, "A" added (files and, as "•", their parent dirs)."""
        self._refresh_pending = False
        self._refresh_status = Coalesced(self, self._refresh_status_once, "tree-status")
        self.show_root = False
        self.guide_depth = 2

    @property
    def session(self) -> Session:
        """The session the tree shows; SessionError while it is still opening."""
        return opened(self._session)

    @property
    def attached(self) -> bool:
        """Whether the tree lists through its session (not yet while the session opens)."""
        return self._session is not None

    def attach(self, session: Session) -> None:
        """The session has opened: list through it from now on (the folders shown are listed
        again, through it) and show its change marks."""
        self._session = session
        self.walk = WorkspaceWalk(session, skip_dir=TOOL_CACHES.__contains__)
        self.relist_loaded()
        self.refresh_status()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in SESSION_ACTIONS and self._session is None:
            return False
        return super().check_action(action, parameters)

    def on_mount(self) -> None:
        self.load_dir(self.root)
        if self._session is not None:
            self.refresh_status()

    # -- listing -----------------------------------------------------------------------------

    async def _visible_entries(self, directory: str) -> list[tuple[str, str]] | None:
        try:
            entries = await self.walk.entries(directory)
        except Exception as exc:  # any backend error becomes one notification
            self.notify(f"Cannot list {directory}: {exc}", severity="error")
            return None
        return [(e.name, "dir" if e.kind == "dir" else "file") for e in entries]

    @work(group="tree-list")
    async def load_dir(self, node: TreeNode[Entry]) -> None:
        await self._load(node)

    async def _load(self, node: TreeNode[Entry]) -> None:
        """List a directory into its node, keeping the nodes (and expansion) of entries that
        are still there."""
        entry = node.data
        if entry is None or not entry.is_dir:
            return
        listed = await self._visible_entries(entry.path)
        if listed is None or node.tree is not self:
            return
        first_listing = not entry.loaded
        entry.loaded = True
        self._sync_children(node, listed)
        if first_listing and node is self.root and self.cursor_line < 0:
            self.cursor_line = 0

    def _sync_children(self, node: TreeNode[Entry], listed: list[tuple[str, str]]) -> None:
        assert node.data is not None
        parent = node.data.path
        existing: dict[str, TreeNode[Entry]] = {}
        for child in list(node.children):
            data = child.data
            if data is None or data.kind == "more":
                child.remove()
                continue
            existing[posixpath.basename(data.path)] = child
        wanted = {name for name, _ in listed}
        for name, child in existing.items():
            if name not in wanted:
                self._forget(child)
                child.remove()
        # Entries already shown (a page opened with "more") stay; new ones fill the first page.
        shown = [e for i, e in enumerate(listed) if i < PAGE or e[0] in existing]
        rest = [e for i, e in enumerate(listed) if not (i < PAGE or e[0] in existing)]
        for index, (name, kind) in enumerate(shown):
            present = existing.get(name)
            if present is not None and present.data is not None and present.data.kind == kind:
                continue
            if present is not None:
                self._forget(present)
                present.remove()
            self._add_entry(node, child_path(parent, name), kind, before=index)
        if rest:
            self._add_more(node, rest)

    def _add_entry(
        self, node: TreeNode[Entry], path: str, kind: str, *, before: int | None = None
    ) -> TreeNode[Entry]:
        label = Text(posixpath.basename(path))
        child = node.add(label, Entry(path, kind), before=before, allow_expand=kind == "dir")
        self.nodes_by_path[path] = child
        return child

    def _forget(self, node: TreeNode[Entry]) -> None:
        if node.data is not None:
            self.nodes_by_path.pop(node.data.path, None)
        for child in node.children:
            self._forget(child)

    def _show_more(self, node: TreeNode[Entry]) -> None:
        entry, parent = node.data, node.parent
        if entry is None or parent is None or parent.data is None or not entry.pending:
            return
        page, rest = entry.pending[:PAGE], entry.pending[PAGE:]
        node.remove()
        for name, kind in page:
            self._add_entry(parent, child_path(parent.data.path, name), kind)
        if rest:
            self._add_more(parent, rest)

    def _add_more(self, node: TreeNode[Entry], rest: list[tuple[str, str]]) -> None:
        path = node.data.path if node.data is not None else "."
        node.add_leaf(
            Text(f"… {len(rest)} more (Enter)"),
            Entry(child_path(path, "…more"), "more", pending=rest),
        )

    # -- events ------------------------------------------------------------------------------

    def on_tree_node_expanded(self, event: Tree.NodeExpanded[Entry]) -> None:
        event.stop()
        data = event.node.data
        if data is not None and data.is_dir and not data.loaded:
            self.load_dir(event.node)

    def on_tree_node_selected(self, event: Tree.NodeSelected[Entry]) -> None:
        event.stop()
        data = event.node.data
        if data is None:
            return
        if data.kind == "more":
            self._show_more(event.node)
        elif data.kind == "file":
            self.post_message(self.FileChosen(data.path))

    def on_session_event(self, event: Event) -> None:
        """Called by the app for every session event (terminal commands, which announce no end,
        are watched by the app, which calls `schedule_refresh`)."""
        from simulator.events import file_paths  # loaded by now: events come from the session

        kind = event.kind
        if kind in FILE_KINDS:
            for path in file_paths(event):
                # The nearest folder shown: a new file may have made folders on its way.
                parent = self._nearest_shown(path)
                if parent.data is not None and parent.data.loaded:
                    self.load_dir(parent)
            self.schedule_refresh(relist=False)
        elif kind in REFRESH_AFTER:
            self.schedule_refresh(relist=True)

    def schedule_refresh(self, *, relist: bool) -> None:
        """Coalesce bursts of events into one refresh."""
        if relist:
            self._relist_wanted = True
        if self._refresh_pending:
            return
        self._refresh_pending = True
        self.set_timer(0.3, self._do_refresh)

    _relist_wanted = False

    def _do_refresh(self) -> None:
        self._refresh_pending = False
        if self._relist_wanted:
            self._relist_wanted = False
            self.relist_loaded()
        self.refresh_status()

    def relist_loaded(self) -> None:
        for node in list(self.nodes_by_path.values()):
            data = node.data
            if (
                data is not None
                and data.is_dir
                and data.loaded
                and (node is self.root or node.is_expanded)
            ):
                self.load_dir(node)

    def refresh_status(self) -> None:
        """Read the change marks again (coalesced with a refresh already running)."""
        self._refresh_status()

    async def _refresh_status_once(self) -> None:
        try:
            changes = await self.session.changes()
        except Exception:  # no git in the backend: the tree just has no marks
            return
        status: dict[str, str] = {}
        for change in changes:
            if change.status == "D":
                continue
            status[change.path] = "A" if change.status == "A" else "M"
            parent = posixpath.dirname(change.path)
            while parent:
                status.setdefault(parent, "•")
                parent = posixpath.dirname(parent)
        previous, self.status = self.status, status
        for path in set(previous) | set(status):
            if previous.get(path) != status.get(path):
                node = self.nodes_by_path.get(path)
                if node is not None:
                    node.refresh()  # drops the tree's cached line for this node

    def render_label(self, node: TreeNode[Entry], base_style: Style, style: Style) -> Text:
        text = super().render_label(node, base_style, style)
        data = node.data
        if data is None:
            return text
        if data.kind == "more":
            text.stylize(self.get_component_rich_style("file-tree--more", partial=True))
            return text
        mark = self.status.get(data.path)
        suffix = f" {mark}" if mark else ""
        # A name longer than the panel ends in an ellipsis (the change mark stays visible)
        # instead of being cut mid-letter or scrolling the whole tree sideways.
        room = self.scrollable_content_region.width - self._indent(node) - len(suffix)
        if room > 1 and text.cell_len > room:
            text.truncate(room, overflow="ellipsis")
        if mark:
            mark_style = self.get_component_rich_style(
                "file-tree--added" if mark == "A" else "file-tree--modified", partial=True
            )
            text.stylize(mark_style)
            text.append(suffix, mark_style)
        return text

    def _indent(self, node: TreeNode[Entry]) -> int:
        """Cells of guides left of a node's label (the root is hidden)."""
        depth = 0
        parent = node.parent
        while parent is not None and parent is not self.root:
            depth += 1
            parent = parent.parent
        return depth * self.guide_depth

    # -- keys --------------------------------------------------------------------------------

    def palette_actions(self) -> list[PaletteAction]:
        """The tree's file operations, for the app's command palette (they act where the
        tree's cursor is)."""
        return [
            PaletteAction(
                "New file…", "In the tree's folder (n in the tree)", self.action_new_file
            ),
            PaletteAction(
                "New folder…", "In the tree's folder (N in the tree)", self.action_new_folder
            ),
            PaletteAction("Rename file or folder…", "The tree's entry (r)", self.action_rename),
            PaletteAction(
                "Delete file or folder…", "The tree's entry (Delete)", self.action_delete
            ),
        ]

    def action_expand_or_enter(self) -> None:
        """Right: expand a folder; on an expanded one, go to its first entry (as VS Code)."""
        node = self.cursor_node
        if node is None or node.data is None or not node.data.is_dir:
            return
        if not node.is_expanded:
            node.expand()
        elif node.children:
            self.move_cursor(node.children[0])

    def action_collapse_or_parent(self) -> None:
        """Left: collapse an expanded folder, else go to the folder this entry is in."""
        node = self.cursor_node
        if node is None:
            return
        if node.data is not None and node.data.is_dir and node.is_expanded:
            node.collapse()
        elif node.parent is not None and node.parent is not self.root:
            self.move_cursor(node.parent)

    def _here(self) -> str:
        """The folder a new entry goes in: the folder under the cursor, or the file's folder."""
        node = self.cursor_node
        data = node.data if node is not None else None
        if data is None:
            return "."
        if data.is_dir:
            return data.path
        return posixpath.dirname(data.path) or "."

    def _chosen_entry(self) -> Entry | None:
        node = self.cursor_node
        data = node.data if node is not None else None
        if data is None or data.kind == "more" or data.path == ".":
            return None
        return data

    def action_new_file(self) -> None:
        folder = self._here()
        where = "the workspace root" if folder == "." else f"{folder}/"

        async def answered(name: str | None) -> None:
            if name:
                path = await self._run(
                    lambda path: self.session.create(path), child_path(folder, name)
                )
                if path is not None:
                    self.reveal(path)
                    self.post_message(self.FileChosen(path))

        self.app.push_screen(
            PromptScreen(f"New file in {where}", placeholder="name.py (a/b.py makes folders)"),
            answered,
        )

    def action_new_folder(self) -> None:
        folder = self._here()
        where = "the workspace root" if folder == "." else f"{folder}/"

        async def answered(name: str | None) -> None:
            if name:
                path = child_path(folder, name.rstrip("/"))
                made = await self._run(
                    lambda keep: self.session.create(keep), child_path(path, ".gitkeep")
                )
                if made is not None:
                    self.reveal(made)

        self.app.push_screen(
            PromptScreen(
                f"New folder in {where} (made with an empty .gitkeep, so git sees it)",
                placeholder="folder name",
            ),
            answered,
        )

    def action_rename(self) -> None:
        entry = self._chosen_entry()
        if entry is None:
            return
        src = entry.path
        folder = posixpath.dirname(src) or "."

        async def answered(name: str | None) -> None:
            if not name or name == posixpath.basename(src):
                return
            dst = await self._run(
                lambda dst: self.session.rename(src, dst), child_path(folder, name)
            )
            if dst is not None:
                self.reveal(dst)

        self.app.push_screen(
            PromptScreen(f"Rename {src} to", value=posixpath.basename(src)), answered
        )

    def action_delete(self) -> None:
        entry = self._chosen_entry()
        if entry is None:
            return
        path = entry.path
        what = f"the folder {path} and everything in it" if entry.is_dir else path

        async def answered(choice: str | None) -> None:
            if choice == "delete":
                await self._run(lambda path: self.session.delete(path), path)

        from widgets.editor_pane import ChoiceScreen  # not with the first frame (issue 29)

        self.app.push_screen(
            ChoiceScreen(
                f"Delete {what}? (Recorded; Ctrl+Z cannot bring it back.)",
                [("cancel", "Cancel"), ("delete", "Delete")],
                default="cancel",
            ),
            answered,
        )

    async def _run(self, operation: Callable[[str], Awaitable[object]], path: str) -> str | None:
        """Run a file operation on a path; its error becomes one sentence. The path it worked
        on (normalized), or None. The folder it happened in is listed again before this
        returns, so that the new entry can be revealed at once."""
        from simulator.session import Session  # loaded by now: the session is open

        try:
            path = Session.normalize(path)
            await operation(path)
        except (SessionError, BackendError) as error:
            self.notify(str(error).strip() or f"{path}: the operation failed.", severity="error")
            return None
        await self._load(self._nearest_shown(path))
        return path

    def _nearest_shown(self, path: str) -> TreeNode[Entry]:
        """The node of the deepest folder above `path` that the tree shows."""
        folder = posixpath.dirname(path) or "."
        while folder not in self.nodes_by_path:
            folder = posixpath.dirname(folder) or "."
        return self.nodes_by_path[folder]

    @work(group="tree-reveal")
    async def reveal(self, path: str) -> None:
        """Expand the folders down to `path` (listing them if needed) and put the cursor on it."""
        parts = path.split("/")
        for depth in range(1, len(parts)):
            node = self.nodes_by_path.get("/".join(parts[:depth]))
            if node is None or node.data is None:
                return
            if not node.data.loaded:
                await self._load(node)
            node.expand()
        target = self.nodes_by_path.get(path)
        if target is not None:
            # Row numbers are known once the tree has laid out the rows it just gained.
            self.call_after_refresh(self.move_cursor, target)
