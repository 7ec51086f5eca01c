"""The session gateway's errors, apart from the gateway so that what the session itself uses
(the workspace walk) can catch them without importing the session."""

from __future__ import annotations


class SessionError(Exception):
    """An action that could not be done; the message is one clear sentence."""


class EditError(SessionError):
    """A str_replace edit whose old text is missing or ambiguous."""


class BinaryFileError(SessionError):
    """A file that is not UTF-8 text."""


class ActionDenied(SessionError):
    """The action policy refused an action; the message carries the reason."""
