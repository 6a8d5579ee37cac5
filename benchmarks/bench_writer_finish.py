"""The results writer's fixed cost on bench_peers' scenes: opening the file and finishing it.

For each scene (``--scenes``, default panda-free and a1-stand, built as
``benchmarks/bench_peers.py`` builds mbsim's runs: its scenario, ``Simulator.open_writer``,
``Simulator.run`` recording every 10 steps), ``--repeat`` runs (default 20, after one warm-up
run): the thread CPU time and the wall time of ``open_writer`` and of ``ResultsWriter.finish``
(what bench_peers' clock includes: the run's 151 recorded rows encoded and written, the tails
deleted, the status set, the file closed and its disk reservation given back). Medians and
minima in ms. ``--stages`` also splits the finish's thread CPU time into its steps (the
writer's internals wrapped with timers: ``write_sealed`` (every column's ``set_extent`` and
chunks), of which ``_write_chunks`` (the zero test, the encoding and ``write_direct_chunk``), of
which ``encode_last``; each HDF5 flush, the counters, the tails' deletion, ``_set_final`` (the
status and end attributes, the close, the release), of which h5py's close and the release of
the reservation).

Thread CPU time is the number to compare on a loaded machine: wall time there is mostly
waiting for a core (two cores, ~8 runnable processes: wall ~3x CPU). Usage:
``python benchmarks/bench_writer_finish.py [--scenes panda-free a1-stand] [--repeat 20]
[--stages]``. Results go to docs/results.md; nothing here is asserted by tests.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections import defaultdict  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
import bench_peers as bp  # noqa: E402

STEPS = 1500  # bench_peers' panda_speed at its default --panda-duration (1.5 s at 1 ms)


def scenario(scene: str, path: str):
    """bench_peers' mbsim scenario for ``scene`` writing to ``path``."""
    if scene in bp.PANDA_SCENES:
        sc = bp.panda_scenario(scene, STEPS * bp.PANDA_DT, path)
    else:
        sc = bp.scene_scenario(scene, STEPS * bp.PANDA_DT, path)
    sc = dataclasses.replace(sc, contact=dataclasses.replace(sc.contact, manifold=bp.MANIFOLD))
    if sc.source is not None and not Path(sc.source).is_file():
        sc = dataclasses.replace(sc, source=None)
    return sc


class Stages:
    """Thread CPU time of the finish's steps, summed per finish (``--stages``)."""

    def __init__(self) -> None:
        import h5py

        import mbsim.io.results.chunks as chunks
        import mbsim.io.results.table as table
        import mbsim.io.results.target as target
        import mbsim.io.results.writer as writer

        self.now: dict[str, float] = defaultdict(float)
        self.runs: list[dict[str, float]] = []
        self.flushes = 0
        wrap = self.wrap
        table._chunks.encode = wrap("encode", chunks.encode)
        if hasattr(chunks, "encode_last"):  # the last, partial chunks (the finish's)
            table._chunks.encode_last = wrap("encode_last", chunks.encode_last)
        table.Table.write_sealed = wrap("write_sealed (all)", table.Table.write_sealed)
        table.Table._write_chunks = wrap("_write_chunks", table.Table._write_chunks)
        table.Table.mark_sealed = wrap("mark_sealed", table.Table.mark_sealed)
        table.Table.delete_tail = wrap("delete_tail", table.Table.delete_tail)
        table.Table.commit = wrap("commit", table.Table.commit)
        target.FileClaim.reserve = wrap("reserve (fallocate)", target.FileClaim.reserve)
        target.FileClaim.release = wrap("release (ftruncate)", target.FileClaim.release)
        writer.ResultsWriter._set_final = wrap("_set_final", writer.ResultsWriter._set_final)
        h5py.File.close = wrap("h5py close", h5py.File.close)
        flush = h5py.File.flush

        def numbered_flush(f):
            self.flushes += 1
            return wrap(f"h5py flush {self.flushes}", flush)(f)

        h5py.File.flush = numbered_flush

    def wrap(self, name, fn):
        def timed(*args, **kwargs):
            c0 = time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.now[name] += time.thread_time() - c0

        return timed

    def start(self) -> None:
        self.now = defaultdict(float)
        self.flushes = 0

    def stop(self) -> None:
        self.runs.append(dict(self.now))

    def report(self) -> str:
        names = list(dict.fromkeys(k for run in self.runs for k in run))
        return "\n".join(
            f"    {n:22s} {statistics.median(r.get(n, 0.0) for r in self.runs) * 1e3:6.2f} ms"
            for n in names
        )


def measure(scene: str, repeat: int, stages: Stages | None) -> dict:
    from mbsim.simulator import Simulator

    tmp = tempfile.mkdtemp(prefix="mbsim-bench-finish-")
    rows = defaultdict(list)
    for k in range(repeat + 1):
        sim = Simulator(scenario(scene, str(Path(tmp) / f"run{k}.h5")))
        c0, w0 = time.thread_time(), time.perf_counter()
        writer = sim.open_writer("bench_writer_finish", force=True)
        c1, w1 = time.thread_time(), time.perf_counter()
        sim.run(writer, record_every=10)
        if stages is not None and k:
            stages.start()
        c2, w2 = time.thread_time(), time.perf_counter()
        writer.finish()
        c3, w3 = time.thread_time(), time.perf_counter()
        if stages is not None and k:
            stages.stop()
        if k:  # the first run warms caches (numba, zlib's tables, HDF5's free lists)
            for key, value in (
                ("open_cpu", c1 - c0), ("open_wall", w1 - w0),
                ("finish_cpu", c3 - c2), ("finish_wall", w3 - w2),
            ):  # fmt: skip
                rows[key].append(value * 1e3)
    return rows


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenes", nargs="+", default=["panda-free", "a1-stand"])
    ap.add_argument("--repeat", type=int, default=20, help="timed runs per scene (20)")
    ap.add_argument("--stages", action="store_true", help="split the finish into its steps")
    args = ap.parse_args(argv)
    print(f"# {time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} CPUs, load "
          f"{os.getloadavg()[0]:.1f}; median (min) of {args.repeat} runs, ms")  # fmt: skip
    for scene in args.scenes:
        stages = Stages() if args.stages else None
        rows = measure(scene, args.repeat, stages)
        text = ", ".join(
            f"{key.replace('_', ' ')} {statistics.median(v):.2f} ({min(v):.2f})"
            for key, v in rows.items()
        )
        print(f"{scene}: {text}")
        if stages is not None:
            print("  finish, thread CPU by step (median):\n" + stages.report())


if __name__ == "__main__":
    main()
