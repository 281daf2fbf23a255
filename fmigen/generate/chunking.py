"""Long generated C functions cut into chunks a compiler takes in reasonable
time: ``chunked`` splits a body at top-level statements into functions
that pass the live values on (``_split_inputs``).
"""

from __future__ import annotations

import re


#: A straight-line function of more than CHUNK_ABOVE statements is generated
#: as chunks of CHUNK_STATEMENTS statements (``chunked``).  Why: gcc's register
#: allocation (LRA's hard register assignment, then IRA) takes time
#: superlinear in a function's size, so one function of thousands of
#: statements is most of a large model's compile; in chunks both the compile
#: and the step get cheaper (smaller functions spill less) and the results
#: stay bit-identical.  CHUNK_ABOVE leaves functions of ordinary size
#: whole: chunking pays where one function is thousands of statements.
CHUNK_ABOVE = 1500
CHUNK_STATEMENTS = 100


def _split_top(text: str) -> list[str]:
    """The comma-separated items of a C initializer's inside, commas within
    parentheses kept."""
    items, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            items.append(cur.strip())
            cur = ""
            continue
        depth += (ch == "(") - (ch == ")")
        cur += ch
    if cur.strip():
        items.append(cur.strip())
    return items


def chunked(name: str, params: str, body: str, size: int | None = None, above: int | None = None,
            storage: str = "") -> str:
    """``int name(params)`` with the straight-line ``body`` (``_Code``'s
    statements: scalar ``const double`` definitions, local arrays, ``if
    (...) return k;`` checks, calls and stores to the parameters' arrays),
    as one function when it has at most ``above`` (CHUNK_ABOVE) statements,
    else as noinline static chunks (``FMIGEN_CHUNK``,
    runtime/fmigen_runtime.h) of ``size`` (CHUNK_STATEMENTS) statements
    called in order.  What
    crosses from one chunk to a later one lives in a scratch struct on the
    caller's stack (the vehicle's prepare: 5,316 doubles, 42 kB): a scalar is
    stored after its definition and a later chunk reads it there; a local
    array read by another chunk is the struct's (its initializer becomes
    stores).  The statements are
    the same, in the same order, on doubles stored and loaded exactly, so
    the results are bit for bit those of the single function; a chunk's
    ``return k`` is the caller's.  ``storage``: what precedes ``int name``
    (``"static "`` for a function the model calls only itself)."""
    size = CHUNK_STATEMENTS if size is None else size
    above = CHUNK_ABOVE if above is None else above
    # statements, not lines: a piecewise expression prints over several lines
    lines, cur, depth = [], [], 0
    for ln in body.split("\n"):
        cur.append(ln)
        depth += ln.count("(") - ln.count(")")
        if depth == 0:
            lines.append("\n".join(cur))
            cur = []
    head = [ln for ln in lines if ln.strip().startswith("(void)")]
    stmts = [ln for ln in lines if not ln.strip().startswith("(void)") and ln.strip() != "return 0;"]
    if len(stmts) <= max(size, above):
        return f"{storage}int {name}({params})\n{{\n{body}\n}}\n"
    chunks = [stmts[k:k + size] for k in range(0, len(stmts), size)]
    home, arrays = {}, {}
    for ci, ch in enumerate(chunks):
        for ln in ch:
            d = _DECL.match(ln)
            if d:
                home[d.group(1)] = ci
                if d.group(2):
                    arrays[d.group(1)] = (ln.split()[0], d.group(2))
    reads = []
    for ci, ch in enumerate(chunks):
        r = set()
        for ln in ch:
            d = _DECL.match(ln)
            text = ln[d.end():] if d else ln
            r |= {n for n, _ in _TOKEN.findall(text) if home.get(n, ci) != ci}
        reads.append(r)
    shared_arrays = [a for a in arrays if any(a in r for r in reads)]
    order = {n: k for k, n in enumerate(home)}
    scalars = sorted({n for r in reads for n in r if n not in arrays}, key=order.get)
    later = {n for ci, r in enumerate(reads) for n in r}
    struct = f"struct {name}_scratch"
    members = [f"    double {n};" for n in scalars] + \
        [f"    {arrays[a][0]} {a}{arrays[a][1]};" for a in shared_arrays]
    out = [f"{struct} {{\n" + "\n".join(members) + "\n};\n"]
    shared_re = re.compile(r"(?<![\w>])(" + "|".join(map(re.escape, shared_arrays)) + r")\b") \
        if shared_arrays else None
    chunk_params = f"{params}, {struct} *S"
    param_names = re.findall(r"(\w+)\s*(?:,|$)", params)
    for ci, ch in enumerate(chunks):
        # every parameter cast to void: a chunk reads only some of them
        # (the vehicle's velocity chunks neither v nor trig), and an unused
        # parameter fails -Wextra -Werror
        code = [*head, "    " + " ".join(f"(void){n};" for n in [*param_names, "S"])]
        mine = [n for n in scalars if n in reads[ci]]
        read_re = re.compile(r"(?<![\w>])(" + "|".join(map(re.escape, mine)) + r")\b") if mine else None
        for ln in ch:
            d = _DECL.match(ln)
            if d and d.group(1) in shared_arrays:
                init = ln.split("=", 1)[1].strip().rstrip(";").strip() if "=" in ln else ""
                items = _split_top(init[1:-1]) if init else []
                ln = "    " + " ".join(f"S->{d.group(1)}[{k}] = {x};" for k, x in enumerate(items))
                if not items:
                    continue
            if shared_re is not None:
                ln = shared_re.sub(r"S->\1", ln)
            if read_re is not None:
                ln = read_re.sub(r"S->\1", ln)
            code.append(ln)
            if d and not d.group(2) and d.group(1) in later:
                code.append(f"    S->{d.group(1)} = {d.group(1)};")
        code.append("    return 0;")
        out.append(f"FMIGEN_CHUNK int {name}_chunk{ci}({chunk_params})\n{{\n"
                   + "\n".join(code) + "\n}\n")
    args = ", ".join(param_names)
    calls = [f"    if ((r = {name}_chunk{ci}({args}, &S))) return r;" for ci in range(len(chunks))]
    out.append(f"{storage}int {name}({params})\n{{\n    {struct} S;\n    int r;\n" + "\n".join(calls)
               + "\n    return 0;\n}\n")
    return "\n".join(out)


_DECL = re.compile(r"^\s*(?:const )?(?:double|int) (\w+)(\[\d+\])?")
_TOKEN = re.compile(r"\b([A-Za-z_]\w*)\b(?:\[(\d+)\])?")


def _split_inputs(lines: list[str]) -> tuple[str, str, int]:
    """Split the right-hand side's straight-line body into what does not
    depend on the inputs u (prepare: v_d, Φ_d⁻¹Φ_i, a_c, BᵀMB and its LDLᵀ
    factors, the u-free forces) and the rest (finish: the forces that read u,
    F − M a_c, Bᵀ(…) and the LDLᵀ solve).  Why: the runtime caches prepare's
    result with the kinematics at a step's commit (first-same-as-last), and
    the next step's first stage then only runs finish — also when the
    importer changed the inputs between the steps, as a HIL rig does every
    step.  The statements are the same, in the same order, as one function
    would have them: only the values finish needs from prepare cross through
    ``work`` (stored as doubles, so the arithmetic is bit for bit that of the
    unsplit function).  Returns (prepare body, finish body, work size)."""
    body = [ln for ln in lines if not ln.strip().startswith("(void)") and ln.strip() != "return 0;"]
    uses, defs, arrays = [], [], set()
    for ln in body:
        d = _DECL.match(ln)
        target = re.match(r"^\s*(v|qdd)\[(\d+)\] =", ln)
        if d:
            if d.group(2):
                arrays.add(d.group(1))
            defs.append(d.group(1))
            rhs = ln.split("=", 1)[1] if "=" in ln else ""
        elif target:
            defs.append(f"{target.group(1)}[{target.group(2)}]")
            rhs = ln.split("=", 1)[1]
        else:
            defs.append(None)
            rhs = ln
        uses.append({f"{n}[{i}]" if (i and n in arrays) else n for n, i in _TOKEN.findall(rhs)})
    late = set()
    in_finish = []
    for ln, d, u in zip(body, defs, uses):
        fin = bool(re.search(r"\bu\[", ln)) or bool(u & late) or (d or "").startswith("qdd[")
        if fin and d is not None:
            late.add(d)
        in_finish.append(fin)
    for ln, d, fin in zip(body, defs, in_finish):
        if fin and (d is None or d.startswith("v[") or d in arrays or ln.lstrip().startswith("if ")):
            # by construction only forces read u: Φ_q, Φ_t, γ and M do not,
            # so no solve, factorization or check can land in finish
            raise ValueError(f"the embedding's statement '{ln.strip()}' depends on an input: inputs may "
                             "enter the forces only")
    early = {d for d, fin in zip(defs, in_finish) if d is not None and not fin}
    crossing = []
    for u, fin in zip(uses, in_finish):
        if fin:
            crossing += [n for n in sorted(u) if (n in early or n.split("[")[0] in arrays & early)
                         and n not in crossing]
    slot = {n: k for k, n in enumerate(crossing)}
    prepare = ["    (void)t; (void)q; (void)v; (void)p; (void)trig; (void)work;"]
    prepare += [ln for ln, fin in zip(body, in_finish) if not fin]
    prepare += [f"    work[{k}] = {n};" for n, k in slot.items()]
    prepare.append("    return 0;")

    def local(n):
        return re.sub(r"\[(\d+)\]", r"_\1", n)
    # qdd too: a kinematic mechanism has no accelerations, and its finish
    # (the right-hand side after the inputs) is empty
    finish = ["    (void)t; (void)q; (void)v; (void)p; (void)u; (void)trig; (void)work; (void)qdd;"]
    finish += [f"    const double {local(n)} = work[{k}];" for n, k in slot.items()]
    for ln, fin in zip(body, in_finish):
        if fin:
            for n in crossing:
                if "[" in n:
                    ln = re.sub(r"\b" + re.escape(n), local(n), ln)
            finish.append(ln)
    finish.append("    return 0;")
    return "\n".join(prepare), "\n".join(finish), len(crossing)
