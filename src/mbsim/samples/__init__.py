"""Sample robots from the source papers: the Sec. 8 n-link pendulum with its floor-and-wall
environment, and the planar n-body chain of Bhalerao et al. Sec. 3.4.

:mod:`mbsim.samples.generators` writes their URDF text; :mod:`mbsim.samples.catalog` finds
the bundled files (``mbsim/sample_robots``) or generates other sizes into the user cache.
"""

from mbsim.samples.catalog import sample_names, sample_path
from mbsim.samples.generators import (
    chain_urdf,
    ground_urdf,
    pendulum_environment_urdf,
    pendulum_urdf,
    write_bundled_samples,
)

__all__ = [
    "chain_urdf",
    "ground_urdf",
    "pendulum_environment_urdf",
    "pendulum_urdf",
    "sample_names",
    "sample_path",
    "write_bundled_samples",
]
