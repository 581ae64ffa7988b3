"""``DistributedConfig`` and ``DistributedCompiledProgram``: the names a distributed (HOST-level)
program is compiled and run with, where PyPTO's manual imports them from.

``DistributedConfig(device_ids=[0, 1])`` says which devices the world is made of: the world size is
``len(device_ids)``, rank ``r`` runs on ``device_ids[r]``. It goes into
``RunConfig(distributed_config=...)`` or ``pypto.ir.compile(program, distributed_config=...)``,
which then give a ``DistributedCompiledProgram``. That class lives in the runtime (pypto-lang): it
is offered to this module through the entry-point group ``pypto.ir`` (see
:mod:`pypto.ir.extensions`), so that ``isinstance(compiled, DistributedCompiledProgram)`` works
with the name imported from here, while this floor imports nothing above it.

>>> from pypto.ir.distributed_compiled_program import DistributedConfig
>>> DistributedConfig(device_ids=[4, 5]).world_size
2
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pypto.ir.errors import ConfigError
from pypto.ir.extensions import IR
from pypto.ir.tracebacks import call_site

_EXAMPLE = "DistributedConfig(device_ids=[0, 1])"


@dataclass(frozen=True, init=False)
class DistributedConfig:
    """The devices of a distributed run.

    ``device_ids``: the physical device ids, one per rank (distinct ints >= 0, in rank order; they
    need not start at 0 nor be contiguous: rank ``r`` runs on ``device_ids[r]``).
    ``num_sub_workers``: how many host sub-workers run the program's HOST ``SubWorker`` callbacks
    (an int >= 0). A bad value is a :class:`~pypto.ir.ConfigError` with a hint.
    """

    device_ids: tuple[int, ...]
    num_sub_workers: int

    def __init__(self, device_ids: Sequence[int], num_sub_workers: int = 0) -> None:
        object.__setattr__(self, "device_ids", _device_ids(device_ids))
        object.__setattr__(self, "num_sub_workers", _sub_workers(num_sub_workers))

    @property
    def world_size(self) -> int:
        """How many ranks the world has: ``len(device_ids)``."""
        return len(self.device_ids)

    def key(self) -> tuple[Any, ...]:
        """What a compiled program depends on (part of the compile cache key)."""
        return (self.device_ids, self.num_sub_workers)


def _fail(message: str, hint: str) -> ConfigError:
    return ConfigError(message, call_site(), hint)


def _device_ids(given: Any) -> tuple[int, ...]:
    if isinstance(given, (str, bytes)) or not isinstance(given, Sequence):
        raise _fail(
            f"DistributedConfig(device_ids=...) takes a list of device ids, got "
            f"{type(given).__name__} {given!r}",
            f"list one device id per rank: {_EXAMPLE}",
        )
    ids = list(given)
    if not ids:
        raise _fail(
            "DistributedConfig(device_ids=[]) names no device: a world needs at least one rank",
            f"list one device id per rank: {_EXAMPLE}",
        )
    for device in ids:
        if isinstance(device, bool) or not isinstance(device, int):
            raise _fail(
                f"DistributedConfig(device_ids=...) takes ints, got {type(device).__name__} {device!r}",
                f"write the device ids as ints: {_EXAMPLE}",
            )
        if device < 0:
            raise _fail(
                f"DistributedConfig(device_ids={ids}) has the negative device id {device}",
                "device ids are the physical card numbers, >= 0 (e.g. from `--device 4,5`)",
            )
    seen: set[int] = set()
    for device in ids:
        if device in seen:
            raise _fail(
                f"DistributedConfig(device_ids={ids}) names device {device} twice",
                "each rank needs a device of its own: list every device id once",
            )
        seen.add(device)
    return tuple(ids)


def _sub_workers(given: Any) -> int:
    if isinstance(given, bool) or not isinstance(given, int) or given < 0:
        raise _fail(
            f"DistributedConfig(num_sub_workers=...) takes an int >= 0, got {given!r}",
            "give the number of host sub-workers for the program's SubWorker callbacks "
            "(0 when it has none): DistributedConfig(device_ids=[0], num_sub_workers=1)",
        )
    return given


# The runtime's names offered here (pypto-lang's entry points in the group ``pypto.ir``).
OFFERED = ("DistributedCompiledProgram",)


def __getattr__(name: str) -> Any:
    """``DistributedCompiledProgram``, the runtime's class, loaded when first read."""
    if name not in OFFERED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from pypto.ir.compiling import MissingPackageError

    try:
        return IR.get(name)
    except LookupError:
        pass
    try:  # the runtime offers its names when imported; loading pypto.ir.compile imports it
        IR.get("compile")
        return IR.get(name)
    except LookupError:
        raise MissingPackageError(
            f"pypto.ir.distributed_compiled_program.{name} needs pypto-lang, which is not installed",
            call_site(),
            hint="pip install pypto-lang",
        ) from None


__all__ = ["DistributedConfig"]
