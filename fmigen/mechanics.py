"""``sympy.physics.mechanics`` without ``sympy.physics.units``.

sympy's ``sympy/physics/__init__.py`` imports ``sympy.physics.units`` (its
unit systems and their quantities: ~0.3 s of CPU, a tenth of a warm
rebuild's) and a few Dirac matrices, and every ``import
sympy.physics.<anything>`` runs it first.  fmigen uses only the ``vector``
and ``mechanics`` subpackages, which import nothing from that ``__init__``.
So ``sympy.physics`` is registered here as its own module object, with its
package path but its ``__init__`` not yet run: subpackages import as usual,
a subpackage reached as an attribute (``from sympy.physics import
vector``, as ``mechanics`` does) is imported then, and the first other
attribute it lacks (the matrices' names, or ``__all__`` for a star import) runs the real ``__init__`` once
and is looked up again, so code that uses ``sympy.physics`` sees the
package it always saw.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys


def _register_sympy_physics():
    if "sympy.physics" in sys.modules:
        return
    import sympy
    spec = importlib.util.find_spec("sympy.physics")
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return
    module = importlib.util.module_from_spec(spec)

    def __getattr__(name):
        if name.startswith("__") and name != "__all__":
            # the import system's probes (__path__ is set; others absent);
            # ``__all__`` is the real package's (a star import asks for it)
            raise AttributeError(name)
        if importlib.util.find_spec(f"sympy.physics.{name}") is not None:
            # a subpackage (``from sympy.physics import vector``, as
            # mechanics does): what the package would hold after importing it
            return importlib.import_module(f"sympy.physics.{name}")
        del module.__dict__["__getattr__"]
        spec.loader.exec_module(module)
        return getattr(module, name)

    module.__getattr__ = __getattr__
    sys.modules["sympy.physics"] = module
    sympy.physics = module


_register_sympy_physics()

import sympy.physics.mechanics as me  # noqa: E402

__all__ = ["me"]
