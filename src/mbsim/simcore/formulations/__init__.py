"""The five LCP formulations of 000 (NMC, MC, RMC, OS, NMC/OS), selectable per run.

``make(name)`` returns a :class:`~mbsim.simcore.formulations.base.Formulation`:
``prepare(problem)`` (build what depends on q and the row set) and
``solve(problem, v, dt, gap, accel=None) -> Solution`` (v+, contact impulses, the LCP solver's
result and the LCP it solved). The contract, and where new row types plug in, is documented on
``Formulation``; the LCP block layout is in formulations/assembly.py.
"""

from mbsim.simcore.formulations.base import (
    ContactProblem,
    Formulation,
    Solution,
    lcp_dimension,
)
from mbsim.simcore.formulations.minimal import MC, OS, RMC
from mbsim.simcore.formulations.nonminimal import NMC, NMCOS

FORMULATIONS = {f.name: f for f in (OS, RMC, MC, NMC, NMCOS)}


def make(name: str, delassus: str = "upsilon") -> Formulation:
    """A fresh formulation object by name (os, rmc, mc, nmc, nmc-os). ``delassus`` picks the
    Lambda algorithm of the OS formulation (upsilon, pv-osimr, dense); the others form their
    compliance their own way (Table 1), so it does not apply to them."""
    if name not in FORMULATIONS:
        raise ValueError(f"unknown formulation {name!r}; expected one of {', '.join(FORMULATIONS)}")
    if name == "os":
        return OS(delassus=delassus)
    return FORMULATIONS[name]()


__all__ = ["FORMULATIONS", "ContactProblem", "Formulation", "Solution", "lcp_dimension", "make"]
