"""Nodes and the graph that links them."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from flowgraph.kinds import NodeKind, Weight, clip_label

_ids = itertools.count()


@dataclass
class Node:
    """One node: a kind, a label and its successors."""

    kind: NodeKind
    label: str = ""
    successors: list[Node] = field(default_factory=list)
    weight: Weight = Weight.LOW

    def describe(self):
        """`kind: label` with the label clipped."""
        name = clip_label(self.label)
        return f"{self.kind.value}: {name}"


class Graph:
    """A directed graph of nodes with one entry and one exit."""

    SEPARATOR = " -> "
    MAX_NODES = 10_000

    def __init__(self, name):
        self.name = name
        self.nodes = []
        self.entry = self.add(NodeKind.ENTRY, "entry")
        self.exit = self.add(NodeKind.EXIT, "exit")

    @property
    def size(self):
        """Number of nodes."""
        return len(self.nodes)

    def add(self, kind, label=""):
        """A new node of this graph."""
        if len(self.nodes) >= self.MAX_NODES:
            raise ValueError("graph too large")
        node = Node(kind, label)
        self.nodes.append(node)
        return node

    def link(self, source, target):
        """Add an edge from source to target."""
        if target not in source.successors:
            source.successors.append(target)
        return source

    def compact(self):
        """Drop statement nodes nothing reaches; return how many were dropped."""
        reached = {id(self.entry)}
        for node in self.nodes:
            for succ in node.successors:
                reached.add(id(succ))
        before = self.size
        self.nodes = [n for n in self.nodes if id(n) in reached or n.kind is not NodeKind.STATEMENT]
        return before - self.size

    def render(self):
        """Every edge as `a -> b`, one a line."""
        lines = []
        for node in self.nodes:
            for succ in node.successors:
                lines.append(node.describe() + self.SEPARATOR + succ.describe())
        return "\n".join(lines)

    def heaviest(self):
        """The node with the highest weight, first one on ties."""
        best = self.entry
        for node in self.nodes:
            if node.weight > best.weight:
                best = node
        return best
