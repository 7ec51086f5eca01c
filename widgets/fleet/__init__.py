"""`reposim fleet`: every session of a batch, live."""

from widgets.fleet.app import FleetApp
from widgets.fleet.screen import FleetScreen

__all__ = ["FleetApp", "FleetScreen"]
