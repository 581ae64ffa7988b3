"""Every switch of the simulator, in one place: :class:`SimOptions`.

A run reads them once, from the environment and the run's options, and hands the one object down;
no other module reads an environment variable.

=========================  ===========================  =====================================================
field                      environment                  meaning
=========================  ===========================  =====================================================
``engine``                 ``PYPTO_SIM_ENGINE``         ``auto`` (the compiled timing core where it was built,
                                                        else Python), ``compiled`` or ``python``
``replay``                 ``PYPTO_SIM_REPLAY``         later blocks of an spmd launch replay an earlier one
``batch``                  ``PYPTO_SIM_BATCH``          replayed blocks compute their numbers together
``gc_freeze``              ``PYPTO_SIM_GC_FREEZE``      freeze the loaded heap, pace full collections
``check_wakeups``          ``PYPTO_SIM_CHECK_WAKEUPS``  poll every wait too; a missed wake-up is an error
``check_replay``           ``PYPTO_SIM_CHECK_REPLAY``   a block replayed by its control trace also walks for
                                                        its full signature; blocks of one trace must agree
``timing_only``            (``RunConfig(timing_only=)``) model the time, skip the tile values
=========================  ===========================  =====================================================

Boolean variables are off for ``0``, ``off``, ``false`` or ``no`` (any case), on otherwise;
``PYPTO_SIM_CHECK_WAKEUPS`` and ``PYPTO_SIM_CHECK_REPLAY`` are off unless set to something else
(both are checks for the simulator's own tests: they slow a run down).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from pypto.ir.errors import ConfigError

ENGINE_ENV = "PYPTO_SIM_ENGINE"
REPLAY_ENV = "PYPTO_SIM_REPLAY"
BATCH_ENV = "PYPTO_SIM_BATCH"
GC_FREEZE_ENV = "PYPTO_SIM_GC_FREEZE"
CHECK_WAKEUPS_ENV = "PYPTO_SIM_CHECK_WAKEUPS"
CHECK_REPLAY_ENV = "PYPTO_SIM_CHECK_REPLAY"
TIMING_ONLY_OPTION = "timing_only"  # the backend option a RunConfig(timing_only=True) sets

ENGINES = ("auto", "compiled", "python")
_OFF = ("0", "off", "false", "no")


@dataclass(frozen=True)
class SimOptions:
    """``SimOptions.from_env()``: the switches of one run (see the module's table)."""

    engine: str = "auto"
    replay: bool = True
    batch: bool = True
    gc_freeze: bool = True
    check_wakeups: bool = False
    check_replay: bool = False
    timing_only: bool = False

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> SimOptions:
        """The switches the environment sets (``os.environ`` by default)."""
        env = os.environ if environ is None else environ
        engine = env.get(ENGINE_ENV, "auto").strip().lower() or "auto"
        if engine not in ENGINES:
            raise ConfigError(
                f"{ENGINE_ENV}={engine!r} names no simulator engine",
                None,
                f"set {ENGINE_ENV} to one of {', '.join(ENGINES)}, or unset it",
            )
        return cls(
            engine=engine,
            replay=_on(env.get(REPLAY_ENV, "")),
            batch=_on(env.get(BATCH_ENV, "")),
            gc_freeze=_on(env.get(GC_FREEZE_ENV, "")),
            check_wakeups=_checked(env.get(CHECK_WAKEUPS_ENV, "")),
            check_replay=_checked(env.get(CHECK_REPLAY_ENV, "")),
        )

    @classmethod
    def for_run(cls, options: Mapping[str, Any]) -> SimOptions:
        """The environment's switches, with what the run's backend options set."""
        found = cls.from_env()
        if options.get(TIMING_ONLY_OPTION):
            found = replace(found, timing_only=True)
        return found


def _on(value: str) -> bool:
    return value.strip().lower() not in _OFF


def _checked(value: str) -> bool:
    return value.strip().lower() not in ("", *_OFF)
