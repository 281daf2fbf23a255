"""Reading a callgrind profile of a benchmark harness: the instructions
executed per address and the calls between functions (``parse_callgrind``),
and from them, with the harness binary's disassembly, the floating-point
operations a step executes by type (``count_operations``).  Used by
``fmigen bench`` (fmigen.tools.bench), which runs callgrind."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path


def parse_callgrind(text: str) -> dict:
    """A callgrind profile written with ``--dump-instr=yes``: {"ir": {(object,
    address): executions} of the instructions themselves (a call's inclusive
    cost is not added to its call site), "calls": {(caller, callee): calls},
    "object_calls": {(caller's object, callee's object, callee): calls}}."""
    names = {"ob": {}, "fn": {}}
    ir, calls, object_calls = {}, {}, {}
    ob = fn = cob = cfn = None
    addr = 0
    skip_next = False

    def name(kind, rest):
        # "(id) name" defines id, "(id)" refers to it (name compression)
        rest = rest.strip()
        if rest.startswith("("):
            i = rest.index(")")
            key, label = rest[1:i], rest[i + 1:].strip()
            if label:
                names[kind][key] = label
            return names[kind].get(key, key)
        return rest

    def position(tok, prev):
        if tok == "*":
            return prev
        if tok[0] in "+-":
            return prev + int(tok, 0)
        return int(tok, 0)

    for line in text.splitlines():
        if not line or line[0] == "#":
            continue
        head = line.split("=", 1)[0]
        if head in ("ob", "cob", "fn", "cfn"):
            val = name("fn" if head.endswith("fn") else "ob", line.split("=", 1)[1])
            if head == "ob":
                ob = val
            elif head == "fn":
                fn, cob = val, None
            elif head == "cob":
                cob = val
            else:
                cfn = val
            continue
        if head == "calls":
            n = int(line.split("=", 1)[1].split()[0])
            calls[fn, cfn] = calls.get((fn, cfn), 0) + n
            key = (ob, cob or ob, cfn)
            object_calls[key] = object_calls.get(key, 0) + n
            skip_next, cob = True, None
            continue
        if line[0] in "0123456789+-*":
            parts = line.split()
            addr = position(parts[0], addr)
            if skip_next:   # the call site's inclusive cost of the call above
                skip_next = False
                continue
            if len(parts) > 2:
                ir[ob, addr] = ir.get((ob, addr), 0) + int(parts[2])
    return {"ir": ir, "calls": calls, "object_calls": object_calls}


#: floating-point arithmetic in x86-64 SSE2/AVX mnemonics (what gcc -O2
#: emits for double): (type, operations per instruction); packed doubles
#: count 2, an FMA a multiplication and an addition (counted under "fma").
_FLOP_MNEMONICS = {
    "addsd": ("add", 1), "subsd": ("add", 1), "addpd": ("add", 2), "subpd": ("add", 2),
    "mulsd": ("mul", 1), "mulpd": ("mul", 2), "divsd": ("div", 1), "divpd": ("div", 2),
    "sqrtsd": ("sqrt", 1), "sqrtpd": ("sqrt", 2),
}


def _flop_type(mnemonic, operands=""):
    """(type, operations) of one instruction; a packed one on 256-bit ymm
    registers (the model's AVX copy) holds four doubles, not two."""
    m = mnemonic[1:] if mnemonic.startswith("v") and mnemonic[1:] in _FLOP_MNEMONICS else mnemonic
    wide = 2 if "%ymm" in operands else 1
    if m in _FLOP_MNEMONICS:
        kind, n = _FLOP_MNEMONICS[m]
        return kind, n * wide if n == 2 else n
    if m.startswith(("vfmadd", "vfmsub", "vfnmadd", "vfnmsub")):
        return ("fma", 2 * wide if m.endswith("pd") else 1)
    return None


def _libm_name(fn):
    """glibc's internal variant (__sin_fma, __sincos_fma, __atan2_finite) →
    the C function (sin, sincos, atan2)."""
    base = fn.split("@")[0].lstrip("_")
    for suffix in ("_fma4", "_fma", "_avx2", "_avx", "_sse2", "_sse41", "_finite"):
        if base.endswith(suffix):
            base = base[: -len(suffix)]
    return base


def count_operations(prof: dict, exe: Path, steps: int) -> dict | None:
    """Floating-point operations executed per step, by type, counted in the
    run callgrind profiled (``prof`` from ``parse_callgrind``): every
    arithmetic instruction of the harness binary (generated model and runtime)
    times its executions — add (additions and subtractions), mul, div, sqrt,
    fma, each scalar operation one, a packed one two — and the calls into
    libm by function (sin, cos, sincos, atan2, ...; their insides are libm's,
    not counted as operations).  ``flops``: add + mul + div + sqrt + 2 fma,
    the libm calls not included.  Why the machine code and not the generated
    C: it is what runs, after gcc's own simplification, in the loop the
    instructions are counted in; the ratio instructions / flops is then the
    overhead above the arithmetic itself.  None without objdump."""
    if not shutil.which("objdump"):
        return None
    exe = Path(exe)
    dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(exe)], capture_output=True, text=True).stdout
    mnemonic = {}
    for line in dis.splitlines():
        parts = line.split(None, 2)
        if len(parts) >= 2 and parts[0].endswith(":"):
            try:
                mnemonic[int(parts[0][:-1], 16)] = (parts[1], parts[2] if len(parts) > 2 else "")
            except ValueError:
                pass
    ops = {"add": 0, "mul": 0, "div": 0, "sqrt": 0, "fma": 0}
    exe_name = str(exe.resolve())
    # each object's path resolved once, not once per instruction address
    # (a profile holds tens of thousands of them in a handful of objects)
    is_exe = {ob: ob is not None and Path(ob).resolve().as_posix() == exe_name
              for ob in {ob for ob, _ in prof["ir"]}}
    for (ob, addr), n in prof["ir"].items():
        if not is_exe[ob]:
            continue
        t = _flop_type(*mnemonic.get(addr, ("",)))
        if t:
            ops[t[0]] += t[1] * n
    libm = {}
    for (ob, cob, cfn), n in prof["object_calls"].items():
        if cob and "libm" in Path(cob).name and not (ob and "libm" in Path(ob).name):
            f = _libm_name(cfn)
            libm[f] = libm.get(f, 0) + n
    out = {k: v / steps for k, v in ops.items()}
    out["flops"] = out["add"] + out["mul"] + out["div"] + out["sqrt"] + 2 * out["fma"]
    out["libm_calls"] = {k: v / steps for k, v in sorted(libm.items())}
    return out
