"""One buffered table of a results file (a group of equal-length columns) and its crash-safe
path to the file: whole chunks, encoded by :mod:`~mbsim.io.results.chunks` and written once,
plus an uncompressed ``_tail`` (see :class:`Table`)."""

from __future__ import annotations

import math

import h5py
import numpy as np

from mbsim.io.results import chunks as _chunks
from mbsim.io.results.schema import _Col

#: Largest uncompressed chunk of one column: 1 MiB, HDF5's default chunk cache, so a reader
#: slicing rows keeps the chunk it reads in cache.
CHUNK_BYTES = 1 << 20


#: the memory types of scalar number attributes as h5py's ``AttrID.write`` makes them from
#: the array's dtype (``h5t.py_create``) when not given one: made once here, as that call
#: costs two thirds of a write (~10 of ~15 us)
_MEMORY_TYPES = {np.dtype(d): h5py.h5t.py_create(np.dtype(d)) for d in (np.int64, np.float64)}


def write_scalar(attr: h5py.h5a.AttrID, value: int | float, dtype=np.int64) -> None:
    """Overwrite the open scalar attribute ``attr`` (of type ``dtype`` as created: int64 or
    float64) in place."""
    dtype = np.dtype(dtype)
    attr.write(np.array(value, dtype=dtype), mtype=_MEMORY_TYPES[dtype])


def set_scalar(obj, name: str, value: int | float, dtype=np.int64) -> None:
    """Overwrite the existing scalar attribute ``name`` of ``obj`` (a group or file) in
    place, of type ``dtype`` as created (int64 or float64). h5py's ``attrs.modify`` looks
    the attribute up and checks its type and shape first, and item assignment deletes and
    creates it: ~5x the time, paid at every flush of every table."""
    write_scalar(h5py.h5a.open(obj.id, name.encode()), value, dtype)


_STR_DTYPE = h5py.string_dtype()
#: a text attribute as h5py's ``attrs[name] = str`` stores it: a scalar of variable-length
#: UTF-8 text (the file type, and the memory type it is written from)
_STR_FILE = h5py.h5t.py_create(_STR_DTYPE, logical=True)
_STR_MEMORY = h5py.h5t.py_create(_STR_DTYPE)
_SCALAR = h5py.h5s.create_simple(())
#: the HDF5 types of scalar number attributes as h5py's ``attrs[name] = value`` makes them:
#: a Python float is a float64, a numpy scalar keeps its type (by its exact Python type)
_NUMBER_TYPES = {
    t: (np.dtype(d), h5py.h5t.py_create(np.dtype(d), logical=True), _MEMORY_TYPES[np.dtype(d)])
    for t, d in ((float, np.float64), (np.float64, np.float64), (np.int64, np.int64))
}


def set_text(obj, name: str, value: str) -> None:
    """Overwrite the existing text attribute ``name`` of ``obj`` (made by :func:`put_attrs`)
    in place: h5py's item assignment deletes and creates it again, ~10x the time."""
    a = h5py.h5a.open(obj.id, name.encode())
    try:
        a.write(np.array(value, dtype=_STR_DTYPE), mtype=_STR_MEMORY)
    finally:
        a.close()


def write_text(attr: h5py.h5a.AttrID, value: str) -> None:
    """Overwrite the open text attribute ``attr`` (made by :func:`put_attrs`) in place."""
    attr.write(np.array(value, dtype=_STR_DTYPE), mtype=_STR_MEMORY)


def put_attrs(obj, items) -> None:
    """Create the attributes ``items`` ((name, value) pairs) of ``obj`` (a new group,
    dataset or file: none of them exists yet), each as ``obj.attrs[name] = value`` would.
    Text and scalar numbers (float, numpy float64 and int64) go straight to HDF5 (h5py's
    item assignment infers the type, looks for an attribute of that name and checks the
    shape first: ~4x the time, and a file's header and tables have some 200 of them); any
    other value through h5py."""
    oid = obj.id
    for name, value in items:
        kind = type(value)
        if kind is str:
            a = h5py.h5a.create(oid, name.encode(), _STR_FILE, _SCALAR)
            try:
                a.write(np.array(value, dtype=_STR_DTYPE), mtype=_STR_MEMORY)
            finally:
                a.close()
        elif kind in _NUMBER_TYPES:
            dtype, htype, mtype = _NUMBER_TYPES[kind]
            a = h5py.h5a.create(oid, name.encode(), htype, _SCALAR)
            try:
                a.write(np.array(value, dtype=dtype), mtype=mtype)
            finally:
                a.close()
        else:
            obj.attrs[name] = value


def _pow2_at_most(x: float) -> int:
    return 1 << max(0, int(math.floor(math.log2(max(1.0, x)))))


#: dataset creation property lists made so far (:func:`_create`), by chunk shape, maximum
#: shape and compression; and the HDF5 types of the columns' dtypes, by the dtype object
#: (numpy's dtype equality ignores the metadata that makes an enum)
_dcpls: dict[tuple, h5py.h5p.PropDCID] = {}
_types: dict[int, tuple[object, h5py.h5t.TypeID]] = {}


def _create(h5: h5py.Group, c: _Col, chunk_rows: int, max_rows: int | None, compress: bool):
    """The empty dataset of column ``c`` in ``h5``, as ``h5.create_dataset(c.name,
    shape=(0, *c.shape), maxshape=..., chunks=..., dtype=c.dtype, [gzip + shuffle])`` makes
    it, with its units and description. The property list h5py would build (its own
    ``fill_dcpl``, no time tracking, the configured attribute order) is built once per
    layout and the dataset created by ``h5d.create``: h5py's create_dataset validates and
    builds it all again each time, ~2.5x the time, for the ~60 datasets of a file."""
    # HDF5 chunk sizes must be positive: a zero-width dimension (a robot without moving
    # joints has nq = 0) gets chunk size 1 and an unlimited maximum.
    shape = (0, *c.shape)
    maxshape = (max_rows, *(d if d > 0 else None for d in c.shape))
    chunks = (chunk_rows, *(max(1, d) for d in c.shape))
    dtype = np.dtype(c.dtype)
    order = h5py.get_config().track_order
    key = (chunks, maxshape, compress, dtype.kind, dtype.itemsize, order)
    dcpl = _dcpls.get(key)
    if dcpl is None:
        gzip = ("gzip", _chunks.GZIP_LEVEL, True) if compress else (None, None, None)
        dcpl = h5py._hl.filters.fill_dcpl(
            h5py.h5p.create(h5py.h5p.DATASET_CREATE), shape, dtype, chunks, *gzip, None,
            maxshape, None, None, False,
        )  # fmt: skip
        dcpl.set_obj_track_times(False)
        dcpl.set_attr_creation_order(
            h5py.h5p.CRT_ORDER_TRACKED | h5py.h5p.CRT_ORDER_INDEXED if order else 0
        )
        _dcpls[key] = dcpl
    known = _types.get(id(c.dtype))
    if known is None or known[0] is not c.dtype:
        known = _types[id(c.dtype)] = (c.dtype, h5py.h5t.py_create(dtype, logical=1))
    space = h5py.h5s.create_simple(
        shape, tuple(h5py.h5s.UNLIMITED if m is None else m for m in maxshape)
    )
    ds = h5py.Dataset(h5py.h5d.create(h5.id, c.name.encode(), known[1], space, dcpl=dcpl))
    put_attrs(ds, (("units", c.units), ("description", c.description), *c.attrs))
    return ds


_TAIL_DESCRIPTION = (
    "uncompressed rows after the last whole chunk while the run is live; removed when "
    "the run ends (readers append rows[:_tail.attrs['rows']] to the main datasets)"
)


class Table:
    """Buffered columns of one HDF5 group and their crash-safe path to the file.

    A compressed chunk must never be rewritten while the file is live: HDF5 rewrites a grown
    chunk in place or moves it, and a process killed between the chunk write and the index
    update leaves a chunk that fails to decompress (seen in testing for ~40% of kills during
    a flush). So the compressed datasets only ever receive whole chunks, ``seal`` rows at a
    time (``seal`` is a multiple of every column's chunk size), each written once, encoded by
    :func:`mbsim.io.results.chunks.encode` (shuffle + gzip, readable by any HDF5 reader). The
    rows after the last whole chunk live in ``_tail``: the same columns, uncompressed
    (fixed-size chunks, so rewriting a committed row writes identical bytes in place). The
    group attribute ``rows`` counts committed rows in the main datasets, ``_tail`` attribute
    ``rows`` those in the tail; both change only after the data they cover is flushed.
    :meth:`ResultsWriter.finish` writes every row to the main datasets (the last chunk
    partial) and deletes ``_tail``. ``_tail`` is made by :meth:`make_tail` at the file's first
    flush before its end, not with the table: a run that ends before it never has one.

    Rows are kept in one preallocated array per column (grown by doubling): the committed
    tail rows first (``n_tail``), then the pending ones, up to ``n``; the rows past ``n`` are
    zeros. Rows arrive one at a time (:meth:`add_row`: trajectory, diagnostics) or in blocks
    (:meth:`add_batch`, :meth:`add_block`), copied straight into those arrays.
    """

    #: Uncompressed bytes of one seal (all columns' rows), bounding the tail's size.
    SEAL_BYTES = 1 << 22

    def __init__(self, h5: h5py.Group, cols: list[_Col]) -> None:
        self.h5 = h5
        self.cols = cols
        row_bytes = {
            c.name: max(1, int(np.dtype(c.dtype).itemsize * math.prod(c.shape))) for c in cols
        }
        self.row_bytes = sum(row_bytes.values())
        self.seal = min(8192, max(64, _pow2_at_most(self.SEAL_BYTES / self.row_bytes)))
        self.chunk_rows: dict[str, int] = {}
        self._tail_chunk: dict[str, int] = {}
        # the datasets' HDF5 ids (the main datasets' extent set through them, rather than
        # h5py's resize, which asks HDF5 for the layout and shape again every time)
        self._main = {}
        for c in cols:
            chunk = min(self.seal, max(16, _pow2_at_most(CHUNK_BYTES / row_bytes[c.name])))
            self.chunk_rows[c.name] = chunk
            self._main[c.name] = _create(h5, c, chunk, None, compress=True).id
            self._tail_chunk[c.name] = min(
                self.seal, max(16, _pow2_at_most(16384 / row_bytes[c.name]))
            )
        put_attrs(h5, [("rows", np.int64(0))])
        # the ``rows`` attribute kept open: written in place at every flush (opening it by
        # name each time costs as much again); the file's close closes it
        self._rows = h5py.h5a.open(h5.id, b"rows")
        # ``_tail`` is made by :meth:`make_tail`, at the file's first flush before its end: a
        # run that ends before it (short, or under a second of wall time) never has one
        self.tail: h5py.Group | None = None
        self._tails: dict[str, h5py.Dataset] = {}
        self._tail_len: dict[str, int] = {}  # the tails' current lengths
        self._tail_count = 0  # the tail's ``rows`` attribute as last written
        self._has_tail = False
        self._empty = {c.name: 0 in c.shape for c in cols}  # no bytes to write
        #: per column, in order: name, main dataset id, row shape, chunk rows, no bytes
        self._layout = [
            (c.name, self._main[c.name], c.shape, self.chunk_rows[c.name], self._empty[c.name])
            for c in cols
        ]
        self.buf = {c.name: np.zeros((self.seal, *c.shape), c.dtype) for c in cols}
        self.n = 0  # rows in the buffers: the committed tail, then the pending rows
        self.n_tail = 0  # committed rows in the tail (buffer rows 0 .. n_tail)
        self.sealed = 0  # committed rows in the main datasets
        self.last_time = float("nan")  # the last committed row's time (s; every table has one)
        self._plan: int | None = None  # rows of the buffer going to the main datasets
        self._tail_written = 0  # buffer rows the file's tail holds (committed or not)

    @property
    def pending_rows(self) -> int:
        """Rows appended but not yet in the file."""
        return self.n - self.n_tail

    @property
    def pending_bytes(self) -> int:
        """Uncompressed bytes of the pending rows."""
        return self.pending_rows * self.row_bytes

    @property
    def total_rows(self) -> int:
        """Rows appended so far (committed and pending)."""
        return self.sealed + self.n

    @property
    def tail_bytes(self) -> int:
        """Uncompressed bytes of the committed rows in the tail."""
        return self.n_tail * self.row_bytes

    @property
    def next_tail_bytes(self) -> int:
        """Uncompressed bytes the tail will hold after the next flush that is not the last
        (:meth:`write_sealed` seals whole seals of the buffered rows; the rest is the tail)."""
        return (self.n % self.seal) * self.row_bytes

    @property
    def committed(self) -> int:
        """Rows committed to the file (main + tail)."""
        return self.sealed + self.n_tail

    def drop_pending(self) -> None:
        """Forget the rows not yet written (the disk cannot take them)."""
        self._zero(self.n_tail, self.n)
        self.n = self.n_tail
        self._plan = None

    def _room(self, rows: int) -> int:
        """Make the buffers hold ``rows`` more rows; the first new row's index."""
        start = self.n
        need = start + rows
        cap = len(self.buf[self.cols[0].name])
        if need > cap:
            cap = max(need, 2 * cap)
            for c in self.cols:
                grown = np.zeros((cap, *c.shape), c.dtype)
                grown[:start] = self.buf[c.name][:start]
                self.buf[c.name] = grown
        return start

    def add_row(self, row: dict[str, object]) -> None:
        """One row: a value of each column's row shape (already validated)."""
        i = self._room(1)
        buf = self.buf
        for name, value in row.items():
            buf[name][i] = value
        self.n = i + 1

    def add_batch(self, batch: dict[str, np.ndarray], rows: int) -> None:
        """``rows`` rows, an (rows, *shape) array per column."""
        i = self._room(rows)
        for name, value in batch.items():
            self.buf[name][i : i + rows] = value
        self.n = i + rows

    def add_block(self, given: dict[str, object], fill: dict[str, object], rows: int) -> None:
        """``rows`` rows: the ``given`` columns as (rows, *shape) arrays or anything that
        broadcasts to that shape (a scalar, one row), the ``fill`` columns set to one value.
        Every column is one or the other. Raises ValueError naming a column of the wrong
        shape (nothing is added then)."""
        i = self._room(rows)
        for c in self.cols:
            dst = self.buf[c.name][i : i + rows]
            if c.name in fill:
                if fill[c.name]:  # rows past n are zeros already
                    dst[...] = fill[c.name]
                continue
            try:  # numpy's assignment broadcasts a scalar or one row, and checks the shape
                dst[...] = given[c.name]
            except ValueError:
                self._zero(i, i + rows)
                raise ValueError(
                    f"results column {c.name!r}: expected shape ({rows}, "
                    f"{', '.join(map(str, c.shape))}) or a broadcastable one, got "
                    f"{np.shape(given[c.name])}"
                ) from None
        self.n = i + rows

    def _zero(self, start: int, stop: int) -> None:
        """Zero buffer rows ``start .. stop``: rows past ``n`` are kept zero, so a zero fill
        (:meth:`add_block`) costs nothing."""
        for b in self.buf.values():
            b[start:stop] = 0

    # The phases below are separated by file flushes (ResultsWriter._write). Each is
    # idempotent until commit(): a Ctrl-C in between makes the next flush redo them.

    def make_tail(self) -> None:
        """Create the empty ``_tail`` (its columns, none of them holding a row, and ``rows`` =
        0), once: :meth:`ResultsWriter._write_rows` calls it at the file's first flush that is
        not its last, and flushes before any row is written, while every table of the file
        still counts no committed row (so a kill during that flush loses no row)."""
        if self._has_tail:
            return
        self.tail = self.h5.create_group("_tail")
        put_attrs(self.tail, [("description", _TAIL_DESCRIPTION)])
        for c in self.cols:
            self._tails[c.name] = _create(
                self.tail, c, self._tail_chunk[c.name], self.seal, compress=False
            )
        put_attrs(self.tail, [("rows", np.int64(0))])
        self._tail_len = dict.fromkeys(self._tails, 0)
        self._has_tail = True

    def write_sealed(self, final: bool = False) -> bool:
        """Phase 1: whole chunks to the compressed datasets, or with ``final`` every row (the
        last chunk partial). True if any rows were written."""
        if not self.pending_rows and not (final and self.n):
            self._plan = None
            return False
        n_seal = self.n if final else (self.n // self.seal) * self.seal
        self._plan = n_seal
        if n_seal:
            end = self.sealed + n_seal
            buf = self.buf
            # "time" is last: a torn flush never shows time without data
            for name, dsid, shape, chunk, empty in self._layout:
                dsid.set_extent((end, *shape))
                if not empty:
                    self._write_chunks(dsid, buf[name], n_seal, chunk, final)
        return bool(n_seal)

    def _write_chunks(
        self, dsid, data: np.ndarray, rows: int, chunk: int, final: bool = False
    ) -> None:
        """Rows ``data[:rows]`` to the dataset ``dsid`` (its HDF5 id) from row ``sealed`` (a
        chunk boundary), one encoded chunk at a time (the encoder pads a partial last chunk
        with zeros). A chunk whose every bit is zero (a column unused over its rows: tau of
        an unactuated robot, the LCP diagnostics of free steps) is not written: HDF5 reads a
        chunk never written as the dataset's fill value, which is zero here (the default:
        :func:`_create` sets none), so the rows read back the same, bit for bit (-0.0 is not
        all zero bits and is written), at no write, chunk index entry or metadata flush.
        Chunks are written once each, so a skipped chunk never hides an older one. ``final``:
        the file's end, whose partial last chunk skips the shuffle filter (its filter mask
        says so: :func:`~mbsim.io.results.chunks.encode_last`)."""
        write = dsid.write_direct_chunk
        zeros = (0,) * (data.ndim - 1)
        for s in range(0, rows, chunk):
            block = data[s : min(rows, s + chunk)]
            if _any_bit(block):
                if final and len(block) < chunk:
                    write(
                        (self.sealed + s, *zeros),
                        _chunks.encode_last(block, chunk),
                        filter_mask=_chunks.SKIP_SHUFFLE,
                    )
                else:
                    write((self.sealed + s, *zeros), _chunks.encode(block, chunk, nonzero=True))

    def mark_sealed(self) -> None:
        """Phase 2 (after a flush): count the new whole chunks, empty the tail."""
        if self._plan:
            write_scalar(self._rows, self.sealed + self._plan)
            if self._has_tail and self._tail_count:
                set_scalar(self.tail, "rows", 0)
                self._tail_count = 0

    def write_tail(self) -> None:
        """Phase 3: the remaining rows to the uncompressed tail (rows the file's tail
        already holds, unchanged since, are not written again)."""
        if self._plan is None:
            return
        n_seal = self._plan
        rest = self.n - n_seal
        start = 0 if n_seal else self._tail_written
        for c in self.cols:
            ds = self._tails[c.name]
            if self._tail_len[c.name] < rest:
                ds.id.set_extent((rest, *c.shape))
                self._tail_len[c.name] = rest
            if rest > start and not self._empty[c.name]:
                ds[start:rest] = self.buf[c.name][n_seal + start : self.n]
        self._tail_written = rest

    def mark_tail(self) -> None:
        """Phase 4 (after a flush): count the tail rows."""
        if self._plan is not None and self._tail_count != self.n - self._plan:
            set_scalar(self.tail, "rows", self.n - self._plan)
            self._tail_count = self.n - self._plan

    def commit(self, final: bool = False) -> None:
        """The file now holds everything: update the in-memory state. ``final``: the file is
        finished (every row in the main datasets), no row will be added again, so the
        buffers are left as they are instead of being emptied."""
        if self._plan is None:
            return
        n_seal, n = self._plan, self.n
        if n:
            self.last_time = float(self.buf["time"][n - 1])
        if n_seal and not final:
            for c in self.cols:
                b = self.buf[c.name]
                b[: n - n_seal] = b[n_seal:n]
            self._zero(n - n_seal, n)
        self.sealed += n_seal
        self.n = self.n_tail = n - n_seal
        self._plan = None

    def delete_tail(self) -> None:
        """At the end of the run (every row in the main datasets): delete ``_tail`` if the
        file has one."""
        if self._has_tail:
            del self.h5["_tail"]
            self._has_tail = False
            self.tail = None
        self._tails = {}


def _any_bit(block: np.ndarray) -> bool:
    """Whether any bit of ``block`` (C-contiguous, not empty) is set. The last element's
    bytes are looked at first: they decide it for nearly every column that holds data (a
    state, a time), without a pass over the rest; a column of zeros is then counted whole
    (``count_nonzero``: ~3x faster than ``any`` on bytes, which casts them to bool)."""
    raw = block.reshape(-1).view(np.uint8)
    if raw[-block.itemsize :].tobytes().strip(b"\0"):
        return True
    return bool(np.count_nonzero(raw))


def _vector(name: str, value: object, shape: tuple[int, ...]) -> np.ndarray:
    """A float64 copy of ``value`` with exactly ``shape``."""
    arr = np.array(value, dtype=np.float64)
    if arr.shape != shape:
        if arr.size == math.prod(shape):
            return arr.reshape(shape)
        raise ValueError(f"results column {name!r}: expected shape {shape}, got {arr.shape}")
    return arr
