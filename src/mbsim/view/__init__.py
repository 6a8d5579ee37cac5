"""``mbsim view``: replay a results file in 3D (docs/view.md).

``visuals`` reads URDF ``<visual>`` elements; ``record`` stores the scene in the results file's
``/visual`` group at run time and reads it back; ``replay`` gathers what a replay shows (poses,
meshes, events, contacts) within the frame and face budgets; ``html`` writes the self-contained
page (three.js vendored in ``vendor/``, player in ``viewer.js``); ``glb`` the animated glTF.
"""
