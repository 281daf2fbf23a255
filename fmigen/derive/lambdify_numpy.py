"""sympy's ``lambdify(..., "numpy")`` namespace, made without importing
numpy's lazily loaded submodules.

The first numpy lambdify of a process runs ``import numpy; from numpy import
*; from numpy.linalg import *`` into sympy's module-level namespace for
"numpy", and the star import touches every name of ``numpy.__all__``,
among them the submodules numpy loads only on first use: ``f2py``,
``testing`` (unittest with it), ``ma``, ``polynomial``, ``random``,
``fft`` and others, ~0.2 s of CPU that a warm rebuild (a start change)
paid for its first lambdified Φ.  ``prepare()`` fills that namespace with
the same objects (every name of ``numpy.__all__`` numpy has already
loaded, then ``numpy.linalg.__all__``, then sympy's translations and
``Abs`` as sympy adds them), so sympy finds it made and skips its imports.
The printer emits plain function names (``cos``, ``sqrt``, ``select``,
never a submodule), and a name the namespace lacks is imported by lambdify
from the module the printer names, so every lambdified function calls the
same numpy functions as before.  Only for the sympy whose import commands
are exactly these; with any other, sympy makes its namespace itself.
"""
from __future__ import annotations

_COMMANDS = ("import numpy; from numpy import *; from numpy.linalg import *",)


def prepare():
    import importlib
    import numpy
    import numpy.linalg
    # the module (sympy.utilities exports the function under the same name)
    lambdify = importlib.import_module("sympy.utilities.lambdify")
    entry = getattr(lambdify, "MODULES", {}).get("numpy")
    if entry is None or len(entry) != 4 or tuple(entry[3]) != _COMMANDS:
        return
    namespace, default, translations, _ = entry
    if namespace != default:   # made already, by sympy or by an earlier call
        return
    loaded = vars(numpy)
    names = {"numpy": numpy}
    names.update((n, loaded[n]) for n in numpy.__all__ if n in loaded)
    names.update((n, getattr(numpy.linalg, n)) for n in numpy.linalg.__all__)
    if any(target not in names for target in translations.values()):
        return
    namespace.update(names)
    for sympy_name, target in translations.items():
        namespace[sympy_name] = namespace[target]
    if "Abs" not in namespace:
        namespace["Abs"] = abs
