"""sympy operations as sympy does them, without the work that cannot change
their result: walks that visit each sub-expression object once, and the
matrix product of finite expressions.

Why the walks: sympy's ``xreplace``, ``atoms`` and ``sympy.physics.mechanics``'
``msubs`` walk an expression as a tree, and the quantities of a large model
are graphs that share their sub-expression objects (sympy's cache hands out
the same object for the same construction; a vehicle's joint reactions
repeat the same products of its rotations, its forcing vector the same
velocity terms), so a tree walk visits a shared object once per path to
it.  These give the same expressions as the tree walks, each object
rebuilt once.  Here, at the bottom of the package (a ``describe`` module):
the model, the conversion, the DAE and the code generator all use them.
"""

from __future__ import annotations

import sympy as sp
from sympy.matrices.matrixbase import classof


def shared_xreplace(expr, rule: dict, memo: dict | None = None):
    """``expr.xreplace(rule)``: the same expression, built by the same rule
    (a node in ``rule`` replaced before its arguments, a node rebuilt from
    its arguments where one changed), with each sub-expression object
    replaced once.  ``memo`` ({id: (object, result)}, holding the objects,
    so no id is reused while it lives) may be shared by calls with the same
    rule."""
    return _walk(expr, rule, {} if memo is None else memo, False) if rule else expr


def _walk(expr, rule: dict, memo: dict, as_msubs: bool):
    """``shared_xreplace`` or, ``as_msubs``, ``shared_msubs``."""
    def walk(e):
        found = memo.get(id(e))
        if found is not None:
            return found[1]
        if e in rule:
            out = rule[e]
        elif as_msubs and (not e.args or e.is_Derivative):
            out = e
        else:
            args = e.args
            new = [walk(a) if isinstance(a, sp.Basic) else a for a in args]
            out = e.func(*new) if as_msubs or any(n is not a for n, a in zip(new, args)) else e
        memo[id(e)] = (e, out)
        return out
    return walk(expr)


def shared_atoms(exprs, *types) -> set:
    """The union of ``e.atoms(*types)`` over ``exprs``, each sub-expression
    object visited once."""
    seen, found = set(), set()
    stack = [sp.sympify(e) for e in exprs]
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, types):
            found.add(e)
        stack.extend(a for a in e.args if isinstance(a, sp.Basic))
    return found


def shared_msubs(expr, rule: dict, memo: dict):
    """``sympy.physics.mechanics.msubs(expr, rule)`` of a scalar expression
    (its default, non-smart substitution): a node in ``rule`` replaced, a
    node without arguments or a ``Derivative`` kept, every other node
    rebuilt from its arguments' results, whether or not one changed (msubs
    rebuilds them all, which can change a node that is not in canonical
    form).  Each sub-expression object once; ``memo`` as in
    ``shared_xreplace``, for calls with the same rule."""
    return _walk(expr, rule, memo, True)


def times(A, B):
    """``A * B`` of sympy matrices whose entries are finite: the same
    matrix, of the class sympy gives it, each entry the ``Add`` of the
    products ``A[i, k] * B[k, j]`` over the k where both are non-zero (what
    sympy's sparse product of expressions sums), zero where that is zero.
    Why: sympy first asks whether ``0 * A[i, k]`` is zero, to find an
    infinite entry, which on a large expression is an assumption query over
    all of it (a vehicle's Φ_q q̇ and Kane's mass matrix times u̇: seconds
    each); a finite entry times zero is zero."""
    if A.cols != B.rows:
        return A * B
    rows = {}
    for (i, k), a in A.todok().items():
        rows.setdefault(i, []).append((k, a))
    columns = {}
    for (k, j), b in B.todok().items():
        columns.setdefault(k, []).append((j, b))
    out = {}
    for i, row in rows.items():
        terms = {}
        for k, a in sorted(row, key=lambda ka: ka[0]):
            for j, b in columns.get(k, ()):
                terms.setdefault(j, []).append(a * b)
        for j, products in terms.items():
            entry = sp.Add(*products)
            if entry != 0:
                out[i, j] = entry
    return classof(A, B)._new(A.rows, B.cols, lambda i, j: out.get((i, j), 0))
