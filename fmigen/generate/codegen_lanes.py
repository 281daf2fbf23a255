"""The kinematics' lanes: blocks that are the same sequence up to their
numbers, solved four at a time in the lanes of vector types.

Why: the Stewart platform's six legs are six Gröbner blocks whose
sequences differ only in the constants of their base points, and one at
a time they were a quarter of a step.  With GCC's and clang's vector types (``fmigen_v4d``,
runtime/fmigen_runtime.h) four blocks take the instructions of one.

What a class is (``lane_classes``): Gröbner blocks with one sequence,
steps of degree 1 or 2, no angle sums, no known ring variables and no
Newton first, whose abstracted knowns read no dependent coordinate (so
they are all known before the first block), and whose layout, steps'
coefficient polynomials and verification polynomials have the same
monomials position by position (variables in sequence order, knowns in
abstraction order): only the coefficients differ, and they become
per-lane constants.

What a lane does is exactly the block's primary attempt
(``codegen_kinematics.kinematics_walk``): the predictions from the last accepted
solution, the steps with the root helpers' lane forms
(``fmigen_quadratic_near_4``, ``fmigen_linear_4``: the same IEEE
operations, selected instead of branched), the roots' continuity and the
verification of the block's polynomials.  The coefficients and
predictions are the scalar code's operations in its order
(``statements.poly_plan``, ``codegen_kinematics.block_plan``), so a lane's solution has
the scalar sequence's bits (tested against the build without vector
types).  The verification sums the block's polynomials in their terms'
order, not in the order of the scalar code's CSE: the same test to
round-off, so at its threshold a lane may accept a root the scalar code
would have failed and polished by Newton (a review measured none in 20,000
random Stewart poses at the default FMIGEN_SEQ_TOL of 1e-13, and 160 of
3,000 with it set to 1e-16).  A lane that passes writes the block's outputs as the scalar
block would; one that fails anything leaves its block to the scalar code,
which runs only for the blocks whose bit in the returned mask is clear
(every attempt, Newton, the polish and the failure code as before).  A
compiler without vector types (FMIGEN_VECTORS 0) gets a mask of zeros.

The residual an FMU reports (``fmigen_residual_trig``, the max of
``fmigen_phi_trig``'s rows) evaluates the constraint rows of the same
classes in lanes too (``residual_function``): each row term by term with
per-lane coefficients, equal to the scalar rows (one CSE over all rows) to
round-off, not to the bit, and the max of each row vector taken in place.
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from fmigen.generate.printer import sincos_into
from fmigen.kinematics.sweep_measures import block_layout

LANES = 4


@dataclass
class LaneClass:
    index: int
    members: list[int]       # block indices, in block order


def _candidate(solved_block, hoisted, scales):
    """The block's structure as a hashable signature, or None where the
    lanes do not apply."""
    if (solved_block.method != "groebner" or getattr(solved_block, "completion", None) is not None
            or solved_block.angle_sums or solved_block.known_ring or solved_block.newton_first):
        return None
    if any(K not in hoisted for K in solved_block.abstractions) or any(st.degree not in (1, 2) for st in solved_block.steps):
        return None
    gens = (*solved_block.variables, *solved_block.abstractions)
    if any(P.gens != gens for st in solved_block.steps for P in st.coeff_polys):
        return None
    pos = {v: k for k, v in enumerate(solved_block.variables)}
    layout = tuple((kind, tuple(pos[v] for v in vs)) for _, kind, vs, _ in block_layout(solved_block, scales))
    steps = tuple((pos[st.variable], st.degree, tuple(tuple(m for m, _ in P.terms()) for P in st.coeff_polys))
                  for st in solved_block.steps)
    checks = tuple(tuple(m for m, _ in sp.Poly(p, *gens).terms()) for p in (*solved_block.polys, *solved_block.circles))
    # (the verification's scale is a sum of magnitudes for a block
    # polynomial and 2 for a circle: the same split in every lane)
    return len(solved_block.variables), len(solved_block.abstractions), len(solved_block.polys), len(solved_block.circles), layout, steps, checks


def lane_classes(tri, hoisted, scales) -> list[LaneClass]:
    """The classes of two or more blocks that run in lanes (``hoisted``:
    the knowns computed before the first block)."""
    groups: dict = {}
    for bi, solved_block in enumerate(tri.blocks):
        sig = _candidate(solved_block, hoisted, scales)
        if sig is not None:
            groups.setdefault(sig, []).append(bi)
    members = sorted((m for m in groups.values() if len(m) >= 2), key=lambda m: m[0])
    return [LaneClass(k, m) for k, m in enumerate(members)]


def _vec(values) -> str:
    """A vector of per-lane numbers as a C literal (doubles, exactly the
    scalar code's constants)."""
    return "(fmigen_v4d){" + ", ".join(repr(float(v)) for v in values) + "}"


class _Plan:
    """Straight-line vector statements for polynomials with the same
    monomials in every lane, as ``statements.poly_plan`` orders them: each
    monomial once, a smaller one times one generator, made just before its
    first term; each sum term by term in the Poly's order, the first term
    its coefficient times the monomial (the scalar code's ``-25*m0``), the
    others added (``a0 -= 25*m1`` is ``a0 + (-25)*m1``: the same value)."""

    def __init__(self, names, prefix, scalar=frozenset()):
        """``scalar``: the positions of the generators that are one double
        for every lane (a monomial of those only is a double)."""
        self.names, self.prefix = names, prefix
        self.scalar = {names[k] for k in scalar}   # the names that are doubles
        self.table, self.lines = {}, []

    def monomial(self, m):
        if m in self.table:
            return self.table[m]
        nz = [(k, e) for k, e in enumerate(m) if e]
        if not nz:
            return None
        k, e = nz[-1]
        if len(nz) == 1 and e == 1:
            return self.names[k]
        parent = self.monomial(m[:k] + (e - 1,) + m[k + 1:])
        self.table[m] = name = f"{self.prefix}{len(self.table)}"
        if parent in self.scalar and self.names[k] in self.scalar:
            self.scalar.add(name)
        ctype = "double" if name in self.scalar else "fmigen_v4d"
        self.lines.append(f"const {ctype} {name} = {parent} * {self.names[k]};")
        return name

    def sum(self, target, lanes):
        """target = Σ c·monomial over ``lanes`` (per lane: (monomial,
        coefficient) pairs in the same monomial order)."""
        terms = list(zip(*lanes))
        if not terms:
            self.lines.append(f"const fmigen_v4d {target} = (fmigen_v4d){{0.0, 0.0, 0.0, 0.0}};")
            return
        acc = []
        for term in terms:
            mono = self.monomial(term[0][0])
            cs = {c for _, c in term}
            if mono in self.scalar:
                # a double times the lanes' coefficients, also where they
                # are ±1: a sum's first term must be a vector, and "+ x" of
                # a double x costs more instructions than "+ {1, 1, 1, 1} * x"
                # (docs/benchmarks.md, "Measurements behind the code's choices")
                acc.append(f"{_vec(c for _, c in term)} * {mono}")
            # a coefficient ±1 in every lane: the monomial itself, as in the
            # scalar code (``a0 += m0``)
            elif mono is not None and cs <= {1}:
                acc.append(mono)
            elif mono is not None and cs <= {-1}:
                acc.append(f"-{mono}")
            else:
                coeff = _vec(c for _, c in term)
                acc.append(coeff if mono is None else f"{coeff} * {mono}")
        expr = acc[0]
        for a in acc[1:]:
            expr = f"({expr}) + {a}"
        self.lines.append(f"const fmigen_v4d {target} = {expr};")

    def abs_sum(self, target, lanes):
        """Σ |c|·|monomial|: the scale a verified polynomial cancels from
        (``sweep_measures.abs_sum``)."""
        terms = list(zip(*lanes))
        acc = []
        for term in terms:
            mono = self.monomial(term[0][0])
            if mono is not None and {abs(c) for _, c in term} <= {1}:
                acc.append(f"FMIGEN_ABS_4({mono})")
                continue
            coeff = _vec(abs(c) for _, c in term)
            acc.append(coeff if mono is None else f"{coeff} * FMIGEN_ABS_4({mono})")
        expr = acc[0] if acc else "(fmigen_v4d){0.0, 0.0, 0.0, 0.0}"
        for a in acc[1:]:
            expr = f"({expr}) + {a}"
        self.lines.append(f"const fmigen_v4d {target} = {expr};")


def _group_code(tri, members, plans, slots, trig_angles, bare, ind):
    """One group of up to four blocks (the last member repeated in unused
    lanes): C statements that solve them and write the outputs of the lanes
    that pass, adding their bits (1 << member's position in the class) to
    ``done``."""
    tbs = [tri.blocks[b] for b in members]
    lanes = tbs + [tbs[-1]] * (LANES - len(tbs))
    lslots = [slots[b] for b in members]
    lslots += [lslots[-1]] * (LANES - len(lslots))
    layouts = [plans[b] for b in members]
    layouts += [layouts[-1]] * (LANES - len(layouts))
    rep = tbs[0]
    nv, nk = len(rep.variables), len(rep.abstractions)
    vnames = [f"X{k}" for k in range(nv)]
    knames = [f"K{k}" for k in range(nk)]
    names = vnames + knames
    out = []
    # the knowns: lane by lane from the caller's K[] (member-major)
    for j in range(nk):
        out.append(f"const fmigen_v4d K{j} = {{{', '.join(f'K[{m * nk + j}]' for m in _lane_members(members))}}};")
    # predictions and continuity tolerances (codegen_kinematics.block_plan's, per lane)
    # of the variables a root is chosen for (degree 2): the others' are not
    # read (the scalar code's continuity of them is for a Newton result)
    pos = {v: k for k, v in enumerate(rep.variables)}
    rooted = {pos[st.variable] for st in rep.steps if st.degree == 2}
    for e, (_, kind, vs, _) in enumerate(layouts[0]):
        own = [pos[v] for v in vs]
        if not rooted & set(own):
            continue
        w = f"w{e}"
        vel = ", ".join(f"base->v[{lay[e][0]}]" for lay in layouts)
        out.append(f"const fmigen_v4d {w} = (fmigen_v4d){{{vel}}} * dt;")
        if kind == "angle":
            s_, c_ = own
            S = ", ".join(f"base->sol[{sl[solved_block.variables[s_]]}]" for sl, solved_block in zip(lslots, lanes))
            C = ", ".join(f"base->sol[{sl[solved_block.variables[c_]]}]" for sl, solved_block in zip(lslots, lanes))
            out.append(f"const fmigen_v4d S{e} = {{{S}}}, C{e} = {{{C}}};")
            if s_ in rooted:
                out.append(f"const fmigen_v4d P{s_} = S{e} * (1.0 - 0.5 * {w} * {w}) + C{e} * {w};")
            if c_ in rooted:
                out.append(f"const fmigen_v4d P{c_} = C{e} * (1.0 - 0.5 * {w} * {w}) - S{e} * {w};")
            out.append(f"const fmigen_v4d T{e} = FMIGEN_BRANCH_TOL + FMIGEN_ABS_4({w}) + dqi;")
        else:
            x_ = own[0]
            X = ", ".join(f"base->sol[{sl[solved_block.variables[x_]]}]" for sl, solved_block in zip(lslots, lanes))
            out += [f"const fmigen_v4d P{x_} = (fmigen_v4d){{{X}}} + {w};",
                    f"const fmigen_v4d T{e} = (FMIGEN_BRANCH_TOL + dqi) * {_vec(lay[e][3] for lay in layouts)}"
                    f" + FMIGEN_ABS_4({w});"]
    coord_of = {pos[v]: e for e, (_, _, vs, _) in enumerate(layouts[0]) for v in vs}
    # the sequence
    plan = _Plan(names, "m")
    out.append("fmigen_v4l fail = {0, 0, 0, 0};")
    seen = []
    for si, step in enumerate(rep.steps):
        var = pos[step.variable]
        targets = [f"a{var}_{d}" for d in range(step.degree, -1, -1)]
        for k, t in enumerate(targets):
            plan.sum(t, [list(lane.steps[si].coeff_polys[k].terms()) for lane in lanes])
        out += plan.lines
        plan.lines = []
        out.append(f"fmigen_v4d X{var};")
        if step.degree == 1:
            out.append(f"fmigen_linear_4(&{targets[0]}, &{targets[1]}, &X{var}, &fail);")
        else:
            out.append(f"fmigen_quadratic_near_4({', '.join('&' + t for t in targets)}, &P{var}, &X{var}, &fail);")
            seen.append(var)
    # the roots' continuity (codegen_kinematics.root_continuity), then the block's own
    # polynomials relative to their terms (codegen_kinematics.verification)
    cont = " & ".join(f"(FMIGEN_ABS_4(X{v} - P{v}) <= T{coord_of[v]})" for v in seen) or "~fail"
    out.append(f"fmigen_v4l ok = ~fail & (check ? (fmigen_v4l)({cont}) : ~fail);")
    polys = [(*lane.polys, *lane.circles) for lane in lanes]
    gens = [(*lane.variables, *lane.abstractions) for lane in lanes]
    for k in range(len(polys[0])):
        terms = [list(sp.Poly(p[k], *g).terms()) for p, g in zip(polys, gens)]
        plan.sum(f"rv{k}", terms)
        if k < len(rep.polys):
            plan.abs_sum(f"rs{k}", terms)
        else:   # a circle s² + c² − 1: 2, as codegen_kinematics.verification
            plan.lines.append(f"const fmigen_v4d rs{k} = {_vec([2.0] * LANES)};")
        out += plan.lines
        plan.lines = []
        out.append(f"ok &= FMIGEN_ABS_4(rv{k}) <= FMIGEN_SEQ_TOL * rs{k};")
    out.append(f"const unsigned pass = fmigen_lane_bits(&ok) & {(1 << len(members)) - 1}u;")
    # the outputs of the lanes that passed, as the scalar block writes them
    for lane, b in enumerate(members):
        solved_block = tri.blocks[b]
        at = {v: f"X{k}[{lane}]" for k, v in enumerate(solved_block.variables)}
        stores = [f"sol[{sl}] = {at[v]};" for v, sl in slots[b].items()]
        for i, kind, vs, _ in plans[b]:
            if kind == "angle":
                defer = i not in bare
                if i in trig_angles or defer:
                    stores.append(f"trig[{2 * i}] = {at[vs[0]]}; trig[{2 * i + 1}] = {at[vs[1]]};")
                if not defer:
                    stores.append(f"q[{i}] = fmigen_unwrap(fmigen_atan2({at[vs[0]]}, {at[vs[1]]}), base->q[{i}]);")
            else:
                stores.append(f"q[{i}] = {at[vs[0]]};")
                if i in trig_angles:
                    stores.append(sincos_into(i))
        out.append(f"if (pass & {1 << lane}u) {{ {' '.join(stores)} }}")
    return [ind + line for line in out]


def _lane_members(members):
    return list(range(len(members))) + [len(members) - 1] * (LANES - len(members))


def lane_function(tri, cls, plans, slots, trig_angles, bare) -> str:
    """The C function of one class: solves its blocks four at a time and
    returns the mask of those it solved (bit k: the class's k-th block).
    ``plans[b]``: the block's layout (codegen_kinematics.block_plan), ``slots[b]``
    its variables' slots in sol; the outputs as ``kinematics_walk`` writes
    them in C: sin/cos pairs to trig where the embedding reads them or the
    angle is deferred (not in ``bare``), an angle read bare by its atan2,
    a length to q (and its sin/cos where ``trig_angles`` has it)."""
    nk = len(tri.blocks[cls.members[0]].abstractions)
    body = []
    for g in range(0, len(cls.members), LANES):
        group = cls.members[g:g + LANES]
        body.append("    {")
        # the group's knowns start at K[g·nk]
        body.append(f"        const double *K = Kall + {g * nk};")
        code = _group_code(tri, group, plans, slots, trig_angles, bare, "        ")
        body += code
        body.append(f"        done |= pass << {g};")
        body.append("    }")
    return (f"FMIGEN_ALWAYS_INLINE unsigned fmigen_lanes{cls.index}(const double *Kall, double dt, double dqi, "
            f"int check, const FmigenBase *base, double *q, double *sol, double *trig)\n{{\n"
            "#if FMIGEN_VECTORS\n    unsigned done = 0;\n" + "\n".join(body) +
            "\n    (void)q; (void)trig;\n    return done;\n#else\n"
            "    (void)Kall; (void)dt; (void)dqi; (void)check; (void)base; (void)q; (void)sol; (void)trig;\n"
            "    return 0;\n#endif\n}\n")


def residual_function(cls, rows, unknowns, exprs):
    """``fmigen_residual_lanes<k>``: the constraint rows of one class's
    blocks (``rows[b]``, indices into Φ) four blocks at a time, for
    ``codegen``'s fmigen_phi_trig; None where their rows do not have the same
    monomials block by block.  ``unknowns[b]``: per unknown of block b,
    ("angle", (s, c), (ts, tc)) — its pair in trig and the unit-circle
    symbols the rows read — or ("length", q, q); ``exprs``: row -> its
    expression (C names as symbols).  The pair is scaled onto the unit circle
    lane by lane as the scalar code does it (1/√(s² + c²)); every other
    symbol (the platform's pose and sin/cos) is one scalar for all lanes.
    The helper writes the rows to ``out`` unless it is NULL and raises
    ``*peak`` to their max |row| (what fmigen_residual_trig returns)."""
    members = cls.members
    nrow = len(rows[members[0]])
    if any(len(rows[b]) != nrow for b in members):
        return None
    own = {b: [s for kind, _, syms in unknowns[b] for s in (syms if kind == "angle" else (syms,))] for b in members}
    shared = sorted({s for b in members for j in rows[b] for s in exprs[j].free_symbols} -
                    {s for b in members for s in own[b]}, key=str)
    polys = {}
    for b in members:
        try:
            polys[b] = [sp.Poly(exprs[j], *own[b], *shared) for j in rows[b]]
        except sp.PolynomialError:
            return None
    first = polys[members[0]]
    if any([P.monoms() for P in polys[b]] != [P.monoms() for P in first] for b in members):
        return None
    nown = len(own[members[0]])
    body = []
    for g in range(0, len(members), LANES):
        group = members[g:g + LANES]
        lanes = group + [group[-1]] * (LANES - len(group))
        out = []
        names, k = [], 0
        for u, (kind, _, _) in enumerate(unknowns[group[0]]):
            if kind == "angle":
                S = ", ".join(str(unknowns[b][u][1][0]) for b in lanes)
                C = ", ".join(str(unknowns[b][u][1][1]) for b in lanes)
                out += [f"const fmigen_v4d S{u} = {{{S}}}, C{u} = {{{C}}};",
                        f"fmigen_v4d R{u} = S{u} * S{u} + C{u} * C{u};",
                        f"fmigen_sqrt_4(&R{u});",
                        f"R{u} = 1.0 / R{u};",
                        f"const fmigen_v4d U{k} = S{u} * R{u}, U{k + 1} = C{u} * R{u};"]
                names += [f"U{k}", f"U{k + 1}"]
                k += 2
            else:
                out.append(f"const fmigen_v4d U{k} = {{{', '.join(str(unknowns[b][u][1]) for b in lanes)}}};")
                names.append(f"U{k}")
                k += 1
        assert k == nown
        # (a double's monomials again in every group: computed once for all
        # groups, before them, they cost the step more instructions;
        # docs/benchmarks.md, "Measurements behind the code's choices")
        plan = _Plan(names + [str(s) for s in shared], "m", scalar=range(nown, nown + len(shared)))
        for r in range(nrow):
            plan.sum(f"row{r}", [list(polys[b][r].terms()) for b in lanes])
            out += plan.lines
            plan.lines = []
            out.append(f"if (out) {{ {' '.join(f'out[{rows[b][r]}] = row{r}[{lane}];' for lane, b in enumerate(group))} }}")
            # a padded lane repeats the group's last block: the max is the same
            out.append(f"P = FMIGEN_MAX_4(FMIGEN_ABS_4(row{r}), P);")
        body += ["    {"] + ["        " + line for line in out] + ["    }"]
    # the lanes' max into *peak, lane by lane (fmigen_max: a NaN row is not
    # taken, as fmigen_max_abs has it)
    fold = "".join(f"    *peak = fmigen_max(P[{lane}], *peak);\n" for lane in range(LANES))
    return (f"FMIGEN_ALWAYS_INLINE int fmigen_residual_lanes{cls.index}(const double *q, const double *trig, "
            f"double *out, double *peak)\n{{\n#if FMIGEN_VECTORS\n"
            "    fmigen_v4d P = {0.0, 0.0, 0.0, 0.0};\n" + "\n".join(body) + "\n" + fold +
            "    (void)q; (void)trig;\n    return 1;\n#else\n    (void)q; (void)trig; (void)out; (void)peak;\n"
            "    return 0;\n#endif\n}\n")
