"""The reference engine: a program from its launch to its report.

The host orchestration submits tasks (:mod:`.host`, :mod:`.taskgraph`, :mod:`.runtime_rings`); the
chip dispatches their blocks to core groups (:mod:`.chip`, :mod:`.launch`); each core walks its
kernel (:mod:`.interpreter`, its calls decoded once by :mod:`.decode`, their numbers by
:mod:`.semantics`, the cross-core ops by :mod:`.crosscore`) under one discrete-event
:mod:`.scheduler`; :mod:`.timeline` keeps what the report shows.
"""
