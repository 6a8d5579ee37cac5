"""mbsim.Simulator: a scenario made runnable -- model, collision scene, stepper and recording.

    sim = Simulator(load_scenario("scene.toml"))
    summary = sim.run(writer)          # or: for _ in range(n): sim.step()

The simulator owns the state (q, v, t), calls the stepper (simcore/stepper.py) once per step,
turns each step's contacts into events (contact begin/end by the collision module's stable
(pair, feature) identity, impacts, stick/slip transitions) and hands recorded steps to a
:class:`~mbsim.io.results.ResultsWriter`.
"""

from __future__ import annotations

import time as _time
from dataclasses import dataclass, field

import numpy as np

from mbsim.collision.scene import CollisionScene
from mbsim.errors import MbsimError
from mbsim.io.scenario import build_scenario_model
from mbsim.simcore.bilateral import Bilateral, ConstraintError, closures_from_scenario
from mbsim.simcore.data import Data
from mbsim.simcore.dynamics import energy
from mbsim.simcore.joints import FREE
from mbsim.simcore.kinematics import body_poses_kernel, forward_kinematics
from mbsim.simcore.lcp import dump_lcp
from mbsim.simcore.lcp.budget import SolveInterrupted
from mbsim.simcore.lcp.budget import limits as lcp_limits
from mbsim.simcore.stepper import OSStepper, SimulationError, StepOptions, check_rk4_friction

#: Steps between energy divergence checks, and the allowed growth factor (see _check_energy).
ENERGY_CHECK_EVERY = 100
ENERGY_BLOWUP = 100.0


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
    status: str = "complete"
    message: str = ""

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
        }


class Simulator:
    """A runnable scenario. See the module docstring."""

    def __init__(self, scenario):
        # loads every URDF, builds the forest and checks the scenario's names against it
        self.model, _, sc = build_scenario_model(scenario)
        self.scenario = sc
        m = self.model
        c = sc.contact
        # Link references are canonical ``tree/link`` (validate_against_model), with the SRDF
        # pairs already added to disabled_pairs, so the scene gets them as they are.
        self.scene = CollisionScene.from_model(
            m,
            floor=c.floor,
            margin=c.margin,
            pair_margins=[(p.a, p.b, p.margin) for p in c.pairs if p.margin is not None],
            self_collision=c.self_collision,
            disabled_pairs=c.disabled_pairs,
        )
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
        )
        # a scene that can never produce a contact needs no friction check
        if bool(self.scene.allowed.any()):
            _check_rk4(sc)
        self._torque_const, self._pd = self._controls()
        self.data = Data(m)
        self.q, self.v = self._initial_state()
        try:
            self.bilateral = Bilateral(m, closures_from_scenario(m, sc.closures), q0=self.q)
        except ConstraintError as exc:
            raise MbsimError(f"{sc.source or 'the scenario'}: {exc}") from None
        self.stepper = OSStepper(
            m,
            self.scene if self.scene.allowed.any() else None,
            options,
            torque=self._torque if self._has_torque else None,
            bilateral=self.bilateral,
        )
        self.t = 0.0
        self.step_index = 0
        self._active: dict = {}  # contact identity -> (index, sliding) at the last step
        self._prev_contacts = None
        self.lint = list(m.lint) + list(self.scene.notes)

    # ------------------------------------------------------------------ set-up
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
        for i in range(m.nb):
            if m.jtype[i] == FREE:
                quat = q[m.qi[i] + 3 : m.qi[i] + 7]
                n = np.linalg.norm(quat)
                if not n > 0:
                    raise MbsimError(
                        f"robot '{self.model.tree_names[m.tree_of[i]]}': the initial quaternion "
                        f"of joint '{m.joint_names[i]}' is zero"
                    )
                q[m.qi[i] + 3 : m.qi[i] + 7] = quat / n
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
        m = self.model
        tau = np.zeros(m.nv)
        pd = []
        for tree, r in self._robot_trees():
            for name, value in r.torque.items():
                tau[self._index(tree, r, name, "v")] += value
            for name, gain in r.pd.items():
                qi = self._index(tree, r, name, "q")
                vi = self._index(tree, r, name, "v")
                pd.append((qi, vi, gain.target, gain.kp, gain.kd))
        self._has_torque = bool(np.any(tau) or pd)
        return tau, pd

    def _torque(self, t, q, v):
        tau = self._torque_const.copy()
        for qi, vi, target, kp, kd in self._pd:
            tau[vi] += kp * (target - q[qi]) - kd * v[vi]
        return tau

    @property
    def options(self) -> StepOptions:
        """The stepper's options (frozen; ``self.stepper.configure(...)`` changes them)."""
        return self.stepper.opt

    def _contact_params(self, contacts):
        """(mu, restitution) of each contact, from the pair table built at set-up."""
        a, b = contacts.geom_a, contacts.geom_b
        return self._pair_mu[a, b], self._pair_eps[a, b]

    # ------------------------------------------------------------------ stepping
    def step(self):
        """Advance one step; returns the stepper's report."""
        q, v, report = self.stepper.step(self.q, self.v, self.t)
        self.q, self.v = q, v
        self.t = (self.step_index + 1) * self.options.dt
        self.step_index += 1
        return report

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
                if before_finish is not None:
                    before_finish(writer, summary)
                writer.finish(summary.status, summary.message)
            except ResultsError as exc:  # a full disk at the end, or the file taken away
                summary.status, summary.message = "failed", str(exc)
        return summary

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
    ) -> RunSummary:
        """Run the scenario to its duration. ``writer``: a ResultsWriter (or None);
        ``progress(step, n_steps, t, n_contacts)`` is called about every 50 ms of wall time;
        ``should_stop()`` is polled between steps and ends the run early with status
        ``interrupted`` (a signal handler sets it, so no step or write is cut in half).
        ``summary``: filled in place as the run goes (so it still counts what happened when
        the run raises). Raises SimulationError on divergence/LCP failure (the caller records
        the status)."""
        summary = RunSummary() if summary is None else summary
        t_wall = _time.perf_counter()
        try:
            self._run_steps(writer, progress, record_every, should_stop, summary)
        finally:
            summary.sim_time = self.t
            summary.wall_seconds = _time.perf_counter() - t_wall
        return summary

    def _run_steps(self, writer, progress, record_every, should_stop, summary) -> None:
        sc = self.scenario
        n_steps = sc.simulation.n_steps
        every = record_every or sc.output.record_every
        self.attach_lcp_dumps(writer)
        last_progress = 0.0
        self._record(writer, None, summary, every)
        e0 = float(self.energy()[2])
        for _ in range(n_steps):
            if should_stop is not None and should_stop():
                summary.status = "interrupted"
                summary.message = "interrupted by the user (Ctrl-C or SIGTERM)"
                break
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
            summary.energy_gains += sum(
                1 for i in report.impacts if i.energy_after > i.energy_before
            )
            self._record(writer, report, summary, every)
            if self.step_index % ENERGY_CHECK_EVERY == 0:
                self._check_energy(e0)
            if progress is not None:
                now = _time.perf_counter()
                if now - last_progress > 0.05:
                    progress(self.step_index, n_steps, self.t, report.n_contacts)
                    last_progress = now

    def _check_energy(self, e0: float) -> None:
        """Divergence by energy: total energy above E0 + ENERGY_BLOWUP (|E0| + 1 J) stops the
        run. Joint torques can add energy legitimately, so the bound is generous; a numerical
        blow-up grows exponentially and crosses it within a few steps anyway."""
        e = float(self.energy()[2])
        if not e <= e0 + ENERGY_BLOWUP * (abs(e0) + 1.0):
            raise SimulationError(
                f"the total energy grew from {e0:.6g} J to {e:.6g} J by step {self.step_index}, "
                f"t = {self.t:.6g} s: the simulation diverged"
            )

    def _record(self, writer, report, summary, every):
        k = self.step_index
        if report is not None:
            rows, ended = self.events_of(report)
            for row in rows:
                summary.events[row[0]] = summary.events.get(row[0], 0) + 1
            summary.events["contact_end"] = summary.events.get("contact_end", 0) + len(ended)
            if writer is not None:
                self._write_events(writer, report, rows, ended)
        if writer is None or k % every:
            return
        e = self.energy()
        pose = self.body_poses() if self.scenario.output.body_poses else None
        writer.append_state(self.t, self.q, self.v, e, body_pose=pose, step=k)
        if report is None:
            writer.append_diagnostics(time=self.t, step=k)
            return
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
