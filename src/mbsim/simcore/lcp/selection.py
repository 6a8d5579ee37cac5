"""Which solution the chain returns when an LCP has many: the rest-solution selection.

Redundant contacts (four coplanar corners of a face, two fingers squeezing a box) give
friction LCPs whose solution set is a whole polytope: D^T W D has rank at most 6 per body pair
while each face brings 4 (nf + 1) impulse unknowns. Lemke returns a vertex of that set, so the
whole normal load sits on one corner per face, the body pivots about it, and which corner wins
changes from step to step (stick/slip chatter, creep of a held object; issue 14).

``"least_norm"`` asks :func:`chain.solve_lcp` for the limit delta -> 0 of the solution of the
regularised LCP (M + delta I, q): the Tikhonov selection, which spreads load and friction evenly
over redundant contacts and depends continuously on (M, q), hence the same choice at every
step. It is computed as Lemke on M + delta I with delta = LEAST_NORM_DELTA ||M||_inf, then a
least-change correction on the original M's active-set system (chain._polish); the result is
verified on (M, q) with the usual acceptance test, and if it fails the chain goes on as in
``"vertex"`` mode (plain Lemke first). ``"vertex"`` (the default outside the stepper) is plain
Lemke's answer.

The mode is a context (like budget.limits) so the formulations' calls need not pass it:
``with selecting("least_norm"): solve_lcp(M, q)``. The stepper sets it from
``StepOptions.lcp_selection``.
"""

from __future__ import annotations

from contextvars import ContextVar

SELECTIONS = ("vertex", "least_norm")
#: delta / ||M||_inf of the selecting solve. Large enough that Lemke on M + delta I meets no
#: singular basis on redundant face contacts (cond ~ 1/delta; 1e-8 and below fail on the
#: gripper's LCPs, measured), small enough that its active set is the original problem's on
#: contact LCPs (the polish then makes the answer exact; otherwise the chain falls back).
LEAST_NORM_DELTA = 1e-6

_mode: ContextVar[str] = ContextVar("mbsim_lcp_selection", default="vertex")


class selecting:  # noqa: N801 (used as a function: ``with selecting(mode):``)
    """Solve the LCPs inside the block with selection ``mode`` (one of SELECTIONS).

    A class rather than a generator context manager, as budget.limits: the stepper enters
    one every contact step, and ``contextlib.contextmanager`` cost several microseconds."""

    __slots__ = ("mode", "_token")

    def __init__(self, mode: str):
        if mode not in SELECTIONS:
            raise ValueError(
                f"unknown LCP selection {mode!r}; expected one of {', '.join(SELECTIONS)}"
            )
        self.mode, self._token = mode, None

    def __enter__(self) -> None:
        self._token = _mode.set(self.mode)

    def __exit__(self, *exc) -> None:
        _mode.reset(self._token)


def current() -> str:
    """The selection mode in force ("vertex" outside any :func:`selecting` block)."""
    return _mode.get()
