"""Kinematics: Gröbner bases (Singular), triangular sequences, assembly."""

#: Kinematics formulations (``triangular.triangularize(kinematics=...)``,
#: ``fmigen build --kinematics``, ``fmigen bench``): "groebner" (default:
#: triangular sequences, Newton only where the mechanism forces it or the
#: block has more than ``triangular.MAX_GROEBNER_VARIABLES`` polynomial
#: variables), "newton" (one Newton iteration over all dependent coordinates,
#: all constraints as one block), "newton-loop" (Newton on each block
#: separately).  Here and not in ``triangular``: the command line's parser
#: lists them, and a build that packages a derived model from the cache
#: (a solver or step change) never imports the triangularization.
KINEMATICS = ("groebner", "newton", "newton-loop")
