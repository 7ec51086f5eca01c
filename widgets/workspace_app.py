"""The app type that the workflow entries (workflow_entries.py, curation/entries.py) act on: a
Textual app over a session.

RepoSimApp (app.py) is one; the entries are typed against this base, which sits below both,
so the app can list the entries without the entries importing the app.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import App

if TYPE_CHECKING:
    from simulator.session import Session


class WorkspaceApp(App[None]):
    """A Textual app whose workspace is `session`."""

    @property
    def session(self) -> Session:
        """The session the app works in (SessionError where it is still opening).

        Declared here for the entries' types only: no app is a bare WorkspaceApp, and RepoSimApp
        gives the session it was opened with."""
        raise NotImplementedError("a WorkspaceApp subclass gives its session")
