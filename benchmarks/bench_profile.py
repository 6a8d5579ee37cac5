"""Where a bench_peers scene's run spends its CPU, by compiled function: ``perf`` with numba's
kernels named.

``perf`` sees numba's machine code as anonymous JIT memory. This script compiles every kernel
in its own process (a fresh ``NUMBA_CACHE_DIR``, ``MBSIM_COMPILE_AHEAD=0``: nothing loaded
from a cache, nothing compiled in a helper), so LLVM's modules are at hand: after a warm-up run
it writes ``/tmp/perf-<pid>.map`` (every defined function of every compiled library, at its
address in this process; perf reads the file by itself), then times ``--runs`` runs of the
scene (``bench_peers.mbsim_runner``: ``Simulator.run`` recording every 10 steps and the
results file's ``finish``, as bench_peers times it) with ``perf record -p <pid>`` enabled only
while a run goes (perf's control fifo), so building each simulator and opening its file are
not sampled. Prints the share of samples of each function (functions inlined into a caller
count as the caller) and of each shared object (HDF5, Python, libc, the kernel).

The first run compiles everything (1-2 min on 2 cores). Needs ``perf`` (linux-perf) and
``perf_event_paranoid`` <= 2 for a process of one's own. Numbers go to docs/results.md, never
into tests.

Usage: ``PYTHONPATH=src python benchmarks/bench_profile.py [--scene panda-table] [--runs 60]
[--freq 4999] [--top 40]``.
"""

from __future__ import annotations

import os
import tempfile

# before numba loads: compile here, one BLAS thread (bench_peers' setting)
os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="mbsim-profile-cache-")
os.environ["MBSIM_COMPILE_AHEAD"] = "0"
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import gc  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_peers  # noqa: E402
from scratch import scratch_dir  # noqa: E402


def symbol_name(mangled: str) -> str:
    """numba's mangled name (``_ZN5mbsim7simcore...``) as dotted identifier parts."""
    if not mangled.startswith("_ZN"):
        return mangled
    parts, i = [], 3
    while i < len(mangled) and mangled[i].isdigit():
        j = i
        while mangled[j].isdigit():
            j += 1
        n = int(mangled[i:j])
        parts.append(mangled[j : j + n])
        i = j + n
    return ".".join(p for p in parts if not p.startswith("_3clocals"))


def write_perf_map() -> int:
    """/tmp/perf-<pid>.map for every function numba compiled in this process; returns how many.
    A function's size is the distance to the next address (at most 1 MiB)."""
    from numba.core.registry import CPUDispatcher

    entries = {}
    for obj in gc.get_objects():
        if not isinstance(obj, CPUDispatcher):
            continue
        for cres in list(obj.overloads.values()):
            lib = cres.library
            module = getattr(lib, "_final_module", None)
            if module is None:
                continue
            for fn in module.functions:
                if fn.is_declaration:
                    continue
                addr = lib.get_pointer_to_function(fn.name)
                if addr:
                    entries[addr] = symbol_name(fn.name)
    addrs = sorted(entries)
    with open(f"/tmp/perf-{os.getpid()}.map", "w") as fh:
        for i, a in enumerate(addrs):
            gap = addrs[i + 1] - a if i + 1 < len(addrs) else 4096
            fh.write(f"{a:x} {min(gap, 1 << 20):x} {entries[a]}\n")
    return len(addrs)


class Perf:
    """``perf record -p <this pid>`` started disabled; ``enable``/``disable`` through its
    control fifo (perf 5.9+)."""

    def __init__(self, out: Path, freq: int):
        d = scratch_dir("perf-")
        self.ctl, self.ack = d / "ctl", d / "ack"
        os.mkfifo(self.ctl)
        os.mkfifo(self.ack)
        self.proc = subprocess.Popen(
            ["perf", "record", "-F", str(freq), "-p", str(os.getpid()), "-o", str(out),
             "-D", "-1", "--control", f"fifo:{self.ctl},{self.ack}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        self._ctl = open(self.ctl, "w")  # blocks until perf opens its end
        self._ack = open(self.ack)

    def _say(self, word: str) -> None:
        self._ctl.write(word + "\n")
        self._ctl.flush()
        self._ack.readline()

    def enable(self) -> None:
        self._say("enable")

    def disable(self) -> None:
        self._say("disable")

    def stop(self) -> None:
        self._ctl.close()
        self.proc.send_signal(2)
        self.proc.wait()


def report(data: Path, key: str) -> list[tuple[float, str]]:
    """(percent, name) rows of ``perf report --sort key``, largest first."""
    out = subprocess.run(
        ["perf", "report", "-i", str(data), "--no-children", "--sort", key, "--stdio"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    rows = []
    for line in out.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        pct, _, rest = line.strip().partition("%")
        name = rest.replace("[.]", "").replace("[k]", "").strip()
        rows.append((float(pct), name))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scene", default="panda-table", choices=bench_peers.PANDA_SCENES
                    + bench_peers.MORE_SCENES)  # fmt: skip
    ap.add_argument("--runs", type=int, default=60, help="profiled runs (60)")
    ap.add_argument("--freq", type=int, default=4999, help="samples a second (4999)")
    ap.add_argument("--top", type=int, default=40, help="functions listed (40)")
    args = ap.parse_args()
    if shutil.which("perf") is None:
        sys.exit("bench_profile: needs perf (Debian: linux-perf)")
    scene = args.scene
    panda = scene in bench_peers.PANDA_SCENES
    make = bench_peers.panda_scenario if panda else bench_peers.scene_scenario
    duration = 0.1 if scene == "box-pile" else 1.5

    def runner():
        return bench_peers.mbsim_runner(lambda path: make(scene, duration, path))

    print(f"# {scene}: compiling every kernel in this process ...", file=sys.stderr)
    runner()()
    print(f"# perf map: {write_perf_map()} compiled functions", file=sys.stderr)
    data = scratch_dir("perf-data-") / "perf.data"
    perf = Perf(data, args.freq)
    for _ in range(args.runs):
        go = runner()
        perf.enable()
        go()
        perf.disable()
    perf.stop()
    by_dso = report(data, "dso")
    by_sym = report(data, "sym")
    jit = sum(p for p, name in by_dso if name.startswith("[JIT]"))
    print(f"# {scene}, {args.runs} runs (run + finish), perf -F {args.freq}\n")
    print("| shared object | % of samples |\n|---|---|")
    for p, name in by_dso[:8]:
        print(f"| {'compiled kernels' if name.startswith('[JIT]') else name} | {p:.1f} |")
    print("\n| compiled function | % of samples | % of compiled |\n|---|---|---|")
    listed = [(p, name) for p, name in by_sym if name.startswith(("mbsim.", "NRT_", "cpython."))]
    for p, name in listed[: args.top]:
        print(f"| {name} | {p:.2f} | {100 * p / jit:.1f} |")


if __name__ == "__main__":
    main()
