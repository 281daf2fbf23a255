"""Planar linkages written from a drawn pose (a helper of the corpus, no build()).

A textbook figure gives a linkage in one pose: the joint points, which links
carry which points, the ground pivots.  ``linkage`` turns such a drawing into
a ``JointSystem``: every link is a body whose frame sits at its first point
with the x axis towards its second, every shared point a revolute joint, the
link lengths (marker positions) are rounded to ``digits`` decimals so the
Gröbner stage sees short exact rationals.  Because of that rounding the drawn
pose is only a guess: the build assembles the exact start from the
independent angles and the guesses, and the branch hints (each dyad apex on
the side of its base line it is drawn on) pick the drawn assembly among the
mirror ones.  ``corpus.py`` then checks that the FMU starts within the
rounding of the drawn pose.

Mass: every link is a uniform bar or triangular plate of ``density`` per
metre of its perimeter (bars: m l²/12 about the centre; a triangle of three
points: the lamina's m (a² + b² + c²)/36 about its centroid).  A link with
more than three points is an error here (none of the corpus needs one).
"""
import math

from fmigen.joints import JointSystem


def dyad(P, r1, Q, r2, left=True):
    """The apex of a dyad: the point at ``r1`` from P and ``r2`` from Q, left
    of the line P→Q when ``left`` (else right).  A drawn pose is built from
    a source's dimensions with it, so its points close to rounding.  Raises
    ValueError when the circles do not meet (the dimensions do not assemble
    there)."""
    d = math.dist(P, Q)
    a = (r1 * r1 - r2 * r2 + d * d) / (2 * d)
    h2 = r1 * r1 - a * a
    if h2 < 0:
        raise ValueError(f"dyad: circles of radius {r1} about {P} and {r2} about {Q} do not meet")
    h = math.sqrt(h2) * (1 if left else -1)
    ux, uy = (Q[0] - P[0]) / d, (Q[1] - P[1]) / d
    return (P[0] + a * ux - h * uy, P[1] + a * uy + h * ux)


def polar(P, r, angle):
    """The point at ``r`` from P in the direction ``angle`` (rad)."""
    return (P[0] + r * math.cos(angle), P[1] + r * math.sin(angle))


def _rot(phi, v):
    c, s = math.cos(phi), math.sin(phi)
    return (c * v[0] + s * v[1], -s * v[0] + c * v[1])   # R(-phi) v


def linkage(name, description, points, links, joints, independent, hints, torques=None,
            digits=4, density=1.0, g=9.81, dof=None, damping=None):
    """``points``: {name: (x, y)} of the drawn pose (ground pivots included);
    ``links``: {link: [point, ...]} (2 or 3 points, the frame at the first,
    x towards the second); ``joints``: [(joint, point, parent link, child
    link)] with "ground" for the frame; ``independent``: joint names whose
    drawn angle is the exact start; ``hints``: [(apex, base1, base2, link)]:
    the point ``apex`` (a marker on ``link``) stays on the drawn side of the
    line base1–base2 (the marker of base1 on ground or on the link that
    carries it first); ``torques``: {joint: (input name, N·m)};
    ``damping``: {joint: N·m·s/rad}, a viscous bearing on the joint (a
    rotational damper; it keeps a light linkage falling under gravity at
    speeds a 1 ms fixed step can follow)."""
    s = JointSystem(name, description=description)
    gs = s.parameter("g", g, "m/s2", tunable=True, description="gravity along -y")
    angle, markers = {"ground": 0.0}, {}
    bodies = {"ground": s.ground}
    for link, pts in links.items():
        if not 2 <= len(pts) <= 3:
            raise ValueError(f"link {link}: 2 or 3 points, got {pts}")
        p0 = points[pts[0]]
        phi = math.atan2(points[pts[1]][1] - p0[1], points[pts[1]][0] - p0[0])
        local = {p: tuple(round(c, digits) for c in _rot(phi, (points[p][0] - p0[0], points[p][1] - p0[1])))
                 for p in pts}
        sides = [math.dist(local[a], local[b]) for a, b in zip(pts, pts[1:] + pts[:1])][: len(pts) if len(pts) == 3 else 1]
        m = round(density * sum(sides), 6)
        if len(pts) == 2:
            L = local[pts[1]][0]
            body = s.body(link, m, (0, 0, m * L**2 / 12), com=(L / 2, 0))
        else:
            cx = sum(local[p][0] for p in pts) / 3
            cy = sum(local[p][1] for p in pts) / 3
            body = s.body(link, m, (0, 0, m * sum(x * x for x in sides) / 36), com=(cx, cy))
        bodies[link], angle[link] = body, phi
        for p in pts:
            markers[(link, p)] = body.marker(p, local[p])
    for p, xy in points.items():
        if any(par == "ground" and pt == p for _, pt, par, _c in joints) or \
                any(ch == "ground" and pt == p for _, pt, _p, ch in joints):
            markers[("ground", p)] = s.ground.marker(p, tuple(round(c, digits) for c in xy))
    for jn, p, parent, child in joints:
        start = angle[child] - angle[parent]
        start = math.atan2(math.sin(start), math.cos(start))
        s.revolute(jn, markers[(parent, p)], markers[(child, p)], start=start)
    for apex, b1, b2, link in hints:
        (x1, y1), (x2, y2), (xa, ya) = points[b1], points[b2], points[apex]
        n = (-(y2 - y1), x2 - x1)
        side = (xa - x1) * n[0] + (ya - y1) * n[1]
        base = markers.get(("ground", b1)) or next(mk for (lk, p), mk in markers.items() if p == b1)
        s.branch_hint(markers[(link, apex)], base, (round(n[0], 6), round(n[1], 6), 0), 1 if side > 0 else -1)
    s.gravity = (0, -gs, 0)
    for jn, (inp, value) in (torques or {}).items():
        s.joint_force(jn, s.input(inp, value, "N.m", description=f"torque on {jn}"))
    for jn, d in (damping or {}).items():
        s.rotational_spring_damper(f"bearing_{jn}", jn, 0, d)
    s.independent = list(independent)
    s.dof = dof if dof is not None else len(independent)
    return s


def four_bar(name, description, ground, crank, coupler, rocker, theta, open_=True, tau=0.0, **kw):
    """The four-bar O2 A B O4 with O2 at the origin, O4 at (ground, 0), the
    crank O2A at ``theta``; B on the side of the line A–O4 that ``open_``
    names (True: left of A→O4, the uncrossed drawing for B above the ground
    line).  Lengths that do not close at ``theta`` still give a system (B
    guessed on the line A–O4): refusing it is the build's job (the fuzzer)."""
    A = (crank * math.cos(theta), crank * math.sin(theta))
    O4 = (ground, 0.0)
    d = math.dist(A, O4)
    d = d or 1e-9
    a = min(max((coupler**2 - rocker**2 + d * d) / (2 * d), -coupler), coupler)
    h = math.sqrt(max(coupler**2 - a * a, 0.0))
    ux, uy = (O4[0] - A[0]) / d, (O4[1] - A[1]) / d
    sgn = 1 if open_ else -1
    B = (A[0] + a * ux - sgn * h * uy, A[1] + a * uy + sgn * h * ux)
    points = {"O2": (0.0, 0.0), "A": A, "B": B, "O4": O4}
    links = {"crank": ["O2", "A"], "coupler": ["A", "B"], "rocker": ["O4", "B"]}
    joints = [("theta", "O2", "ground", "crank"), ("A", "A", "crank", "coupler"),
              ("B", "B", "coupler", "rocker"), ("phi", "O4", "ground", "rocker")]
    return linkage(name, description, points, links, joints, ["theta"], [("B", "A", "O4", "coupler")],
                   torques={"theta": ("tau", tau)}, **kw)
