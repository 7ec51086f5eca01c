"""The default keys are data (widgets/keybindings.json): every screen and pane that has bindings
takes them from one section of the file, every section is used, and every binding names an
action that exists where it is bound."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

from textual.actions import parse
from textual.app import App
from textual.binding import Binding
from textual.dom import DOMNode

import widgets
from widgets.keybindings import default_bindings, default_sections


def _widget_classes() -> list[type[DOMNode]]:
    """Every screen, pane, widget and app defined in widgets/ (each module imported)."""
    found: list[type[DOMNode]] = []
    for info in pkgutil.walk_packages(widgets.__path__, "widgets."):
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            if inspect.isclass(obj) and obj.__module__ == info.name and issubclass(obj, DOMNode):
                found.append(obj)
    return found


def _own_bindings(cls: type[DOMNode]) -> list[object]:
    return list(cls.__dict__.get("BINDINGS", []))


def test_every_class_with_bindings_takes_them_from_one_section_of_the_file() -> None:
    sections = {name: default_bindings(name) for name in default_sections()}
    used: set[str] = set()
    bound = [cls for cls in _widget_classes() if _own_bindings(cls)]
    assert len(bound) >= 30  # the walk found the screens and panes (35 when this was written)
    for cls in bound:
        declared = _own_bindings(cls)
        assert all(isinstance(b, Binding) for b in declared), f"{cls.__qualname__}: not a Binding"
        matches = [name for name, bindings in sections.items() if bindings == declared]
        assert matches, f"{cls.__module__}.{cls.__qualname__}: its BINDINGS are not a section"
        used.update(matches)
    assert set(sections) - used == set(), "sections no screen or pane uses"


def test_every_binding_names_an_action_that_exists_where_it_is_bound() -> None:
    classes = _widget_classes()
    apps = [cls for cls in classes if issubclass(cls, App)]
    unresolved = []
    for cls in classes:
        for binding in _own_bindings(cls):
            assert isinstance(binding, Binding)
            destination, name, _arguments = parse(binding.action)  # arguments must parse too
            owners = apps if destination == "app" else [cls]
            assert destination in ("", "app"), binding.action
            if not any(callable(getattr(owner, f"action_{name}", None)) for owner in owners):
                unresolved.append(f"{cls.__qualname__}: {binding.key} -> {binding.action}")
    assert unresolved == []


def test_the_file_is_read_into_bindings_with_their_ids_and_flags() -> None:
    app = default_bindings("app")
    quit_key = next(b for b in app if b.id == "app.quit")
    assert (quit_key.key, quit_key.action, quit_key.description) == ("ctrl+q", "quit", "Quit")
    assert quit_key.priority and quit_key.show
    save = next(b for b in app if b.id == "app.save")
    assert not save.show and not save.priority and save.tooltip == "Save the open file"
    assert default_bindings("app") is not default_bindings("app")  # a class may extend its own
