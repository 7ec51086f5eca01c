"""The root of every backend error, apart from the protocol (backends/base.py re-exports it) so
that what the protocol's helpers use (the private state directory) can raise it without importing
the protocol.
"""

from __future__ import annotations


class BackendError(Exception):
    """An error a user can act on; its message is one clear sentence."""
