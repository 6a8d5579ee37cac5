"""One buffered table of a results file (a group of equal-length columns) and its crash-safe
path to the file: whole compressed chunks plus an uncompressed ``_tail`` (see :class:`Table`)."""

from __future__ import annotations

import math

import h5py
import numpy as np

from mbsim.io.results.schema import _Col

#: Target uncompressed chunk size: large enough to compress well, small enough that rewriting
#: the last partial chunk at every flush stays cheap.
CHUNK_BYTES = 1 << 16


def _pow2_at_most(x: float) -> int:
    return 1 << max(0, int(math.floor(math.log2(max(1.0, x)))))


def _create(h5: h5py.Group, c: _Col, chunk_rows: int, max_rows: int | None, compress: bool):
    # HDF5 chunk sizes must be positive: a zero-width dimension (a robot without moving
    # joints has nq = 0) gets chunk size 1 and an unlimited maximum.
    ds = h5.create_dataset(
        c.name,
        shape=(0, *c.shape),
        maxshape=(max_rows, *(d if d > 0 else None for d in c.shape)),
        chunks=(chunk_rows, *(max(1, d) for d in c.shape)),
        dtype=c.dtype,
        **(dict(compression="gzip", compression_opts=4, shuffle=True) if compress else {}),
    )
    ds.attrs["units"] = c.units
    ds.attrs["description"] = c.description
    for k, v in c.attrs:
        ds.attrs[k] = v
    return ds


class Table:
    """Buffered columns of one HDF5 group and their crash-safe path to the file.

    A compressed chunk must never be rewritten while the file is live: HDF5 rewrites a grown
    chunk in place or moves it, and a process killed between the chunk write and the index
    update leaves a chunk that fails to decompress (seen in testing for ~40% of kills during
    a flush). So the compressed datasets only ever receive whole chunks, ``seal`` rows at a
    time (``seal`` is a multiple of every column's chunk size), each written once. The rows
    after the last whole chunk live in ``_tail``: the same columns, uncompressed (fixed-size
    chunks, so rewriting a committed row writes identical bytes in place). The group attribute
    ``rows`` counts committed rows in the main datasets, ``_tail`` attribute ``rows`` those in
    the tail; both change only after the data they cover is flushed. :meth:`ResultsWriter.
    finish` moves the tail into the main datasets and deletes ``_tail``.

    Rows arrive one at a time (:meth:`add_row`: trajectory, diagnostics; kept in Python lists,
    several times cheaper per step than numpy concatenation) or in batches (:meth:`add_batch`).
    """

    #: Uncompressed bytes of one seal (all columns' rows), bounding the tail's size.
    SEAL_BYTES = 1 << 20

    def __init__(self, h5: h5py.Group, cols: list[_Col]) -> None:
        self.h5 = h5
        self.cols = cols
        row_bytes = {
            c.name: max(1, int(np.dtype(c.dtype).itemsize * math.prod(c.shape))) for c in cols
        }
        self.row_bytes = sum(row_bytes.values())
        self.seal = min(8192, max(64, _pow2_at_most(self.SEAL_BYTES / self.row_bytes)))
        self.tail = h5.create_group("_tail")
        self.tail.attrs["description"] = (
            "uncompressed rows after the last whole chunk while the run is live; removed when "
            "the run ends (readers append rows[:_tail.attrs['rows']] to the main datasets)"
        )
        for c in cols:
            chunk = min(self.seal, max(16, _pow2_at_most(CHUNK_BYTES / row_bytes[c.name])))
            _create(h5, c, chunk, None, compress=True)
            tail_chunk = min(self.seal, max(16, _pow2_at_most(16384 / row_bytes[c.name])))
            _create(self.tail, c, tail_chunk, self.seal, compress=False)
        h5.attrs["rows"] = np.int64(0)
        self.tail.attrs["rows"] = np.int64(0)
        self.pending: dict[str, list] = {c.name: [] for c in cols}
        self.pending_rows = 0
        self.pending_bytes = 0
        self.sealed = 0  # committed rows in the main datasets
        self.tail_rows = {c.name: np.zeros((0, *c.shape), c.dtype) for c in cols}
        self._plan: tuple[dict[str, np.ndarray], int] | None = None

    @property
    def total_rows(self) -> int:
        """Rows appended so far (committed and pending)."""
        return self.committed + self.pending_rows

    @property
    def tail_bytes(self) -> int:
        """Uncompressed bytes of the committed rows in the tail."""
        return len(self.tail_rows[self.cols[0].name]) * self.row_bytes

    def drop_pending(self) -> None:
        """Forget the rows not yet written (the disk cannot take them)."""
        self.pending = {c.name: [] for c in self.cols}
        self.pending_rows, self.pending_bytes = 0, 0
        self._plan = None

    @property
    def committed(self) -> int:
        """Rows committed to the file (main + tail)."""
        return self.sealed + len(self.tail_rows[self.cols[0].name])

    def add_row(self, row: dict[str, object]) -> None:
        """One row: a value of each column's row shape (already validated and copied)."""
        for name, value in row.items():
            self.pending[name].append(value)
        self.pending_rows += 1
        self.pending_bytes += self.row_bytes

    def add_batch(self, batch: dict[str, np.ndarray], rows: int) -> None:
        """``rows`` rows, an (rows, *shape) array per column (wrapped in a tuple to tell
        it from a single row)."""
        for name, value in batch.items():
            self.pending[name].append((value,))
        self.pending_rows += rows
        self.pending_bytes += rows * self.row_bytes

    def _stack(self, col: _Col) -> np.ndarray:
        # single rows (add_row) and batches (add_batch, in a tuple) may alternate
        parts, rows = [self.tail_rows[col.name]], []
        for it in self.pending[col.name]:
            if isinstance(it, tuple):
                if rows:
                    parts.append(np.asarray(rows, dtype=col.dtype).reshape(len(rows), *col.shape))
                    rows = []
                parts.append(it[0])
            else:
                rows.append(it)
        if rows:
            parts.append(np.asarray(rows, dtype=col.dtype).reshape(len(rows), *col.shape))
        return np.concatenate(parts, axis=0)

    # The phases below are separated by file flushes (ResultsWriter.flush). Each is
    # idempotent until commit(): a Ctrl-C in between makes the next flush redo them.

    def write_sealed(self) -> bool:
        """Phase 1: whole chunks to the compressed datasets. True if any were written."""
        if not self.pending_rows:
            self._plan = None
            return False
        data = {c.name: self._stack(c) for c in self.cols}
        n = len(data[self.cols[0].name])
        n_seal = (n // self.seal) * self.seal
        self._plan = (data, n_seal)
        if n_seal:
            for c in self.cols:  # "time" is last: a torn flush never shows time without data
                ds = self.h5[c.name]
                ds.resize(self.sealed + n_seal, axis=0)
                ds[self.sealed : self.sealed + n_seal] = data[c.name][:n_seal]
        return bool(n_seal)

    def mark_sealed(self) -> None:
        """Phase 2 (after a flush): count the new whole chunks, empty the tail."""
        if self._plan and self._plan[1]:
            self.h5.attrs.modify("rows", np.int64(self.sealed + self._plan[1]))
            self.tail.attrs.modify("rows", np.int64(0))

    def write_tail(self) -> None:
        """Phase 3: the remaining rows to the uncompressed tail."""
        if not self._plan:
            return
        data, n_seal = self._plan
        for c in self.cols:
            rest = data[c.name][n_seal:]
            ds = self.tail[c.name]
            if ds.shape[0] < len(rest):
                ds.resize(len(rest), axis=0)
            if len(rest):
                ds[: len(rest)] = rest

    def mark_tail(self) -> None:
        """Phase 4 (after a flush): count the tail rows."""
        if self._plan:
            data, n_seal = self._plan
            self.tail.attrs.modify("rows", np.int64(len(data[self.cols[0].name]) - n_seal))

    def commit(self) -> None:
        """The file now holds everything: update the in-memory state."""
        if self._plan:
            data, n_seal = self._plan
            self.sealed += n_seal
            self.tail_rows = {k: v[n_seal:] for k, v in data.items()}
            self.pending = {c.name: [] for c in self.cols}
            self.pending_rows, self.pending_bytes = 0, 0
            self._plan = None

    def close_tail(self) -> None:
        """At the end of the run: the tail becomes the last (partial) chunk of the main
        datasets, the main datasets hold every row, and ``_tail`` is deleted."""
        n_tail = len(self.tail_rows[self.cols[0].name])
        if n_tail:
            for c in self.cols:
                ds = self.h5[c.name]
                ds.resize(self.sealed + n_tail, axis=0)
                ds[self.sealed :] = self.tail_rows[c.name]
        self.h5.attrs.modify("rows", np.int64(self.sealed + n_tail))
        del self.h5["_tail"]
        self.sealed += n_tail
        self.tail_rows = {k: v[:0] for k, v in self.tail_rows.items()}


def _vector(name: str, value: object, shape: tuple[int, ...]) -> np.ndarray:
    """A float64 copy of ``value`` with exactly ``shape``."""
    arr = np.array(value, dtype=np.float64)
    if arr.shape != shape:
        if arr.size == math.prod(shape):
            return arr.reshape(shape)
        raise ValueError(f"results column {name!r}: expected shape {shape}, got {arr.shape}")
    return arr


def _column(name: str, value: object, dtype, shape: tuple[int, ...], n: int) -> np.ndarray:
    """``value`` as an (n, *shape) array; scalars and single rows broadcast."""
    arr = np.asarray(value, dtype=dtype)
    try:
        return np.array(np.broadcast_to(arr, (n, *shape)), dtype=dtype)
    except ValueError:
        raise ValueError(
            f"results column {name!r}: expected shape ({n}, {', '.join(map(str, shape))}) "
            f"or a broadcastable one, got {arr.shape}"
        ) from None
