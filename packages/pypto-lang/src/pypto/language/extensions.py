"""Names that packages above the language add to ``pl``: ``pl.autotune``, ``pl.Config`` and
``pl.Autotuner`` come from :mod:`pypto.tuning`, which builds on the language and so cannot be
imported by it (see :mod:`pypto.ir.extensions`: the entry-point group ``pypto.language``)."""

from pypto.ir.extensions import Extensions

LANGUAGE = Extensions("pypto.language")
