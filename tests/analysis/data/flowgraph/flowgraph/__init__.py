"""Control-flow graphs for small programs."""

from flowgraph.graph import Graph, Node
from flowgraph.kinds import NodeKind

__all__ = ["Graph", "Node", "NodeKind"]
