"""The curation screen's keys, apart from the screen (F1 in `reposim open` lists them without
loading the harness engine). Every binding has an id, remappable in keymap.toml. The order is
the footer's: what a person does most comes first, so an 80-column footer still shows it."""

from __future__ import annotations

from textual.binding import Binding

CURATION_BINDINGS: list[Binding] = [
    Binding(
        "a",
        "accept",
        "Accept",
        id="curation.accept",
        tooltip="Accept the selection",
    ),
    Binding(
        "x",
        "reject",
        "Reject",
        id="curation.reject",
        tooltip="Reject the selection, with a reason",
    ),
    Binding(
        "r",
        "run",
        "Run",
        id="curation.run",
        tooltip="Run the selection's harnesses again (an edit is saved first)",
    ),
    Binding(
        "g",
        "generate",
        "Generate",
        id="curation.generate",
        tooltip="Generate a traced harness for the selection",
    ),
    Binding(
        "M",
        "generate_model",
        "Model",
        id="curation.generate_model",
        tooltip="Regenerate the selection's harnesses with the model",
    ),
    Binding(
        "m",
        "mutants",
        "Mutants",
        id="curation.mutants",
        tooltip="Run the selection's mutants",
    ),
    Binding(
        "d",
        "survivors",
        "Survivors",
        id="curation.survivors",
        tooltip="Show the surviving mutants as diffs",
    ),
    Binding(
        "n",
        "note",
        "Note",
        id="curation.note",
        tooltip="Add a note to the selection",
    ),
    Binding(
        "slash",
        "focus_filter",
        "Filter",
        id="curation.filter",
        tooltip="Filter the targets (valid cov<80 | flaky: | between alternatives)",
    ),
    Binding(
        "space",
        "toggle_mark",
        "Mark",
        id="curation.mark",
        tooltip="Mark / unmark the target for an action on several",
    ),
    Binding(
        "ctrl+e",
        "export",
        "Export",
        id="curation.export",
        tooltip="Export the problems (asks where)",
    ),
    Binding(
        "G",
        "generate_all",
        "Generate all",
        id="curation.generate_all",
        tooltip="Generate traced harnesses for every shown target without one",
    ),
    Binding(
        "s",
        "sort",
        "Sort",
        id="curation.sort",
        tooltip="Sort by the next column (file, function, state, coverage, mutation)",
    ),
    Binding(
        "ctrl+w",
        "close",
        "Close",
        id="curation.close",
        tooltip="Close the curation screen",
    ),
    Binding(
        "ctrl+s",
        "save_harness",
        "Save harness",
        id="curation.save",
        show=False,
        tooltip="Keep the edited harness (validated on the next run)",
    ),
    Binding(
        "escape",
        "focus_table",
        "Table",
        id="curation.table",
        show=False,
        tooltip="Back to the table",
    ),
]

# The surviving mutants' dialog (widgets/curation/dialogs.py).
SURVIVORS_BINDINGS: list[Binding] = [
    Binding(
        "escape,q",
        "close",
        "Close",
        id="curation.survivors.close",
        tooltip="Close the surviving mutants",
    ),
    Binding("n", "jump(1)", "Next mutant", id="curation.survivors.next", tooltip="The next mutant"),
    Binding(
        "p",
        "jump(-1)",
        "Previous mutant",
        id="curation.survivors.previous",
        tooltip="The previous mutant",
    ),
    Binding(
        "e",
        "equivalent",
        "Equivalent",
        id="curation.survivors.equivalent",
        tooltip="Mark the current mutant equivalent to the target (or take the mark back): "
        "the mutation score leaves it out",
    ),
]
