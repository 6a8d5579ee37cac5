"""The results writer's own chunk encoding (mbsim.io.results.chunks) and its buffering.

Independent truths: the HDF5 shuffle filter's byte order written out here from its
definition, zlib's and HDF5's own decoders (h5py reading through the standard filters), the
closed-form bouncing ball of test_results.py, and the simulator stepped without any writer.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import zlib
from pathlib import Path

import h5py
import numpy as np
import pytest

import mbsim.io.results.table as table_mod
from mbsim.bench import pendulum_scenario
from mbsim.io.results import ResultsWriter, load_results
from mbsim.io.results.chunks import SKIP_SHUFFLE, encode, encode_last

sys.path.insert(0, str(Path(__file__).parent))
from test_results import INFO, ball  # noqa: E402


def shuffled(chunk: np.ndarray) -> bytes:
    """HDF5's shuffle filter by its definition: byte j of element i of an n-element chunk
    goes to position j * n + i."""
    raw = chunk.tobytes()
    size = chunk.dtype.itemsize
    n = len(raw) // size
    out = bytearray(len(raw))
    for i in range(n):
        for j in range(size):
            out[j * n + i] = raw[i * size + j]
    return bytes(out)


CASES = [
    (np.float64, (4, 7)),
    (np.float64, ()),
    (np.int64, ()),
    (np.int8, (5,)),
    (np.uint8, ()),
    (np.int32, (3,)),
]


def _data(rng, dtype, shape, rows) -> np.ndarray:
    """Random bits (NaN payloads, subnormals, every byte value), a constant run of rows and
    slowly varying values: planes of every kind the encoder tells apart."""
    size = np.dtype(dtype).itemsize
    raw = rng.integers(0, 256, size=(rows, *shape, size), dtype=np.uint8)
    a = raw.view(dtype).reshape(rows, *shape).copy()
    a[: rows // 3] = 0
    if np.dtype(dtype).kind == "f":
        a[rows // 3 : 2 * rows // 3] = np.cumsum(
            np.full((2 * rows // 3 - rows // 3, *shape), 1e-3), 0
        )
    return a


@pytest.mark.parametrize("dtype, shape", CASES)
def test_an_encoded_chunk_inflates_to_the_shuffled_rows_and_padding(dtype, shape):
    rng = np.random.default_rng(7)
    for rows, chunk in ((48, 64), (64, 64), (1, 16)):
        a = _data(rng, dtype, shape, rows)
        full = np.zeros((chunk, *shape), dtype)
        full[:rows] = a
        assert zlib.decompress(encode(a, chunk)) == shuffled(full), (rows, chunk)


@pytest.mark.parametrize("dtype, shape", CASES)
def test_a_last_chunk_skips_the_shuffle_and_reads_back_through_its_filter_mask(
    tmp_path: Path, dtype, shape
):
    # encode_last, the finish's last chunks: the rows unshuffled in stored blocks, the padding
    # compressed; written with the shuffle filter's bit of the filter mask set, h5py reads the
    # same rows, and a program appending to the file with h5py rewrites the chunk through both
    # filters
    rng = np.random.default_rng(5)
    path = tmp_path / "last.h5"
    blocks = []
    cases = ((48, 64), (1, 16), (63, 64), (151, 8192), (9000, 16384), (70000, 131072))
    with h5py.File(path, "w") as f:
        for rows, chunk in cases:
            a = _data(rng, dtype, shape, rows)
            full = np.zeros((chunk, *shape), dtype)
            full[:rows] = a
            data = encode_last(a, chunk)
            assert zlib.decompress(data) == full.tobytes(), (rows, chunk)
            ds = f.create_dataset(
                f"b{len(blocks)}", shape=(rows, *shape), maxshape=(None, *shape),
                chunks=(chunk, *shape), dtype=dtype, compression="gzip", shuffle=True,
            )  # fmt: skip
            assert ds.id.get_create_plist().get_filter(0)[0] == h5py.h5z.FILTER_SHUFFLE
            ds.id.write_direct_chunk((0, *[0] * len(shape)), data, filter_mask=SKIP_SHUFFLE)
            blocks.append(a)
    with h5py.File(path, "r") as f:
        for k, a in enumerate(blocks):
            assert f[f"b{k}"][...].tobytes() == a.tobytes(), k
            assert f[f"b{k}"].id.get_chunk_info(0).filter_mask == SKIP_SHUFFLE
    with h5py.File(path, "r+") as f:  # appended by h5py: the chunk rewritten, mask 0
        ds = f["b0"]
        more = _data(rng, dtype, shape, 5)
        ds.resize(len(ds) + 5, axis=0)
        ds[-5:] = more
    with h5py.File(path, "r") as f:
        ds = f["b0"]
        assert ds[...].tobytes() == np.concatenate([blocks[0], more]).tobytes()
        assert ds.id.get_chunk_info(0).filter_mask == 0


@pytest.mark.parametrize("dtype, shape", CASES)
def test_hdf5_reads_encoded_chunks_through_its_standard_filters(tmp_path: Path, dtype, shape):
    # the same rows written by HDF5's own gzip+shuffle filters and as encoded chunks read back
    # identically (bit for bit, NaN payloads included) through h5py
    rng = np.random.default_rng(11)
    rows, chunk = 1000, 256
    a = _data(rng, dtype, shape, rows)
    path = tmp_path / "chunks.h5"
    opts = dict(
        shape=(rows, *shape),
        maxshape=(None, *shape),
        chunks=(chunk, *shape),
        dtype=dtype,
        compression="gzip",
        compression_opts=1,
        shuffle=True,
    )
    with h5py.File(path, "w") as f:
        f.create_dataset("by_hdf5", **opts)[...] = a
        ds = f.create_dataset("direct", **opts)
        for s in range(0, rows, chunk):
            ds.id.write_direct_chunk((s, *[0] * len(shape)), encode(a[s : s + chunk], chunk))
    with h5py.File(path, "r") as f:
        assert f["direct"][...].tobytes() == a.tobytes()
        assert f["by_hdf5"][...].tobytes() == a.tobytes()
        assert f["direct"].compression == "gzip" and f["direct"].shuffle


def test_tables_are_created_as_h5py_create_dataset_and_attrs_create_them(tmp_path: Path):
    # the writer builds its datasets and text attributes through HDF5's low-level calls
    # (table._create, put_attrs): each must be what h5py's own high-level calls make
    path = tmp_path / "layout.h5"
    w = ResultsWriter(path, model_info=INFO, scenario_toml="", dt=1e-3, duration=1.0)
    try:
        # the tails are made at the first flush before the end
        w.append_state(0.0, [0.0], [0.0], [0.0, 0.0, 0.0])
        w.append_diagnostics(time=0.0, step=0)
        w.flush()
        with h5py.File(tmp_path / "h5py.h5", "w") as ref:
            for group in ("trajectory", "events", "diagnostics"):
                for tail in ("", "/_tail"):
                    for name, ds in w._file[group + tail].items():
                        if not isinstance(ds, h5py.Dataset):
                            continue
                        gzip = {}
                        if ds.compression:
                            gzip = dict(compression="gzip", compression_opts=1, shuffle=True)
                        twin = ref.create_dataset(
                            f"{group}{tail}/{name}", shape=ds.shape, maxshape=ds.maxshape,
                            chunks=ds.chunks, dtype=ds.dtype, **gzip,
                        )  # fmt: skip
                        twin.attrs["units"] = ds.attrs["units"]
                        assert ds.id.get_create_plist() == twin.id.get_create_plist(), name
                        assert ds.id.get_type() == twin.id.get_type(), name
                        for key in ("units", "description"):
                            a, b = ds.attrs.get_id(key), twin.attrs.get_id("units")
                            assert a.get_type() == b.get_type(), (name, key)
                            assert a.shape == b.shape == (), (name, key)
    finally:
        w.finish()
    r = load_results(path)
    assert r.q.shape == (1, 1)


def test_repeating_planes_are_compressed_and_random_ones_cost_no_more_than_raw(tmp_path: Path):
    n = 3000
    rng = np.random.default_rng(3)
    path = tmp_path / "size.h5"
    with ResultsWriter(path, model_info=INFO, scenario_toml="", dt=1e-3, duration=3.0) as w:
        for k in range(n):
            # random q and v: incompressible bits; tau is zero all run
            w.append_state(k * 1e-3, rng.random(1), rng.random(1), [1.0, 2.0, 3.0])
            w.append_diagnostics(time=k * 1e-3, step=k, solver="none")
    with h5py.File(path, "r") as f:
        stored = {name: f["trajectory"][name].id.get_storage_size() for name in ("q", "tau")}
    assert stored["tau"] < 0.01 * n * 8  # a zero column: a few bytes a chunk
    assert stored["q"] <= 1.01 * n * 8 + 256  # stored blocks: 5 bytes per 64 KiB, a header
    r = load_results(path)
    rng = np.random.default_rng(3)
    expected = np.array([rng.random(2) for _ in range(n)])
    assert np.array_equal(r.q[:, 0], expected[:, 0]) and np.array_equal(r.v[:, 0], expected[:, 1])
    assert np.array_equal(r.tau, np.zeros((n, 1)))


def test_a_finished_file_gives_back_the_disk_reserved_for_it(tmp_path: Path):
    path = tmp_path / "reserved.h5"
    with ResultsWriter(path, model_info=INFO, scenario_toml="", dt=1e-3, duration=1.0) as w:
        for k in range(500):
            z, vz, ke, pe = ball(k * 1e-3)
            w.append_state(k * 1e-3, z, vz, [ke[0], pe[0], ke[0] + pe[0]])
        w.flush()  # reserves the next flush's room and the finish's (>= 1 MiB) past the end
    st = os.stat(path)
    assert st.st_blocks * 512 <= st.st_size + (1 << 16)  # block rounding, not the >= 1 MiB


# --------------------------------------------------------------------------- whole runs


def _pendulum_file(path: Path, flush_seconds: float | None) -> Path:
    import dataclasses

    from mbsim.simulator import Simulator

    sc = pendulum_scenario(12, "os", 2.6, 1e-3, output=str(path))
    sc = dataclasses.replace(sc, source=None)
    sim = Simulator(sc)
    writer = sim.open_writer("test", force=False)
    if flush_seconds is not None:
        writer.flush_seconds = flush_seconds
    summary = sim.run(writer)
    writer.finish()
    assert summary.status == "complete", summary.message
    return path


def test_buffered_rows_equal_rows_flushed_at_every_step_and_an_unrecorded_run(
    tmp_path: Path, monkeypatch
):
    # pendulum-12 into contact at dt = 1 ms (the compiled loop's batches, then steps one at a
    # time with events); small seals so the run crosses many whole-chunk writes
    from mbsim.simulator import Simulator

    monkeypatch.setattr(table_mod.Table, "SEAL_BYTES", 1 << 14)
    buffered = _pendulum_file(tmp_path / "buffered.h5", None)
    each = _pendulum_file(tmp_path / "each.h5", 0.0)  # a flush at every chance
    with h5py.File(buffered, "r") as fa, h5py.File(each, "r") as fb:
        assert fa["trajectory"].attrs["rows"] >= 4 * fa["trajectory/q"].chunks[0]
        for group in ("trajectory", "events", "diagnostics"):
            assert set(fa[group]) == set(fb[group])
            for name in fa[group]:
                if name == "step_seconds":  # wall time
                    continue
                a, b = fa[group][name], fb[group][name]
                assert a.dtype == b.dtype and a[...].tobytes() == b[...].tobytes(), (group, name)
    # the independent truth: the same scenario stepped without any writer
    sc = pendulum_scenario(12, "os", 2.6, 1e-3)
    sim = Simulator(sc)
    every = sc.output.record_every
    q, v = [sim.q.copy()], [sim.v.copy()]
    for k in range(1, sc.simulation.n_steps + 1):
        sim.step()
        if k % every == 0:
            q.append(sim.q.copy())
            v.append(sim.v.copy())
    r = load_results(buffered)
    assert r.status == "complete" and len(r.events["time"]) > 0  # it ends in contact
    assert np.array_equal(r.q, np.array(q)) and np.array_equal(r.v, np.array(v))


KILLED = f"""
import sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
import mbsim.io.results.table as table_mod
table_mod.Table.SEAL_BYTES = 2048  # whole chunks are written every 64 rows
from test_results import INFO, ball
from mbsim.io.results import ResultsWriter

w = ResultsWriter(sys.argv[1], model_info=INFO, scenario_toml="", dt=1e-3, duration=1e3,
                  body_poses=True, flush_seconds=0.0)
k = 0
while True:
    z, vz, ke, pe = ball(k * 1e-3)
    w.append_state(k * 1e-3, z, vz, [ke[0], pe[0], ke[0] + pe[0]],
                   body_pose=[[0.0, 0.0, z[0], 1.0, 0.0, 0.0, 0.0]])
    w.append_diagnostics(time=k * 1e-3, step=k, solver="none")
    k += 1
    print(k, flush=True)  # flush_seconds = 0: these k rows are flushed
"""


@pytest.mark.parametrize("after", [0.15, 0.4, 0.75, 1.1])
def test_sigkill_during_chunk_writes_keeps_every_flushed_row(tmp_path: Path, after: float):
    script = tmp_path / "killed.py"
    script.write_text(KILLED)
    path = tmp_path / "killed.h5"
    proc = subprocess.Popen(
        [sys.executable, str(script), str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    last, started = 0, None
    try:
        for line in proc.stdout:
            last = int(line)
            started = started or time.monotonic()
            if time.monotonic() - started >= after and last > 64:
                break
        else:
            pytest.fail(f"writer process ended early: {proc.stderr.read()}")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        # the lines printed before the kill, read through proc.stdout: the loop above may
        # have read lines ahead into its buffer, which communicate() (reading the pipe
        # itself) would skip
        for line in proc.stdout:
            last = int(line)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    with h5py.File(path, "r") as f:  # plain h5py opens it
        assert f.attrs["status"] == "running"
    r = load_results(path)
    assert r.status == "running" and r.writer_alive is False
    n = len(r.time)
    assert last <= n <= last + 1  # every flushed row (the kill may follow a flush's print)
    z, vz, _, _ = ball(np.arange(n) * 1e-3)
    assert np.array_equal(r.time, np.arange(n) * 1e-3)
    assert np.array_equal(r.q[:, 0], z) and np.array_equal(r.v[:, 0], vz)
    assert np.array_equal(r.body_pose[:, 0, 2], z)
    assert len(r.diagnostics["time"]) == n


def test_constant_planes_of_other_bytes_or_lengths_are_encoded_as_their_own(tmp_path: Path):
    # A partial chunk's constant byte planes are compressed once per (byte, length) and kept
    # (chunks._constant_stretch): chunks one after the other whose constant planes differ
    # only in their byte value, or only in their length, must each inflate to their own rows
    # and read back through HDF5's filters.
    chunk = 64
    blocks = []
    for rows in (5, 6, 5, 40):
        for top in (0, 1, 0x7F, 0xFF, 1):
            # int64: byte 0 counts, bytes 1-6 zero, byte 7 the constant ``top``
            a = np.arange(rows, dtype=np.int64) | np.int64(top - 256 if top > 127 else top) << 56
            blocks.append(a)
    path = tmp_path / "constant.h5"
    with h5py.File(path, "w") as f:
        for k, a in enumerate(blocks):
            full = np.zeros(chunk, np.int64)
            full[: len(a)] = a
            data = encode(a, chunk)
            assert zlib.decompress(data) == shuffled(full), k
            ds = f.create_dataset(
                f"b{k}", shape=(len(a),), maxshape=(None,), chunks=(chunk,), dtype=np.int64,
                compression="gzip", shuffle=True,
            )  # fmt: skip
            ds.id.write_direct_chunk((0,), data)
    with h5py.File(path, "r") as f:
        for k, a in enumerate(blocks):
            assert np.array_equal(f[f"b{k}"][...], a), k


def test_attributes_written_directly_are_what_h5py_makes(tmp_path: Path):
    # put_attrs creates text and scalar number attributes, set_text overwrites text, through
    # HDF5's low-level calls: each must be what h5py's own item assignment makes
    values = [("f", 0.25), ("f64", np.float64(-3.5)), ("i64", np.int64(7)), ("s", "a text")]
    with h5py.File(tmp_path / "direct.h5", "w") as f, h5py.File(tmp_path / "ref.h5", "w") as ref:
        table_mod.put_attrs(f, values)
        for name, value in values:
            ref.attrs[name] = value
        table_mod.set_text(f, "s", "another, longer text é")
        ref.attrs["s"] = "another, longer text é"
        assert sorted(f.attrs) == sorted(ref.attrs)
        for name in f.attrs:
            a, b = f.attrs.get_id(name), ref.attrs.get_id(name)
            assert a.get_type() == b.get_type() and a.shape == b.shape == (), name
            assert f.attrs[name] == ref.attrs[name] and type(f.attrs[name]) is type(
                ref.attrs[name]
            ), name


def test_all_zero_chunks_read_back_as_zeros_and_negative_zero_stays(tmp_path: Path):
    # A chunk whose every bit is zero is not written (Table._write_chunks): HDF5 reads a
    # chunk never written as the dataset's fill value. The truth: the rows given, bit for
    # bit, read back by plain h5py and load_results, whole chunks and the last partial one.
    table_mod.Table.SEAL_BYTES, seal = 2048, table_mod.Table.SEAL_BYTES
    path = tmp_path / "zeros.h5"
    n = 150  # 2 whole seals of 64 rows, then a partial chunk
    q = np.zeros(n)
    q[64:70] = -0.0  # all zero but the sign bit: must be written
    v = np.zeros(n)
    v[140] = 1e-300
    try:
        with ResultsWriter(path, model_info=INFO, scenario_toml="", dt=1e-3, duration=1.0) as w:
            for k in range(n):
                w.append_state(k * 1e-3, [q[k]], [v[k]], [0.0, 0.0, 0.0])
                w.append_diagnostics(time=k * 1e-3, step=k, solver="none")
                if k in (70, 140):
                    w.flush()
    finally:
        table_mod.Table.SEAL_BYTES = seal
    with h5py.File(path, "r") as f:
        t = f["trajectory"]
        for name, want in (("q", q), ("v", v), ("tau", np.zeros(n)), ("energy", np.zeros(n))):
            got = t[name][:, 0]
            assert got.tobytes() == want.tobytes(), name
        assert np.array_equal(f["diagnostics/solver"][...], np.zeros(n, np.uint8))
        assert np.array_equal(f["diagnostics/lcp_size"][...], np.zeros(n, np.int32))
        # nothing stored for the columns that stayed zero; the -0.0 chunk and v's last are
        assert t["tau"].id.get_num_chunks() == 0
        assert t["q"].id.get_num_chunks() == 1 and t["v"].id.get_num_chunks() == 1
    r = load_results(path)
    assert r.q[:, 0].tobytes() == q.tobytes() and r.v[:, 0].tobytes() == v.tobytes()
    assert np.array_equal(r.tau, np.zeros((n, 1))) and len(r.diagnostics["solver"]) == n


def test_the_zero_test_finds_every_set_bit():
    # table._any_bit (which chunks are written) against the truth of the bytes: every
    # single bit set at every byte of small blocks of each column dtype, and none set
    for dtype, shape in ((np.float64, (5, 3)), (np.int64, (4,)), (np.int8, (3, 7)),
                         (np.uint8, (1,)), (np.float64, (2, 2, 7))):  # fmt: skip
        block = np.zeros(shape, dtype)
        assert not table_mod._any_bit(block)
        raw = block.reshape(-1).view(np.uint8)
        for i in range(raw.size):
            for bit in (0, 7):
                raw[i] = 1 << bit
                assert table_mod._any_bit(block), (dtype, i, bit)
                raw[i] = 0
        assert not table_mod._any_bit(block)


def test_the_chunk_index_order_is_set_and_files_read_the_same_without_it(
    tmp_path: Path, monkeypatch
):
    # writer.ISTORE_K through H5Pset_istore_k (superblock version 1); where the HDF5 library
    # cannot be found the file is created with HDF5's defaults (version 0): the same rows
    import mbsim.io.results.writer as writer_mod

    def write(name):
        path = tmp_path / name
        with ResultsWriter(path, model_info=INFO, scenario_toml="", dt=1e-3, duration=1.0) as w:
            for k in range(300):
                w.append_state(k * 1e-3, [k * 0.5], [1.0], [1.0, 2.0, 3.0])
                w.append_diagnostics(time=k * 1e-3, step=k)
        with h5py.File(path, "r") as f:
            version = f.id.get_create_plist().get_version()[0]
            masks = {f["trajectory/q"].id.get_chunk_info(0).filter_mask}
        return load_results(path), version, masks

    if writer_mod._hdf5_library() is not None:
        r, version, masks = write("k2.h5")
        assert version == 1 and masks == {SKIP_SHUFFLE}
    else:  # no /proc, or not the HDF5 h5py runs on: HDF5's defaults
        r = None
    monkeypatch.setitem(writer_mod._hdf5, "lib", None)
    r0, version0, masks0 = write("default.h5")
    assert version0 == 0 and masks0 == {SKIP_SHUFFLE}
    assert r0.status == "complete" and np.array_equal(r0.q[:, 0], np.arange(300) * 0.5)
    if r is not None:
        assert np.array_equal(r.q, r0.q) and np.array_equal(r.time, r0.time)
