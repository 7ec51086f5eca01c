"""The curation screen's keys, apart from the screen (F1 in `reposim open` lists them without
loading the harness engine). They are data, in widgets/keybindings.json (`curation`,
`survivors`); every binding has an id, remappable in keymap.toml."""

from __future__ import annotations

from widgets.keybindings import default_bindings

CURATION_BINDINGS = default_bindings("curation")
SURVIVORS_BINDINGS = default_bindings("survivors")  # the surviving mutants' dialog
