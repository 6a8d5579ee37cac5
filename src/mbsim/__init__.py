"""mbsim: a command-line simulator for articulated robots in contact.

The library under the ``mbsim`` command: URDF loading (:mod:`mbsim.io`), the multibody
core and contact dynamics (:mod:`mbsim.simcore`), collision detection (:mod:`mbsim.collision`).
"""

from mbsim.errors import MbsimError

__version__ = "0.1.0"

__all__ = ["MbsimError", "__version__"]
