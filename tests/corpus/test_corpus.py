"""The bad-input corpus (corpus_cases.py) through one shared runner.

Every case runs the real ``mbsim`` executable in a subprocess, in a fresh folder holding its
files, and must end as the README promises for bad input:

- no death by a signal (a native crash), no ``Traceback`` on stderr;
- exit 2 for bad input, 1 for a failed simulation (0 only where the case is valid input);
- exactly one line on stderr, ``mbsim: error: ...`` (``mbsim: failed: ...`` for exit 1), at
  most 1,000 characters, naming the case's ``names`` (the file, key or value at fault); a
  command line that does not parse gets Typer's short usage block instead (README). The note
  ``mbsim: compiling kernels, first run only`` may precede it on a cold numba cache;
- the case's input files unchanged, and no results file left behind that says ``complete``
  (a refused run leaves no file at all).

Cases that are wrong today carry a strict ``xfail`` naming the issue-17 item and its owner; a
fix flips the case to a pass, and the strict mark then fails until it is removed.

``python tests/corpus/test_corpus.py`` prints the corpus counts (cases, clean, tracebacks,
crashes, silently accepted, other) for docs/results.md.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1]))  # tests/: test_results' ball writer

from corpus_cases import CASES, Case  # noqa: E402

MBSIM = Path(sys.executable).with_name("mbsim")
# the code under test: this checkout's, or another branch's (MBSIM_CORPUS_SRC=/path/to/src)
# to see which cases a fix flips before it is merged
SRC = Path(os.environ.get("MBSIM_CORPUS_SRC") or Path(__file__).parents[2] / "src")
COMPILING = "mbsim: compiling kernels"
MAX_LINE = 1000  # characters: an error line is a sentence, not a dump of the input


@dataclass
class Outcome:
    returncode: int
    stdout: str
    stderr: str
    problems: list[str]

    @property
    def category(self) -> str:
        if not self.problems:
            return "clean"
        if self.returncode < 0:
            return "crash"
        if "Traceback" in self.stderr:
            return "traceback"
        if self.returncode == 0:
            return "silently accepted"
        return "other"


@dataclass
class Prepared:
    """A case's input files, written (:func:`prepare`), and what the run must leave alone."""

    work: Path
    kept: dict[str, bytes]
    existed: bool


def prepare(case: Case, root: Path) -> Prepared:
    """Write the case's input files under ``root``. Done in the calling thread, before any
    case's subprocess starts: a results file written here through h5py while another thread
    forks a subprocess can stay locked (HDF5's flock) in the child for a moment, and the
    next open for editing then fails with "unable to lock file" (seen once under load)."""
    work = root / "case"
    work.mkdir(parents=True, exist_ok=True)
    for name, content in case.files.items():
        path = work / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if callable(content):
            content(path)
        elif isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    kept = {name: (work / name).read_bytes() for name in case.keep}
    existed = case.out is not None and (work / case.out).exists()
    return Prepared(work, kept, existed)


def execute(case: Case, prepared: Prepared) -> Outcome:
    """Run the case's command on its prepared files and judge the outcome."""
    work, kept, existed = prepared.work, prepared.kept, prepared.existed
    # the code of this checkout, whatever the caller's PYTHONPATH is relative to
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]))
    try:
        proc = subprocess.run(
            [str(MBSIM), *case.args],
            cwd=work,
            capture_output=True,
            timeout=case.timeout,
            env=env,
        )
    except subprocess.TimeoutExpired:
        return Outcome(0, "", "", [f"no answer within {case.timeout:.0f} s"])
    out = proc.stdout.decode("utf-8", "replace")
    err = proc.stderr.decode("utf-8", "replace")
    return Outcome(proc.returncode, out, err, _problems(case, work, proc.returncode, err, kept,
                                                       existed))  # fmt: skip


def _problems(case, work, rc, err, kept, existed) -> list[str]:
    problems = []
    if rc < 0:
        problems.append(f"died by signal {signal.Signals(-rc).name}")
    if "Traceback" in err:
        problems.append("traceback on stderr")
    want = {"error": 2, "usage": 2, "failed": 1, "ok": 0, "warning": 0}[case.expect]
    if rc != want:
        problems.append(f"exit {rc}, expected {want}")
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith(COMPILING)]
    if case.expect in ("error", "failed"):
        prefix = f"mbsim: {case.expect}: "
        if len(lines) != 1 or not lines[0].startswith(prefix):
            problems.append(f"stderr is not one '{prefix}...' line ({len(lines)} lines)")
        elif len(lines[0]) > MAX_LINE:
            problems.append(f"error line of {len(lines[0])} characters")
        else:
            missing = [n for n in case.names if n not in lines[0]]
            if missing:
                problems.append(f"the line does not name {missing}")
    elif case.expect == "warning":  # accepted, but said before the run: a line naming it
        if not any(all(n in ln for n in case.names) for ln in lines):
            problems.append(f"no stderr line names {list(case.names)}")
    elif case.expect == "usage":
        if "Usage:" not in err or len(lines) > 12:
            problems.append("stderr is not Typer's usage block")
    for name, data in kept.items():
        if not (work / name).exists() or (work / name).read_bytes() != data:
            problems.append(f"{name} was changed or removed")
    if case.out is not None and case.expect not in ("ok", "warning"):
        out = work / case.out
        if case.expect in ("error", "usage") and out.exists() and not existed:
            problems.append(f"a refused run left {case.out}")
        elif out.is_file() and _status(out) == "complete":
            problems.append(f"{case.out} says complete")
    return problems


def _status(path: Path) -> str | None:
    try:
        import h5py

        with h5py.File(path, "r") as h5:
            return str(h5.attrs.get("status"))
    except Exception:  # not HDF5 (e.g. the case's own input): no status
        return None


def _param(case: Case):
    marks = [pytest.mark.xfail(strict=True, reason=case.xfail)] if case.xfail else []
    return pytest.param(case, id=case.id, marks=marks)


@pytest.fixture(scope="module")
def outcomes(request, tmp_path_factory):
    """The selected cases, started together on a small pool (each case is a subprocess that
    mostly waits on imports; running a few at once roughly halves the corpus's wall time).
    Returns case id -> future Outcome."""
    selected = [
        item.callspec.params["case"]
        for item in request.session.items
        if item.originalname == "test_bad_input_is_one_clean_sentence"
    ]
    pool = ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 1))
    prepared = {c.id: prepare(c, tmp_path_factory.mktemp(c.id[:40])) for c in selected}
    futures = {c.id: pool.submit(execute, c, prepared[c.id]) for c in selected}
    yield futures
    pool.shutdown(cancel_futures=True)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_bad_input_is_one_clean_sentence(case: Case, outcomes):
    outcome = outcomes[case.id].result()
    assert not outcome.problems, (outcome.problems, outcome.stderr[-3000:])


def test_case_ids_are_unique():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))


def census(cases=CASES, verbose: bool = True) -> dict[str, int]:
    """Run every case; count the outcomes (clean, traceback, crash, silently accepted, other)."""
    import tempfile

    counts = {"cases": 0, "clean": 0, "traceback": 0, "crash": 0, "silently accepted": 0,
              "other": 0}  # fmt: skip

    def one(item):
        case, prepared = item
        return case, execute(case, prepared)

    with (
        tempfile.TemporaryDirectory() as tmp,
        ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 1)) as pool,
    ):
        items = [(c, prepare(c, Path(tmp) / str(k))) for k, c in enumerate(cases)]
        for case, outcome in pool.map(one, items):
            counts["cases"] += 1
            counts[outcome.category] += 1
            if verbose:
                wrong = (outcome.category == "clean") == bool(case.xfail)
                print(f"{outcome.category:18s} {case.id}: {'; '.join(outcome.problems)}"
                      f"{'  <- unexpected' if wrong else ''}", flush=True)  # fmt: skip
    return counts


if __name__ == "__main__":
    chosen = [c for c in CASES if not sys.argv[1:] or any(a in c.id for a in sys.argv[1:])]
    print(census(chosen))
