"""Opening a file through the pane paints its text before the first (slow, for a big file)
syntax parse, as the editor widget alone does."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.geometry import Region
from textual.strip import Strip

from simulator.session import Session
from widgets.code_editor import CodeEditor, FastSyntaxDocument

from .conftest import editing, open_editor, wait_for


async def test_the_text_is_painted_before_the_parse(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    order: list[str] = []
    render = CodeEditor.render_lines
    reparse = FastSyntaxDocument.reparse

    def render_lines(self: CodeEditor, crop: Region) -> list[Strip]:
        order.append("paint")
        return render(self, crop)

    def parse(self: FastSyntaxDocument) -> None:
        order.append("parse")
        reparse(self)

    monkeypatch.setattr(CodeEditor, "render_lines", render_lines)
    monkeypatch.setattr(FastSyntaxDocument, "reparse", parse)
    Path(session.workspace_path, "big.py").write_text("def f(x):\n    return x\n" * 2000)
    async with editing(session) as (_, pilot, pane):
        await pilot.pause()
        editor = await open_editor(pane, "big.py")
        await wait_for(pilot, lambda: not editor.document.needs_parse)  # type: ignore[attr-defined]
        assert order[:1] == ["paint"] and "parse" in order
        assert "function" in {name for _, _, name in editor._highlights[0]}
