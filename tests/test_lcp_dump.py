"""HDF5 dump and replay of a step's LCP."""

import json

import h5py
import numpy as np
import pytest

from mbsim.simcore.lcp import (
    DUMP_MODES,
    Status,
    dump_lcp,
    load_lcp,
    replay,
    should_dump,
    solve_lcp,
    solve_mixed_lcp,
)


def test_round_trip_of_a_failed_standard_lcp(tmp_path):
    M = np.array([[1.0, -1.0], [-1.0, 1.0]])
    q = np.array([-1.0, -1.0])  # infeasible: the chain fails
    r = solve_lcp(M, q, pgs_max_iter=20)
    assert r.status == Status.FAILED
    path = tmp_path / "run.h5"
    with h5py.File(path, "w") as f:
        g = f.create_group("lcp_dumps")
        dump_lcp(g, "step_000042", M, q, r, step=42, time=0.42)
    with h5py.File(path, "r") as f:
        grp = f["lcp_dumps/step_000042"]
        for name in ("M", "q", "z", "w", "x"):
            assert "units" in grp[name].attrs and "description" in grp[name].attrs
        assert json.loads(grp.attrs["attempts"])[0]["status"] == "ray_termination"
        d = load_lcp(f["lcp_dumps"], "step_000042")
    np.testing.assert_array_equal(d.M, M)
    np.testing.assert_array_equal(d.q, q)
    np.testing.assert_array_equal(d.result.z, r.z)
    np.testing.assert_array_equal(d.result.w, r.w)
    assert d.nb == 0 and d.step == 42 and d.time == 0.42
    assert d.result.status == Status.FAILED and d.result.solver == r.solver
    assert d.result.pivots == r.pivots and d.result.residual == r.residual
    assert [a.label() for a in d.result.attempts] == [a.label() for a in r.attempts]
    assert d.result.describe(42) == r.describe(42)
    again = replay(d, pgs_max_iter=20)
    assert again.status == Status.FAILED
    np.testing.assert_array_equal(again.z, r.z)


def test_round_trip_and_replay_of_a_mixed_lcp(tmp_path):
    rng = np.random.default_rng(4)
    B = rng.standard_normal((7, 7))
    M = B @ B.T + np.eye(7)
    q = rng.standard_normal(7)
    r = solve_mixed_lcp(M, q, nb=2)
    assert r.ok
    with h5py.File(tmp_path / "d.h5", "w") as f:
        dump_lcp(f, "s1", M, q, r, nb=2, units={"z": "N s"})
        d = load_lcp(f, "s1")
        assert f["s1/z"].attrs["units"] == "N s"
        assert f["s1/M"].attrs["units"].startswith("mixed")
    assert d.nb == 2 and d.step is None and d.time is None
    np.testing.assert_array_equal(d.result.x, r.x)
    assert d.result.eq_residual == r.eq_residual and d.result.tol == r.tol
    again = replay(d)
    assert again.ok
    np.testing.assert_allclose(again.x, r.x, rtol=0, atol=0)
    np.testing.assert_allclose(again.z, r.z, rtol=0, atol=0)
    # replay with the other solver, e.g. to compare
    other = replay(d, solver="pgs", chain=False)
    assert other.solver == "pgs"


def test_existing_group_needs_overwrite(tmp_path):
    M, q = np.eye(2), -np.ones(2)
    r = solve_lcp(M, q)
    with h5py.File(tmp_path / "d.h5", "w") as f:
        dump_lcp(f, "a", M, q, r)
        with pytest.raises(ValueError, match="already exists"):
            dump_lcp(f, "a", M, q, r)
        dump_lcp(f, "a", 2 * M, q, r, overwrite=True)
        np.testing.assert_array_equal(load_lcp(f, "a").M, 2 * M)


def test_load_rejects_other_groups(tmp_path):
    with h5py.File(tmp_path / "d.h5", "w") as f:
        f.create_group("not_an_lcp")
        with pytest.raises(ValueError, match="not an mbsim LCP dump"):
            load_lcp(f, "not_an_lcp")


def test_should_dump_modes():
    good = solve_lcp(np.eye(2), -np.ones(2))
    bad = solve_lcp(np.array([[-1.0]]), np.array([-1.0]), chain=False)
    assert DUMP_MODES == ("none", "failures", "all")
    assert [should_dump(m, good) for m in DUMP_MODES] == [False, False, True]
    assert [should_dump(m, bad) for m in DUMP_MODES] == [False, True, True]
    with pytest.raises(ValueError, match="dump_lcp must be one of"):
        should_dump("some", good)
