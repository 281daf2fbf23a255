"""Generated straight-line C read back into statements (``_read``): the
vectorizer (codegen_slp.py) works on these, and refuses (``_Unreadable``)
what it cannot read exactly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


_TOKEN = re.compile(r"\s*(\d+\.\d*(?:[eE][-+]?\d+)?|\d+(?:[eE][-+]?\d+)?|[A-Za-z_]\w*(?:\[\d+\])?|[-+*/(),>!])")


class _Unreadable(Exception):
    """A statement this pass does not read: the function stays as it was."""


def _tokens(text: str) -> list[str]:
    out, pos, text = [], 0, text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise _Unreadable(text)
        out.append(m.group(1))
        pos = m.end()
        while pos < len(text) and text[pos] == " ":
            pos += 1
    return out


class _Parser:
    """C expressions as the generator prints them, to trees:
    ('var', text) ('num', text) ('neg', x) ('bin', op, a, b) ('call', f, args),
    with C's precedence and left associativity."""

    def __init__(self, text):
        self.toks, self.i = _tokens(text), 0

    def parse(self):
        e = self.compare()
        if self.i != len(self.toks):
            raise _Unreadable(" ".join(self.toks))
        return e

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self):
        self.i += 1
        return self.toks[self.i - 1]

    def compare(self):
        node = self.sum()
        if self.peek() == ">":
            self.take()
            node = ("bin", ">", node, self.sum())
        return node

    def chain(self, ops, operand):
        """operand (op operand)*, left-associative as C evaluates it."""
        node = operand()
        while self.peek() in ops:
            op = self.take()
            node = ("bin", op, node, operand())
        return node

    def sum(self):
        return self.chain(("+", "-"), self.product)

    def product(self):
        return self.chain(("*", "/"), self.unary)

    def unary(self):
        if self.peek() == "-":
            self.take()
            return ("neg", self.unary())
        return self.atom()

    def atom(self):
        tok = self.take() if self.peek() is not None else None
        if tok == "(":
            e = self.compare()
            if self.take() != ")":
                raise _Unreadable(" ".join(self.toks))
            return e
        if tok is None or tok in "+-*/,)>!":
            raise _Unreadable(" ".join(self.toks))
        if tok[0].isdigit():
            return ("num", tok)
        if self.peek() == "(":
            self.take()
            args = []
            while self.peek() != ")":
                args.append(self.compare())
                if self.peek() == ",":
                    self.take()
            self.take()
            return ("call", tok, tuple(args))
        return ("var", tok)


def _flat(t):
    """Sums and products as flat lists (C's left-to-right chains),
    negations folded into signs: ('add', ((sign, term), ...)), ('mul',
    sign, (factor, ...)), ('div', a, b), ('gt', a, b), ('call', f, args),
    ('var', text), ('const', text) for a subtree of numbers only.  Negating
    is exact, so −a·b, (−a)·b and −(a·b) are the same bits, as are a − b and
    a + (−b)."""
    kind = t[0]
    if kind == "var":
        return t
    if kind == "num":
        return ("const", t[1])
    if kind == "neg":
        x = _flat(t[1])
        if x[0] == "const":
            return ("const", f"(-{x[1]})")
        if x[0] == "mul":
            return ("mul", -x[1], x[2])
        return ("mul", -1, (x,))
    if kind == "call":
        return ("call", t[1], tuple(_flat(a) for a in t[2]))
    op = t[1]
    if op in "+-":
        terms = []

        def term(x, sign):
            f = _flat(x)
            if f[0] == "mul" and len(f[2]) == 1:
                sign, f = sign * f[1], f[2][0]
            elif f[0] == "mul":
                sign, f = sign * f[1], ("mul", 1, f[2])
            if f[0] == "mul" and sign < 0 and any(g[0] == "const" for g in f[2]):
                sign, f = 1, _negate_constant(f)
            elif f[0] == "const" and sign < 0:
                sign, f = 1, ("const", f"(-{f[1]})")
            terms.append((sign, f))
        # left to right with a stack, not recursion: a sum of a thousand
        # terms is a thousand levels deep
        stack = [(t, 1)]
        while stack:
            x, sign = stack.pop()
            if x[0] == "bin" and x[1] in "+-":
                stack.append((x[3], sign if x[1] == "+" else -sign))
                stack.append((x[2], sign))
            else:
                term(x, sign)
        return ("add", tuple(terms))
    if op == "*":
        factors, sign = [], 1
        stack = [t]
        while stack:
            x = stack.pop()
            if x[0] == "bin" and x[1] == "*":
                stack.append(x[3])
                stack.append(x[2])
                continue
            f = _flat(x)
            if f[0] == "mul":
                sign *= f[1]
                factors.extend(f[2])
            else:
                factors.append(f)
        if all(f[0] == "const" for f in factors):
            return ("const", ("-" if sign < 0 else "") + "(" + "*".join(f[1] for f in factors) + ")")
        if sign < 0 and any(f[0] == "const" for f in factors):
            return _negate_constant(("mul", 1, tuple(factors)))
        return ("mul", sign, tuple(factors))
    a, b = _flat(t[2]), _flat(t[3])
    if op == "/":
        if a[0] == "const" and b[0] == "const":
            return ("const", f"({a[1]}/{b[1]})")
        return ("div", a, b)
    return ("gt", a, b)


def _negate_constant(mul):
    """−(c·x·…) as (−c)·x·…: the same bits (negation is exact), and blocks
    whose geometry differs in the sign of a constant get the same shape."""
    factors = list(mul[2])
    k = next(i for i, f in enumerate(factors) if f[0] == "const")
    factors[k] = ("const", f"(-{factors[k][1]})")
    return ("mul", 1, tuple(factors))


_DEF = re.compile(r"^\s*const double (\w+) = (.*);\s*$")
_STORE = re.compile(r"^\s*((?:v|work|qdd)\[\d+\]) = (.*);\s*$")
_CHECK = re.compile(r"^\s*if \(!\((.*)\)\) return (\d+);\s*$")
_NAME = re.compile(r"\b[A-Za-z_]\w*(?:\[\d+\])?")


@dataclass
class _Stmt:
    index: int
    kind: str            # def | store | check
    name: str            # the defined name, the stored element, or "check<index>"
    text: str            # the line as generated
    tree: tuple          # the flattened right-hand side (a check: its condition)
    ret: str = ""        # a check's return value
    reads: dict = field(default_factory=dict)   # name read -> the statement it reads


def _resolve(node, latest):
    """The tree with each name read tagged by the statement it reads (its
    latest definition or store above), or None for an input."""
    kind = node[0]
    if kind == "var":
        src = latest.get(node[1])
        return ("var", node[1], None if src is None else src.index)
    if kind == "const":
        return node
    if kind == "add":
        return ("add", tuple((s, _resolve(t, latest)) for s, t in node[1]))
    if kind == "mul":
        return ("mul", node[1], tuple(_resolve(f, latest) for f in node[2]))
    if kind == "call":
        return ("call", node[1], tuple(_resolve(a, latest) for a in node[2]))
    return (kind, _resolve(node[1], latest), _resolve(node[2], latest))


def _read(body: list[str]):
    """(the head's ``(void)`` lines, the statements), or _Unreadable."""
    head, stmts, latest, inputs_read = [], [], {}, set()
    lines = [ln for ln in body if ln.strip()]
    for pos, ln in enumerate(lines):
        s = ln.strip()
        if s.startswith("(void)"):
            head.append(ln)
            continue
        if s == "return 0;":
            if pos != len(lines) - 1:
                raise _Unreadable(ln)      # a return before the end
            continue
        for kind, rx in (("def", _DEF), ("store", _STORE), ("check", _CHECK)):
            m = rx.match(ln)
            if m:
                break
        else:
            raise _Unreadable(ln)
        k = len(stmts)
        rhs = m.group(1) if kind == "check" else m.group(2)
        tree = _resolve(_flat(_Parser(rhs).parse()), latest)
        reads = {x: latest[x].index for x in _NAME.findall(rhs) if x in latest}
        inputs_read |= {x for x in _NAME.findall(rhs) if x not in latest}
        if kind == "check":
            st = _Stmt(k, kind, f"check{k}", ln, tree, ret=m.group(2))
        else:
            st = _Stmt(k, kind, m.group(1), ln, tree)
            if m.group(1) in latest and latest[m.group(1)].kind == "def":
                raise _Unreadable(ln)    # a name defined twice
            if m.group(1) in inputs_read:
                # an element read as the input before this store: the
                # emission (definitions where they are first needed) could
                # read it after the store
                raise _Unreadable(ln)
            latest[m.group(1)] = st
        st.reads = reads
        stmts.append(st)
    return head, stmts
