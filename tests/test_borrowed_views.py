"""spatial.borrowed / borrowed_all: the same data without an owner, and reference counts that
balance (a leak would show in the caller's arrays' Python reference counts, an early free of
what is passed through as a crash or a broken list)."""

from __future__ import annotations

import sys

import numpy as np
from numba import njit
from numba.typed import List

from mbsim.simcore.spatial import borrowed, borrowed_all


@njit(cache=True)
def _write_through(a, b, t):
    x, y, z, n = borrowed_all(a, b, t, 3)
    x[0] = 7.0  # the same memory as a
    y[1, 1] = 5
    return x.sum() + y.sum() + z[0].sum() + z[1].sum() + n


@njit(cache=True)
def _keep_inner(n):
    # an owned array made here and a tuple holding it: borrowed_all passes the tuple's
    # non-array members through counted, so the owner lives as long as its last use
    owned = np.arange(n * 1.0)
    inner = (owned, n)
    (t,) = borrowed_all(inner)
    return t[0][n - 1] + owned[0]


@njit(cache=True)
def _one(a):
    v = borrowed(a)
    v[-1] = -1.0
    return v.shape[0]


def test_borrowed_all_reads_and_writes_the_callers_arrays():
    a = np.ones(4)
    b = np.zeros((2, 3), np.int64)
    t = (np.full(2, 2.0), np.full(3, 3.0))
    assert _write_through(a, b, t) == (7.0 + 3.0) + 5 + 4.0 + 9.0 + 3
    assert a[0] == 7.0 and b[1, 1] == 5
    assert _one(a) == 4 and a[-1] == -1.0


@njit(cache=True)
def _pass_list(lst, a):
    # a typed List (counted, not an array) passed through with an array borrowed
    k, x = borrowed_all(lst, a)
    return len(k) + x.shape[0]


def test_borrowed_all_counts_balance():
    a = np.ones(4)
    b = np.zeros((2, 3), np.int64)
    t = (np.ones(2), np.ones(3))
    lst = List([1.0, 2.0, 3.0])
    _write_through(a, b, t)
    _pass_list(lst, a)
    refs = [sys.getrefcount(x) for x in (a, b, *t)]
    for _ in range(200):
        _write_through(a, b, t)
        assert _pass_list(lst, a) == 7
        assert _keep_inner(1000) == 999.0
    # no reference left behind on the caller's arrays (each call's count is undone) ...
    assert [sys.getrefcount(x) for x in (a, b, *t)] == refs
    # ... and none taken away from what is passed through: the list is still whole (an
    # uncounted pass-through would have freed it at the first call's end)
    lst.append(4.0)
    assert list(lst) == [1.0, 2.0, 3.0, 4.0]
