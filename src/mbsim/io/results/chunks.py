"""Whole HDF5 chunks for the results tables, encoded here and written with
``write_direct_chunk``: the bytes HDF5's shuffle + gzip (deflate) filters would store, so every
HDF5 reader decodes them with its standard filters, made at a fraction of the cost.

Why not let HDF5 compress: zlib at its fastest level runs at ~60 MB/s on this machine, and
float state (joint positions and velocities, body poses) barely shrinks under it (1.05-1.25x
with shuffle). On the paper's 12-link pendulum that compression was most of the recording
cost (docs/results.md). What does shrink is whole byte planes that hardly change: columns that
are zero for a whole run (tau of an unactuated robot, LCP diagnostics of free steps), step
counters, the sign and exponent bytes of slowly varying values.

A chunk (its rows, C order) is encoded as HDF5's filters would: first the shuffle filter's
byte transpose (byte ``j`` of element ``i`` of an ``n``-element chunk goes to ``j n + i``),
then one zlib stream (RFC 1950: header, deflate blocks, Adler-32 of the shuffled bytes). The
deflate data (RFC 1951) is built plane by plane (a plane = byte ``j`` of every element):

* a plane in which at least half the bytes repeat their predecessor (:data:`RUN_FRACTION`,
  judged on the chunk's first :data:`SAMPLE` elements) is compressed with zlib's run-length
  strategy (``Z_RLE``, level 1), which costs little on such data and turns a constant plane
  into a few bytes;
* any other plane is written as stored (uncompressed) deflate blocks: a plane of varying
  mantissa bytes would cost zlib's full time to shrink by a few per cent;
* the padding past the last row of a dataset's final, partial chunk (zeros, never read) is
  compressed the first way, once per length (:func:`_zero_stretch`), and follows each plane
  as a stretch of its own; a chunk whose every bit is zero (a column unused all run) is one
  such stretch;
* in such a partial chunk a plane that is one byte repeated (the zero top bytes of counters,
  constant sign and exponent bytes) is compressed the first way too, but once per byte value
  and length (:func:`_constant_stretch`): the previous plane's padding has flushed the
  compressor, so the bytes are those a fresh compressor makes, whatever came before.

Each stretch of compressed planes ends with a full flush (byte aligned, no reference to earlier
bytes), so compressed stretches and stored blocks follow one another in one valid stream, closed
by an empty final block. ``zlib.decompress`` of the result gives back the shuffled
chunk bit for bit (tests/test_results_chunks.py checks it, and that h5py reads the rows back).

A dataset's last, partial chunk, written when the run ends (inside its timed finish), skips the
shuffle filter (:func:`encode_last`): HDF5 keeps a filter mask with every chunk in the chunk
index, and a chunk written with the shuffle filter's bit set (:data:`SKIP_SHUFFLE`) is read back
through deflate alone, by every HDF5 reader, so the rows read the same. Its bytes are the rows
as they are, in stored deflate blocks, then the zero padding compressed (no byte transpose, no
run test, one Adler-32): a fraction of the shuffled form's cost. The dataset's filters (shuffle
and gzip) are unchanged, and a program appending to a finished file with h5py rewrites that
chunk through both. Only a reader that decodes chunks itself (``read_direct_chunk``) must
honour the mask it returns, as HDF5 does.
"""

from __future__ import annotations

import zlib

import numpy as np

#: A byte plane is deflated (run-length strategy) when at least this fraction of its bytes
#: equal the byte before them; otherwise it is stored.
RUN_FRACTION = 0.5
#: Elements of a plane the run test looks at (the first ones of the chunk).
SAMPLE = 4096
#: The zlib level the datasets declare (``compression_opts``): what HDF5 itself would use if
#: another program appended to a finished file with h5py. Readers need no level.
GZIP_LEVEL = 1

_HEADER = b"\x78\x01"  # deflate, 32 KiB window, no dictionary (0x7801 % 31 == 0)
_FINAL = b"\x03\x00"  # an empty final block (fixed Huffman, end-of-block code only)
_STORED_MAX = 65535  # bytes in one stored block
_ADLER_MOD = 65521


def _stored(plane: memoryview, out: list) -> None:
    """``plane`` as stored deflate blocks (non-final; the stream is byte aligned here)."""
    for s in range(0, len(plane), _STORED_MAX):
        n = min(_STORED_MAX, len(plane) - s)
        out.append(bytes((0, n & 0xFF, n >> 8, ~n & 0xFF, (~n >> 8) & 0xFF)))
        out.append(plane[s : s + n])


def _adler_zeros(adler: int, count: int) -> int:
    """Adler-32 ``adler`` continued over ``count`` zero bytes (RFC 1950: the byte sum A stays,
    B grows by A for every byte), without reading them."""
    a, b = adler & 0xFFFF, adler >> 16
    return ((b + count * a) % _ADLER_MOD) << 16 | a


#: Zero stretches made so far (:func:`_zero_stretch`), by length; bounded by
#: :data:`_ZERO_STRETCHES_MAX` (cleared when full).
_zero_stretches: dict[int, bytes] = {}
_ZERO_STRETCHES_MAX = 64


def _zero_stretch(count: int) -> bytes:
    """``count`` zero bytes as a stretch of non-final deflate blocks that stands alone: made by
    a fresh compressor (no reference to earlier bytes) and ended by a full flush (byte
    aligned), so it may follow any byte-aligned point of a stream. A partial chunk's padding
    has the same length in every byte plane of the chunk and, run after run, in every finish
    of a column: it is compressed once per length, not once per plane."""
    z = _zero_stretches.get(count)
    if z is None:
        if len(_zero_stretches) >= _ZERO_STRETCHES_MAX:
            _zero_stretches.clear()
        c = zlib.compressobj(1, zlib.DEFLATED, -15, 8, zlib.Z_RLE)
        z = _zero_stretches[count] = c.compress(bytes(count)) + c.flush(zlib.Z_FULL_FLUSH)
    return z


#: Stretches of one repeated byte (:func:`_constant_stretch`), by (byte, length); bounded by
#: :data:`_ZERO_STRETCHES_MAX` (cleared when full).
_constant_stretches: dict[tuple[int, int], bytes] = {}


def _constant_stretch(byte: int, count: int) -> bytes:
    """``count`` bytes equal to ``byte`` compressed as :func:`encode` compresses a plane
    followed by padding: by a run-length compressor that starts afresh (a full flush resets
    it: no reference to earlier bytes, byte aligned) and ends with a full flush. The bytes
    depend on nothing else, so they are made once per byte value and length: in a dataset's
    last, partial chunk most high-order byte planes are constant (the zero top bytes of
    counters, a column's sign and exponent bytes) and the same run after run."""
    key = (byte, count)
    z = _constant_stretches.get(key)
    if z is None:
        if len(_constant_stretches) >= _ZERO_STRETCHES_MAX:
            _constant_stretches.clear()
        c = zlib.compressobj(1, zlib.DEFLATED, -15, 8, zlib.Z_RLE)
        z = c.compress(bytes((byte,)) * count) + c.flush(zlib.Z_FULL_FLUSH)
        _constant_stretches[key] = z
    return z


def _mem_level(count: int) -> int:
    """zlib's ``memLevel`` for compressing planes of ``count`` bytes, each on its own (ended
    by a full flush): the smallest whose symbol buffer (``2**(memLevel + 6) - 1`` symbols,
    one block) holds the plane whole, as memLevel 8's does (16383). A run-length compressor
    uses the level for nothing else (its hash table goes unused), so the bytes are memLevel
    8's; but every full flush clears the hash table, 64 KiB at memLevel 8, and a partial
    chunk flushes after each plane."""
    return min(8, max(1, (count + 1).bit_length() - 6))


#: The filter mask of a chunk written with the shuffle filter skipped (bit i skips filter i of
#: the dataset's pipeline; the tables' pipeline is shuffle, then gzip: h5py's order).
SKIP_SHUFFLE = 1
#: Zero padding longer than this is compressed as repeats of a stretch of this many zeros.
_ZERO_BLOCK = 1 << 16


def _zeros(count: int) -> list:
    """``count`` zero bytes as stand-alone stretches (:func:`_zero_stretch`): repeats of one
    of :data:`_ZERO_BLOCK` zeros and one of the rest, so a long padding (up to a chunk's
    1 MiB) is never compressed whole, and lengths share their compressed stretches."""
    whole, rest = divmod(count, _ZERO_BLOCK)
    out = [_zero_stretch(_ZERO_BLOCK)] * whole
    if rest:
        out.append(_zero_stretch(rest))
    return out


def encode_last(block: np.ndarray, chunk_rows: int) -> bytes:
    """The last, partial chunk of a dataset (``block``: its rows holding data, C-contiguous,
    at least one and fewer than ``chunk_rows``; the rest is zero padding) as stored under
    the gzip filter alone: to be written with ``filter_mask=SKIP_SHUFFLE`` (see the module
    docstring). A zlib stream of the rows' bytes as they are, in stored deflate blocks, then
    the padding compressed (:func:`_zeros`): ``zlib.decompress`` gives back the padded
    chunk's bytes, unshuffled."""
    raw = memoryview(block.reshape(-1).view(np.uint8))
    n = raw.nbytes
    pad = (chunk_rows - len(block)) * (n // len(block))
    out = [_HEADER]
    _stored(raw, out)
    adler = zlib.adler32(raw)
    if pad > 0:
        out.append(_padding_end(pad))
        adler = _adler_zeros(adler, pad)
    else:
        out.append(_FINAL)
    out.append(adler.to_bytes(4, "big"))
    return b"".join(out)


#: :func:`_padding_end` made so far, by padding length; bounded by :data:`_ZERO_STRETCHES_MAX`
#: (cleared when full).
_padding_ends: dict[int, bytes] = {}


def _padding_end(count: int) -> bytes:
    """``count`` zero bytes (:func:`_zeros`) and the empty final block, joined once per
    length: a column's last chunk has the same padding run after run."""
    z = _padding_ends.get(count)
    if z is None:
        if len(_padding_ends) >= _ZERO_STRETCHES_MAX:
            _padding_ends.clear()
        z = _padding_ends[count] = b"".join(_zeros(count)) + _FINAL
    return z


def encode(block: np.ndarray, chunk_rows: int, nonzero: bool = False) -> bytes:
    """The stored form of one whole chunk of ``chunk_rows`` rows under the shuffle and gzip
    filters. ``block``: the rows holding data (at most ``chunk_rows``; a dataset's last chunk
    has fewer, the rest is zero padding, never read). ``nonzero``: the caller knows a bit of
    ``block`` is set (the all-zero test is skipped). A dataset's last chunk, written when
    the run ends, is :func:`encode_last`'s."""
    size = block.dtype.itemsize
    used = block.size  # elements holding data
    pad = (used // len(block) * chunk_rows if len(block) else 0) - used
    raw = block.reshape(-1).view(np.uint8)
    # every bit zero (a column unused all run): one zero stretch
    if used and not nonzero and not raw.any():
        total = (used + pad) * size
        return b"".join(
            (_HEADER, _zero_stretch(total), _FINAL, _adler_zeros(1, total).to_bytes(4, "big"))
        )
    planes = np.ascontiguousarray(raw.reshape(used, size).T)
    # the run test looks at the first SAMPLE elements: enough to judge a plane
    m = min(used, SAMPLE)
    constant = ()
    if m > 1:
        # (a bool array's sum: np.count_nonzero with an axis is that, behind ~5 us of Python)
        repeats = (planes[:, 1:m] == planes[:, : m - 1]).sum(axis=1)
        deflate = (repeats >= RUN_FRACTION * (m - 1)).tolist()
        if pad and m == used:  # the whole plane was looked at: which planes are one byte
            constant = (repeats == m - 1).tolist()
    else:
        deflate = [True] * size
    # the planes one after the other (the shuffled chunk without its padding), sliced as
    # memoryviews: cheaper than a numpy row each
    flat = memoryview(planes.reshape(-1))
    zeros = _zero_stretch(pad) if pad else b""
    level = _mem_level(used) if pad else 8
    out = [_HEADER]
    rle, open_, adler = None, False, 1
    for j in range(size):
        plane = flat[j * used : (j + 1) * used]
        adler = zlib.adler32(plane, adler)
        if used:
            if constant and constant[j]:
                # followed by padding, so a stretch of its own: the compressor is fresh here
                # (the previous plane's padding flushed it) and is flushed after it
                out.append(_constant_stretch(plane[0], used))
            elif deflate[j]:  # consecutive compressed planes are one stretch of one stream
                if rle is None:
                    rle = zlib.compressobj(1, zlib.DEFLATED, -15, level, zlib.Z_RLE)
                out.append(rle.compress(plane))
                open_ = True
            else:
                if open_:
                    out.append(rle.flush(zlib.Z_FULL_FLUSH))
                    open_ = False
                _stored(plane, out)
        if pad:  # the plane's padding: its own stretch, made once (byte aligned after a flush)
            adler = _adler_zeros(adler, pad)
            if open_:
                out.append(rle.flush(zlib.Z_FULL_FLUSH))
                open_ = False
            out.append(zeros)
    if open_:
        out.append(rle.flush(zlib.Z_FULL_FLUSH))
    out.append(_FINAL)
    out.append(adler.to_bytes(4, "big"))
    return b"".join(out)
