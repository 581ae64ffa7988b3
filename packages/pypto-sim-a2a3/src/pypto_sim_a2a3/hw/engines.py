"""Which engine a run's timing uses: the compiled timing core, or the Python reference it mirrors.

The compiled core is two C modules built from source by the package's own build when it is
installed: ``pypto_sim_a2a3.hw._corepipes`` keeps the same state as
:class:`~pypto_sim_a2a3.hw.corepipes.CorePipes` and gives the same results (the same start and ready
cycle per op, the same slices in the same order, the same stall reasons), and
``pypto_sim_a2a3.engine._scheduler`` runs the same event loop as
:class:`~pypto_sim_a2a3.engine.scheduler.Scheduler` (the same steps in the same order, the same
wake-ups, observers and errors). ``SimOptions.engine`` (``PYPTO_SIM_ENGINE``) picks one per run:

- ``auto`` (the default): the compiled core where it was built, else the Python one, with a one-line
  notice (once per process, on stderr through PyPTO's log at ``WARN``) that the install found no
  C compiler;
- ``compiled``: the compiled core, a :class:`~pypto.ir.errors.ConfigError` where it was not built;
- ``python``: the Python reference.

>>> core_pipes_class("python").__module__
'pypto_sim_a2a3.hw.corepipes'
>>> scheduler_class("python").__module__
'pypto_sim_a2a3.engine.scheduler'
"""

from __future__ import annotations

from typing import TypeVar, cast

from pypto.ir import log
from pypto.ir.errors import ConfigError
from pypto_sim_a2a3.engine.scheduler import Scheduler
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

try:
    from pypto_sim_a2a3.engine._scheduler import Scheduler as _CompiledScheduler
except ImportError as missing:
    COMPILED_SCHEDULER: type[Scheduler] | None = None
    WHY_SCHEDULER_MISSING = str(missing)
else:
    # The compiled type mirrors the Python class's interface (the tests hold it to its results).
    COMPILED_SCHEDULER = cast(type[Scheduler], _CompiledScheduler)
    WHY_SCHEDULER_MISSING = ""

T = TypeVar("T")

NOTICE = (
    f"a2a3sim: the compiled timing core is not built (no C compiler when the package was installed); "
    f"simulating on the Python engine: the same cycles, slower ({ENGINE_ENV}=python hides this notice)"
)
_noticed = False  # the notice is given once per process


def compiled_core_built() -> bool:
    """Whether this install has the compiled timing core (both of its modules)."""
    return COMPILED is not None and COMPILED_SCHEDULER is not None


def core_pipes_class(engine: str) -> type[CorePipes]:
    """The class of a core's pipes for ``engine`` (``auto``, ``compiled`` or ``python``)."""
    return _pick(engine, CorePipes, COMPILED, WHY_MISSING)


def scheduler_class(engine: str) -> type[Scheduler]:
    """The class of a run's scheduler for ``engine`` (``auto``, ``compiled`` or ``python``)."""
    return _pick(engine, Scheduler, COMPILED_SCHEDULER, WHY_SCHEDULER_MISSING)


def _pick(engine: str, reference: type[T], compiled: type[T] | None, why: str) -> type[T]:
    """``compiled`` for ``auto`` and ``compiled`` where it was built, else ``reference`` (with the
    notice, or the ConfigError of ``compiled``)."""
    global _noticed
    if engine == "python":
        return reference
    if compiled is not None:
        return compiled
    if engine == "compiled":
        raise ConfigError(
            f"{ENGINE_ENV}=compiled, but the compiled timing core of a2a3sim is not built ({why})",
            None,
            "reinstall pypto-sim-a2a3 where a C compiler is found (from a checkout: `python -m pip "
            f"install -e packages/pypto-sim-a2a3` with gcc or clang on PATH), or set {ENGINE_ENV}=auto "
            "or python to simulate on the Python engine",
        )
    if not _noticed:
        _noticed = True
        log.log(log.LogLevel.WARN, NOTICE)
    return reference
