"""The replay view: a screen of its own that the main app can push, and a stand-alone app."""

from widgets.replay.screen import ReplayApp, ReplayScreen
from widgets.replay.timeline import Timeline

__all__ = ["ReplayApp", "ReplayScreen", "Timeline"]
