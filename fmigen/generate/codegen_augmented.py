"""The augmented (index-3 DAE) formulation's C: the mass matrix and the
constraint Jacobian assembled into one system and factored per step, the
alternative to the embedding's reduced ODE.
"""

from __future__ import annotations

import sympy as sp

from fmigen.generate.codegen_embedding import is_large
from fmigen.generate.unrolled_algebra import _Code, _ldlt_apply, _ldlt_factor
from fmigen.generate.printer import SymbolMap, c
from fmigen.derive.embed import Embedding


def augmented_code(emb: Embedding, form_code: int, symbol_map: SymbolMap) -> str:
    """``int fmigen_augmented_accel(t, q, v, p, u, fp, a)``: q̈ of all n
    coordinates for an augmented formulation (runtime/fmigen_augmented.c; the
    same equations as its comments), straight-line over the structural
    non-zeros like the embedding, so the benchmark compares formulations
    generated alike.  ``form_code``: 1 Baumgarte (fp = α, β), 2 penalty
    (ρ, ω, ζ), 3 virtual springs (k, b).  Returns 0, 2 when M (penalty:
    M + ρΦ_qᵀΦ_q) is not positive definite, 3 when Φ_q M⁻¹ Φ_qᵀ is singular."""
    dae = emb.dae
    n, m = dae.n, dae.m
    J = {(j, i): emb.Phi_q[j, i] for j in range(m) for i in range(n) if emb.Phi_q[j, i] != 0}
    Ph = {j: dae.Phi[j] for j in range(m) if dae.Phi[j] != 0}
    Pt = {j: emb.Phi_t[j] for j in range(m) if emb.Phi_t[j] != 0}
    G = {j: emb.gamma[j] for j in range(m) if emb.gamma[j] != 0} if form_code in (1, 2) else {}
    Mu = {(i, k): emb.M[i, k] for i in range(n) for k in range(i, n) if emb.M[i, k] != 0}
    Fv = {i: emb.F[i] for i in range(n) if emb.F[i] != 0}
    groups = [J, Ph, Pt, G, Mu, Fv]
    exprs = [symbol_map(e) for d in groups for e in d.values()]
    reps, reduced = sp.cse(exprs, symbols=sp.numbered_symbols("w"), order="none",
                           optimizations=None if is_large(exprs) else "basic")
    code = _Code()
    code.emit("(void)t; (void)p; (void)u; (void)fp;")
    for sym, e in reps:
        code.emit(f"const double {sym} = {c(e)};")
    it = iter(reduced)
    Jn, Phn, Ptn, Gn, Mn, Fn = ({k: code.let(tag, c(next(it))) for k in d}
                                for tag, d in zip(("J_", "phi_", "pt_", "g_", "M_", "F_"), groups))
    # Φ̇ = Φ_q v + Φ_t, then the formulation's constraint term s (see fmigen_augmented.c)
    s = {}
    for j in range(m):
        pd = code.dot("pd", Ptn.get(j), [(Jn.get((j, i)), f"v[{i}]") for i in range(n)], sign="+")
        phi = Phn.get(j)
        if form_code == 1:    # γ − 2αΦ̇ − β²Φ
            terms = [("2.0*fp[0]", pd), ("fp[1]*fp[1]", phi)]
            s[j] = code.dot("s", Gn.get(j), terms)
        elif form_code == 2:  # −γ + 2ζωΦ̇ + ω²Φ
            terms = [("2.0*fp[2]*fp[1]", pd), ("fp[1]*fp[1]", phi)]
            s[j] = code.dot("s", f"-{Gn[j]}" if Gn.get(j) else None, terms, sign="+")
        else:                 # kΦ + bΦ̇
            s[j] = code.dot("s", None, [("fp[0]", phi), ("fp[1]", pd)], sign="+")
    out = {}
    if form_code == 1:
        fac = _ldlt_factor(code, n, Mn, 2)
        if fac is not None:
            a0 = _ldlt_apply(code, n, fac, Fn)                        # M⁻¹F
            W = [_ldlt_apply(code, n, fac, {i: Jn.get((j, i)) for i in range(n)}) for j in range(m)]  # M⁻¹Φ_qᵀ
            Su = {(j, k): code.dot("S", None, [(Jn.get((j, i)), W[k].get(i)) for i in range(n)], sign="+")
                  for j in range(m) for k in range(j, m)}
            lam_rhs = {j: code.dot("lr", f"-{s[j]}" if s[j] else None,
                                   [(Jn.get((j, i)), a0.get(i)) for i in range(n)], sign="+") for j in range(m)}
            fs = _ldlt_factor(code, m, Su, 3) if m else ({}, {})
            if fs is not None:
                lam = _ldlt_apply(code, m, fs, lam_rhs) if m else {}
                out = {i: code.dot("a", a0.get(i), [(W[j].get(i), lam.get(j)) for j in range(m)])
                       for i in range(n)}
    else:
        if form_code == 2:    # (M + ρΦ_qᵀΦ_q) a = F − ρΦ_qᵀ s
            A = {}
            for i in range(n):
                for k in range(i, n):
                    jt = code.dot("jj", None, [(Jn.get((j, i)), Jn.get((j, k))) for j in range(m)], sign="+")
                    A[(i, k)] = code.dot("A", Mn.get((i, k)), [("fp[0]", jt)], sign="+")
            rhs = {i: code.dot("r", Fn.get(i), [(Jn.get((j, i)), f"fp[0]*{s[j]}" if s[j] else None)
                                                for j in range(m)]) for i in range(n)}
        else:                 # M a = F − Φ_qᵀ s
            A = Mn
            rhs = {i: code.dot("r", Fn.get(i), [(Jn.get((j, i)), s[j]) for j in range(m)]) for i in range(n)}
        fac = _ldlt_factor(code, n, A, 2)
        if fac is not None:
            out = _ldlt_apply(code, n, fac, rhs)
    if out or n == 0:
        for i in range(n):
            code.emit(f"a[{i}] = {out.get(i) or '0.0'};")
        code.emit("return 0;")
    body = "\n".join(code.lines)
    sig = ("double t, const double *q, const double *v, const double *p, const double *u, const double *fp, "
           "double *a")
    return f"int fmigen_augmented_accel({sig})\n{{\n{body}\n}}\n"
