"""Whole runs compared bit for bit (shared by the tests of the compiled paths).

A compiled path of the run loop (the free step, the limit step, the contact step, the
compiled loop of steps) claims the same floating-point operations in the same order as the
path it replaces, so a whole run into a results file with it must agree exactly with the
same run without it: every recorded row, event, contact row, diagnostic (but the wall time
of a step) and summary number. :func:`file_run` runs a scenario with some attributes
patched (a path switched off), :func:`assert_same_runs` compares two runs.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from mbsim.simulator import Simulator


def with_output(sc, path):
    """Scenario ``sc`` writing its results to ``path``."""
    out = dataclasses.replace(sc.output, path=path)
    if sc.source is not None and not Path(sc.source).is_file():  # made from text: no file
        return dataclasses.replace(sc, output=out, source=None)
    return dataclasses.replace(sc, output=out)


def file_run(sc, path, monkeypatch, patches=()):
    """(results, summary, simulator) of a whole run of ``sc`` to ``path`` with ``patches``
    ((object, attribute, value) each) set for the run; the run must complete."""
    from mbsim.io.results.reader import load_results

    with monkeypatch.context() as mp:
        for obj, name, value in patches:
            mp.setattr(obj, name, value)
        sim = Simulator(with_output(sc, path))
        summary = sim.run(out=path)
    assert summary.status == "complete", summary.message
    return load_results(path), summary, sim


def assert_same_runs(a, b):
    """Runs ``a`` and ``b`` ((results, summary, ...) each) agree exactly (module docstring)."""
    (ra, sa), (rb, sb) = a[:2], b[:2]
    for name in ("time", "step", "q", "v", "energy", "tau", "tau_limit", "body_pose"):
        np.testing.assert_array_equal(getattr(ra, name), getattr(rb, name), err_msg=name)
    for table in ("events", "contacts", "diagnostics"):
        ta, tb = getattr(ra, table) or {}, getattr(rb, table) or {}
        assert ta.keys() == tb.keys()
        for col in ta:
            if col != "step_seconds":
                np.testing.assert_array_equal(ta[col], tb[col], err_msg=f"{table}/{col}")
    da, db = sa.as_dict(), sb.as_dict()
    for key in ("wall_seconds", "steps_per_second", "real_time_factor"):
        da.pop(key), db.pop(key)
    assert da == db
    np.testing.assert_equal(ra.run_summary, rb.run_summary)  # NaN == NaN there
