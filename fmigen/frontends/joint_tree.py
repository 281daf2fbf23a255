"""Which joints of a joint model form its spanning tree and which are cut
(``spanning_tree``): greedily, the joints most worth keeping first, the
tree oriented from ground.
"""

from __future__ import annotations

from collections import deque

from fmigen.graph import DisjointSets
from fmigen.joints import JointSystem
from fmigen.model import ModelError


#: cutting preference by kind, lower = cut first: the fewer closure equations
#: per coordinate removed the better (spherical: 3 for 3; revolute: 5 for 1,
#: of which a plane keeps 2)
_CUT_RANK = {"spherical": 0, "revolute": 1, "universal": 2, "cylindrical": 3, "prismatic": 4,
             "planar": 5, "fixed": 6, "free": 7}


def _loaded_coordinates(system: JointSystem):
    """Coordinates that must stay coordinates: loaded or named independent
    (or preferred independent)."""
    names = {ld.coordinate.name for ld in system.joint_loads}
    names |= {rs.coordinate.name for rs in system.rotational_springs}
    return names | set(system.independent or []) | set(system.preferred_independent or [])


def spanning_tree(system: JointSystem):
    """(tree joints in BFS order as (joint, reversed), cut joints, body order).

    ``reversed``: the joint's child marker is on the body nearer ground."""
    bodies = list(system.bodies)
    joints = list(system.joints.values())
    adjacency = {b: [] for b in bodies}
    for j in joints:
        adjacency[j.parent.body.name].append(j)
        adjacency[j.child.body.name].append(j)
    # distance from ground over all joints, for the tie-break
    dist = {system.ground.name: 0}
    queue = deque([system.ground.name])
    while queue:
        b = queue.popleft()
        for j in adjacency[b]:
            other = j.child.body.name if j.parent.body.name == b else j.parent.body.name
            if other not in dist:
                dist[other] = dist[b] + 1
                queue.append(other)
    lost = [b for b in bodies if b not in dist]
    if lost:
        raise ModelError(f"'{system.name}': bod{'ies' if len(lost) > 1 else 'y'} {', '.join(map(repr, lost))} "
                         "not connected to ground by any chain of joints")
    keep = _loaded_coordinates(system)

    def must_keep(j):
        return any(c.name in keep for c in j.coordinates)

    if system.cut is not None:
        for name in system.cut:
            if name not in system.joints:
                raise ModelError(f"'{system.name}': cut joint '{name}' is not a joint "
                                 f"(have {', '.join(system.joints)})")
        cut_first = set(system.cut)
    else:
        cut_first = set()

    def priority(j):
        # lower sorts first = kept first
        started = any(c.start is not None for c in j.coordinates)
        return (j.name in cut_first, not must_keep(j), not started, -_CUT_RANK[j.kind],
                max(dist[j.parent.body.name], dist[j.child.body.name]), joints.index(j))

    # Kruskal: a joint that would join a body set to itself closes a loop
    sets = DisjointSets(bodies)
    tree, cut = [], []
    for j in sorted(joints, key=priority):
        (tree if sets.union(j.parent.body.name, j.child.body.name) else cut).append(j)
    if system.cut is not None:
        kept = [j.name for j in tree if j.name in cut_first]
        if kept:
            raise ModelError(f"'{system.name}': cutting {kept} would disconnect a body from ground; "
                             "a cut joint must close a loop")
    for j in cut:
        bad = [c.name for c in j.coordinates if c.name in keep]
        if bad:
            what = "named independent" if set(bad) & set(system.independent or []) else \
                "loaded (joint_force or rotational_spring_damper)"
            raise ModelError(f"'{system.name}': joint '{j.name}' is cut to open a loop but its coordinate(s) "
                             f"{bad} are {what}; a cut joint has no coordinates — cut another joint of the "
                             f"loop (system.cut) or load another joint")
    # orient the tree from ground
    order, seen = [], {system.ground.name}
    queue = deque([system.ground.name])
    tree_adj = {b: [] for b in bodies}
    for j in tree:
        tree_adj[j.parent.body.name].append(j)
        tree_adj[j.child.body.name].append(j)
    while queue:
        b = queue.popleft()
        for j in sorted(tree_adj[b], key=joints.index):
            reverse = j.child.body.name == b
            other = j.parent.body.name if reverse else j.child.body.name
            if other in seen:
                continue
            seen.add(other)
            order.append((j, reverse))
            queue.append(other)
    return order, sorted(cut, key=joints.index)
