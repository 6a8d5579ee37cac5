"""The formulation contract: every formulation's Solution carries the LCP it solved, with the
layout of 000 Table 1, and the stepper's dump path writes exactly that LCP."""

import numpy as np
import pytest

from mbsim.errors import MbsimError
from mbsim.simcore.formulations import lcp_dimension
from mbsim.simcore.stepper import OSStepper, StepOptions
from test_formulations import FORMS, state_in_contact


def free_unknowns(form, model) -> int:
    """Free (equality) unknowns of each formulation without bilateral rows (000 Table 1)."""
    hinges = 6 * model.nb - model.nv
    return {"os": 0, "rmc": 0, "mc": model.nv, "nmc": 6 * model.nb + hinges,
            "nmc-os": hinges}[form]  # fmt: skip


@pytest.mark.parametrize("form", FORMS)
def test_the_dumped_lcp_is_the_one_solved(form):
    """The (M, q) a Solution carries must be solved by the solver's own answer: M [x; z] + q
    is 0 on the free rows and w >= 0 with z . w = 0 on the rest (checked here from M and q,
    independently of the solver's residual), and its size and free block follow Table 1."""
    model, det, q, v = state_in_contact(4)
    st = OSStepper(model, det, StepOptions(dt=1e-4, mu=0.5, restitution=0.5, formulation=form))
    seen = []
    st.dump_lcps("all", lambda name, M, qv, res, n_free, step, t: seen.append((M, qv, res, n_free)))
    _, _, rep = st.step(q, v, 0.0)
    assert seen, "no LCP reached the dump sink"
    M, qv, res, n_free = seen[-1]
    assert n_free == free_unknowns(form, model)
    assert M.shape[0] == lcp_dimension(form, model.nb, model.nv, 0, rep.n_contacts, 4)
    y = np.concatenate([res.x, res.z])
    r = M @ y + qv
    scale = max(1.0, float(np.max(np.abs(qv))))
    assert np.max(np.abs(r[:n_free]), initial=0.0) < 1e-8 * scale
    w = r[n_free:]
    assert np.min(w) > -1e-8 * scale
    assert np.min(res.z) >= 0.0
    assert abs(float(res.z @ w)) < 1e-8 * scale * max(1.0, float(np.max(res.z)))


def test_rk4_refusal_reads_the_per_contact_friction():
    """rk4 with a per-pair table is refused only when a contact has friction (001 Sec. 4.1):
    a table of mu = 0 runs, a table with mu > 0 is refused naming frictionless contact."""
    model, det, q, v = state_in_contact(3)

    def table(mu):
        return lambda c: (np.full(len(c.gap), mu), np.zeros(len(c.gap)))

    opts = StepOptions(dt=1e-4, mu=0.0, integrator="rk4", pair_params_fn=table(0.0))
    _, _, rep = OSStepper(model, det, opts).step(q, v, 0.0)
    assert rep.n_contacts > 0
    opts = StepOptions(dt=1e-4, mu=0.0, integrator="rk4", pair_params_fn=table(0.3))
    with pytest.raises(MbsimError, match="frictionless"):
        OSStepper(model, det, opts).step(q, v, 0.0)


def test_options_are_fixed_once_held():
    """StepOptions cannot change under the stepper; configure() validates a changed copy."""
    model, det, *_ = state_in_contact(3)
    st = OSStepper(model, det, StepOptions(dt=1e-4, mu=0.0))
    with pytest.raises(AttributeError):
        st.opt.integrator = "rk4"
    with pytest.raises(MbsimError, match="frictionless"):
        st.configure(integrator="rk4", mu=0.5)
    assert st.opt.integrator == "euler" and not st.rk4
    st.configure(integrator="rk4")
    assert st.rk4
