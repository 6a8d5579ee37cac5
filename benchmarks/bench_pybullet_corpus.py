"""The corpus table of issue 19: every URDF of pybullet_data and example-robot-data dropped onto
the floor in mbsim and in PyBullet (tests/drop_corpus.py says exactly how).

    python benchmarks/bench_pybullet_corpus.py [--rows rows.jsonl] [--only SUBSTRING ...]
        [--corpus pybullet_data example-robot-data] [--markdown]

Per file: nv (floating base), whether mbsim's 1 s drop at dt = 1 ms ran without a solver
failure or divergence, mbsim's steps per second (wall time of the 1000 steps, after a warm-up
drop so numba compilation is not counted), the resting height of the floating link's frame in
mbsim and in PyBullet, and their difference (or why they are not compared). Rows are appended
to ``--rows`` (JSON lines) as they are made, so an interrupted run resumes where it stopped;
``--markdown`` prints the table for docs/results.md. A file that takes more than
``--timeout`` seconds is recorded as such. The files mbsim refuses (tests/
test_urdf_pybullet_corpus.py says why) get a row with the refusal.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import drop_corpus  # noqa: E402


class _Timeout(Exception):
    pass


def corpus_files(which) -> list[tuple[str, Path, Path | None]]:
    """(name in the table, path, PyBullet's mesh search path) for every URDF of the
    corpora."""
    files = []
    if "pybullet_data" in which:
        import pybullet_data

        data = Path(pybullet_data.getDataPath())
        for p in sorted(data.rglob("*.urdf")):
            if "random_urdfs" not in p.parts:
                files.append((p.relative_to(data).as_posix(), p, None))
    if "example-robot-data" in which:
        from pin_oracle import robots_dir

        root = robots_dir()
        for p in sorted(root.rglob("*.urdf")):
            files.append(("erd:" + p.relative_to(root).as_posix(), p, root.parent.parent))
    return files


def one_row(name: str, path: Path, search_path: Path | None, timeout: float) -> dict:
    def alarm(signum, frame):
        raise _Timeout

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(int(timeout))
    t0 = time.perf_counter()
    try:
        if not drop_corpus.bullet_loads(path):
            return {"file": name, "status": "PyBullet does not load it"}
        row = drop_corpus.drop_row(path, name, search_path=search_path)
        return {
            "file": name,
            "status": "ok" if row.ok else "failed",
            "nv": row.nv,
            "message": row.message,
            "steps_per_second": row.steps_per_second,
            "z_mbsim": row.z_mbsim,
            "z_bullet": row.z_bullet,
            "compared": row.compared,
            "seconds": time.perf_counter() - t0,
        }
    except _Timeout:
        return {"file": name, "status": f"timeout ({timeout:.0f} s)"}
    except Exception as exc:  # noqa: BLE001 -- a refused file is a row of the table too
        return {
            "file": name,
            "status": "refused",
            "message": str(exc).replace(str(path), name).splitlines()[0][:160],
        }
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def fmt(x: float, scale: float = 1.0, digits: int = 4) -> str:
    return "-" if x is None or not math.isfinite(x) else f"{x * scale:.{digits}g}"


def markdown(rows: list[dict]) -> str:
    lines = [
        "| file | nv | run ok | steps/s | rest z mbsim (m) | rest z PyBullet (m) | "
        "difference (mm) | note |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        status = r["status"]
        if status not in ("ok", "failed"):
            lines.append(f"| {r['file']} | - | no | - | - | - | - | {status}: "
                         f"{r.get('message', '')} |")  # fmt: skip
            continue
        compared = r["compared"] == "yes" and status == "ok"
        diff = r["z_mbsim"] - r["z_bullet"] if compared else math.nan
        mark = ""
        if compared:
            mark = " **(> 1 cm)**" if abs(diff) > drop_corpus.REST_TOL else ""
        note = r["message"][:120] if status == "failed" else ("" if compared else r["compared"])
        lines.append(
            f"| {r['file']} | {r['nv']} | {'yes' if status == 'ok' else 'no'} | "
            f"{r['steps_per_second']:.0f} | {fmt(r['z_mbsim'])} | "
            f"{fmt(r['z_bullet'])} | {fmt(diff, 1000, 3)}{mark} | {note} |"
        )
    return "\n".join(lines)


def summary(rows: list[dict]) -> str:
    ran = [r for r in rows if r["status"] in ("ok", "failed")]
    ok = [r for r in ran if r["status"] == "ok"]
    compared = [r for r in ok if r["compared"] == "yes"]
    within = [r for r in compared if abs(r["z_mbsim"] - r["z_bullet"]) <= drop_corpus.REST_TOL]
    return (
        f"{len(rows)} files: {len(ran)} run, {len(ok)} without failure; resting height "
        f"compared on {len(compared)}, within {drop_corpus.REST_TOL * 100:.0f} cm on "
        f"{len(within)}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="pybullet_corpus_rows.jsonl")
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--corpus", nargs="*", default=["pybullet_data", "example-robot-data"])
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    rows_path = Path(args.rows)
    done = {}
    if rows_path.exists():
        for line in rows_path.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                done[row["file"]] = row
    files = corpus_files(args.corpus)
    if args.only:
        files = [f for f in files if any(s in f[0] for s in args.only)]
    todo = [f for f in files if f[0] not in done]
    if todo:
        import pybullet_data

        # warm-up: numba compiles the stepper's kernels on the first drop
        drop_corpus.drop_row(Path(pybullet_data.getDataPath()) / "cube_small.urdf", "warm-up")
    for name, path, search_path in todo:
        row = one_row(name, path, search_path, args.timeout)
        done[name] = row
        with rows_path.open("a") as fh:
            fh.write(json.dumps(row) + "\n")
        print(f"{name}: {row['status']} {row.get('message', '')[:100]}", flush=True)
    rows = [done[f[0]] for f in files if f[0] in done]
    print(f"# {platform.processor() or platform.machine()}, Python {platform.python_version()}")
    print(summary(rows))
    if args.markdown:
        print(markdown(rows))


if __name__ == "__main__":
    main()
