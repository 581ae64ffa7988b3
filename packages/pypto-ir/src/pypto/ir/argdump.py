"""The argument dump between the runtime and a backend (``RunConfig(enable_dump_args=1|2)``).

The runtime hands a backend an :class:`ArgDumpSink` in its run options, under
:data:`DUMP_ARGS_OPTION`; the backend calls ``sink.dump(arg, tensor)`` for each tensor of each task
it is asked to dump: the tensors a task reads before it runs, the tensors it writes after it
(both for one it reads and writes). The sink stores them (the runtime's writes them to disk at
once, so a full dump of a long run holds no more than one tensor in memory); the backend only
decides *what* and *when*. Which arguments of a call are dumped at a level is decided here, once,
for every backend (:func:`dump_slots`):

- level 1: the arguments the program marked, ``dumps=[...]`` on ``pl.submit`` / ``pl.at`` and
  ``pl.dump_tag(t)`` (the call's ``dumps`` attr, names of the orchestration's variables);
- level 2: every tensor argument of every task.

>>> slots = dump_slots(call, kernel, modes, MARKED)  # doctest: +SKIP
>>> arg = DumpedArg(task_id=1, kernel="scale", blocks=1, slot=slots[0], when=BEFORE)  # doctest: +SKIP
>>> sink.dump(arg, x)  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol, runtime_checkable

from pypto.ir.nodes import Call, Function, Var
from pypto.ir.tasks import AccessMode
from pypto.ir.types import TensorType

DUMP_ARGS_OPTION = "dump_args"  # the run option holding the sink (absent: no dump)
OFF, MARKED, FULL = 0, 1, 2  # the levels of RunConfig.enable_dump_args
DUMP_LEVELS = (OFF, MARKED, FULL)
BEFORE, AFTER = "before", "after"  # when a value was taken: before the task ran, after it


class DumpRole(Enum):
    """How a task uses a dumped tensor: it reads it (dumped before the task runs), writes it
    (dumped after), or both (dumped before and after)."""

    input = "input"
    output = "output"
    inout = "inout"

    @classmethod
    def of(cls, mode: AccessMode) -> DumpRole:
        """The role of a tensor a task touches in ``mode`` (an atomic add reads and writes)."""
        if mode is AccessMode.In:
            return cls.input
        if mode is AccessMode.Out:
            return cls.output
        return cls.inout

    @property
    def reads(self) -> bool:
        return self is not DumpRole.output

    @property
    def writes(self) -> bool:
        return self is not DumpRole.input


@dataclass(frozen=True)
class DumpSlot:
    """One argument of a call to dump: its position among the call's arguments, the tensor as the
    orchestration names it, the kernel's parameter and the role."""

    index: int
    tensor: str
    param: str
    role: DumpRole


@dataclass(frozen=True)
class DumpedArg:
    """One dumped value: the task (its id, as the report's ``TaskRecord.task_id``, its kernel and
    how many blocks it ran on: one dump covers them all), the argument, ``when`` it was taken
    (:data:`BEFORE` or :data:`AFTER` the task) and the backend's clock then (modeled cycles)."""

    task_id: int
    kernel: str
    blocks: int
    slot: DumpSlot
    when: str
    cycle: int = 0


@runtime_checkable
class ArgDumpSink(Protocol):
    """Where a backend puts the dumped values of a run; ``level`` is 1 (marked tensors) or 2 (all)."""

    level: int

    def dump(self, arg: DumpedArg, tensor: Any) -> None:
        """Store ``tensor``'s values as they are now (the sink copies them: the backend goes on)."""
        ...


def dump_slots(
    call: Call, kernel: Function, modes: Sequence[AccessMode | None], level: int
) -> tuple[DumpSlot, ...]:
    """The arguments of ``call`` (of ``kernel``, touching its arguments in ``modes``) to dump at
    ``level``: none at 0, the marked ones at 1, every tensor at 2; each tensor once."""
    if level == OFF:
        return ()
    marked = set(call.attrs.get("dumps", ()))
    slots: list[DumpSlot] = []
    seen: set[str] = set()
    for index, (arg, param, mode) in enumerate(zip(call.args, kernel.params, modes, strict=False)):
        if mode is None or not isinstance(param.var.type, TensorType):
            continue
        name = arg.name if isinstance(arg, Var) else param.var.name
        if level == MARKED and not (isinstance(arg, Var) and arg.name in marked):
            continue
        if name in seen:
            continue
        seen.add(name)
        slots.append(DumpSlot(index, name, param.var.name, DumpRole.of(mode)))
    return tuple(slots)


__all__ = [
    "AFTER",
    "BEFORE",
    "DUMP_ARGS_OPTION",
    "DUMP_LEVELS",
    "FULL",
    "MARKED",
    "OFF",
    "ArgDumpSink",
    "DumpRole",
    "DumpSlot",
    "DumpedArg",
    "dump_slots",
]
