"""Which pipes a run's cores use: the compiled timing core, or the Python reference it mirrors.

The compiled core (``pypto_sim_a2a3.hw._corepipes``, C, built from source by the package's own build
when it is installed) keeps the same state as :class:`~pypto_sim_a2a3.hw.corepipes.CorePipes` and
gives the same results: the same start and ready cycle per op, the same slices in the same order,
the same stall reasons. ``SimOptions.engine`` (``PYPTO_SIM_ENGINE``) picks one per run:

- ``auto`` (the default): the compiled core where it was built, else the Python one, with a one-line
  notice (once per process, on stderr through PyPTO's log at ``WARN``) that the install found no
  C compiler;
- ``compiled``: the compiled core, a :class:`~pypto.ir.errors.ConfigError` where it was not built;
- ``python``: the Python reference.

>>> core_pipes_class("python").__module__
'pypto_sim_a2a3.hw.corepipes'
"""

from __future__ import annotations

from typing import cast

from pypto.ir import log
from pypto.ir.errors import ConfigError
from pypto_sim_a2a3.hw.corepipes import CorePipes
from pypto_sim_a2a3.options import ENGINE_ENV

try:
    from pypto_sim_a2a3.hw._corepipes import CorePipes as _Compiled
except ImportError as missing:  # not built: installed where no C compiler was found
    COMPILED: type[CorePipes] | None = None
    WHY_MISSING = str(missing)
else:
    # The compiled type mirrors the Python class's interface (the tests hold it to its results).
    COMPILED = cast(type[CorePipes], _Compiled)
    WHY_MISSING = ""

NOTICE = (
    f"a2a3sim: the compiled timing core is not built (no C compiler when the package was installed); "
    f"simulating on the Python engine: the same cycles, slower ({ENGINE_ENV}=python hides this notice)"
)
_noticed = False  # the notice is given once per process


def compiled_core_built() -> bool:
    """Whether this install has the compiled timing core."""
    return COMPILED is not None


def core_pipes_class(engine: str) -> type[CorePipes]:
    """The class of a core's pipes for ``engine`` (``auto``, ``compiled`` or ``python``)."""
    global _noticed
    if engine == "python":
        return CorePipes
    if COMPILED is not None:
        return COMPILED
    if engine == "compiled":
        raise ConfigError(
            f"{ENGINE_ENV}=compiled, but the compiled timing core of a2a3sim is not built ({WHY_MISSING})",
            None,
            "reinstall pypto-sim-a2a3 where a C compiler is found (from a checkout: `python -m pip "
            f"install -e packages/pypto-sim-a2a3` with gcc or clang on PATH), or set {ENGINE_ENV}=auto "
            "or python to simulate on the Python engine",
        )
    if not _noticed:
        _noticed = True
        log.log(log.LogLevel.WARN, NOTICE)
    return CorePipes
