"""What a node of the graph stands for."""

import enum

MAX_LABEL = 40
DEFAULT_LABEL = "node"


class NodeKind(enum.Enum):
    """The kind of a node."""

    ENTRY = "entry"
    EXIT = "exit"
    STATEMENT = "statement"
    BRANCH = "branch"

    @property
    def is_terminal(self):
        return self in (NodeKind.ENTRY, NodeKind.EXIT)


class Weight(enum.IntEnum):
    LOW = 1
    HIGH = 10


def clip_label(label):
    """A label no longer than MAX_LABEL characters."""
    text = label or DEFAULT_LABEL
    if len(text) > MAX_LABEL:
        text = text[: MAX_LABEL - 1] + "~"
    return text
