"""One option vocabulary (mbsim.simcore.options): every name the scenario accepts is a name the
simulation core runs, and the scenario refuses a name outside the list.

Expected values: the option names of docs/scenario-format.md, written here by hand.
"""

from __future__ import annotations

import numpy as np
import pytest

from mbsim.io.scenario import ScenarioError, load_scenario_text
from mbsim.simcore import options
from mbsim.simcore.bilateral import CLOSURE_ROWS
from mbsim.simcore.delassus import ALGORITHMS as DELASSUS_REGISTRY
from mbsim.simcore.formulations import FORMULATIONS as FORMULATION_REGISTRY
from mbsim.simcore.lcp import solve_lcp

DOCUMENTED = {
    "formulation": ("os", "rmc", "mc", "nmc", "nmc-os"),
    "solver": ("lemke", "pgs"),
    "integrator": ("euler", "rk4"),
    "dynamics": ("aba", "crba"),
    "delassus": ("upsilon", "pv-osimr", "dense"),
}


def test_the_lists_are_the_documented_ones():
    assert options.FORMULATIONS == DOCUMENTED["formulation"]
    assert options.LCP_SOLVERS == DOCUMENTED["solver"]
    assert options.INTEGRATORS == DOCUMENTED["integrator"]
    assert options.DYNAMICS == DOCUMENTED["dynamics"]
    assert options.DELASSUS == DOCUMENTED["delassus"]
    assert options.DUMP_MODES == ("none", "failures", "all")
    assert options.BASES == ("fixed", "floating")
    assert options.CLOSURE_TYPES == ("ball", "weld", "distance")


def test_the_core_implements_every_name():
    assert tuple(FORMULATION_REGISTRY) == options.FORMULATIONS
    assert tuple(CLOSURE_ROWS) == options.CLOSURE_TYPES
    assert tuple(DELASSUS_REGISTRY) == options.DELASSUS
    # a 1x1 LCP z >= 0, z - 1 >= 0, z (z - 1) = 0: z = 1 by every solver
    for solver in options.LCP_SOLVERS:
        res = solve_lcp(np.eye(1), np.array([-1.0]), solver=solver)
        assert res.z == pytest.approx([1.0]), solver


SCENARIO = """\
[simulation]
{key} = "{value}"

[robot.p]
urdf = "sample:pendulum-3"
"""


@pytest.mark.parametrize("key", sorted(DOCUMENTED))
def test_the_scenario_accepts_each_name_and_refuses_others(key):
    for value in DOCUMENTED[key]:
        s = load_scenario_text(SCENARIO.format(key=key, value=value))
        assert getattr(s.simulation, key) == value
    with pytest.raises(ScenarioError, match=f"simulation.{key}"):
        load_scenario_text(SCENARIO.format(key=key, value="nope"))
