"""mbsim.Simulator: a scenario made runnable -- model, collision scene, stepper and recording.

    sim = Simulator.from_file("scene.toml", overrides={"simulation.dt": 1e-4})
    summary = sim.run(controller=f, out="r.h5")   # or: for _ in range(n): sim.step(tau)

docs/python-api.md documents the stable Python surface (from_file, step, q/v/t, the name maps,
run with a controller, the step's contacts).

The simulator owns the state (q, v, t), calls the stepper (simcore/stepper.py) once per step,
turns each step's contacts into events (contact begin/end by the collision module's stable
(pair, feature) identity, impacts, stick/slip transitions) and hands recorded steps to a
:class:`~mbsim.io.results.ResultsWriter`.
"""

from __future__ import annotations

import os
import time as _time
from dataclasses import dataclass, field, replace

import numpy as np

from mbsim.collision.scene import CollisionScene
from mbsim.control import Actuators, JointCommand
from mbsim.errors import MbsimError
from mbsim.io.scenario import build_scenario_model, load_scenario
from mbsim.names import link_ref
from mbsim.simcore.bilateral import (
    MAX_START_ERROR,
    Bilateral,
    ConstraintError,
    closures_from_scenario,
)
from mbsim.simcore.contact_loop import EVENT_NAMES as CONTACT_EVENT_NAMES
from mbsim.simcore.data import Data
from mbsim.simcore.dynamics import energy, rnea
from mbsim.simcore.energy_sources import EnergyGains
from mbsim.simcore.free_loop import DIVERGED as LOOP_DIVERGED
from mbsim.simcore.free_loop import GAIN as LOOP_GAIN
from mbsim.simcore.free_loop import LIMITS as LOOP_LIMITS
from mbsim.simcore.free_loop import FreeLoop, event_poses
from mbsim.simcore.joint_rows import JointLimits
from mbsim.simcore.joints import SPHERICAL
from mbsim.simcore.kinematics import body_poses_kernel, forward_kinematics
from mbsim.simcore.lcp import dump_lcp
from mbsim.simcore.lcp.budget import SolveInterrupted
from mbsim.simcore.lcp.budget import limits as lcp_limits
from mbsim.simcore.stepper import (
    Impact,
    OSStepper,
    SimulationError,
    StepOptions,
    check_rk4_friction,
)
from mbsim.step_result import ContactPoint, Event, StepResult

__all__ = ["ContactPoint", "Event", "RunSummary", "Simulator", "StepResult", "dof_index"]

#: Steps between energy divergence checks, and the allowed growth factor (see _check_energy).
ENERGY_CHECK_EVERY = 100
ENERGY_BLOWUP = 100.0
#: Steps the run loop takes step by step after the compiled loop of free steps could not take
#: one (a contact or a stop near), at most, before it tries the loop again: the first time
#: it could not, the loop is tried again after one step (a collision the loop hands to
#: Python, e.g. an impulse crossing an effort bound, is usually one step: panda-table's
#: landing took 9 steps of ~0.25 ms in Python), then after 2, 4, 8 and FREE_LOOP_WAIT + 1
#: steps while it still cannot. Only speed depends on it.
FREE_LOOP_WAIT = 8
#: The most steps one call of the compiled loop takes (simcore/free_loop.py): the run loop
#: asks for this many at first, ENERGY_CHECK_EVERY steps after a call that stopped early (a
#: contact or a stop may come again soon, at another pace) and, after a call that took them
#: all, this many again, or fewer when that call's pace says they would last longer than
#: LOOP_CALL_SECONDS (doubling from ENERGY_CHECK_EVERY instead made panda-table's run 3
#: calls longer). The run loop polls ``should_stop`` and reports progress between calls.
#: Only speed (and how soon a stop request is seen) depends on it: each call costs ~0.15 ms
#: of Python (the call, its records and events; ~0.25 ms with the contact stage), as much
#: as ~25 Panda steps.
FREE_LOOP_CHUNK = 1600
#: Wall time (s) one call of the compiled loop should last at most: the next call asks for
#: fewer steps than above when the last one's took longer each (contact steps of a large
#: pile take ms), so that a stop request (Ctrl-C) is seen and progress reported about this
#: often. The first call with contact steps asks for ENERGY_CHECK_EVERY steps at most.
LOOP_CALL_SECONDS = 0.1


def dof_index(model, tree: int, name: str, names: tuple[str, ...], first) -> int:
    """Index into q (``names=model.q_names``, ``first=model.qi``) or v of coordinate ``name`` of
    tree ``tree``; KeyError if that tree has none."""
    for i in range(model.nb):
        if model.tree_of[i] != tree:
            continue
        start = first[i]
        count = model.nqj[i] if names is model.q_names else model.nvj[i]
        for k in range(start, start + count):
            if names[k] == name:
                return k
    raise KeyError(name)


@dataclass
class RunSummary:
    """What a run did (for the CLI's summary and --json)."""

    steps: int = 0
    sim_time: float = 0.0
    wall_seconds: float = 0.0
    events: dict = field(default_factory=dict)
    max_penetration: float = 0.0
    max_constraint_error: float = 0.0
    worst_lcp_residual: float = 0.0
    energy_gains: int = 0
    #: per source (impacts, stabilisation, closures): the steps that gained kinetic energy
    #: above the tolerance, their total and the largest gain with its time
    #: (simcore/energy_sources.py)
    energy_sources: EnergyGains = field(default_factory=EnergyGains)
    #: largest |v_k| / URDF velocity limit over the run (not enforced; 0 without limits)
    max_velocity_ratio: float = 0.0
    #: the joint (tree/joint name) where that ratio was reached, "" if none
    max_velocity_joint: str = ""
    saturated_steps: int = 0
    #: steps whose LCP failed with their recovery terms and were solved with them softened
    #: (simcore/stepper.py, "Softened recovery"), and the first one's time (s) and failure
    softened_steps: int = 0
    softened_first: str = ""
    status: str = "complete"
    message: str = ""

    def summary_attrs(self) -> dict:
        """The attributes of the results file's ``/summary`` group (docs/hdf5-format.md): the
        keys of :meth:`as_dict` that are scalars, and the energy gains per source."""
        d = self.as_dict()
        keys = (
            "max_velocity_ratio",
            "max_velocity_joint",
            "effort_saturated_steps",
            "recovery_softened_steps",
            "recovery_softened_first",
        )
        return {**{k: d[k] for k in keys}, **self.energy_sources.as_attrs()}

    @property
    def real_time_factor(self) -> float:
        return self.sim_time / self.wall_seconds if self.wall_seconds > 0 else float("inf")

    def as_dict(self) -> dict:
        return {
            "status": self.status,
            "message": self.message,
            "steps": self.steps,
            "simulated_seconds": self.sim_time,
            "wall_seconds": self.wall_seconds,
            "steps_per_second": self.steps / self.wall_seconds if self.wall_seconds else None,
            "real_time_factor": self.real_time_factor,
            "events": dict(self.events),
            "max_penetration_m": self.max_penetration,
            "max_constraint_error": self.max_constraint_error,
            "worst_lcp_residual": self.worst_lcp_residual,
            "impacts_gaining_energy": self.energy_gains,
            "energy_gained": self.energy_sources.as_dict(),
            "max_velocity_ratio": self.max_velocity_ratio,
            "max_velocity_joint": self.max_velocity_joint,
            "effort_saturated_steps": self.saturated_steps,
            "recovery_softened_steps": self.softened_steps,
            "recovery_softened_first": self.softened_first,
        }


class Simulator:
    """A runnable scenario. See the module docstring."""

    @classmethod
    def from_file(cls, path, overrides=None, **paths) -> Simulator:
        """A Simulator for the scenario file ``path`` (or ``sample:NAME.toml``), with dotted-key
        ``overrides`` ({"simulation.dt": 1e-4, "robot.arm.q0.joint_1": 0.3}) applied first;
        ``paths``: ``package_dirs`` and ``allow_outside_paths`` as for the constructor."""
        return cls(load_scenario(path, overrides), **paths)

    def __init__(self, scenario, *, package_dirs=None, allow_outside_paths=False):
        """``package_dirs`` ({package: folder}) and ``allow_outside_paths`` say where mesh
        files may be read (:func:`mbsim.io.urdf.resolve_mesh_uri`): command-line settings,
        not scenario keys, so a scenario file cannot widen what it may read."""
        self._paths = {"package_dirs": package_dirs, "allow_outside_paths": allow_outside_paths}
        # the initial state's checks (mbsim.start_pose): SRDF beside the URDF, on_floor,
        # overlapping links; their notes join the loader's in self.lint
        start_notes = self._build(scenario)
        sc, m, c = self.scenario, self.model, self.scenario.contact
        self._pair_mu, self._pair_eps = pair_parameter_table(self.scene, c)
        options = StepOptions(
            dt=sc.simulation.dt,
            nf=c.friction_directions,
            mu=c.mu,
            restitution=c.restitution,
            solver=sc.simulation.solver,
            formulation=sc.simulation.formulation,
            pair_params_fn=self._contact_params if c.pairs else None,
            delassus=sc.simulation.delassus,
            dynamics=sc.simulation.dynamics,
            integrator=sc.simulation.integrator,
            gap_floor=_gap_floor(sc),
            energy_consistent_impacts=c.energy_consistent_impacts,
            impact_friction=c.impact_friction,
            friction_axes=c.friction_axes,
            curvature_point=c.curvature_point,
            max_recovery_speed=c.max_recovery_speed,
            lcp_max_seconds=sc.simulation.lcp_max_seconds or None,
        )
        # a scene that can never produce a contact needs no friction check
        if bool(self.scene.allowed.any()):
            _check_rk4(sc)
        self.data = Data(m)
        self._rnea_data = Data(m)
        self.actuators = Actuators(
            m, Data(m), sc.simulation.dt, *self._controls(),
            implicit=sc.simulation.integrator != "rk4",
        )  # fmt: skip
        #: actuator forces applied over the last step (N m or N) and their effort-limit flags
        self.tau = np.zeros(m.nv)
        self.tau_limit = np.zeros(m.nv, dtype=np.int8)
        self._extra_tau = None  # step(tau)'s torques, for that step only
        self._controller = None  # run(controller=f): f(t, q, v, sim) -> tau, every step
        self.q, self.v = self._initial_state()
        try:
            self.bilateral = Bilateral(
                m,
                closures_from_scenario(m, sc.closures),
                q0=self.q,
                max_recovery_speed=sc.contact.max_recovery_speed,
            )
            for closure, error, unit in self.bilateral.start_errors(self.q):
                raise MbsimError(
                    f"{sc.source or 'the scenario'}: {closure.name} starts {error:.3g} {unit} "
                    f"apart at the initial q0 (at most {MAX_START_ERROR:g} {unit} is "
                    "accepted): set q0 or the closure points so that the mechanism starts "
                    "assembled."
                )
        except ConstraintError as exc:
            raise MbsimError(f"{sc.source or 'the scenario'}: {exc}") from None
        self.joint_limits = self._joint_limits()
        from mbsim import start_pose

        files = {t: r.urdf for t, r in self._robot_trees()}
        start_notes += start_pose.limit_notes(m, files, self.joint_limits, self.q)
        start_notes += start_pose.target_notes(m, files, self.joint_limits, self._targets())
        self.stepper = OSStepper(
            m,
            self.scene if self.scene.allowed.any() else None,
            options,
            torque=self._torque,
            bilateral=self.bilateral,
            joint_limits=self.joint_limits,
            effort=self.actuators if self.actuators.saturable else None,
        )
        self._limits_active: set = set()  # (v index, side) of the limits engaged last step
        self._dof_body = None  # (model, the body of each v index): _dof_bodies
        vlim = m.velocity_limit
        self._vlim_dofs = np.flatnonzero(np.isfinite(vlim) & (vlim > 0))
        self.t = 0.0
        self.step_index = 0
        self._active: dict = {}  # contact identity -> (index, sliding) at the last step
        self._prev_contacts = None
        self._free_loop = FreeLoop(self)
        self.lint = list(m.lint) + list(self.scene.notes) + start_notes

    # ------------------------------------------------------------------ set-up
    def _build(self, scenario) -> list[str]:
        """Model, canonical scenario and collision scene, after the start-pose checks of
        :mod:`mbsim.start_pose`; returns their notes."""
        from mbsim import start_pose

        with_srdf, notes = start_pose.srdf_beside(scenario)
        try:
            self._build_model(with_srdf)
        except MbsimError as exc:
            if with_srdf is scenario:
                raise
            # an SRDF nobody asked for must not stop the run: say why it is not used
            notes = [f"the SRDF beside the URDF is not used: {exc}"]
            self._build_model(scenario)
        notes += start_pose.no_floor_notes(self.scenario)
        notes += start_pose.dense_mesh_notes(self.scene)
        notes += start_pose.many_shape_notes(self.scene)
        frames = start_pose.body_frames(self.model, self._initial_state()[0])
        placed = start_pose.placed_on_floor(self.scenario, self.scene, *frames)
        if placed is not None:
            self._build_model(placed)
            frames = start_pose.body_frames(self.model, self._initial_state()[0])
        floor = self.scenario.contact.floor
        notes += start_pose.floor_notes(floor, self.model, self.scene, *frames)
        c = self.scenario.contact
        if c.self_collision and bool(self.scene.allowed.any()):
            overlaps = start_pose.initial_overlaps(self.scene, *frames)
            if overlaps and c.ignore_initial_overlaps:
                start_pose.ignore_pairs(self.scene, overlaps)
            if overlaps:
                notes.append(start_pose.overlap_note(overlaps, c.ignore_initial_overlaps))
        return notes

    def _build_model(self, scenario) -> None:
        # loads every URDF, builds the forest and checks the scenario's names against it
        self.model, _, sc = build_scenario_model(scenario, **self._paths)
        self.scenario = sc
        c = sc.contact
        # Link references are canonical ``tree/link`` (validate_against_model), with the SRDF
        # pairs already added to disabled_pairs, so the scene gets them as they are.
        self.scene = CollisionScene.from_model(
            self.model,
            floor=c.floor,
            margin=c.margin,
            pair_margins=[(p.a, p.b, p.margin) for p in c.pairs if p.margin is not None],
            self_collision=c.self_collision,
            disabled_pairs=c.disabled_pairs,
            mesh_contact=c.mesh_contact,
            mesh_contact_links=c.mesh_contact_links,
            manifold=c.manifold,
            **self._paths,
        )

    def _robot_trees(self):
        """(tree index, Robot) pairs: robots are the first trees of the model, in order."""
        return enumerate(self.scenario.robots)

    def _initial_state(self):
        m = self.model
        q = m.neutral_q()
        v = np.zeros(m.nv)
        for tree, r in self._robot_trees():
            for name, value in r.q0.items():
                q[self._index(tree, r, name, "q")] = value
            for name, value in r.v0.items():
                v[self._index(tree, r, name, "v")] = value
        for i, sl in m.quaternion_slices():
            n = np.linalg.norm(q[sl])
            if not n > 0:
                raise MbsimError(
                    f"robot '{self.model.tree_names[m.tree_of[i]]}': the initial quaternion "
                    f"of joint '{m.joint_names[i]}' is zero"
                )
            q[sl] = q[sl] / n
        return q, v

    def _index(self, tree, robot, name, kind):
        m = self.model
        names, first = (m.q_names, m.qi) if kind == "q" else (m.v_names, m.vi)
        try:
            return dof_index(m, tree, name, names, first)
        except KeyError:
            where = self.scenario.source or robot.urdf
            raise MbsimError(
                f"{where}: robot.{robot.name}.{kind}0 names '{name}', which is not a "
                f"{'coordinate' if kind == 'q' else 'velocity'} of {robot.urdf.name}"
            ) from None

    def _controls(self):
        """(constant joint forces, JointCommand list): ``torque``, ``pd`` (a position control to
        a constant target with v* = 0) and ``control`` of every robot."""
        from mbsim.io.scenario import JointControl, Signal

        m = self.model
        tau = np.zeros(m.nv)
        commands = []
        for tree, r in self._robot_trees():
            for name, value in r.torque.items():
                tau[self._index(tree, r, name, "v")] += value
            pd = {
                j: JointControl("position", target=Signal(g.target), kp=g.kp, kd=g.kd)
                for j, g in r.pd.items()
            }
            for name, c in {**pd, **r.control}.items():
                qi = self._index(tree, r, name, "q")
                vi = self._index(tree, r, name, "v")
                commands.append(JointCommand.from_control(qi, vi, c))
        return tau, commands

    def _targets(self) -> list[tuple]:
        """(tree, joint, v index, Signal) of every position target (``pd`` and ``position``
        controls), for the start notes."""
        from mbsim.io.scenario import Signal

        out = []
        for tree, r in self._robot_trees():
            signals = {j: Signal(g.target) for j, g in r.pd.items()}
            signals.update({j: c.target for j, c in r.control.items() if c.mode == "position"})
            out += [(tree, j, self._index(tree, r, j, "v"), s) for j, s in signals.items()]
        return out

    def _joint_limits(self) -> JointLimits:
        """Joint limits and friction of the model: ``simulation.joint_limits`` and
        ``limit_restitution``, then each robot's ``joint_limits`` table (simcore/joint_rows)."""
        sim, m = self.scenario.simulation, self.model
        balls = {(int(m.tree_of[lim.body]), lim.joint): lim.vi for lim in m.spherical_limits}
        overrides = {}
        for tree, r in self._robot_trees():
            for name, o in r.joint_limits.items():
                k = balls.get((tree, name))  # a spherical joint: its first v index
                k = self._index(tree, r, name, "v") if k is None else k
                overrides[k] = (o.enabled, o.restitution)
        return JointLimits.from_model(
            self.model, limits=sim.joint_limits, restitution=sim.limit_restitution,
            overrides=overrides,
        )  # fmt: skip

    def _torque(self, t, q, v):
        """The stepper's joint-force callback: (tau_e, g) of the actuators (control/actuation)."""
        extra = self._extra_tau
        if self._controller is not None:
            extra = self._checked_tau(self._controller(t, q, v, self), "the controller")
            if self._extra_tau is not None:
                extra = extra + self._extra_tau
        return self.actuators.forces(t, q, v, extra)

    def _checked_tau(self, tau, what: str) -> np.ndarray:
        nv = self.model.nv
        try:
            arr = np.asarray(tau, dtype=float)
        except (TypeError, ValueError):
            raise SimulationError(
                f"{what} returned {type(tau).__name__}, not {nv} numbers"
            ) from None
        if arr.shape != (nv,):
            raise SimulationError(f"{what} returned shape {arr.shape}; expected ({nv},) (nv)")
        if not np.all(np.isfinite(arr)):
            raise SimulationError(f"{what} returned a non-finite joint force at t = {self.t:g} s")
        return arr

    # ------------------------------------------------------------------ names
    @property
    def q_index(self) -> dict[str, int]:
        """Index into ``q`` by coordinate name (``Model.q_names``; ``tree/name`` too)."""
        return self._name_map(self.model.q_names, self.model.qi, "nqj")

    @property
    def v_index(self) -> dict[str, int]:
        """Index into ``v`` and ``tau`` by velocity name (``Model.v_names``; ``tree/name`` too)."""
        return self._name_map(self.model.v_names, self.model.vi, "nvj")

    @property
    def joint_index(self) -> dict[str, int]:
        """Index into ``v`` / ``tau`` of each 1-DoF joint by joint name (and ``tree/joint``)."""
        m = self.model
        out = {}
        for i in range(m.nb):
            if m.nvj[i] == 1:
                name = m.joint_names[i]
                out[f"{m.tree_names[m.tree_of[i]]}/{name}"] = int(m.vi[i])
                out.setdefault(name, int(m.vi[i]))
        return out

    def _name_map(self, names, first, count) -> dict[str, int]:
        m = self.model
        out = {}
        for i in range(m.nb):
            tree = m.tree_names[m.tree_of[i]]
            for k in range(first[i], first[i] + getattr(m, count)[i]):
                out[f"{tree}/{names[k]}"] = k
                out.setdefault(names[k], k)
        return out

    def gravity_torques(self, q=None) -> np.ndarray:
        """RNEA(q, 0, 0) (nv, N m or N): the joint forces that hold configuration ``q`` (default
        the current one) against gravity, for gravity compensation in a controller."""
        q = self.q if q is None else np.asarray(q, dtype=float)
        zero = np.zeros(self.model.nv)
        return rnea(self.model, self._rnea_data, q, zero, zero)

    def body_ref(self, b: int) -> str:
        """``tree/link`` name of body index ``b`` (``world`` for -1)."""
        if b < 0:
            return "world"
        m = self.model
        return link_ref(m.tree_names[m.tree_of[b]], m.body_names[b])

    @property
    def options(self) -> StepOptions:
        """The stepper's options (frozen; ``self.stepper.configure(...)`` changes them)."""
        return self.stepper.opt

    def _contact_params(self, contacts):
        """(mu, restitution) of each contact, from the pair table built at set-up."""
        a, b = contacts.geom_a, contacts.geom_b
        return self._pair_mu[a, b], self._pair_eps[a, b]

    # ------------------------------------------------------------------ stepping
    def step(self, tau=None) -> StepResult:
        """Advance one step; ``tau`` (nv, N m or N, optional): joint forces added to the
        scenario's for this step, clamped with them to the URDF effort. Returns a
        :class:`StepResult` (contacts, events, applied forces, the stepper's report)."""
        self._extra_tau = None if tau is None else self._checked_tau(tau, "step(tau)")
        v0 = self.v
        try:
            q, v, report = self.stepper.step(self.q, self.v, self.t)
        finally:
            self._extra_tau = None
        self.q, self.v = q, v
        self.t = (self.step_index + 1) * self.options.dt
        self.step_index += 1
        a = self.actuators
        self.tau, self.tau_limit = a.applied(v0, v), a.flags.copy()
        rows, ended = self.events_of(report)
        limit_rows = self.limit_events_of(report)
        return StepResult(self, report, rows, ended, self.tau, self.tau_limit, limit_rows)

    def energy(self) -> np.ndarray:
        """[kinetic, potential, total] (J) of the current state."""
        forward_kinematics(self.model, self.data, self.q, self.v)
        return energy(self.model, self.data)

    def body_poses(self) -> np.ndarray:
        """(nb, 7) [x y z qw qx qy qz] of every body (current state; call after energy())."""
        out = np.empty((self.model.nb, 7))
        body_poses_kernel(self.data.R_world, self.data.p_world, out)
        return out

    def events_of(self, report) -> tuple[list, list]:
        """Events of the step just taken: ``rows`` of (kind, contact index[, impact]) for
        contact_begin (by contact identity), stick/slip transitions of persisting contacts and
        impacts, and ``ended``: (previous step's contacts, index) of every contact that ended."""
        c = report.contacts
        if (c is None or not len(c.gap)) and not self._active:  # no contact then or now
            self._prev_contacts = c
            return [], []
        rows = []
        now = {}
        if c is not None and len(c.gap):
            keys = list(zip(c.pair_id.tolist(), c.feature_key.tolist(), strict=True))
            for i, key in enumerate(keys):
                sliding = bool(report.sliding[i]) if len(report.sliding) else False
                now[key] = (i, sliding)
                if key not in self._active:
                    rows.append(("contact_begin", i))
                elif self._active[key][1] != sliding:
                    rows.append(("slip" if sliding else "stick", i))
            for imp in report.impacts:
                rows.append(("impact", imp.index, imp))
        prev = self._prev_contacts
        ended = [(prev, i) for key, (i, _) in self._active.items() if key not in now]
        self._active, self._prev_contacts = now, c
        return rows, ended

    def limit_events_of(self, report) -> list[tuple]:
        """Joint-limit events of the step just taken: (kind, v index, side, impulse, body,
        parent body, point, normal) with kind ``limit_begin`` when a limit starts to act
        (positive impulse this step, not last) and ``limit_end`` when it stops; side +1 =
        lower, -1 = upper limit; body the body the joint moves, point its joint frame origin
        and normal side * the joint axis (world frame, m and 1: the direction the stop pushes
        the joint; for a spherical joint's swing/twist limit the child's body axis x, y or z
        of the row, simcore/spherical_limits.py), at the state after the step."""
        if not len(report.limit_dof) and not self._limits_active:  # no limit then or now
            return []
        rows = self._limit_changes(
            report.limit_dof.tolist(), report.limit_side.tolist(), report.limit_impulse.tolist()
        )
        if not rows:
            return []
        return list(zip(*self._limit_rows(rows, self.q), strict=True))

    def _limit_changes(self, dofs, sides, impulses) -> list[tuple]:
        """The limit_begin / limit_end events (kind, v index, side, impulse) of the step whose
        limit rows are (``dofs``, ``sides``, ``impulses``) (lists in row order): limits
        acting (impulse above LIMIT_IMPULSE_MIN) now and not before, in row order, then those
        acting before and not now; updates the limits acting."""
        now = {}
        for dof, side, p in zip(dofs, sides, impulses, strict=True):
            if p > LIMIT_IMPULSE_MIN:
                now[(dof, side)] = p
        was = self._limits_active
        rows = [("limit_begin", d, s, p) for (d, s), p in now.items() if (d, s) not in was]
        rows += [("limit_end", d, s, 0.0) for d, s in was if (d, s) not in now]
        self._limits_active = set(now)
        return rows

    def _limit_rows(self, rows, q, at=None) -> tuple:
        """Columns (kinds, v indices, sides, impulses, bodies, parent bodies, (k, 3) points,
        (k, 3) normals) of the limit events ``rows`` (:meth:`_limit_changes`'), their
        geometry (:meth:`limit_events_of`) at configuration ``q``, or with ``at`` at
        ``q[at[j]]`` each (q: (n, nq) event rows' q+, in step order). The poses come from the
        Simulator's Data (forward_kinematics' kernel; free_loop.event_poses for many)."""
        m, d = self.model, self.data
        kind, dof, side, p = zip(*rows, strict=True)
        bodies, axes = self._dof_bodies()
        body = [bodies[k] for k in dof]
        P = np.empty((len(rows), 3))
        R = np.empty((len(rows), 3, 3))
        if at is None:
            forward_kinematics(m, d, q)
            P[:] = d.p_world[body]
            R[:] = d.R_world[body]
        else:
            event_poses(
                m.parent, m.jtype, m.qi, m.vi, m.nvj, d.S, m.tree_E, m.tree_r, m.axis, d.E, d.r,
                d.R_world, d.p_world, d.vel, d.cbias, q, np.array(at, np.int64),
                np.array(body, np.int64), np.zeros(m.nv), P, R,
            )  # fmt: skip
        # side * (R @ axis) of each: sides are +-1 (exact), and numpy's batched matmul makes
        # each product as the one-matrix product does
        normal = np.matmul(R, axes[list(dof)][:, :, None])[:, :, 0]
        normal *= np.array(side, np.float64)[:, None]
        return kind, dof, side, p, body, m.parent[body].tolist(), P, normal

    def _dof_bodies(self) -> tuple[list[int], np.ndarray]:
        """The body each v index's joint moves (the last body whose first v index is at most
        it; a list) and the axis of its limit rows ((nv, 3): the joint axis, for a spherical
        joint the child's body axis x, y or z of the v index), made once per model."""
        m = self.model
        if self._dof_body is None or self._dof_body[0] is not m:
            body = np.searchsorted(m.vi, np.arange(m.nv), side="right") - 1
            axes = m.axis[body]
            ball = np.flatnonzero(m.jtype[body] == SPHERICAL)
            axes[ball] = _EYE3[ball - m.vi[body[ball]]]
            self._dof_body = (m, body.tolist(), axes)
        return self._dof_body[1], self._dof_body[2]

    def open_writer(self, command: str, force: bool = False, records=None):
        """A ResultsWriter for this run at ``output.path``: model, scenario text, input file
        hashes and the command line recorded, as ``mbsim run`` and ``mbsim batch`` write it.
        ``records``: extra groups written with the header (group name -> attributes)."""
        from mbsim.io.results import ResultsWriter, model_info
        from mbsim.view.record import record_scene, scene_of

        sc = self.scenario
        scene = scene_of(self.model, sc.contact.floor)  # /visual, for mbsim view
        writer = ResultsWriter(
            sc.output.path,
            model_info=model_info(self.model),
            scenario_toml=sc.to_toml(),
            input_files=sc.input_files(),
            command=command,
            formulation=sc.simulation.formulation,
            dt=sc.simulation.dt,
            duration=sc.simulation.duration,
            force=force,
            record_every=sc.output.record_every,
            body_poses=sc.output.body_poses,
            contacts=sc.output.record_contacts,
            records=records,
        )
        record_scene(writer, scene)
        return writer

    def run_to_file(
        self,
        command: str,
        *,
        force: bool = False,
        records=None,
        progress=None,
        should_stop=None,
        before_finish=None,
    ) -> RunSummary:
        """Run the scenario into its results file (``output.path``), start to end: the one
        run loop of ``mbsim run`` and ``mbsim batch``.

        Opens the writer (:meth:`open_writer`; a file that cannot be created raises
        ResultsError and nothing runs), runs (:meth:`run`; ``progress`` and ``should_stop`` as
        there), calls ``before_finish(writer, summary)`` and closes the file with the status
        the run ended with. Once the run started it never raises (but KeyboardInterrupt): the
        summary's ``status`` is ``complete``, ``interrupted`` or ``failed`` (a SimulationError,
        or the writer failing, e.g. a full disk: the file then says ``failed`` too) with the
        reason in ``message``, and its counts cover every step taken, also when it failed."""
        from mbsim.io.results import ResultsError

        writer = self.open_writer(command, force=force, records=records)
        summary = RunSummary()
        with writer:
            try:
                self.run(writer, progress=progress, should_stop=should_stop, summary=summary)
            except SimulationError as exc:
                summary.status, summary.message = "failed", str(exc)
            except ResultsError as exc:  # the writer already closed its file as failed
                summary.status, summary.message = "failed", str(exc)
                return summary
            try:
                self._write_summary(writer, summary)
                if before_finish is not None:
                    before_finish(writer, summary)
                writer.finish(summary.status, summary.message)
            except ResultsError as exc:  # a full disk at the end, or the file taken away
                summary.status, summary.message = "failed", str(exc)
        return summary

    @staticmethod
    def _write_summary(writer, summary) -> None:
        """The run's velocity-limit ratio and energy gains per source in ``/summary``
        (attributes; docs/hdf5-format.md)."""
        g = writer.group("summary")
        for key, value in summary.summary_attrs().items():
            g.attrs[key] = value

    def attach_lcp_dumps(self, writer) -> None:
        """Send the LCPs ``output.dump_lcp`` asks for to ``/lcp_dumps`` in the results file
        (replay them with ``mbsim.simcore.lcp.load_lcp`` and ``replay``)."""
        mode = self.scenario.output.dump_lcp
        if mode == "none" or writer is None:
            return
        group = writer.group("lcp_dumps")

        def dump(name, M, q, res, n_free, step, time):
            # room first (M, q, z, w, x in float64, attributes): HDF5 must never meet a full
            # disk, a full one fails the run cleanly (mbsim.io.results.target)
            writer.reserve(8 * (np.size(M) + 4 * np.size(q)) + (64 << 10))
            dump_lcp(group, name, M, q, res, nb=n_free, step=step, time=time)

        self.stepper.dump_lcps(mode, dump)

    def run(
        self,
        writer=None,
        progress=None,
        record_every: int | None = None,
        should_stop=None,
        summary: RunSummary | None = None,
        *,
        controller=None,
        out=None,
        force: bool = False,
    ) -> RunSummary:
        """Run the scenario to its duration.

        ``controller``: ``f(t, q, v, sim) -> tau`` (nv joint forces, N m or N), called once
        per step with the state at its start and added to the scenario's joint forces (then
        clamped to the URDF effort). ``out``: write the results file there, exactly as
        ``mbsim run`` does (:meth:`run_to_file`; ``force`` overwrites an existing file); a
        file written with a controller records it in ``/controller`` (``kind = "python"``),
        so ``mbsim run --from`` refuses to replay it. With ``out`` the run never raises
        (but KeyboardInterrupt or the controller's own exceptions): see the summary's status.

        ``writer``: a ResultsWriter (or None);
        ``progress(step, n_steps, t, n_contacts)`` is called about every 50 ms of wall time;
        ``should_stop()`` is polled between steps and ends the run early with status
        ``interrupted`` (a signal handler sets it, so no step or write is cut in half); free
        steps taken by the compiled loop (simcore/free_loop.py) are polled between its calls,
        at most ``FREE_LOOP_CHUNK`` steps apart.
        ``summary``: filled in place as the run goes (so it still counts what happened when
        the run raises). Raises SimulationError on divergence/LCP failure (the caller records
        the status)."""
        previous = self._controller
        if controller is not None:
            self._controller = controller
        try:
            if out is not None:
                return self._run_out(out, controller, force, progress, should_stop)
            summary = RunSummary() if summary is None else summary
            t_wall = _time.perf_counter()
            try:
                self._run_steps(writer, progress, record_every, should_stop, summary)
            finally:
                summary.sim_time = self.t
                summary.wall_seconds = _time.perf_counter() - t_wall
            return summary
        finally:
            self._controller = previous

    def _run_out(self, out, controller, force, progress, should_stop) -> RunSummary:
        from pathlib import Path

        sc = self.scenario
        path = Path(os.path.abspath(os.path.expanduser(os.fspath(out))))
        self.scenario = replace(sc, output=replace(sc.output, path=path))
        records = None
        command = "python: mbsim.Simulator.run"
        if controller is not None:
            name = f"{getattr(controller, '__module__', '?')}.{_qualname(controller)}"
            records = {"controller": {"kind": "python", "name": name}}
            command += f"(controller={name})"
        return self.run_to_file(
            command, force=force, records=records, progress=progress, should_stop=should_stop
        )

    def _run_steps(self, writer, progress, record_every, should_stop, summary) -> None:
        sc = self.scenario
        n_steps = sc.simulation.n_steps
        every = record_every or sc.output.record_every
        self.attach_lcp_dumps(writer)
        last_progress = 0.0
        e = self._record(writer, None, summary, every)
        # the energy of the state the run starts from (the first row's when it recorded one:
        # the same kernels on the same state)
        e0 = float((self.energy() if e is None else e)[2])
        loop = self._free_loop
        poses = bool(sc.output.body_poses)
        wait = 0  # steps before the compiled loop is tried again (after it could not start)
        misses = 0  # calls in a row that could not start (FREE_LOOP_WAIT)
        budget = FREE_LOOP_CHUNK  # steps the next call of the compiled loop may take
        bound = self._energy_bound(e0)
        done = 0
        while done < n_steps:
            if should_stop is not None and should_stop():
                summary.status = "interrupted"
                summary.message = "interrupted by the user (Ctrl-C or SIGTERM)"
                break
            if wait:
                wait -= 1
            elif loop.ready():
                # free steps in one compiled call (simcore/free_loop.py), recording and
                # checking the energy as it goes
                chunk = min(n_steps - done, budget)
                if loop.link_early():
                    # the contact stage linked before the first contact (an earlier run of
                    # this process compiled its contact step): contact steps may cost ms
                    # each (a box pile), a short first call as after the first contact
                    chunk = min(chunk, ENERGY_CHECK_EVERY)
                t0 = _time.perf_counter()
                args = (
                    chunk, summary, every if writer is not None else 0, poses,
                    ENERGY_CHECK_EVERY, bound,
                )  # fmt: skip
                n = loop.advance(*args)
                if not n and loop.retry:  # the first contact: taken with the contact stage
                    # contact steps may cost ms each (a box pile): a short first call
                    chunk = min(chunk, ENERGY_CHECK_EVERY)
                    t0 = _time.perf_counter()
                    n = loop.advance(chunk, *args[1:])
                budget = FREE_LOOP_CHUNK if n == chunk else ENERGY_CHECK_EVERY
                if n:
                    misses = 0
                    # a call lasts about LOOP_CALL_SECONDS at most at the steps' pace
                    per_step = (_time.perf_counter() - t0) / n
                    if per_step * budget > LOOP_CALL_SECONDS:
                        budget = max(1, int(LOOP_CALL_SECONDS / per_step))
                    done += n
                    summary.steps += n
                    # _record counts the ended contacts of every step, none here: the key
                    # exists after any step
                    summary.events["contact_end"] = summary.events.get("contact_end", 0)
                    self._loop_events(loop.events, writer, summary, loop.contact_events)
                    steps, qs, vs, es, ps, taus, flags, lcp = loop.records
                    if len(steps):
                        writer.append_free_steps(
                            steps * self.options.dt, steps, qs, vs, es, ps,
                            step_seconds=(_time.perf_counter() - t0) / n, tau=taus,
                            tau_limit=flags, lcp=lcp,
                        )  # fmt: skip
                    if loop.contact_records is not None and writer is not None:
                        self._write_loop_contacts(writer, *loop.contact_records)
                    if loop.why == LOOP_DIVERGED:  # the loop checked: the error is raised here
                        self._check_energy(e0)
                    if progress is not None:
                        now = _time.perf_counter()
                        if now - last_progress > 0.05:
                            # the loop leaves the last step's contacts where the
                            # step-by-step path keeps them (None: that step had none)
                            nc = 0 if self._prev_contacts is None else len(self._prev_contacts)
                            progress(self.step_index, n_steps, self.t, nc)
                            last_progress = now
                    continue
                # the next step needs the step-by-step path; near a contact or a stop the
                # loop cannot take the following ones likely too: try the loop again after a
                # few steps
                wait = min(FREE_LOOP_WAIT, (1 << misses) - 1)
                misses += 1
            done += 1
            try:
                # the LCP solvers poll the flag too: a signal stops even a long step
                with lcp_limits(stop=should_stop):
                    report = self.step()
            except SolveInterrupted:  # the step was abandoned whole: the state is the last one
                summary.status = "interrupted"
                summary.message = "interrupted by the user (Ctrl-C or SIGTERM) during a step"
                break
            summary.steps += 1
            summary.max_penetration = max(summary.max_penetration, report.max_penetration)
            summary.max_constraint_error = max(
                summary.max_constraint_error, report.constraint_error
            )
            summary.worst_lcp_residual = max(summary.worst_lcp_residual, report.lcp_residual)
            if report.impacts:
                summary.energy_gains += sum(
                    1 for i in report.impacts if i.energy_after > i.energy_before
                )
            summary.energy_sources.add_step(report, self.t, lambda: float(self.energy()[0]))
            self._velocity_ratio(summary)
            if report.recovery_scale != 1.0:
                summary.softened_steps += 1
                if not summary.softened_first:
                    summary.softened_first = (
                        f"t = {self.t:.6g} s, recovery x {report.recovery_scale:g} after: "
                        f"{report.softened_reason}"
                    )
            self._record(writer, report, summary, every)
            if self.step_index % ENERGY_CHECK_EVERY == 0:
                self._check_energy(e0)
            if progress is not None:
                now = _time.perf_counter()
                if now - last_progress > 0.05:
                    progress(self.step_index, n_steps, self.t, report.n_contacts)
                    last_progress = now

    def _loop_events(self, events, writer, summary, contacts=None) -> None:
        """The events and summary entries of the compiled loop's event rows
        (``FreeLoop.events``, simcore/free_loop.py), each as the step-by-step run loop makes
        them for its step: the energy gains (``EnergyGains.add_step``, the kinetic energy at
        the step's end as :meth:`energy` computes it) and the limit_begin / limit_end events
        (:meth:`limit_events_of`), counted and written at the step's time; and the loop's
        contact event rows (``FreeLoop.contact_events``: :meth:`events_of`'s, simcore/
        contact_loop.py), written with them in step order."""
        dt = self.options.dt
        rows, at, times, steps = [], [], [], []
        e_step, e_kind, e_n, e_dof, e_side, e_imp, e_gain, e_q, e_v = events
        shares = e_gain.tolist()
        # each table as lists at once (a row's first n entries sliced from them): one call
        # each instead of three a row
        dofs, sides, imps = e_dof.tolist(), e_side.tolist(), e_imp.tolist()
        for i, (step, kind, n) in enumerate(
            zip(e_step.tolist(), e_kind.tolist(), e_n.tolist(), strict=True)
        ):
            t = step * dt
            if kind & LOOP_GAIN:
                gains = _Shares(*shares[i])
                summary.energy_sources.add_step(gains, t, lambda i=i: self._kinetic(e_q[i], e_v[i]))
            if kind & LOOP_LIMITS:
                new = self._limit_changes(dofs[i][:n], sides[i][:n], imps[i][:n])
                for row in new:
                    summary.events[row[0]] = summary.events.get(row[0], 0) + 1
                rows += new
                at += [i] * len(new)
                times += [t] * len(new)
                steps += [step] * len(new)
        # the events' geometry, all at once (at the step-by-step path's state after each:
        # the Data then holds the last one's kinematics, as there)
        limits = self._limit_rows(rows, e_q, at) if rows and writer is not None else None
        if contacts is not None:
            ci, cf = contacts
            kind = [CONTACT_EVENT_NAMES[k] for k in ci[:, 1].tolist()]
            p, tangent = cf[:, 6].copy(), cf[:, 7:10].copy()
            for r, name in enumerate(kind):
                summary.events[name] = summary.events.get(name, 0) + 1
                if name == "impact":  # Impact.records' split of the collision's impulse
                    (imp,) = Impact.records([r], cf[:, 7:10], cf[:, 3:6], cf[:, 10], cf[:, 11],
                                            float(cf[r, 12]), float(cf[r, 13]))  # fmt: skip
                    p[r], tangent[r] = imp.normal_impulse, imp.tangent_impulse
                    summary.energy_gains += imp.energy_after > imp.energy_before
        if writer is None:
            return
        if contacts is None:  # the rows of every step in one call
            if limits is not None:
                self._write_limit_events(writer, limits, times, steps)
            return
        body_a, body_b, point, normal = ci[:, 2], ci[:, 3], cf[:, 0:3], cf[:, 3:6]
        vb, va, eb, ea, at = cf[:, 10], cf[:, 11], cf[:, 12], cf[:, 13], ci[:, 0]
        if limits is not None:  # the limit rows, all in step order: in a step, after its
            # contact rows (a contact step with limit rows; _record writes a step's events so)
            lk, _dof, _side, lp, lb, lpar, lpt, ln = limits
            kind = kind + list(lk)
            body_a = np.concatenate([body_a, np.array(lb, np.int64)])
            body_b = np.concatenate([body_b, np.array(lpar, np.int64)])
            point = np.concatenate([point, np.array(lpt)])
            normal = np.concatenate([normal, np.array(ln)])
            p = np.concatenate([p, np.array(lp, np.float64)])
            tangent = np.concatenate([tangent, np.zeros((len(rows), 3))])
            nan = np.full(len(rows), np.nan)
            vb, va = np.concatenate([vb, nan]), np.concatenate([va, nan])
            eb, ea = np.concatenate([eb, nan]), np.concatenate([ea, nan])
            at = np.concatenate([at, np.array(steps, np.int64)])
            order = np.argsort(at, kind="stable")
            kind = [kind[i] for i in order]
            body_a, body_b, point = body_a[order], body_b[order], point[order]
            normal, p, tangent, at = normal[order], p[order], tangent[order], at[order]
            vb, va, eb, ea = vb[order], va[order], eb[order], ea[order]
        writer.append_events(
            time=at * dt, step=at, kind=kind, body_a=body_a, body_b=body_b, point=point,
            normal=normal, normal_impulse=p, tangent_impulse=tangent,
            normal_velocity_before=vb, normal_velocity_after=va, energy_before=eb,
            energy_after=ea,
        )  # fmt: skip

    def _write_loop_contacts(self, writer, ci, cf) -> None:
        """The compiled loop's recorded contact rows (``FreeLoop.contact_records``), as
        :meth:`_record` writes a recorded step's contacts."""
        writer.append_contacts(
            time=ci[:, 0] * self.options.dt, step=ci[:, 0], body_a=ci[:, 1], body_b=ci[:, 2],
            point=cf[:, 0:3], normal=cf[:, 3:6], normal_impulse=cf[:, 6],
            tangent_impulse=cf[:, 7:10], normal_velocity_before=np.nan,
            normal_velocity_after=np.nan, gap=cf[:, 10],
        )  # fmt: skip

    def _kinetic(self, q, v) -> float:
        """The kinetic energy (J) at (q, v), as :meth:`energy` computes it for the state."""
        forward_kinematics(self.model, self.data, q, v)
        return float(energy(self.model, self.data)[0])

    def _velocity_ratio(self, summary) -> None:
        """Track the largest |v_k| / velocity limit (URDF ``<limit velocity>``): velocity
        limits are reported, not enforced (as in MuJoCo, PyBullet and Drake). The compiled
        loop of free steps tracks it with the same rule (simcore/free_loop.py)."""
        k = self._vlim_dofs
        if not len(k):
            return
        ratio = np.abs(self.v[k]) / self.model.velocity_limit[k]
        j = int(np.argmax(ratio))
        if ratio[j] > summary.max_velocity_ratio:
            self._velocity_ratio_at(summary, float(ratio[j]), int(k[j]))

    def _velocity_ratio_at(self, summary, ratio: float, dof: int) -> None:
        """A new largest velocity-limit ratio ``ratio``, reached at v index ``dof``."""
        summary.max_velocity_ratio = ratio
        body = int(np.searchsorted(self.model.vi, dof, side="right") - 1)
        tree = self.model.tree_names[self.model.tree_of[body]]
        summary.max_velocity_joint = f"{tree}/{self.model.v_names[dof]}"

    @staticmethod
    def _energy_bound(e0: float) -> float:
        """The largest total energy (J) :meth:`_check_energy` accepts in a run started at
        ``e0``."""
        return e0 + ENERGY_BLOWUP * (abs(e0) + 1.0)

    def _check_energy(self, e0: float) -> None:
        """Divergence by energy: total energy above E0 + ENERGY_BLOWUP (|E0| + 1 J) stops the
        run. Joint torques can add energy legitimately, so the bound is generous; a numerical
        blow-up grows exponentially and crosses it within a few steps anyway."""
        e = float(self.energy()[2])
        if not e <= self._energy_bound(e0):
            raise SimulationError(
                f"the total energy grew from {e0:.6g} J to {e:.6g} J by step {self.step_index}, "
                f"t = {self.t:.6g} s: the simulation diverged"
            )

    def _record(self, writer, result, summary, every):
        """The step's events and summary counts, and its recorded row when it has one
        (``every``); returns the row's energy (:meth:`energy`), else None."""
        k = self.step_index
        report = None if result is None else result.report
        if report is not None:
            rows, ended = result._rows, result._ended
            limit_rows = result._limit_rows
            summary.saturated_steps += bool(result.tau_limit.any())
            for row in rows + limit_rows:
                summary.events[row[0]] = summary.events.get(row[0], 0) + 1
            summary.events["contact_end"] = summary.events.get("contact_end", 0) + len(ended)
            if writer is not None:
                self._write_events(writer, report, rows, ended)
                if limit_rows:
                    self._write_limit_events(writer, list(zip(*limit_rows, strict=True)))
        if writer is None or k % every:
            return None
        e = self.energy()
        pose = self.body_poses() if self.scenario.output.body_poses else None
        writer.append_state(
            self.t, self.q, self.v, e, body_pose=pose, step=k,
            tau=self.tau if report is not None else None,
            tau_limit=self.tau_limit if report is not None else None,
        )  # fmt: skip
        if report is None:
            writer.append_diagnostics(time=self.t, step=k)
            return e
        c = report.contacts
        if c is not None and len(c.gap):
            writer.append_contacts(
                time=self.t, step=k, body_a=c.body_a, body_b=c.body_b,
                point=0.5 * (c.point_a + c.point_b), normal=c.normal,
                normal_impulse=report.normal_impulse, tangent_impulse=report.tangent_impulse,
                normal_velocity_before=np.nan, normal_velocity_after=np.nan, gap=c.gap,
            )  # fmt: skip
        # the diagnostics row last: it ends the step's records, and the writer flushes only
        # between steps (a killed run leaves /trajectory and /diagnostics of one length)
        writer.append_diagnostics(
            time=self.t,
            step=k,
            lcp_size=report.lcp_size,
            lcp_pivots=report.lcp_pivots,
            lcp_residual=report.lcp_residual,
            n_contacts=report.n_contacts,
            max_penetration=report.max_penetration,
            constraint_error=report.constraint_error,
            step_seconds=report.step_seconds,
            solver=report.solver or "none",
        )
        return e

    def _write_limit_events(self, writer, limits, t=None, step=None) -> None:
        """limit_begin / limit_end events, as the columns of :meth:`_limit_rows`, of the step
        ``step`` that ended at ``t`` (s; the current one when None; or one of each a row,
        lists), in one call: normal_impulse the limit impulse of the step (N m s or N s; 0 at
        limit_end), no tangent impulse, velocities NaN."""
        kind, _dof, _side, p, body, parent, point, normal = limits
        writer.append_events(
            time=self.t if t is None else t, step=self.step_index if step is None else step,
            kind=list(kind), body_a=body, body_b=parent, point=np.array(point),
            normal=np.array(normal),
            normal_impulse=p, tangent_impulse=np.zeros(3), normal_velocity_before=np.nan,
            normal_velocity_after=np.nan,
        )  # fmt: skip

    def _write_events(self, writer, report, rows, ended):
        c = report.contacts
        k = self.step_index
        for row in rows:
            kind, i = row[0], row[1]
            imp = row[2] if kind == "impact" else None
            writer.append_events(
                time=self.t, step=k, kind=kind, body_a=c.body_a[i], body_b=c.body_b[i],
                point=0.5 * (c.point_a[i] + c.point_b[i]), normal=c.normal[i],
                normal_impulse=imp.normal_impulse if imp else report.normal_impulse[i],
                tangent_impulse=imp.tangent_impulse if imp else report.tangent_impulse[i],
                normal_velocity_before=imp.normal_velocity_before if imp else np.nan,
                normal_velocity_after=imp.normal_velocity_after if imp else np.nan,
                energy_before=imp.energy_before if imp else np.nan,
                energy_after=imp.energy_after if imp else np.nan,
            )  # fmt: skip
        for old, i in ended:
            writer.append_events(
                time=self.t, step=k, kind="contact_end", body_a=old.body_a[i],
                body_b=old.body_b[i], point=0.5 * (old.point_a[i] + old.point_b[i]),
                normal=old.normal[i], normal_impulse=0.0, tangent_impulse=np.zeros(3),
                normal_velocity_before=np.nan, normal_velocity_after=np.nan,
            )  # fmt: skip


@dataclass
class _Shares:
    """The energy shares (J) of a step the compiled loop took (``EnergyGains.add_step`` reads
    a StepReport's): a joint-limit step has no closure rows."""

    energy_impacts: float
    energy_stabilisation: float
    energy_closures: float = 0.0


#: The rows of a spherical joint's limit axes (the child's body axes x, y, z: limit_events_of)
_EYE3 = np.eye(3)
_EYE3.flags.writeable = False

#: A limit row's impulse (N m s or N s) above which the limit acts (limit_begin/limit_end):
#: Lemke's non-basic unknowns are exact zeros, PGS's a few ulps of the impulse scale.
LIMIT_IMPULSE_MIN = 1e-12


def _qualname(f) -> str:
    return getattr(f, "__qualname__", None) or type(f).__qualname__


#: Default g_Neps (m) with integrator = "rk4": 001 Sec. 4.1 caps the penetration the LCP may
#: correct at the order of the first-order scheme's own penetration error, 1e-5 m there.
RK4_GAP_FLOOR = -1e-5


def _gap_floor(sc):
    """contact.gap_floor, or the rk4 default; None = the Euler stepper's stabilisation rule."""
    if sc.contact.gap_floor is not None:
        return sc.contact.gap_floor
    return RK4_GAP_FLOOR if sc.simulation.integrator == "rk4" else None


def _check_rk4(sc) -> None:
    """Refuse rk4 with friction anywhere (stepper.check_rk4_friction), naming the scenario
    key."""
    frictions = [("contact.mu", sc.contact.mu)]
    frictions += [(f"contact.pairs.{i}.mu", p.mu) for i, p in enumerate(sc.contact.pairs)]
    check_rk4_friction(sc.simulation.integrator, frictions, sc.source or "the scenario")


def pair_parameter_table(scene, contact) -> tuple[np.ndarray, np.ndarray]:
    """(mu, restitution) for every pair of the scene's shapes, (n_shapes, n_shapes) each,
    symmetric: the global ``contact.mu`` / ``contact.restitution`` overwritten by each
    ``contact.pairs`` entry (``tree/link`` names, later entries win) for the shapes of its two
    links. Built once, so each step's look-up is one fancy index."""
    n = scene.n_shapes
    mu = np.full((n, n), contact.mu)
    eps = np.full((n, n), contact.restitution)
    for i, p in enumerate(contact.pairs):
        ia = scene.shapes_of(p.a, f"contact.pairs.{i}.a")
        ib = scene.shapes_of(p.b, f"contact.pairs.{i}.b")
        for table, value in ((mu, p.mu), (eps, p.restitution)):
            if value is not None:
                table[np.ix_(ia, ib)] = value
                table[np.ix_(ib, ia)] = value
    return mu, eps
