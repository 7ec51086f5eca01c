"""The session gateway's errors, apart from the gateway so that what the session itself uses
(the workspace walk) can catch them without importing the session."""

from __future__ import annotations

from typing import TypeVar

S = TypeVar("S")


class SessionError(Exception):
    """An action that could not be done; the message is one clear sentence."""


class EditError(SessionError):
    """A str_replace edit whose old text is missing or ambiguous."""


class BinaryFileError(SessionError):
    """A file that is not UTF-8 text."""


class ActionDenied(SessionError):
    """The action policy refused an action; the message carries the reason."""


def opened(session: S | None) -> S:
    """`session`, or SessionError while it is still opening: the UI draws its first frame
    before the session has opened (widgets.app.Opening), and what needs it asks here (here, not
    in simulator.session, which that first frame does not load: issue 29)."""
    if session is None:
        raise SessionError("the session is still opening")
    return session
