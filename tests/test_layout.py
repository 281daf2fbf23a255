"""The package's layout (README, Architecture): imports flow one way.

An AST scan of every import in fmigen/ (module level and inside functions,
absolute and relative) must find no cycle among fmigen's modules, and each
stage may import only its own and earlier stages: the front ends never reach
into code generation, the code generator never runs the Python runtime, the
verification never is imported by what it verifies.
"""
import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "fmigen"

#: the stages in pipeline order; a module may import only modules of its own
#: stage and of earlier ones.  "describe" is the package root's description
#: language (fmigen.model, fmigen.joints, fmigen.floats, fmigen.graph), "cli"
#: the command line.  The front ends come after the kinematics: turning a
#: joint description into a Mechanism assembles its start with the
#: kinematics' assembly solver.
STAGES = ["describe", "derive", "kinematics", "frontends", "generate", "fmi", "build", "pyfmu", "verify",
          "tools", "cli"]
TOP = {"cli": "cli", "__main__": "cli"}


def modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def imports(name: str, text: str, is_package: bool, mods: dict[str, Path]) -> set[str]:
    """The fmigen modules that module ``name`` (source ``text``) imports
    anywhere: module level or inside a function, absolute or relative.  A
    subpackage's __init__ holds a docstring only, so importing through it is
    no edge; the package root's is (it sets the BLAS threads)."""
    found = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name in mods}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[:len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module
            for a in node.names:
                if f"{mod}.{a.name}" in mods:
                    found.add(f"{mod}.{a.name}")     # from package import module
                elif mod in mods:
                    found.add(mod)
    found.discard(name)
    return {m for m in found if m == "fmigen" or mods[m].name != "__init__.py"}


def graph() -> dict[str, set[str]]:
    mods = modules()
    return {m: imports(m, p.read_text(), p.name == "__init__.py", mods) for m, p in mods.items()}


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(g.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def stage(module: str) -> str:
    parts = module.split(".")
    if len(parts) >= 3 or (len(parts) == 2 and parts[1] in STAGES):
        return parts[1]
    return TOP.get(parts[-1], "describe")


def test_no_import_cycle():
    found = cycles(graph())
    assert not found, "import cycles among fmigen's modules: " + "; ".join(" <-> ".join(c) for c in found)


def test_every_module_belongs_to_a_stage():
    for m in modules():
        assert stage(m) in STAGES, f"{m} is in no stage of {STAGES}"


def test_imports_flow_one_way():
    g = graph()
    backward = sorted(f"{m} ({stage(m)}) imports {d} ({stage(d)})" for m, deps in g.items() for d in deps
                      if STAGES.index(stage(d)) > STAGES.index(stage(m)))
    assert not backward, "imports against the pipeline's order:\n" + "\n".join(backward)


def test_the_scan_sees_a_cycle_and_a_backward_import():
    """The checks above can fail: a cycle, and an import against the order
    written as the package's modules write them (relative, inside a function)."""
    assert cycles({"fmigen.generate.a": {"fmigen.generate.b"}, "fmigen.generate.b": {"fmigen.generate.a"},
                   "fmigen.model": set()}) == [["fmigen.generate.a", "fmigen.generate.b"]]
    mods = modules()
    text = "def f():\n    from ..pyfmu.pyruntime import mass_check_defaults\n"
    found = imports("fmigen.generate.codegen", text, False, mods)
    assert found == {"fmigen.pyfmu.pyruntime"}
    assert STAGES.index(stage("fmigen.pyfmu.pyruntime")) > STAGES.index(stage("fmigen.generate.codegen"))


#: the package's size limits (README, Architecture): a module a newcomer can
#: read in one sitting, a function that fits on a screen or two
MAX_MODULE_LINES = 900
MAX_FUNCTION_LINES = 120


def oversized(text: str) -> tuple[int, list[tuple[str, int]]]:
    """(the module's line count, [(function, lines)] of every function or
    method, nested ones included, longer than MAX_FUNCTION_LINES)."""
    long = [(node.name, node.end_lineno - node.lineno + 1) for node in ast.walk(ast.parse(text))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES]
    return len(text.splitlines()), long


def test_no_module_or_function_too_long():
    found = []
    for name, path in modules().items():
        lines, long = oversized(path.read_text())
        if lines > MAX_MODULE_LINES:
            found.append(f"{name}: {lines} lines (> {MAX_MODULE_LINES})")
        found += [f"{name}.{fn}: {n} lines (> {MAX_FUNCTION_LINES})" for fn, n in long]
    assert not found, "too long:\n" + "\n".join(found)


def test_the_size_check_sees_a_long_function():
    body = "".join(f"    x{k} = {k}\n" for k in range(MAX_FUNCTION_LINES))
    assert oversized("def f():\n" + body) == (MAX_FUNCTION_LINES + 1, [("f", MAX_FUNCTION_LINES + 1)])
    assert oversized("def f():\n" + body[body.index("\n") + 1:]) == (MAX_FUNCTION_LINES, [])
