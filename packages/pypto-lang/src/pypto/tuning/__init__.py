"""pypto.tuning — choosing a kernel's configuration by modeled time, built on the language.

- :mod:`pypto.tuning.autotune`: ``@pl.autotune`` and its ``Autotuner`` (a kernel tuned on its first
  call for each key);
- :mod:`pypto.tuning.sweep`: the trials (``Config``, compiling and simulating one configuration),
  the serial executor, the sweep's report and the on-disk cache of winners;
- :mod:`pypto.tuning.cluster`: running trials on a Dask cluster.

``pl.autotune``, ``pl.Config`` and ``pl.Autotuner`` are these (the language finds them through the
``pypto.language`` entry points, see :mod:`pypto.ir.extensions`).
"""

from pypto.language.extensions import LANGUAGE
from pypto.tuning.autotune import Autotuner, autotune
from pypto.tuning.sweep import Config, TuneError, TuneWarning

LANGUAGE.extend(autotune=autotune, Config=Config, Autotuner=Autotuner)

__all__ = ["Autotuner", "Config", "TuneError", "TuneWarning", "autotune"]
