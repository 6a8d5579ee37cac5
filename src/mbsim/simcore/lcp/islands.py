"""Independent blocks ("islands") of a standard LCP, solved one by one.

If a permutation P makes P M P^T block diagonal, the LCP (M, q) of 000 Eq. 9 is the direct sum
of the LCPs (M_bb, q_b), one per diagonal block b: w_b = M_bb z_b + q_b involves block b alone,
so z solves (M, q) exactly when every z_b solves its block. The blocks are the connected
components of M's sparsity graph: rows i and j are joined when M_ij != 0 or M_ji != 0. The
test is on exact zeros, so the split is exact (no threshold decides that two rows are
independent). In a contact LCP the friction-cone rows (mu, -E^T; 000 Eq. 53) sit in M beside
the impulse rows of the same contact and join them; contacts on bodies that touch neither
each other nor a common moving body give exact zeros in Lambda (a pile of separate stacks of
free boxes), hence separate blocks.

Cost. Lemke costs O(n^2) per pivot and about n pivots; k equal blocks cost k (n/k)^3, k^2
times less. Finding the blocks is a compiled search over the pattern of M, O(n) checks for
an M that does not split and at most O(n^2).

Acceptance. Each block is solved by the caller's solver (``chain.solve_lcp``'s fallback chain
on the block) and accepted by the usual test on the block's own (M_bb, q_b) (problem.py),
whose tolerance is never larger than the whole problem's (its norms are sub-norms). The
assembled z is then verified on the whole (M, q) by :func:`problem.evaluate`, as an unsplit
solve's is, but each row of w = M z + q summed over its block only (M is exactly zero off the
blocks; a dense pass differs by the rounding of its sums only): the compiled contact step,
which never assembles the whole M (simcore/contact_islands.py), takes the same test. If a
block is not accepted, or the assembled z is not, the whole (M, q) is solved
unsplit (the path without islands); if that fails too, the failure's message names the rows
of the block that failed and how its attempts ended, then the unsplit attempts. A block that
ran out of the step's time budget (budget.py) ends the solve at once with that block's
failure: the unsplit solve would have no time left.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from numba import njit

from mbsim.simcore.lcp.problem import DEFAULT_TOL_REL, Attempt, LcpResult, Status, evaluate

#: the chain's solvers from first resort to last: a result assembled from blocks reports the
#: last-resort solver any block needed (``/diagnostics/solver`` of the results file)
SOLVER_ORDER = ("lemke", "lemke_reg", "pgs")

BlockSolver = Callable[[np.ndarray, np.ndarray], LcpResult]


@njit(cache=True)
def _component_labels(M, label):
    """label[i] = the block of row i, blocks numbered 0, 1, ... in order of their first row;
    returns the number of blocks (:func:`component_labels_into` with work arrays of its
    own)."""
    n = M.shape[0]
    return component_labels_into(M, label, np.empty(2 * n, dtype=np.int64))


@njit(cache=True)
def component_labels_into(M, label, work):
    """:func:`_component_labels` with its work arrays in ``work`` (int64, at least 2 n; the
    compiled contact step's buffer, contact_fused.py). A search over the pattern of M + M'
    from the first row not yet labelled, each row it reaches compared only with the rows
    still unlabelled: O(n) checks for an M that does not split (the usual contact LCP),
    O(n^2) at most."""
    n = M.shape[0]
    rest = work[:n]  # the unlabelled rows, ascending
    stack = work[n : 2 * n]
    for i in range(n):
        rest[i] = i
    nrest = n
    count = 0
    while nrest > 0:
        first = rest[0]
        label[first] = count
        for a in range(1, nrest):
            rest[a - 1] = rest[a]
        nrest -= 1
        stack[0] = first
        top = 1
        while top > 0 and nrest > 0:
            top -= 1
            i = stack[top]
            m = 0
            for a in range(nrest):
                j = rest[a]
                if M[i, j] != 0.0 or M[j, i] != 0.0:  # nan couples too
                    label[j] = count
                    stack[top] = j
                    top += 1
                else:
                    rest[m] = j
                    m += 1
            nrest = m
        count += 1
    return count


def blocks(M: np.ndarray) -> list[np.ndarray]:
    """The rows of each independent block of M (ascending), blocks in order of their first
    row; one block holding every row when M does not split, none when M is empty.

    M must be a contiguous float64 square array (``lemke.as_problem``). A non-finite entry
    counts as nonzero (it couples its rows; the solve then reports it)."""
    n = M.shape[0]
    if n == 0:
        return []
    label = np.empty(n, dtype=np.int64)
    count = int(_component_labels(M, label))
    if count == 1:
        return [np.arange(n)]
    order, starts = block_order(label, count)
    return [order[starts[b] : starts[b + 1]] for b in range(count)]


@njit(cache=True)
def block_order(label, count):
    """(order, starts): the rows of block b are order[starts[b]:starts[b + 1]], ascending,
    for the labels of :func:`_component_labels` (the split :func:`blocks` returns, and the
    one the compiled contact step solves block by block, contact_fused.py)."""
    order = np.empty(label.shape[0], dtype=np.int64)
    starts = np.empty(count + 1, dtype=np.int64)
    block_order_into(label, count, order, starts)
    return order, starts


@njit(cache=True)
def block_order_into(label, count, order, starts):
    """:func:`block_order` into ``order`` (n) and ``starts`` (count + 1), given: each row
    put at its block's next free place, which moves the block's start up to the next
    block's; the starts are then shifted back (no work array)."""
    n = label.shape[0]
    for b in range(count + 1):
        starts[b] = 0
    for i in range(n):
        starts[label[i] + 1] += 1
    for b in range(count):
        starts[b + 1] += starts[b]
    for i in range(n):
        order[starts[label[i]]] = i
        starts[label[i]] += 1
    for b in range(count, 0, -1):
        starts[b] = starts[b - 1]
    starts[0] = 0


def describe_rows(rows: np.ndarray, n: int) -> str:
    """'rows 0-11, 24-35 (24 of 96)': a block's rows as ranges."""
    parts = []
    start = prev = int(rows[0])
    for r in rows[1:]:
        r = int(r)
        if r != prev + 1:
            parts.append(f"{start}-{prev}" if prev > start else f"{start}")
            start = r
        prev = r
    parts.append(f"{start}-{prev}" if prev > start else f"{start}")
    return f"rows {', '.join(parts)} ({rows.size} of {n})"


def solve_blocks(
    M: np.ndarray,
    q: np.ndarray,
    parts: Sequence[np.ndarray],
    solve_block: BlockSolver,
    solve_unsplit: Callable[[], LcpResult],
    tol_rel: float = DEFAULT_TOL_REL,
) -> LcpResult:
    """Solve (M, q) block by block (``parts`` from :func:`blocks`, at least two) with
    ``solve_block(M_bb, q_b)``, assemble z and verify it on (M, q) (module docstring).

    The result's ``pivots`` sum the blocks', ``attempts`` are the chain's attempts merged over
    the blocks (:func:`merge_attempts`), ``solver`` is the last-resort solver any block
    needed (SOLVER_ORDER) and ``delta`` the largest regularisation used. On a block's
    failure the result of ``solve_unsplit()`` is returned, its message naming the failed
    block when it fails too.
    """
    n = q.shape[0]
    z = np.zeros(n)
    pivots = 0
    delta = 0.0
    solver = SOLVER_ORDER[0]
    runs: list[list[Attempt]] = []
    for rows in parts:
        sub = solve_block(np.ascontiguousarray(M[np.ix_(rows, rows)]), q[rows])
        runs.append(sub.attempts)
        if not sub.ok:
            return _unsplit(M, q, z, rows, sub, merge_attempts(runs), solve_unsplit, tol_rel)
        z[rows] = sub.z
        pivots += sub.pivots
        delta = max(delta, sub.delta)
        if SOLVER_ORDER.index(sub.solver) > SOLVER_ORDER.index(solver):
            solver = sub.solver
    sizes = ", ".join(str(rows.size) for rows in parts)
    whole = evaluate(
        M, q, z, Status.SOLVED, pivots, solver, delta, tol_rel,
        f"solved as {len(parts)} independent blocks of sizes {sizes}",
        attempts=merge_attempts(runs), parts=parts,
    )  # fmt: skip
    if whole.ok:
        return whole
    return _unsplit(M, q, z, None, whole, whole.attempts, solve_unsplit, tol_rel)


def merge_attempts(runs: Sequence[Sequence[Attempt]]) -> list[Attempt]:
    """The blocks' attempt lists as one chain: attempt k is the k-th solver of the chain run
    on every block that still needed it (all blocks run the same plan with the same
    regularisations), with the pivots summed, the largest residual and the status of the
    first of those blocks it did not solve (``solved`` if it solved them all)."""
    out = []
    for k in range(max((len(r) for r in runs), default=0)):
        at = [r[k] for r in runs if len(r) > k]
        bad = [a.status for a in at if a.status != Status.SOLVED]
        out.append(
            Attempt(
                at[0].solver, at[0].delta, bad[0] if bad else Status.SOLVED,
                sum(a.pivots for a in at), max(a.residual for a in at),
            )
        )  # fmt: skip
    return out


def _unsplit(M, q, z, rows, failed, attempts, solve_unsplit, tol_rel) -> LcpResult:
    """After a block (``rows``; None: the assembled whole) was not accepted: the unsplit
    solve, or, if it fails too or there is no time left for it, a failure naming the block."""
    n = q.shape[0]
    where = "the assembled solution" if rows is None else f"the block of {describe_rows(rows, n)}"
    if rows is not None:
        z = z.copy()
        z[rows] = failed.z  # the block's best candidate, so the failure shows its residuals
    why = f"{where} failed: {failed.describe()}"
    if failed.status != Status.TIME_LIMIT and not _out_of_time(failed):
        whole = solve_unsplit()
        if whole.ok:
            return whole
        whole.message = f"{why}; unsplit: {whole.message}" if whole.message else why
        return whole
    out = evaluate(M, q, z, Status.FAILED, failed.pivots, failed.solver, failed.delta, tol_rel)
    out.status = Status.FAILED  # never upgraded: the block's failure stands
    out.message = why
    out.attempts = attempts
    return out


def _out_of_time(result: LcpResult) -> bool:
    return bool(result.attempts) and result.attempts[-1].status == Status.TIME_LIMIT
