"""Joint actuation: the scenario's joint controllers and a Python controller's torques turned
into the joint forces of each step.

``signals``: target and torque signals of time (constant, waypoints, CSV; linear or C2 cubic).
``actuation``: :class:`~mbsim.control.actuation.Actuators`, the per-step joint forces with the
implicit PD split, gravity compensation by RNEA and the URDF effort limits.
"""

from mbsim import kernel_cache  # noqa: F401  (first: keys the kernels' cache, kernel_cache.py)
from mbsim.control.actuation import Actuators, JointCommand
from mbsim.control.signals import SignalFn

__all__ = ["Actuators", "JointCommand", "SignalFn"]
