"""The multibody core: model, kinematics, dynamics, contact and the compiled step."""

from mbsim import kernel_cache  # noqa: F401  (first: keys the kernels' cache, kernel_cache.py)
