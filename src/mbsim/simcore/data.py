"""Data: the per-step workspace of a Model, allocated once.

Every array the kernels write lives here, indexed by body (first axis ``nb``). Spatial
quantities are in each body's own frame (spatial.py conventions):

* ``E``, ``r``: Plücker transform ``Xup`` from the parent body (or world) to the body.
* ``R_world``, ``p_world``: body orientation (body axes in world) and origin position (m).
* ``vel``: body spatial velocity ``[omega; v]``; ``cbias``: velocity-product acceleration
  ``vel x (S qdot)``; ``acc``: spatial acceleration.
* ``IA``, ``pA``: articulated inertia and bias force; ``U = IA S``, ``Dinv = (S^T IA S)^-1``,
  ``u = tau - S^T pA`` (Featherstone's ABA; Jain's P, D, G, tau-bar in 004 Eq. 0.26).
* ``ups``: the compliance kernel Upsilon(k) (000 Eq. 68). The articulated propagator
  ``psi = Xup^T (1 - U Dinv S^T)`` (Jain's psi(parent(k), k) = phi tau-bar, 000 Eq. 67) is
  never stored: kernels apply it from ``E``, ``r``, ``U`` and ``Dinv``.
* ``armature``: a joint-space diagonal added to M wherever it is factorised (ABA, the dense
  CRBA paths); the stepper sets it to dt * damping for implicit joint damping (dynamics.aba).
* ``upsilon_world_ws``, ``pv_osimr_ws``: what the world-frame Upsilon and PV-OSIMr
  (``simcore/delassus/``) keep between calls; None until their first call on this Data.
"""

from __future__ import annotations

import numpy as np


class Data:
    """Preallocated per-step arrays for one :class:`~mbsim.simcore.model.Model`."""

    def __init__(self, model) -> None:
        nb, nv = model.nb, model.nv
        self.S = model.S.copy()  # motion subspaces; free joints' depend on q
        self.E = np.zeros((nb, 3, 3))
        self.r = np.zeros((nb, 3))
        self.R_world = np.zeros((nb, 3, 3))
        self.p_world = np.zeros((nb, 3))
        self.vel = np.zeros((nb, 6))
        self.cbias = np.zeros((nb, 6))
        self.acc = np.zeros((nb, 6))
        self.force = np.zeros((nb, 6))
        self.IA = np.zeros((nb, 6, 6))
        self.pA = np.zeros((nb, 6))
        self.U = np.zeros((nb, 6, 6))
        self.Dinv = np.zeros((nb, 6, 6))
        self.u = np.zeros((nb, 6))
        self.ups = np.zeros((nb, 6, 6))
        self.Ic = np.zeros((nb, 6, 6))
        self.pivots = np.zeros(nv)
        self.qdd = np.zeros(nv)
        self.tau = np.zeros(nv)
        self.M = np.zeros((nv, nv))
        self.armature = np.zeros(nv)
        self.scratch66 = np.zeros((4, 6, 6))
        self.scratch6 = np.zeros((4, 6))
        # Delassus algorithms' workspaces (simcore/delassus), built on their first call
        self.upsilon_world_ws = None  # delassus.upsilon_world.WorldUpsilonWorkspace
        self.pv_osimr_ws = None  # delassus.pv_osimr.PvOsimrWorkspace
