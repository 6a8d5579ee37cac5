"""The five LCP formulations of 000 (NMC, MC, RMC, OS, NMC/OS), selectable per run.

``make(name)`` returns a formulation object with ``prepare(problem)`` (build what depends on q
and the contact set) and ``solve(problem, v, dt, gap) -> (v_plus, F, lcp_result)``.
"""

from mbsim.simcore.formulations.base import ContactProblem, lcp_dimension
from mbsim.simcore.formulations.minimal import MC, OS, RMC
from mbsim.simcore.formulations.nonminimal import NMC, NMCOS

FORMULATIONS = {f.name: f for f in (OS, RMC, MC, NMC, NMCOS)}


def make(name: str, delassus: str = "upsilon"):
    """A fresh formulation object by name (os, rmc, mc, nmc, nmc-os). ``delassus`` picks the
    Lambda algorithm of the OS formulation (upsilon, pv-osimr, dense); the others form their
    compliance their own way (Table 1), so it does not apply to them."""
    if name not in FORMULATIONS:
        raise ValueError(f"unknown formulation {name!r}; expected one of {', '.join(FORMULATIONS)}")
    if name == "os":
        return OS(delassus=delassus)
    return FORMULATIONS[name]()


__all__ = ["FORMULATIONS", "ContactProblem", "lcp_dimension", "make"]
