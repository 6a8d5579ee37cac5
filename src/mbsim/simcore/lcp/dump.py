"""Dump one step's LCP to an HDF5 group and load it back for offline replay.

``dump_lcp(parent, name, M, q, result, nb=0, step=None, time=None)`` writes the subgroup
``parent[name]`` holding the problem exactly as posed (the full mixed M and q with ``nb``
equality rows first, so a replay goes through the same Schur elimination) and the outcome:

    M (n, n), q (n)          the LCP data
    z (nu), w (nu), x (nb)   the returned solution (x empty for a standard LCP)
    attrs: format="mbsim-lcp", nb, status, solver, delta, pivots, residual, sign_violation,
           eq_residual, tol, message, attempts (JSON list), step, time (when given)

Every dataset has ``units`` and ``description`` attributes, as everywhere in mbsim's HDF5
files. LCP rows and columns mix units by block (000 Eq. 53: z = impulses in N s and sliding
speeds in m/s; w = velocities in m/s and impulse slacks in N s), so the default ``units`` is
"mixed (by formulation block)"; the caller may pass the formulation's own labels.

``dump_lcp = "none" | "failures" | "all"`` is the run option; :func:`should_dump` decides.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import h5py
import numpy as np

from mbsim.simcore.lcp.chain import solve_lcp
from mbsim.simcore.lcp.mixed import solve_mixed_lcp
from mbsim.simcore.lcp.problem import DEFAULT_TOL_REL, Attempt, LcpResult, Status, check
from mbsim.simcore.options import DUMP_MODES

FORMAT = "mbsim-lcp"
MIXED_UNITS = "mixed (by formulation block)"


def should_dump(mode: str, result: LcpResult) -> bool:
    """Whether ``dump_lcp = mode`` asks for this result to be dumped."""
    if mode not in DUMP_MODES:
        raise ValueError(f"dump_lcp must be one of {', '.join(DUMP_MODES)}, got {mode!r}")
    if mode == "all":
        return True
    if mode == "failures":
        return check(result) is not None
    return False


def dump_lcp(
    parent: h5py.Group,
    name: str,
    M: np.ndarray,
    q: np.ndarray,
    result: LcpResult,
    nb: int = 0,
    step: int | None = None,
    time: float | None = None,
    units: dict[str, str] | None = None,
    overwrite: bool = False,
) -> h5py.Group:
    """Write the LCP (M, q) of one step and its ``result`` to ``parent[name]``; return the group.

    ``units`` may map dataset names (M, q, z, w, x) to unit strings. Raises ``ValueError`` if
    the group exists and ``overwrite`` is false.
    """
    if name in parent:
        if not overwrite:
            raise ValueError(f"HDF5 group {parent.name}/{name} already exists")
        del parent[name]
    units = units or {}
    g = parent.create_group(name)
    datasets = {
        "M": (M, "LCP matrix (first nb rows/columns: equality rows and free variables)"),
        "q": (q, "LCP vector, w = M z + q (first nb entries: equality rows)"),
        "z": (result.z, "complementarity variables of the returned solution, z >= 0"),
        "w": (result.w, "complementarity slacks w = C x + D z + b of the returned solution"),
        "x": (result.x, "free variables of the equality rows (empty for a standard LCP)"),
    }
    for key, (data, description) in datasets.items():
        ds = g.create_dataset(key, data=np.asarray(data, dtype=np.float64))
        ds.attrs["units"] = units.get(key, MIXED_UNITS)
        ds.attrs["description"] = description
    g.attrs["format"] = FORMAT
    g.attrs["nb"] = int(nb)
    g.attrs["status"] = str(result.status)
    g.attrs["solver"] = result.solver
    g.attrs["delta"] = float(result.delta)
    g.attrs["pivots"] = int(result.pivots)
    g.attrs["residual"] = float(result.residual)
    g.attrs["sign_violation"] = float(result.sign_violation)
    g.attrs["eq_residual"] = float(result.eq_residual)
    g.attrs["tol"] = float(result.tol)
    g.attrs["message"] = result.message
    g.attrs["attempts"] = json.dumps(
        [
            {
                "solver": a.solver,
                "delta": a.delta,
                "status": str(a.status),
                "pivots": a.pivots,
                "residual": a.residual,
            }
            for a in result.attempts
        ]
    )
    if step is not None:
        g.attrs["step"] = int(step)
    if time is not None:
        g.attrs["time"] = float(time)
    return g


@dataclass
class LcpDump:
    """An LCP read back by :func:`load_lcp`: the problem and the recorded outcome."""

    M: np.ndarray
    q: np.ndarray
    nb: int
    result: LcpResult
    step: int | None = None
    time: float | None = None
    attrs: dict = field(default_factory=dict)


def load_lcp(parent: h5py.Group, name: str) -> LcpDump:
    """Read ``parent[name]`` written by :func:`dump_lcp`."""
    g = parent[name]
    if g.attrs.get("format") != FORMAT:
        raise ValueError(f"HDF5 group {g.name} is not an mbsim LCP dump (no format={FORMAT!r})")
    a = dict(g.attrs)
    attempts = [
        Attempt(d["solver"], d["delta"], Status(d["status"]), d["pivots"], d["residual"])
        for d in json.loads(a["attempts"])
    ]
    result = LcpResult(
        z=g["z"][()],
        w=g["w"][()],
        status=Status(a["status"]),
        pivots=int(a["pivots"]),
        residual=float(a["residual"]),
        sign_violation=float(a["sign_violation"]),
        solver=str(a["solver"]),
        delta=float(a["delta"]),
        tol=float(a["tol"]),
        x=g["x"][()],
        eq_residual=float(a["eq_residual"]),
        message=str(a["message"]),
        attempts=attempts,
    )
    return LcpDump(
        M=g["M"][()],
        q=g["q"][()],
        nb=int(a["nb"]),
        result=result,
        step=int(a["step"]) if "step" in a else None,
        time=float(a["time"]) if "time" in a else None,
        attrs=a,
    )


def replay(
    dump: LcpDump,
    solver: str = "lemke",
    chain: bool = True,
    tol_rel: float = DEFAULT_TOL_REL,
    **kwargs,
) -> LcpResult:
    """Solve a dumped LCP again (e.g. with another solver or options)."""
    if dump.nb > 0:
        return solve_mixed_lcp(
            dump.M, dump.q, dump.nb, solver=solver, chain=chain, tol_rel=tol_rel, **kwargs
        )
    return solve_lcp(dump.M, dump.q, solver=solver, chain=chain, tol_rel=tol_rel, **kwargs)
