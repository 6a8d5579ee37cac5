"""Every option vocabulary of a run, declared once: the scenario (io), the CLI and the
simulation core all import these tuples, so a name accepted in a file is a name the core runs.

The order is the documented order (docs/scenario-format.md); the first entry of each is the
default unless the scenario reference says otherwise.
"""

from __future__ import annotations

#: Contact formulations (000): operational space, reduced/full maximal coordinates, the
#: non-minimal-coordinate baseline and its OS hybrid (``simcore/formulations/``).
FORMULATIONS = ("os", "rmc", "mc", "nmc", "nmc-os")
#: LCP solvers that start the fallback chain (``simcore/lcp/chain.py``).
LCP_SOLVERS = ("lemke", "pgs")
#: Time integrators of the stepper (001 Sec. 4.1).
INTEGRATORS = ("euler", "rk4")
#: Forward-dynamics paths (001 Secs. 2-3, ``simcore/forward.py``).
DYNAMICS = ("aba", "crba")
#: Algorithms for the OS Delassus matrix Lambda^-1 (000 Appendix, 003 Algorithm 3, dense).
DELASSUS = ("upsilon", "pv-osimr", "dense")
#: Which LCPs a run writes to ``/lcp_dumps`` (``simcore/lcp/dump.py``).
DUMP_MODES = ("none", "failures", "all")
#: Friction polyhedron orientation (``simcore/contact.py`` friction_matrix): along each
#: contact's slip, or 000's world-axis basis.
FRICTION_AXES = ("slip", "world")
#: Friction of an impact (``stepper.impact_phase``): Coulomb over the whole impulse
#: (compression and restitution, Routh/Stronge), or 000's law capping it at mu times the
#: compression impulse.
IMPACT_FRICTION = ("total", "compression")
#: Where the gap's second-order (J-dot v) prediction is taken for a contact on a smooth
#: surface (``simcore/contact.py`` curvature_drift): its core point, or the contact point
#: itself (001's material-point prediction).
CURVATURE_POINTS = ("core", "contact")
#: Contact manifold scope (``collision/manifold.py``): at most ``manifold_cap`` points per
#: shape pair, or again per body pair and contact plane (a body of many shapes on the floor).
CONTACT_MANIFOLDS = ("shape-pair", "body-pair")
#: How a robot's root link is attached to the world.
BASES = ("fixed", "floating")
#: Loop-closure types (``simcore/bilateral.py``): coincident points, rigid weld, fixed distance.
CLOSURE_TYPES = ("ball", "weld", "distance")

__all__ = [
    "BASES",
    "CLOSURE_TYPES",
    "CONTACT_MANIFOLDS",
    "CURVATURE_POINTS",
    "DELASSUS",
    "DUMP_MODES",
    "DYNAMICS",
    "FRICTION_AXES",
    "FORMULATIONS",
    "IMPACT_FRICTION",
    "INTEGRATORS",
    "LCP_SOLVERS",
]
