"""``p2pubsub demo``: the project's main job on an embedded default.

``live``: a small network of real nodes on loopback, driven through their REST API; ``inmemory``: the 2d-tree core on
an in-memory network (no sockets). Both publish stock quotes (``stocks``) and check deliveries against a brute-force
oracle.
"""
