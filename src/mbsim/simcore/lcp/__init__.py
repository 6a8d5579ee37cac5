"""Linear complementarity solvers for the contact step (000 Eqs. 9, 27, 36, 41, 45, 53).

Public API:

* :func:`solve_lcp` -- standard LCP ``w = M z + q >= 0, z >= 0, w'z = 0`` with the fallback
  chain (lexicographic Lemke, regularised Lemke, PGS); :func:`solve_mixed_lcp` -- the mixed LCP
  with ``nb`` equality rows first, by Schur complement.
* :func:`lemke`, :func:`lemke_regularised`, :func:`pgs` -- the single solvers.
* :class:`LcpResult`, :class:`Status`, :class:`Attempt`, :func:`check`, :func:`ensure`,
  :class:`LcpFailure` -- results, status values and the acceptance test.
* :func:`dump_lcp`, :func:`load_lcp`, :func:`replay`, :func:`should_dump` -- HDF5 dump/replay.

See ``docs/lcp.md`` for the algorithms, the degeneracy rule and every tolerance.
"""

from mbsim.simcore.lcp.chain import DEFAULT_DELTAS, lemke_regularised, solve_lcp
from mbsim.simcore.lcp.dump import DUMP_MODES, LcpDump, dump_lcp, load_lcp, replay, should_dump
from mbsim.simcore.lcp.lemke import lemke
from mbsim.simcore.lcp.mixed import solve_mixed_lcp
from mbsim.simcore.lcp.pgs import pgs
from mbsim.simcore.lcp.problem import (
    DEFAULT_TOL_REL,
    Attempt,
    LcpFailure,
    LcpResult,
    Status,
    check,
    ensure,
    residuals,
    tolerance,
)

__all__ = [
    "DEFAULT_DELTAS",
    "DEFAULT_TOL_REL",
    "DUMP_MODES",
    "Attempt",
    "LcpDump",
    "LcpFailure",
    "LcpResult",
    "Status",
    "check",
    "dump_lcp",
    "ensure",
    "lemke",
    "lemke_regularised",
    "load_lcp",
    "pgs",
    "replay",
    "residuals",
    "should_dump",
    "solve_lcp",
    "solve_mixed_lcp",
    "tolerance",
]
