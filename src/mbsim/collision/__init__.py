"""Collision detection: URDF shapes -> contacts (points, normals, gaps) for the stepper.

See :mod:`mbsim.collision.scene` for the entry point and docs/collision.md for the methods.
"""

from mbsim import kernel_cache  # noqa: F401  (first: keys the kernels' cache, kernel_cache.py)
from mbsim.collision.scene import CollisionScene, Contacts

__all__ = ["CollisionScene", "Contacts"]
