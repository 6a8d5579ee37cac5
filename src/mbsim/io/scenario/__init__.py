"""TOML scenario files: what to simulate, resolved into frozen dataclasses.

A scenario names the robots and environments (URDF files), the initial state, the joint forces,
the contact parameters, loop closures, the time stepping and the output; docs/scenario-format.md
is the reference. Units are SI throughout: seconds, metres, radians, kilograms, newtons (joint
forces in N m for revolute joints, N for prismatic ones), m/s^2 for gravity.

Public API (import everything from ``mbsim.io.scenario``):

* :func:`load_scenario` (a file), :func:`load_scenario_text` (TOML text, e.g. the copy stored
  in a results file) and :func:`scenario_from_urdf` (the simple ``mbsim run robot.urdf`` case)
  return a :class:`Scenario` with every default filled in and every path absolute.
* Dotted-key ``overrides`` (``{"contact.mu": 0.2, "robot.pendulum.q0.joint_1": 0.5}``, from
  sweeps or ``--set``) and CLI ``flags`` (``{"dt": 1e-4, "base": "floating"}``, see
  :data:`FLAG_KEYS`) are applied to the raw TOML before validation, so every value goes through
  the same checks and errors name the key. Relative paths given in overrides or flags are
  relative to the current directory (as on any command line); paths in the file are relative to
  the file.
* :meth:`Scenario.to_toml` writes the resolved scenario back as TOML (tomli-w), so a run can be
  repeated exactly from its results file.
* Joint and link names can only be checked against the URDFs: :func:`validate_against_model`
  does it on the built :class:`~mbsim.simcore.model.Model`, :func:`build_scenario_model` loads
  the URDFs, builds the model and validates in one go.

Every problem raises :class:`ScenarioError`: one sentence naming the file (and line where it can
be found), the key, the value and why.

The package, one job per module: ``types`` (dataclasses, defaults, allowed keys), ``keys``
(dotted keys and the error context that finds their line), ``overrides`` (CLI flags and
``--set``/sweep overrides), ``parse`` (TOML -> Scenario, one resolver per section), ``emit``
(Scenario -> TOML) and ``checks`` (names and initial state against the model). The option
vocabularies come from :mod:`mbsim.simcore.options`, the reserved names from :mod:`mbsim.names`.
"""

from mbsim.io.scenario import types as _types
from mbsim.io.scenario.checks import QUAT_NORM_TOL, build_scenario_model, validate_against_model
from mbsim.io.scenario.keys import format_value, split_key
from mbsim.io.scenario.overrides import FLAG_KEYS, ROBOT_FLAGS, parse_value
from mbsim.io.scenario.parse import load_scenario, load_scenario_text, scenario_from_urdf
from mbsim.io.scenario.types import *  # noqa: F403  (dataclasses, ScenarioError)
from mbsim.names import BUILTIN_TREE, WORLD, split_link_ref

__all__ = [
    "BUILTIN_TREE",
    "FLAG_KEYS",
    "QUAT_NORM_TOL",
    "ROBOT_FLAGS",
    "WORLD",
    "build_scenario_model",
    "format_value",
    "load_scenario",
    "load_scenario_text",
    "parse_value",
    "scenario_from_urdf",
    "split_key",
    "split_link_ref",
    "validate_against_model",
    *_types.__all__,
]
