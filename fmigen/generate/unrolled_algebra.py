"""Linear algebra written out as straight-line C over the structural
non-zeros (``_Code``: named doubles, exact zeros and ±1 tracked): a diagonal
block of Φ_d inverted by its adjugate or factored by the runtime's LU
(``_factor_block``), and an unrolled LDLᵀ of a symmetric positive definite
matrix (``_ldlt_factor``, ``_ldlt_apply``).
"""

from __future__ import annotations

import re
from contextlib import contextmanager

import sympy as sp

from fmigen.generate.printer import c


#: largest diagonal block of Φ_d inverted by its adjugate; larger blocks are
#: factored by the runtime's LU with partial pivoting
ADJUGATE_MAX = 3
#: a block is singular when |det| <= this · Π over its rows of the row's
#: largest entry (a 1×1 block: of the whole Φ_q row); the runtime LU of larger
#: blocks uses the same 1e-13 against the block's largest entry
SINGULAR_REL = 1e-13


class _Code:
    """Straight-line C with structural zeros tracked: a value is a C name or
    None (exactly zero).  Names whose value is exactly ±1 are remembered
    (``unit``): a product with one is its other factor, with its sign."""

    def __init__(self, indent="    "):
        self.lines: list[str] = []
        self.indent = indent
        self.count = 0
        self.unit: dict[str, int] = {}
        # (block, role) of what is emitted inside ``lane``, for codegen_slp:
        # the k-th value (or check, or store) of a kind in a block's code
        self.tags: dict[str, tuple] = {}
        self._lane = None
        self._lane_count: dict[tuple, int] = {}

    @contextmanager
    def lane(self, block: int, kind: str):
        """Tag what is emitted inside as block ``block``'s values of ``kind``."""
        outer, self._lane = self._lane, (block, kind)
        try:
            yield
        finally:
            self._lane = outer

    def _tag(self, key):
        if self._lane is not None:
            k = self._lane_count.get(self._lane, 0)
            self._lane_count[self._lane] = k + 1
            self.tags[key] = (self._lane[0], (self._lane[1], k))

    def emit(self, line):
        self.lines.append(self.indent + line)
        if not line.startswith("const double "):
            store = re.match(r"^(v\[\d+\]) = ", line)
            if store:
                self._tag(store.group(1))
            elif line.startswith("if ("):
                self._tag(line.strip())

    def let(self, prefix, expr):
        """``const double <fresh> = expr;`` or None for an exact zero."""
        if expr is None:
            return None
        self.count += 1
        name = f"{prefix}{self.count}"
        self.emit(f"const double {name} = {expr};")
        self._tag(name)
        if expr in ("1", "-1"):
            self.unit[name] = int(expr)
        return name

    def dot(self, prefix, first, terms, sign="-"):
        """first − Σ a·b (sign "-") or first + Σ a·b (sign "+") over the pairs
        with both factors non-zero; None when nothing is left.  A factor that
        is ±1 is left out and its sign taken into the sum: bit for bit the
        same value (a product with ±1 is exact), one multiplication less —
        the Stewart platform's Φ_i holds −1 for the platform's position in
        every leg's rows."""
        prods = []
        for a, b in terms:
            if a is None or b is None:
                continue
            positive = (sign == "+") == (self.unit.get(a, 1) * self.unit.get(b, 1) > 0)
            factors = [x for x in (a, b) if x not in self.unit]
            prods.append((positive, "*".join(factors) or "1.0"))
        if first is None and not prods:
            return None
        if first is None:
            positive, expr = prods[0]
            expr = ("" if positive else "-") + expr
            prods = prods[1:]
        else:
            expr = first
        expr += "".join(f" {'+' if positive else '-'} {x}" for positive, x in prods)
        return self.let(prefix, expr)

    def drop_unread(self, pattern: str):
        """Remove the definitions ``const double NAME = ...;`` of the names
        matching ``pattern`` that no other line reads, until none is left
        (a dropped one may have been the only reader of another).  Values
        are emitted before it is known what reads them: an adjugate
        inverse's entries when the block is factored, before the function's
        right-hand sides (an entry that multiplies only structurally zero
        ones is never read: slider_crank_from_slider's velocities function),
        and M·B's rows for every coordinate, where Bᵀ(M B) skips the rows
        that B's structural zeros multiply (the quarter car's).  An unused
        variable fails ``-Wall -Werror``; what is kept keeps its order and
        its bits."""
        define = re.compile(rf"^\s*const double ({pattern}) = ")
        while True:
            counts: dict[str, int] = {}
            for line in self.lines:
                for word in re.findall(r"\b\w+\b", line):
                    counts[word] = counts.get(word, 0) + 1
            kept = []
            for line in self.lines:
                m = define.match(line)
                if m and counts[m.group(1)] == 1:
                    self.tags.pop(m.group(1), None)
                    continue
                kept.append(line)
            if len(kept) == len(self.lines):
                return
            self.lines = kept


def _factor_block(code: _Code, block, bi, Jn):
    """Emit the factorization of one diagonal block; returns solve(r, tag)
    mapping the block's right-hand side names to its solution names, and the
    inverse's entries (names or None, [unknown][equation]) when the block was
    inverted by its adjugate (else None: an LU)."""
    eqs, unk = block
    nb = len(eqs)
    A = [[Jn.get((j, i)) for i in unk] for j in eqs]
    if nb <= ADJUGATE_MAX:
        S = sp.Matrix(nb, nb, lambda r, k: sp.Symbol(A[r][k]) if A[r][k] else 0)
        det = S.det(method="berkowitz") if nb > 1 else S[0, 0]
        if det == 0:
            raise ValueError(f"diagonal block {bi} of Φ_d is structurally singular")
        d = code.let(f"det{bi}_", c(sp.expand(det)))
        rowmax = []
        for r, j in enumerate(eqs):
            # scale: the block's row; for a 1×1 block (whose row in the block
            # is its determinant) the whole Φ_q row, or the test is vacuous
            entries = [f"fabs({a})" for a in A[r] if a] if nb > 1 else \
                [f"fabs({a})" for (jj, _), a in sorted(Jn.items()) if jj == j and a]
            expr = entries[0]
            for e in entries[1:]:
                expr = f"fmigen_max({expr}, {e})"
            rowmax.append(expr)
        code.emit(f"if (!(fabs({d}) > {SINGULAR_REL!r} * {' * '.join(rowmax)})) return 1;")
        dinv = code.let(f"dinv{bi}_", f"1.0/{d}")
        adj = S.adjugate() if nb > 1 else sp.Matrix([[1]])
        Ai = [[code.let(f"ai{bi}_", f"{dinv}*({c(sp.expand(adj[r, k]))})") if adj[r, k] != 0 else None
               for k in range(nb)] for r in range(nb)]

        def solve(rhs, tag):
            return [code.dot(tag, None, [(Ai[r][k], rhs[k]) for k in range(nb)], sign="+") for r in range(nb)]
        return solve, Ai

    entries = ", ".join(a or "0.0" for row in A for a in row)
    code.emit(f"double A{bi}[{nb * nb}] = {{{entries}}};")
    code.emit(f"int P{bi}[{nb}];")
    code.emit(f"if (fmigen_lu_factor({nb}, A{bi}, P{bi})) return 1;")

    def solve(rhs, tag):
        if all(r is None for r in rhs):
            return [None] * nb
        code.count += 1
        arr = f"{tag}b{bi}_{code.count}"
        code.emit(f"double {arr}[{nb}] = {{{', '.join(r or '0.0' for r in rhs)}}};")
        code.emit(f"fmigen_lu_solve({nb}, A{bi}, P{bi}, {arr});")
        return [f"{arr}[{r}]" for r in range(nb)]
    return solve, None


def _ldlt_factor(code: _Code, f: int, Mb: dict, fail: int):
    """Unrolled LDLᵀ of a symmetric positive definite f×f matrix given by its
    upper triangle ``Mb`` {(a, b): name or None, a <= b}; structural zeros stay
    zeros, so a sparse matrix (M of the augmented formulations) gets only its
    fill-in.  A pivot not above 1e-13 of its diagonal entry → ``return fail``.
    Returns (L, Dinv) for ``_ldlt_apply``, or None when a pivot is
    structurally zero."""
    L, D, Dinv = {}, {}, {}
    for j in range(f):
        dj = code.dot("dd", Mb.get((j, j)), [(L[(j, k)], f"{L[(j, k)]}*{D[k]}" if L[(j, k)] else None)
                                             for k in range(j)])
        if dj is None:
            code.emit(f"return {fail};")
            return None
        code.emit(f"if (!({dj} > {SINGULAR_REL!r} * fabs({Mb[(j, j)]}))) return {fail};")
        D[j] = dj
        dinv = Dinv[j] = code.let("di", f"1.0/{dj}")
        for i in range(j + 1, f):
            num = code.dot("ln", Mb.get((j, i)), [(L[(i, k)], f"{L[(j, k)]}*{D[k]}" if L[(j, k)] else None)
                                                 for k in range(j)])
            L[(i, j)] = code.let("l", f"{num}*{dinv}") if num else None
    return L, Dinv


def _ldlt_apply(code: _Code, f: int, factor, rb: dict) -> dict:
    """x = A⁻¹ r̄ with A = L D Lᵀ from ``_ldlt_factor`` (r̄, x: {index: name
    or None})."""
    L, Dinv = factor
    z = {}
    for i in range(f):   # forward: L z = r̄; then z /= D; back: Lᵀ x = z
        z[i] = code.dot("z", rb.get(i), [(L[(i, k)], z[k]) for k in range(i)])
    y = {i: code.let("y", f"{z[i]}*{Dinv[i]}") if z[i] else None for i in range(f)}
    x = {}
    for i in reversed(range(f)):
        x[i] = code.dot("x", y[i], [(L[(k, i)], x[k]) for k in range(i + 1, f)])
    return x


def _ldlt_solve(code: _Code, f: int, Mb: dict, rb: dict):
    """qdd = M̄⁻¹ r̄ (return 2 when M̄ is not positive definite)."""
    if f == 0:
        return
    factor = _ldlt_factor(code, f, Mb, 2)
    if factor is None:
        return
    x = _ldlt_apply(code, f, factor, rb)
    for i in range(f):
        code.emit(f"qdd[{i}] = {x[i] or '0.0'};")
