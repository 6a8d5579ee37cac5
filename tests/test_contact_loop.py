"""Contact steps in the compiled loop of steps (simcore/contact_loop.py) against step by step.

Truth: the step-by-step run loop (every step through ``Simulator.step``: the Python contact
step or the compiled one, contact_fused.py, which tests/test_contact_fused.py checks against
the Python contact step, and ``Simulator.events_of`` / ``_record`` for the events and the
recorded rows). The loop claims the same floating-point operations in the same order and the
same event bookkeeping, so whole runs must agree bit for bit (tests/whole_runs.py): every
recorded q, v, energy, actuator force, contact row (bodies, point, normal, impulses, gap),
event (contact_begin / contact_end / stick / slip / impact, limit events), diagnostic and
the summary. Each test also checks that the loop took the contact steps (its counter), so a
loop that never runs cannot pass. Both runs solve their LCPs cold (``lcp.warm.ENABLED``
False), as tests/test_contact_fused.py does: the compiled contact step has no warm start.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest

from mbsim.bench import pendulum_scenario
from mbsim.io.results.reader import load_results
from mbsim.io.scenario import load_scenario
from mbsim.simcore import free_loop
from mbsim.simcore.free_loop import FreeLoop
from whole_runs import assert_same_runs, file_run, with_output

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(autouse=True)
def _cold_lcps(monkeypatch):
    """Every LCP of these tests from Lemke (module docstring)."""
    from mbsim.simcore.lcp import warm

    monkeypatch.setattr(warm, "ENABLED", False)


def _recorded(sc, every: int):
    """``sc`` recording every ``every`` steps with its contacts."""
    out = dataclasses.replace(sc.output, record_every=every, record_contacts=True)
    return dataclasses.replace(sc, output=out)


def _compare(sc, tmp_path, monkeypatch, min_contact_steps: int):
    """The run in the loop and step by step, compared; returns the loop's run."""
    loop = file_run(sc, tmp_path / "loop.h5", monkeypatch)
    off = [(FreeLoop, "eligible", staticmethod(lambda sim: False))]
    step = file_run(sc, tmp_path / "step.h5", monkeypatch, off)
    taken = loop[2]._free_loop.contact_steps
    assert taken >= min_contact_steps, f"only {taken} contact steps were taken in the loop"
    assert step[2]._free_loop.steps == 0
    assert_same_runs(loop, step)
    return loop


def _assert_same_warm_stores(a_run, b_run, min_accepted: int):
    """The two runs left the same warm-start store (lcp/warm.py): counters, keys in their
    order, sets; more than ``min_accepted`` guesses were kept."""
    a, b = (r[2].stepper.formulation.warm for r in (a_run, b_run))
    assert (a.tried, a.accepted) == (b.tried, b.accepted) and a.accepted > min_accepted
    assert list(a.sets) == list(b.sets)
    for key in a.sets:
        np.testing.assert_array_equal(a.sets[key], b.sets[key])


def _stand(scene: str, duration: float):
    pytest.importorskip("pybullet_data", reason="pybullet is not installed")
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import bench_peers
    finally:
        sys.path.remove(str(BENCHMARKS))
    return bench_peers.scene_scenario(scene, duration, "/dev/null")


@pytest.mark.parametrize("scene", ["a1-stand", "laikago-stand"])
def test_quadruped_standing_bit_for_bit(scene, tmp_path, monkeypatch):
    # benchmarks/bench_peers.py's scenes: a floating base placed on its 4 feet (a1 spheres,
    # laikago convex mesh toes on the floor), joint PD with implicit gains; every step has
    # contacts from the first one, so the loop must take nearly all of them
    sc = _recorded(_stand(scene, 0.15), 7)
    loop = _compare(sc, tmp_path, monkeypatch, min_contact_steps=140)
    res = loop[0]
    kinds = set(res.event_kind_names().tolist())
    assert "contact_begin" in kinds, "the feet's contacts begin in the loop"
    assert len(res.contacts["gap"]) >= 4 * (150 // 7), "4 contacts recorded a row"
    # the loop's contact step record (contact_fused.StepType) is of the type the kernel is
    # compiled for ahead (warmup.contact_job) and ContactFuser.step's records have
    from numba import typeof

    from mbsim.simcore.contact_fused import contact_signature

    stage = loop[2]._free_loop._stage
    assert stage.linked and (typeof(stage._step),) == contact_signature()


def test_panda_table_bit_for_bit(tmp_path, monkeypatch):
    # the hand lands at ~0.156 s at 2.1 m/s (a collision) and stays pressed on the table
    # with 3-4 contacts, its PD saturating some joints at their effort; in two steps a
    # contact impulse moves panda_joint4's implicit PD force across its effort: the loop
    # takes those too (the effort passes and the contact step again, as _general_step), so
    # every step is the loop's
    sc = load_scenario("sample:panda-table.toml", overrides={"simulation.duration": 0.35})
    loop = _compare(_recorded(sc, 3), tmp_path, monkeypatch, min_contact_steps=150)
    assert loop[2]._free_loop.steps == 350


def test_pendulum_contact_phase_bit_for_bit(tmp_path, monkeypatch):
    # the paper's 12-link pendulum (restitution 0.7, mu 0.5) at dt = 1 ms from its free
    # swing into the floor and self contacts from ~2.25 s: 28 collisions (the impact phase in
    # the loop), contacts that persist and end, with free steps between them
    sc = pendulum_scenario(12, "os", 6.0, 1e-3)
    loop = _compare(_recorded(sc, 10), tmp_path, monkeypatch, min_contact_steps=200)
    res = loop[0]
    kinds = set(res.event_kind_names().tolist())
    assert {"contact_begin", "contact_end", "impact"} <= kinds


def test_contact_steps_off_stops_the_loop_at_contact(tmp_path, monkeypatch):
    # the switch the benchmarks use: without contact steps the loop stops at them (the
    # step-by-step path takes them), and the run is the same
    sc = _recorded(_stand("a1-stand", 0.05), 5)
    on = file_run(sc, tmp_path / "on.h5", monkeypatch)
    off = file_run(sc, tmp_path / "off.h5", monkeypatch, [(free_loop, "CONTACT_STEPS", False)])
    assert on[2]._free_loop.contact_steps == 50 and off[2]._free_loop.contact_steps == 0
    assert_same_runs(on, off)


def test_warm_started_run_bit_for_bit(tmp_path, monkeypatch):
    # with the warm start on (lcp/warm.py, the default) in both runs: the loop guesses and
    # remembers the store's active sets as ContactFuser.step does (contact_loop.remember), so
    # the runs agree bit for bit and leave the same store (sets, their order, counters); the
    # step-by-step run here keeps the compiled contact step (the loop stops at contacts)
    from mbsim.simcore.lcp import warm

    monkeypatch.setattr(warm, "ENABLED", True)
    sc = load_scenario("sample:panda-table.toml", overrides={"simulation.duration": 0.35})
    sc = _recorded(sc, 3)
    loop = file_run(sc, tmp_path / "loop.h5", monkeypatch)
    off = [(free_loop, "CONTACT_STEPS", False)]
    step = file_run(sc, tmp_path / "step.h5", monkeypatch, off)
    assert loop[2]._free_loop.contact_steps >= 150 and step[2]._free_loop.contact_steps == 0
    assert_same_runs(loop, step)
    _assert_same_warm_stores(loop, step, min_accepted=100)


def test_progress_counts_the_contacts_of_loop_steps(tmp_path, monkeypatch):
    # the progress callback's contact count after a chunk of loop steps is the last step's,
    # as the step-by-step path reports it: the recorded n_contacts of that step (recording
    # every step; the diagnostics rows are checked against step by step above)
    import types

    from mbsim import simulator
    from mbsim.simulator import Simulator

    # a clock 1 s on at each reading: every chunk is reported (not one per 50 ms)
    clock = types.SimpleNamespace(perf_counter=iter(range(10**6)).__next__)
    monkeypatch.setattr(simulator, "_time", clock)
    sc = _recorded(_stand("a1-stand", 0.05), 1)
    path = tmp_path / "p.h5"
    calls = []
    sim = Simulator(with_output(sc, path))
    summary = sim.run(out=path, progress=lambda *a: calls.append(a))
    assert summary.status == "complete" and sim._free_loop.contact_steps == 50
    res = load_results(path)
    recorded = dict(zip(res.step.tolist(), res.diagnostics["n_contacts"].tolist(), strict=True))
    assert calls and all(nc == recorded[step] for step, _, _, nc in calls), (calls, recorded)
    assert all(nc >= 4 for *_, nc in calls), "the 4 feet are on the floor"


def test_islands_bit_for_bit(tmp_path, monkeypatch):
    # two boxes dropped 5 mm onto the floor, apart: their contacts share no tree, so every
    # contact LCP splits into two islands (lcp/islands.py), which the loop's contact step
    # solves block by block. Truth: the Python chain step by step (no loop, no compiled
    # contact step), warm start on in both (the store's block keys, (n, rows), guessed and
    # remembered as chain._solve_warm does)
    from mbsim.simcore.contact_fused import ContactFuser
    from mbsim.simcore.lcp import warm
    from test_contact_fused import _boxes

    monkeypatch.setattr(warm, "ENABLED", True)
    sc = _boxes(tmp_path, [(0.0, 0.0, 0.0555), (0.5, 0.0, 0.0555)])
    sc = dataclasses.replace(sc, simulation=dataclasses.replace(sc.simulation, duration=0.1))
    sc = _recorded(sc, 10)
    loop = file_run(sc, tmp_path / "loop.h5", monkeypatch)
    python = [
        (FreeLoop, "eligible", staticmethod(lambda sim: False)),
        (ContactFuser, "eligible", staticmethod(lambda stepper: False)),
    ]
    step = file_run(sc, tmp_path / "step.h5", monkeypatch, python)
    assert loop[2]._free_loop.contact_steps >= 60 and step[2].stepper._fused.steps == 0
    assert_same_runs(loop, step)
    a = loop[2].stepper.formulation.warm
    assert all(rows is not None for _, rows in a.sets), "every LCP split into blocks"
    _assert_same_warm_stores(loop, step, min_accepted=60)


def test_slow_loop_calls_are_cut_short_for_a_stop_request(tmp_path, monkeypatch):
    # a stop request (Ctrl-C) is polled between calls of the compiled loop: its first call
    # with contact steps takes at most ENERGY_CHECK_EVERY of them, and after a call whose
    # steps took long (here a clock 1 s on at each reading) the next asks for ~0.1 s of them
    import types

    from mbsim import simulator
    from mbsim.simulator import ENERGY_CHECK_EVERY, Simulator

    clock = types.SimpleNamespace(perf_counter=iter(range(10**6)).__next__)
    monkeypatch.setattr(simulator, "_time", clock)
    sc = _stand("a1-stand", 1.0)  # 1,000 steps, every one with contacts
    polls = []

    def stop():
        polls.append(1)
        return len(polls) >= 3

    sim = Simulator(with_output(sc, tmp_path / "s.h5"))
    summary = sim.run(out=tmp_path / "s.h5", should_stop=stop)
    assert summary.status == "interrupted"
    assert ENERGY_CHECK_EVERY <= summary.steps <= ENERGY_CHECK_EVERY + 10, summary.steps
    assert sim._free_loop.contact_steps == summary.steps
