"""The exception hierarchy of mbsim.

Every error a user can cause (bad URDF, bad scenario, bad option) is an :class:`MbsimError`
whose message is one sentence naming the file, the element and the value at fault. The CLI
prints that sentence and exits with code 2; anything else is a bug and shows a traceback.
"""


class MbsimError(Exception):
    """Base class of every error mbsim reports to users as one clear sentence."""


class UrdfError(MbsimError):
    """A URDF file is malformed or describes a robot mbsim cannot simulate."""


class ModelError(MbsimError):
    """A robot description is well-formed but physically unusable (e.g. singular mass matrix)."""


class GeometryError(MbsimError):
    """Collision geometry is missing, unreadable or degenerate."""


class SrdfError(GeometryError):
    """An SRDF file (collision filters) is unreadable or malformed."""
