"""Graph utilities the stages share: union-find and connected components.

The front end's spanning tree (joint_tree.spanning_tree: which joints are
cut), the FMU's ModelStructure (structure.py: which loop a dependent
coordinate is solved in) and the augmented formulations' dependencies
(formulation.py) all ask which nodes one set of edges connects.
"""
from __future__ import annotations


class DisjointSets:
    """Union-find with path halving over hashable nodes."""

    def __init__(self, nodes):
        self.parent = {x: x for x in nodes}

    def find(self, x):
        parent = self.parent
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(self, a, b) -> bool:
        """Join a's and b's sets; False when they were one already."""
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return False
        self.parent[ra] = rb
        return True


def component_roots(nodes, edges) -> dict:
    """Connected components of an undirected graph: {node: its component's
    representative}."""
    sets = DisjointSets(nodes)
    for a, b in edges:
        sets.union(a, b)
    return {x: sets.find(x) for x in sets.parent}
