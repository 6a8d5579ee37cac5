"""A robot with non-convex self-collision mesh pairs whose hulls overlap (meshrej,
docs/results.md): ``mbsim run URDF --floor --base floating --place-on-floor`` as the CLI runs
it, with the run's CPU time (``time.thread_time`` around ``Simulator.run``, the machine is
shared), the steps whose contacts Python's detection found (``CollisionScene.detect`` calls:
the compiled loop's steps never call it) and the pairs FCL was asked for.

Usage: ``PYTHONPATH=src python benchmarks/bench_meshrej.py URDF [--duration 1] [mbsim run
options...]``; the first run of a tree compiles its kernels (run it twice, read the second).
"""

from __future__ import annotations

import sys
import tempfile
import time

from mbsim.collision import fcl_narrow, scene
from mbsim.simulator import Simulator

count = {"run_cpu": 0.0, "detect": 0, "fcl_pair": 0}


def _wrap(cls, name, key, timed=False):
    f = getattr(cls, name)

    def wrapper(*args, **kwargs):
        if timed:
            t0 = time.thread_time()
            try:
                return f(*args, **kwargs)
            finally:
                count[key] += time.thread_time() - t0
        count[key] += 1
        return f(*args, **kwargs)

    setattr(cls, name, wrapper)


def main() -> None:
    _wrap(Simulator, "run", "run_cpu", timed=True)
    _wrap(scene.CollisionScene, "detect", "detect")
    _wrap(fcl_narrow.FclNarrowphase, "pair", "fcl_pair")
    from mbsim.cli.main import main as cli

    args = sys.argv[1:]
    if "--duration" not in args:
        args += ["--duration", "1"]
    with tempfile.TemporaryDirectory() as d:
        sys.argv = ["mbsim", "run", *args, "--floor", "--base", "floating", "--place-on-floor",
                    "-o", f"{d}/r.h5", "--force"]  # fmt: skip
        try:
            cli()
        except SystemExit:
            pass
    print(
        f"run CPU {count['run_cpu']:.3f} s; Python detect calls {count['detect']}; "
        f"FCL pairs {count['fcl_pair']}"
    )


if __name__ == "__main__":
    main()
