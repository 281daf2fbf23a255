"""The embedding's per-block code in vector lanes: the statements that the
generator emits once per diagonal block of Φ_d, run four blocks at a time.

Why: the Stewart platform's six legs are the same computation up to which
coordinates they read and a few geometry constants.  Its blockwise
embedding (``codegen_embedding``) spends most of its right-hand side on
them: each leg's Jacobian block and its adjugate inverse, v_d, a_c, the
leg's share of Bᵀ M B and of Bᵀ(F − M a_c).  Straight-line scalar code does
that six times; in GCC's and clang's vector types it does it twice (legs
1–4, then legs 5–6 in four lanes of which two repeat leg 6).

How: a pass over the generated straight-line C of one function
(``vectorize``).  ``codegen_embedding`` tags what it emits inside a
per-block loop with (block, role): the k-th value, check or store of a kind
in that block's code (``_Code.lane``).  The blocks of one size make chunks
of four.  Tagged statements of one role in a chunk's blocks form a group
when their expressions have the same shape: the same operations over

- the block's own coordinates in the same places (q, v, the sin/cos pairs
  in ``trig``),
- tagged values of the same role,
- the block's CSE temporaries (compared by their own expressions),
- anything else: the platform's values, the geometry's constants, which may
  differ from block to block and become a vector of the four values (one
  scalar where they are the same).

Sums and products are compared as multisets (sorted by the shapes of their
operands), so the two orders in which sympy happens to print one
determinant match, and a negation is folded into a sign or a constant.  A
group whose shapes differ stays scalar, and what reads it takes its values
one by one.  Sums and products are paired term by term only within one
sum or product, so a wrong pairing costs speed, never a lane's value: a
lane always computes its own block's expression (in the group's order of
terms).  A statement that reads two blocks' values (the sums over the
blocks) is never part of a group, so no lane reads another lane of the
vector it defines.

Where a role's sums differ from block to block only in the terms that read
none of the block's own values (γ's rows: the platform's rotation times the
geometry, shared differently leg by leg by the CSE), those terms become a
scalar statement per block (``<name>_rest``) and the rest packs
(``_platform_terms_apart``).

Each group becomes one vector statement (its CSE temporaries vector
statements of their own), a group of checks a lane mask
(``fmigen_lane_bits``), a group of stores to v a scatter.  A sum over the
blocks (Σ_b Φ_i,bᵀ P_b, Bᵀ res, in ``mh``, ``rb``) takes its terms as vector
products summed lane by lane, then across the lanes (``fmigen_hsum_4``).
``relayout_work`` gives each group that prepare hands to finish four
consecutive places in ``work``: one vector store and one load.  Scalar
statements that read a lane take it out of its vector.

For a compiler without vector types (FMIGEN_VECTORS 0) the same statements
are printed lane by lane as scalars: the same IEEE operations in the same
order, so both builds give the same bits (tests/test_slp.py).  Against the
generator's code without this pass the results differ by rounding: a lane
evaluates its sums and products in the group's order, and the sums over
the blocks add each chunk's lanes last (9.7e-16 relative in q̈ at random
Stewart states, measured).

A function with a statement this pass does not read (an LU call, a local
array, a function it has no vector form of) stays as it was.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fmigen.generate.codegen_lanes import LANES   # the lanes of fmigen_v4d (runtime/fmigen_runtime.h)
from fmigen.generate.slp_reader import _CHECK, _NAME, _Stmt, _Unreadable, _read


# ---------------------------------------------------------------- the pass


@dataclass
class Blocks:
    """What ``vectorize`` needs from the generator: per block (unit) its own
    coordinates; the tags {a defined name, a stored element (``v[7]``) or a
    check's line: (unit, role)}; the chunks, tuples of LANES units solved
    together (a short chunk repeats its last unit)."""
    coords: list
    tags: dict
    chunks: list


def _lane_leaves(coords):
    """{leaf text: (unit, role)} for q, v and the sin/cos pair of each
    block's own coordinates."""
    out = {}
    for u, idx in enumerate(coords):
        for r, i in enumerate(idx):
            out[f"q[{i}]"] = (u, ("q", r))
            out[f"v[{i}]"] = (u, ("v", r))
            out[f"trig[{2 * i}]"] = (u, ("s", r))
            out[f"trig[{2 * i + 1}]"] = (u, ("c", r))
    return out


_VECTOR_CALLS = {"fabs": "FMIGEN_ABS_4", "fmigen_max": "FMIGEN_MAX_4"}


class _Pass:
    """The statements with what the grouping needs: each one's block (an
    int, None for none, "mixed"), its tag, and shapes."""

    def __init__(self, stmts, blocks: Blocks):
        self.stmts = stmts
        self.leaves = _lane_leaves(blocks.coords)
        self.tags = {}
        for st in stmts:
            key = st.text.strip() if st.kind == "check" else st.name
            if key in blocks.tags:
                self.tags[st.index] = blocks.tags[key]
        self.unit = {}
        for st in stmts:
            self.unit[st.index] = self._unit_of(st)
        self.memo = {}
        self.chunks = blocks.chunks

    def _unit_of(self, st):
        units = set()
        for name in _names(st.tree):
            text, src = name
            if src is None:
                if text in self.leaves:
                    units.add(self.leaves[text][0])
                continue
            u = self.unit[src]
            if u == "mixed":
                return "mixed"
            if u is not None:
                units.add(u)
        if st.index in self.tags:
            units.add(self.tags[st.index][0])
        if len(units) > 1:
            return "mixed"
        return next(iter(units)) if units else None

    def inline(self, src) -> bool:
        """A block's own CSE temporary: compared (and vectorized) by its
        expression."""
        return src is not None and src not in self.tags and isinstance(self.unit[src], int) \
            and self.stmts[src].kind == "def"

    def norm(self, node):
        """−t for a temporary t = a·b as −a·b: sympy's CSE names such a product
        in one block and not in another."""
        if node[0] == "mul" and len(node[2]) == 1 and node[2][0][0] == "var" and self.inline(node[2][0][2]):
            inner = self.stmts[node[2][0][2]].tree
            if inner[0] == "mul":
                return self.norm(("mul", node[1] * inner[1], inner[2]))
        return node

    def shape(self, node):
        node = self.norm(node)
        kind = node[0]
        if kind == "var":
            text, src = node[1], node[2]
            if src is None:
                if text in self.leaves:
                    return ("L", self.leaves[text][1])
                # the inputs u and prepare's work are read block by block
                # (finish's): which element is the block's business
                return ("S", text.split("[")[0]) if text.startswith(("u[", "work[")) else ("S", text)
            if src in self.tags:
                return ("R", self.tags[src][1])
            if self.inline(src):
                return self.stmt_shape(self.stmts[src])[2]
            return ("P",)
        if kind == "const":
            return ("K",)
        if kind == "add":
            return ("add", tuple(sorted(((s, self.shape(t)) for s, t in node[1]), key=repr)))
        if kind == "mul":
            return ("mul", node[1], tuple(sorted((self.shape(f) for f in node[2]), key=repr)))
        if kind == "call":
            return ("call", node[1], tuple(self.shape(a) for a in node[2]))
        return (kind, self.shape(node[1]), self.shape(node[2]))

    def stmt_shape(self, st):
        """A statement's shape: its kind, a check's return value (lanes that
        fail return the same code) and its expression's shape."""
        if st.index not in self.memo:
            self.memo[st.index] = (st.kind, st.ret, self.shape(st.tree))
        return self.memo[st.index]

    def children(self, node):
        """A sum's or product's operands in the order of their shapes
        (stable: equal shapes keep the block's own order)."""
        if node[0] == "add":
            return sorted(node[1], key=lambda p: repr((p[0], self.shape(p[1]))))
        return sorted(node[2], key=lambda f: repr(self.shape(f)))


def _names(node):
    """The (text, source) of every name a tree reads."""
    kind = node[0]
    if kind == "var":
        return [(node[1], node[2])]
    if kind == "const":
        return []
    if kind == "add":
        return [x for _, t in node[1] for x in _names(t)]
    if kind in ("mul", "call"):
        return [x for f in node[2] for x in _names(f)]
    return _names(node[1]) + _names(node[2])


def _vectorizable(node) -> bool:
    if node[0] == "call":
        return node[1] in _VECTOR_CALLS and all(_vectorizable(a) for a in node[2])
    if node[0] == "add":
        return all(_vectorizable(t) for _, t in node[1])
    if node[0] == "mul":
        return all(_vectorizable(f) for f in node[2])
    if node[0] in ("div", "gt"):
        return _vectorizable(node[1]) and _vectorizable(node[2])
    return True


def vectorize(body: str, blocks: Blocks, slots=frozenset()) -> str | None:
    """The straight-line ``body`` (``_Code`` lines) with its per-block groups
    in vector lanes, as '#if FMIGEN_VECTORS … #else … #endif' (the else: the
    same statements lane by lane); None when nothing groups or the body has a
    statement this pass does not read.  ``slots``: the starts of LANES
    consecutive places in ``work`` that hold one vector (``relayout_work``):
    stored and loaded whole."""
    if re.search(r"\b(?:ok)?l[vr]\d+(?:_\d+)?\b|_rest\b", body):
        return None                # the names this pass makes up are taken
    try:
        head, stmts = _read(body.split("\n"))
        p = _Pass(stmts, blocks)
        groups = _groups(p, blocks)
        if not groups:
            return None
        return _Emitter(p, head, stmts, groups, slots).emit()
    except (_Unreadable, RecursionError):
        # a statement it does not read, a function without a vector form
        # inside a lane's expression, an expression nested too deep
        return None


def relayout_work(prepare: str, finish: str, blocks: Blocks, nwork: int):
    """``work`` (prepare's values for finish) laid out so that each group
    prepare computes in lanes and stores whole has LANES consecutive places
    (a short chunk's repeated lanes too): one vector store in prepare and one
    load in finish instead of four of each.  Returns (prepare, finish, the
    new size of work, the starts of those places), or the arguments and
    no places when prepare is not read by this pass."""
    try:
        _, stmts = _read(prepare.split("\n"))
        p = _Pass(stmts, blocks)
        groups = _groups(p, blocks)
    except (_Unreadable, RecursionError):
        return prepare, finish, nwork, frozenset()
    stored = {}
    for st in stmts:
        m = re.match(r"work\[(\d+)\]$", st.name)
        if st.kind == "store" and m and st.tree[0] == "var" and st.tree[2] is not None:
            stored[st.tree[2]] = int(m.group(1))
    new, slots, free = {}, set(), 0
    for g in groups:
        real = g[:_real_lanes(g)]
        if all(s.index in stored and stored[s.index] not in new for s in real):
            slots.add(free)
            for k, s in enumerate(real):
                new[stored[s.index]] = free + k
            free += LANES
    if not slots:
        return prepare, finish, nwork, frozenset()
    for k in range(nwork):
        if k not in new:
            new[k] = free
            free += 1

    def moved(text):
        return re.sub(r"\bwork\[(\d+)\]", lambda m: f"work[{new[int(m.group(1))]}]", text)
    return moved(prepare), moved(finish), free, frozenset(slots)


def _by_role(p: "_Pass") -> dict:
    """{role: {block: statement}} of the tagged statements that read their
    own block only."""
    by_role = {}
    for st in p.stmts:
        tag = p.tags.get(st.index)
        if tag is not None and p.unit[st.index] == tag[0]:
            by_role.setdefault(tag[1], {})[tag[0]] = st
    return by_role


def _has_lane(shape) -> bool:
    """A shape that reads a block's own values."""
    text = repr(shape)
    return "'L'" in text or "'R'" in text


def _platform_terms_apart(p: "_Pass", blocks: Blocks):
    """For a role whose sums differ from block to block only in their terms
    without the block's own values (γ's rows: products of the platform's
    rotation with the geometry, which the joint CSE shares differently leg
    by leg), those terms become a statement of their own per block, and the
    sum reads it: each block's sum is then that value plus terms of one
    shape, and groups.  Changes ``p`` (its statements and their trees)."""
    added = False
    by_role = _by_role(p)    # what it adds is untagged: the roles stay
    for chunk in blocks.chunks:
        for members in by_role.values():
            if not all(u in members for u in chunk):
                continue
            sts = list({members[u].index: members[u] for u in chunk}.values())
            if len({repr(p.stmt_shape(st)) for st in sts}) == 1 or \
                    any(st.kind != "def" or st.tree[0] != "add" for st in sts):
                continue
            split = [([(sg, t) for sg, t in st.tree[1] if _has_lane(p.shape(t))],
                      [(sg, t) for sg, t in st.tree[1] if not _has_lane(p.shape(t))]) for st in sts]
            own = {repr(sorted(repr((sg, p.shape(t))) for sg, t in mine)) for mine, _ in split}
            if len(own) != 1 or any(not mine or not rest for mine, rest in split):
                continue
            for st, (mine, rest) in zip(sts, split):
                tree = ("add", tuple(rest))
                new = _Stmt(len(p.stmts), "def", f"{st.name}_rest", "", tree)
                new.text = f"    const double {new.name} = {_lprint(_single(tree, set()), 0)};"
                new.reads = {text: src for text, src in _names(tree) if src is not None}
                p.stmts.append(new)
                p.unit[new.index] = p._unit_of(new)
                # the sum as that value plus its own terms (st.text, what a
                # statement left scalar prints, stays the sum as generated)
                st.tree = ("add", ((1, ("var", new.name, new.index)),) + tuple(mine))
            added = True
    if added:
        p.memo.clear()


def _groups(p: "_Pass", blocks: Blocks) -> list:
    """Per chunk and role, the tagged statements of the chunk's blocks, when
    they have one shape (after ``_platform_terms_apart``)."""
    _platform_terms_apart(p, blocks)
    by_role = _by_role(p)
    groups = []
    for chunk in blocks.chunks:
        for role, members in by_role.items():
            if all(u in members for u in chunk):
                sts = [members[u] for u in chunk]
                # a check as a lane mask: its condition a comparison
                if len({repr(p.stmt_shape(s)) for s in sts}) == 1 and _vectorizable(sts[0].tree) and \
                        (sts[0].kind != "check" or sts[0].tree[0] == "gt"):
                    groups.append(sts)
    return groups


class _Vec:
    """One vector statement: ``name`` (vector build), the IR, the names its
    real lanes define in the scalar build (None: a fresh name), and what it
    reads (vectors, statement indices)."""

    def __init__(self, name, ir, lane_names, deps, units=()):
        self.name, self.ir, self.lane_names, self.deps = name, ir, lane_names, deps
        self.units = units             # the block in each lane


class _Emitter:
    def __init__(self, p: _Pass, head, stmts, groups, slots=frozenset()):
        self.p, self.head, self.stmts, self.slots = p, head, stmts, slots
        self.provider = {}             # statement index -> (vec, lane)
        self.memo = {}                 # tuple of statement indices -> vec
        self.group_of = {}             # statement index -> (group, lane)
        for g in groups:
            for k, st in enumerate(g[:_real_lanes(g)]):
                self.group_of[st.index] = (g, k)
        self.group_vec = {}
        self.fresh = 0

    # IR: ('vec', vec) ('scalar', text) ('lanes', (text per lane)) and the
    # flat operators over IR children
    def ir(self, nodes, deps):
        nodes = [self.p.norm(n) for n in nodes]
        if len({n[0] for n in nodes}) > 1:
            # one block names a CSE temporary that another computes in place
            # (the same shape): the temporary's expression, in place
            nodes = [self.p.norm(self.stmts[n[2]].tree) if n[0] == "var" and self.p.inline(n[2]) else n
                     for n in nodes]
            if len({n[0] for n in nodes}) > 1:
                raise _Unreadable(repr(nodes[0][0]))
        kind = nodes[0][0]
        if kind == "var":
            return self._leaf(nodes, deps)
        if kind == "const":
            texts = tuple(n[1] for n in nodes)
            return ("scalar", texts[0]) if len(set(texts)) == 1 else ("lanes", texts)
        if kind == "add":
            cols = list(zip(*(self.p.children(n) for n in nodes)))
            return ("add", tuple((col[0][0], self.ir([t for _, t in col], deps)) for col in cols))
        if kind == "mul":
            cols = list(zip(*(self.p.children(n) for n in nodes)))
            return ("mul", nodes[0][1], tuple(self.ir(list(col), deps) for col in cols))
        if kind == "call":
            return ("call", nodes[0][1], tuple(self.ir([n[2][a] for n in nodes], deps)
                                              for a in range(len(nodes[0][2]))))
        return (kind, self.ir([n[1] for n in nodes], deps), self.ir([n[2] for n in nodes], deps))

    def _leaf(self, nodes, deps):
        srcs = [n[2] for n in nodes]
        texts = tuple(n[1] for n in nodes)
        if all(s is not None for s in srcs) and len(set(srcs)) > 1:
            if all(self.p.inline(s) or s in self.p.tags for s in srcs):
                vec = self.value([self.stmts[s] for s in srcs])
                if vec is not None:
                    deps.add(vec)
                    return ("vec", vec)
        deps.update(s for s in srcs if s is not None)
        return ("leaf", texts, tuple(srcs))

    def value(self, sts):
        """The vector of the statements ``sts`` lane by lane (made if needed),
        or None when they are not the same computation."""
        key = tuple(s.index for s in sts)
        if key in self.memo:
            return self.memo[key]
        g = self.group_of.get(sts[0].index)
        if g is not None and all(self.group_of.get(s.index, (None, None))[0] is g[0] for s in sts) and \
                [self.group_of[s.index][1] for s in sts[:_real_lanes(sts)]] == list(range(_real_lanes(sts))):
            return self.group_value(g[0])
        if any(s.index in self.p.tags or s.kind != "def" for s in sts):
            return None
        if len({repr(self.p.stmt_shape(s)) for s in sts}) != 1 or not _vectorizable(sts[0].tree):
            return None
        return self._make(sts)

    def _make(self, sts):
        deps = set()
        ir = self.ir([s.tree for s in sts], deps)
        self.fresh += 1
        real = _real_lanes(sts)
        names = [s.name if s.kind == "def" and s.index not in self.provider else None for s in sts[:real]]
        vec = _Vec(f"lv{self.fresh}", ir, names, deps, tuple(self.p.unit[s.index] for s in sts))
        for k, s in enumerate(sts[:real]):
            self.provider.setdefault(s.index, (vec, k))
        self.memo[tuple(s.index for s in sts)] = vec
        return vec

    def group_value(self, g):
        if id(g) not in self.group_vec:
            self.group_vec[id(g)] = self._make(g)
        return self.group_vec[id(g)]

    def emit(self) -> str:
        for g, _ in sorted(self.group_of.values(), key=lambda gk: gk[0][0].index):
            self.group_value(g)
        vec_lines, lane_lines = [], []
        done, done_vec = set(), set()

        def need(d):
            if isinstance(d, _Vec):
                need_vec(d)
            elif d in self.provider and self.provider[d][0].lane_names[self.provider[d][1]] is not None:
                need_vec(self.provider[d][0])
            elif self.stmts[d].kind == "store":
                need_store(self.stmts[d])
            else:
                need_stmt(self.stmts[d])

        def need_deps(deps):
            for d in sorted(deps, key=lambda d: (0, int(d.name[2:])) if isinstance(d, _Vec) else (1, d)):
                need(d)

        def need_vec(vec):
            if id(vec) in done_vec:
                return
            done_vec.add(id(vec))
            need_deps(vec.deps)
            expr = _vprint(vec.ir, self.provider, slots=self.slots)
            if _uniform(vec.ir):
                expr = _broadcast(expr)    # one value in every lane
            vec_lines.append(f"    const fmigen_v4d {vec.name} = {expr};")
            for k, nm in enumerate(vec.lane_names):
                lane_lines.append(f"    const double {nm or f'{vec.name}_{k}'} = {_lprint(vec.ir, k)};")

        def need_stmt(st):
            if st.index in done:
                return
            done.add(st.index)
            reduced = self._reduce(st) if st.kind == "def" else None
            if reduced is None:
                need_deps(set(st.reads.values()))
                vec_lines.append(self._rewrite(st))
                lane_lines.append(st.text)
                return
            sums, ir, deps = reduced
            need_deps(deps)
            for vec in sums:
                done_vec.add(id(vec))
                vec_lines.append(f"    const fmigen_v4d {vec.name} = {_vprint(vec.ir, self.provider, slots=self.slots)};")
                # a short chunk's repeated lanes are masked out: not computed
                for k in range(_real_lanes(vec.units) if vec.units else LANES):
                    lane_lines.append(f"    const double {vec.name}_{k} = {_lprint(vec.ir, k)};")
            vec_lines.append(f"    const double {st.name} = {_vprint(ir, self.provider, vector=False, slots=self.slots)};")
            lane_lines.append(f"    const double {st.name} = {_lprint(ir, 0)};")

        def need_group(st):
            """Emit the group ``st`` belongs to (a store's or a check's)."""
            group = self.group_of[st.index][0]
            vec = self.group_value(group)
            members = group[:_real_lanes(group)]
            if st.kind == "store":
                need_vec(vec)
                for k, s in enumerate(members):
                    done.add(s.index)
                    vec_lines.append(f"    {s.name} = {vec.name}[{k}];")
                    lane_lines.append(f"    {s.name} = {_lprint(('vec', vec), k)};")
                return
            need_deps(vec.deps)
            done_vec.add(id(vec))     # a mask, printed here
            if _uniform(vec.ir):      # one condition for every lane
                vec_lines.append(f"    if (!({_vprint(vec.ir, self.provider, False, self.slots)})) return {st.ret};")
            else:
                vec_lines.append(f"    {{ const fmigen_v4l ok{vec.name} = {_vprint(vec.ir, self.provider, slots=self.slots)}; "
                                 f"if (fmigen_lane_bits(&ok{vec.name}) != {(1 << LANES) - 1}u) return {st.ret}; }}")
            for k, s in enumerate(members):
                done.add(s.index)
                lane_lines.append(f"    if (!({_lprint(vec.ir, k)})) return {s.ret};")

        def need_store(st):
            if st.index in done:
                return
            if st.index in self.group_of:
                need_group(st)
            elif st.index in whole:
                vec, start, members = whole[st.index]
                need_vec(vec)
                vec_lines.append(f"    FMIGEN_STORE_4(work + {start}, {vec.name});")
                for s in members:
                    done.add(s.index)
                    lane_lines.append(s.text)
            else:
                need_stmt(st)

        # stores of a vector's lanes to a place of work made for it
        # (relayout_work): one store
        whole, runs = {}, {}
        for st in self.stmts:
            m = re.match(r"work\[(\d+)\]$", st.name)
            if st.kind == "store" and m and st.tree[0] == "var" and st.tree[2] in self.provider:
                vec, k = self.provider[st.tree[2]]
                if vec.lane_names[k] is not None:
                    runs.setdefault(id(vec), (vec, {}))[1][k] = (int(m.group(1)), st)
        for vec, lanes in runs.values():
            real = len(vec.lane_names)
            if sorted(lanes) == list(range(real)) and lanes[0][0] in self.slots and \
                    all(lanes[k][0] == lanes[0][0] + k for k in range(real)):
                members = [lanes[k][1] for k in range(real)]
                for s in members:
                    whole[s.index] = (vec, lanes[0][0], members)

        for st in self.stmts:
            if st.kind != "def" and st.index not in done:
                need_store(st)
        out = [*self.head, "#if FMIGEN_VECTORS", *vec_lines, "#else", *lane_lines, "#endif", "    return 0;"]
        return "\n".join(out)

    def _chunk_lane(self, unit):
        """(chunk, position) of a block in the chunks."""
        for chunk in self.p.chunks:
            if unit in chunk:
                return chunk, chunk.index(unit)
        return None

    def _term_lane(self, node):
        """For a term of a sum: (chunk, lane, what each factor is) when its
        factors are one lane's values (a vector's lane, a block's tagged
        value) and values the same for every lane, else None."""
        factors = node[2] if node[0] == "mul" and node[1] == 1 else (node,)
        where, descs = None, []
        for f in factors:
            if f[0] == "const":
                descs.append(("scalar", f[1]))
                continue
            if f[0] != "var":
                return None
            src = f[2]
            if src is not None and src in self.provider and \
                    self.provider[src][0].lane_names[self.provider[src][1]] is not None:
                vec, k = self.provider[src]
                here, desc = (vec.units, k), ("vec", vec.name)
            elif src is not None and src in self.p.tags and isinstance(self.p.unit[src], int):
                found = self._chunk_lane(self.p.unit[src])
                if found is None:
                    return None
                here, desc = found, ("role", self.p.tags[src][1])
            else:
                descs.append(("scalar", f[1]))
                continue
            if where is not None and where != here:
                return None
            where = here
            descs.append(desc)
        if where is None:
            return None
        return where[0], where[1], tuple(descs)

    def _reduce(self, st):
        """A sum over the blocks (Σ_b Φ_i,bᵀ P_b, Bᵀ res) with its terms
        for every lane of a chunk taken as vector products summed lane by
        lane, then the lanes added: (the sums as _Vec, the statement's IR,
        what it reads), or None.  The order of the additions changes (each
        block's terms first, then the blocks): a rounding difference."""
        tree = st.tree
        if tree[0] != "add":
            return None
        patterns = {}
        for ti, (sign, node) in enumerate(tree[1]):
            info = self._term_lane(node)
            if info is not None:
                chunk, k, descs = info
                patterns.setdefault((chunk, sign, descs), {})[k] = ti
        full = {key: d for key, d in patterns.items()
                if sorted(d) == list(range(_real_lanes(key[0])))}
        if not full:
            return None
        deps, taken, by_chunk = set(), set(), {}
        for (chunk, sign, descs), lanes in sorted(full.items(), key=lambda kv: min(kv[1].values())):
            real = _real_lanes(chunk)
            nodes = [tree[1][lanes[min(k, real - 1)]][1] for k in range(LANES)]
            cols = [n[2] if n[0] == "mul" and n[1] == 1 else (n,) for n in nodes]
            factors = []
            for fi, desc in enumerate(descs):
                col = [c[fi] for c in cols]
                if desc[0] == "scalar":
                    factors.append(("scalar", desc[1]))
                elif desc[0] == "vec":
                    vec = self.provider[col[0][2]][0]
                    deps.add(vec)
                    factors.append(("vec", vec))
                else:
                    deps.update(c[2] for c in col)
                    factors.append(("leaf", tuple(c[1] for c in col), tuple(c[2] for c in col)))
            term = ("mul", 1, tuple(factors)) if len(factors) > 1 else factors[0]
            by_chunk.setdefault(chunk, []).append((sign, term))
            taken.update(lanes.values())
        sums, total = [], []
        for chunk, terms in by_chunk.items():
            self.fresh += 1
            sums.append(_Vec(f"lr{self.fresh}", ("add", tuple(terms)), [None] * LANES, set(), chunk))
            real = _real_lanes(chunk)
            # a short chunk's repeated lanes are not summed: zeros
            total.append((1, ("vec", sums[-1]) if real == LANES else ("mask", ("vec", sums[-1]), real)))
        if len(total) > 1 or total[0][1][0] == "mask":
            self.fresh += 1
            sums.append(_Vec(f"lr{self.fresh}", ("add", tuple(total)), [None] * LANES, set(), ()))
        rest = [(sign, _single(node, deps)) for ti, (sign, node) in enumerate(tree[1]) if ti not in taken]
        rest.append((1, ("hsum", sums[-1])))
        return sums, ("add", tuple(rest)), deps

    def _rewrite(self, st):
        """A scalar statement reading lanes out of their vectors."""
        reads = st.reads

        def sub(m):
            src = reads.get(m.group(0))
            if src is not None and src in self.provider and self.stmts[src].kind == "def":
                vec, k = self.provider[src]
                if vec.lane_names[k] is not None:
                    return f"{vec.name}[{k}]"
            return m.group(0)
        if st.kind == "check":
            return f"    if (!({_NAME.sub(sub, _CHECK.match(st.text).group(1))})) return {st.ret};"
        lhs, rhs = st.text.split(" = ", 1)
        return f"{lhs} = {_NAME.sub(sub, rhs)}"


def _single(node, deps):
    """A flat tree as one lane's IR (its names read as they are)."""
    kind = node[0]
    if kind == "var":
        if node[2] is not None:
            deps.add(node[2])
        return ("leaf", (node[1],), (node[2],))
    if kind == "const":
        return ("scalar", node[1])
    if kind == "add":
        return ("add", tuple((s, _single(t, deps)) for s, t in node[1]))
    if kind == "mul":
        return ("mul", node[1], tuple(_single(f, deps) for f in node[2]))
    if kind == "call":
        return ("call", node[1], tuple(_single(a, deps) for a in node[2]))
    return (kind, _single(node[1], deps), _single(node[2], deps))


def _real_lanes(members) -> int:
    """Lanes up to the last distinct member (a short chunk repeats its last):
    of statements, or of a chunk's blocks."""
    n = len(members)
    while n > 1 and members[n - 1] == members[n - 2]:
        n -= 1
    return n


def _whole(texts, slots):
    """(array, start) when the lanes ``texts`` read four consecutive
    elements of an array, or a place in work made for a vector (``slots``: a
    short chunk's repeated last lane included); else None."""
    m = re.match(r"(\w+)\[(\d+)\]$", texts[0])
    if not m:
        return None
    array, start = m.group(1), int(m.group(2))
    if texts == [f"{array}[{start + k}]" for k in range(LANES)]:
        return array, start
    if array != "work" or start not in slots:
        return None
    last = 0
    for k, text in enumerate(texts):
        if text == f"work[{start + k}]":
            last = k
        elif text != f"work[{start + last}]":
            return None
    return array, start


def _vprint(ir, provider, vector=True, slots=frozenset()) -> str:
    """The vector build's expression of ``ir``; a lane value held by a
    vector (``provider``) is read out of it.  ``vector`` False: a scalar
    statement of that build (its calls the scalar functions)."""
    kind = ir[0]
    if kind == "hsum":
        return f"fmigen_hsum_4(&{ir[1].name})"
    if kind == "mask":
        keep = ", ".join("-1LL" if k < ir[2] else "0LL" for k in range(LANES))
        return f"((fmigen_v4d)((fmigen_v4l){_vprint(ir[1], provider, vector, slots)} & (fmigen_v4l){{{keep}}}))"
    if kind == "vec":
        return ir[1].name
    if kind == "scalar":
        return ir[1]
    if kind == "lanes":
        return _literal(ir[1])
    if kind == "leaf":
        texts, held = [], []
        for text, src in zip(ir[1], ir[2]):
            if src is not None and src in provider and provider[src][0].lane_names[provider[src][1]]:
                vec, k = provider[src]
                text = f"{vec.name}[{k}]"
                held.append((vec.name, k))
            texts.append(text)
        if len(set(texts)) == 1:
            return texts[0]
        if held and held == [(held[0][0], k) for k in range(LANES)]:
            return held[0][0]           # a vector's own lanes in order
        whole = _whole(texts, slots) if all(src is None for src in ir[2]) else None
        if whole is not None:
            return f"FMIGEN_LOAD_4({whole[0]} + {whole[1]})"
        return _literal(texts)
    return _print_op(ir, lambda x: _vprint(x, provider, vector, slots), vector=vector)


def _lprint(ir, k) -> str:
    kind = ir[0]
    if kind == "hsum":     # fmigen_hsum_4's order
        x = [_lprint(("vec", ir[1]), j) for j in range(LANES)]
        return f"(({x[0]} + {x[2]}) + ({x[1]} + {x[3]}))"
    if kind == "mask":
        return _lprint(ir[1], k) if k < ir[2] else "0.0"
    if kind == "vec":
        vec = ir[1]
        k = min(k, len(vec.lane_names) - 1)
        return vec.lane_names[k] or f"{vec.name}_{k}"
    if kind == "scalar":
        return ir[1]
    if kind in ("lanes", "leaf"):
        return ir[1][k]
    return _print_op(ir, lambda x: _lprint(x, k), vector=False)


def _uniform(ir) -> bool:
    """An IR that the vector build prints as a scalar: the same value in
    every lane and no vector call (which takes and gives vectors)."""
    kind = ir[0]
    if kind == "scalar":
        return True
    if kind == "leaf":
        return len(set(ir[1])) == 1
    if kind == "add":
        return all(_uniform(t) for _, t in ir[1])
    if kind == "mul":
        return all(_uniform(f) for f in ir[2])
    if kind in ("div", "gt"):
        return _uniform(ir[1]) and _uniform(ir[2])
    return False


def _literal(texts) -> str:
    """A vector of the lanes' C expressions."""
    return f"((fmigen_v4d){{{', '.join(texts)}}})"


def _broadcast(text: str) -> str:
    """A vector call's argument that is one value in every lane, as a vector:
    the vector macros cast their arguments, which a double cannot be."""
    return _literal([text] * LANES)


def _print_op(ir, sub, vector):
    kind = ir[0]
    if kind == "add":
        out = ""
        for i, (sign, t) in enumerate(ir[1]):
            x = sub(t)
            if i == 0:
                out = f"-{x}" if sign < 0 else x
            else:
                out = f"{out} {'+' if sign > 0 else '-'} {x}"
        return f"({out})"
    if kind == "mul":
        prod = "*".join(sub(f) for f in ir[2])
        return f"(-({prod}))" if ir[1] < 0 else f"({prod})"
    if kind == "div":
        return f"({sub(ir[1])}/{sub(ir[2])})"
    if kind == "gt":
        return f"({sub(ir[1])} > {sub(ir[2])})"
    if kind == "call":
        if vector and ir[1] not in _VECTOR_CALLS:
            raise _Unreadable(ir[1])
        fn = _VECTOR_CALLS[ir[1]] if vector else ir[1]
        return f"{fn}({', '.join(_broadcast(sub(a)) if vector and _uniform(a) else sub(a) for a in ir[2])})"
    raise ValueError(kind)
