"""Builds a graph from a tiny statement language, with a visitor."""

from flowgraph import graph as graph_module
from flowgraph.kinds import NodeKind, Weight


class Statement:
    """A statement of the tiny language."""

    def __init__(self, op, body=()):
        self.op = op
        self.body = list(body)


class Visitor:
    """Dispatches on a statement's op: visit_<op>."""

    def visit(self, statement):
        """Call the visit_ method for the statement's op."""
        method = getattr(self, "visit_" + statement.op, self.generic_visit)
        return method(statement)

    def generic_visit(self, statement):
        for child in statement.body:
            self.visit(child)
        return None


class Builder(Visitor):
    """Turns statements into a graph."""

    def __init__(self, name):
        self.graph = graph_module.Graph(name)
        self.current = self.graph.entry
        self.depth = 0

    def visit_pass(self, statement):
        node = self.graph.add(NodeKind.STATEMENT, statement.op)
        self.graph.link(self.current, node)
        self.current = node
        return node

    def visit_if(self, statement):
        branch = self.graph.add(NodeKind.BRANCH, "if")
        branch.weight = Weight.HIGH
        self.graph.link(self.current, branch)
        self.current = branch
        self.depth += 1
        self.generic_visit(statement)
        self.depth -= 1
        return branch

    def finish(self):
        """Link the last node to the exit, compact, and return the graph."""
        self.graph.link(self.current, self.graph.exit)
        dropped = self.graph.compact()
        if dropped and self.depth == 0:
            self.graph.name = self.graph.name + "*"
        return self.graph


def build(statements, name="main"):
    """The graph of a list of statements."""
    builder = Builder(name)
    for statement in statements:
        builder.visit(statement)
    return builder.finish()


def summarize(statements):
    """Size and rendering of the graph of the statements."""

    class Counter:
        def __init__(self):
            self.seen = 0

        def bump(self):
            self.seen += 1
            return self.seen

    counter = Counter()

    def count(node):
        counter.bump()
        return node

    graph = build(statements)
    for node in graph.nodes:
        count(node)
    return graph.size, counter.seen, graph.render()
