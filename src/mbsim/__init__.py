"""mbsim: a command-line simulator for articulated robots in contact.

The library under the ``mbsim`` command: URDF loading (:mod:`mbsim.io`), the multibody
core and contact dynamics (:mod:`mbsim.simcore`), collision detection (:mod:`mbsim.collision`).
"""

from mbsim.errors import MbsimError

__version__ = "0.1.0"


def __getattr__(name):
    # Lazy: importing mbsim must stay cheap (the CLI imports it for --version).
    if name == "Simulator":
        from mbsim.simulator import Simulator

        return Simulator
    if name == "load_results":
        from mbsim.io.results import load_results

        return load_results
    raise AttributeError(f"module 'mbsim' has no attribute {name!r}")


__all__ = ["MbsimError", "Simulator", "__version__", "load_results"]
