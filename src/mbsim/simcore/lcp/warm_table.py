"""The warm start's store (lcp/warm.py) as arrays, for the compiled contact step and loop.

A :class:`~mbsim.simcore.lcp.warm.WarmStart` is a dict {key: active set} in insertion order:
key (n, None) for an LCP of n rows that does not split, (n, rows.tobytes()) for each block of
one that does (lcp/islands.py, ``chain._solve_warm``); ``remember`` pops the key and puts it
back last, dropping the first entry when MAX_BLOCKS are held. Compiled code cannot take the
dict, so :class:`WarmTable` holds the same entries in slots of arrays, their order as stamps
(a later entry has a larger stamp), and :func:`find` and :func:`remember` do on the slots
what ``guess`` and ``remember`` do on the dict: the dict made back from the table
(:meth:`WarmTable.save`) is the one the Python path leaves, entry for entry and in order.

The table is the tuple ``tab`` = (kn, kl, kr, sl, ss, st, meta): per slot the key's LCP size
kn, its number of rows kl (-1: the key (n, None); -2: a key the table does not hold, which
keeps its place in the order and may be dropped but never matches), its rows kr[:kl], the set
ss[:sl] and the stamp st (-1: a free slot); meta = [clock, entries, tried, accepted,
MAX_BLOCKS], tried and accepted counted since :meth:`WarmTable.load`.

Undo. A compiled loop of steps keeps its table between steps, but a step it takes and then
hands back to Python (free_loop.py) must leave the store as it was: :func:`mark` records the
table's state, every slot :func:`remember` writes is first copied to the undo tuple ``und``,
and :func:`undo` puts the marked state back.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mbsim.simcore.lcp import warm as warm_start

#: meta slots
CLOCK, COUNT, TRIED, ACCEPTED, LIMIT = range(5)
#: kl of the key (n, None), and of a key the table does not hold
WHOLE, FOREIGN = -1, -2


class WarmTable:
    """A WarmStart's entries in arrays (module docstring), the rows of keys and sets at most
    ``width``; with ``n`` given, only the keys of LCPs of n rows are held (the others keep
    their place)."""

    def __init__(self, width: int, slots: int | None = None) -> None:
        e = (warm_start.MAX_BLOCKS if slots is None else slots) + 1
        self.width = int(width)
        w = max(self.width, 1)
        self.tab = (
            np.full(e, -1, np.int64), np.zeros(e, np.int64), np.empty((e, w), np.int64),
            np.zeros(e, np.int64), np.empty((e, w), np.int64), np.full(e, -1, np.int64),
            np.zeros(5, np.int64),
        )  # fmt: skip
        self.und = (
            np.zeros(e, np.bool_), np.zeros(e, np.int64), np.zeros(e, np.int64),
            np.empty((e, w), np.int64), np.zeros(e, np.int64), np.empty((e, w), np.int64),
            np.zeros(e, np.int64), np.zeros(5, np.int64), np.zeros(e + 1, np.int64),
        )  # fmt: skip
        self.foreign: dict[int, tuple] = {}

    def load(self, store, n: int | None = None) -> None:
        """The entries of ``store`` (a WarmStart) in the table (more slots made if it holds
        more entries than MAX_BLOCKS), counters at zero, marked."""
        items = list(store.sets.items())
        if len(items) >= self.tab[5].shape[0]:
            self.__init__(self.width, len(items))
        kn, kl, kr, sl, ss, st, meta = self.tab
        st[:] = -1
        self.foreign = {}
        for e, (key, S) in enumerate(items):
            size, rows = (key[0], key[1]) if type(key) is tuple and len(key) == 2 else (-1, 0)
            ok = isinstance(size, int | np.integer) and (n is None or size == n)
            ok = ok and size <= self.width and S.size <= self.width
            if ok and rows is None:
                kl[e] = WHOLE
            elif ok and type(rows) is bytes:
                r = np.frombuffer(rows, dtype=np.int64)
                ok = r.size <= self.width
                if ok:
                    kl[e] = r.size
                    kr[e, : r.size] = r
            else:
                ok = False
            if ok:
                kn[e] = size
                sl[e] = S.size
                ss[e, : S.size] = S
            else:
                kn[e], kl[e], sl[e] = -1, FOREIGN, 0
                self.foreign[e] = (key, S)
            st[e] = e + 1
        meta[:] = (len(items), len(items), 0, 0, warm_start.MAX_BLOCKS)
        mark(self.tab, self.und)

    def save(self, store) -> None:
        """``store``'s entries and counters as the table's (after the steps that changed it)."""
        kn, kl, kr, sl, ss, st, meta = self.tab
        sets = {}
        for e in np.argsort(st, kind="stable").tolist():
            if st[e] < 0:
                continue
            if kl[e] == FOREIGN:
                key, S = self.foreign[e]
                sets[key] = S
                continue
            rows = None if kl[e] == WHOLE else kr[e, : kl[e]].copy().tobytes()
            sets[(int(kn[e]), rows)] = ss[e, : sl[e]].copy()
        store.sets = sets
        store.tried += int(meta[TRIED])
        store.accepted += int(meta[ACCEPTED])


@njit(cache=True)
def find(tab, n, whole, rows):
    """The slot of the key (n, None) (``whole``) or (n, rows), or -1."""
    kn, kl, kr, _sl, _ss, st, _meta = tab
    m = rows.shape[0]
    for e in range(st.shape[0]):
        if st[e] < 0 or kn[e] != n:
            continue
        if whole:
            if kl[e] == WHOLE:
                return e
            continue
        if kl[e] != m:
            continue
        same = True
        for a in range(m):
            if kr[e, a] != rows[a]:
                same = False
                break
        if same:
            return e
    return -1


@njit(cache=True)
def _save(tab, und, e):
    """Slot e copied to the undo tuple, once after each :func:`mark`."""
    kn, kl, kr, sl, ss, st, _meta = tab
    saved, ukn, ukl, ukr, usl, uss, ust, _umeta, ulist = und
    if saved[e]:
        return
    saved[e] = True
    ulist[0] += 1
    ulist[ulist[0]] = e
    ukn[e], ukl[e], usl[e], ust[e] = kn[e], kl[e], sl[e], st[e]
    for a in range(max(kl[e], 0)):
        ukr[e, a] = kr[e, a]
    for a in range(sl[e]):
        uss[e, a] = ss[e, a]


@njit(cache=True)
def remember(tab, und, n, whole, rows, S):
    """``WarmStart.remember(key, z, S)`` for the key (n, None) (``whole``) or (n, rows): the
    key's entry (made, the oldest dropped first when the table holds MAX_BLOCKS entries)
    gets the set S and the latest stamp."""
    kn, kl, kr, sl, ss, st, meta = tab
    e = find(tab, n, whole, rows)
    if e < 0:
        if meta[COUNT] >= meta[LIMIT]:
            old = -1
            for j in range(st.shape[0]):
                if st[j] >= 0 and (old < 0 or st[j] < st[old]):
                    old = j
            _save(tab, und, old)
            st[old] = -1
            meta[COUNT] -= 1
        e = 0
        while st[e] >= 0:
            e += 1
        _save(tab, und, e)
        kn[e] = n
        if whole:
            kl[e] = WHOLE
        else:
            kl[e] = rows.shape[0]
            for a in range(rows.shape[0]):
                kr[e, a] = rows[a]
        meta[COUNT] += 1
    else:
        _save(tab, und, e)
    meta[CLOCK] += 1
    st[e] = meta[CLOCK]
    sl[e] = S.shape[0]
    for a in range(S.shape[0]):
        ss[e, a] = S[a]


@njit(cache=True)
def mark(tab, und):
    """The table's state now is the one :func:`undo` goes back to."""
    saved, ulist, umeta = und[0], und[8], und[7]
    for j in range(1, ulist[0] + 1):
        saved[ulist[j]] = False
    ulist[0] = 0
    meta = tab[6]
    for a in range(meta.shape[0]):
        umeta[a] = meta[a]


@njit(cache=True)
def undo(tab, und):
    """The table as it was at the last :func:`mark`."""
    kn, kl, kr, sl, ss, st, meta = tab
    _saved, ukn, ukl, ukr, usl, uss, ust, umeta, ulist = und
    for j in range(1, ulist[0] + 1):
        e = ulist[j]
        kn[e], kl[e], sl[e], st[e] = ukn[e], ukl[e], usl[e], ust[e]
        for a in range(max(kl[e], 0)):
            kr[e, a] = ukr[e, a]
        for a in range(sl[e]):
            ss[e, a] = uss[e, a]
    for a in range(meta.shape[0]):
        meta[a] = umeta[a]
    mark(tab, und)


__all__ = ["WarmTable", "find", "mark", "remember", "undo"]
