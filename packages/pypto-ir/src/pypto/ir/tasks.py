"""The task graph's vocabulary: how one kernel call (one task) touches each tensor argument.

Every ``call`` in a lowered orchestration function is a task. ``DeriveTaskDependencies`` gives it
``attrs["access"]``, one :class:`AccessMode` per argument (None for a scalar); a runtime orders two
tasks that touch one tensor when their modes :meth:`~AccessMode.conflicts`.

>>> AccessMode.In.conflicts(AccessMode.In), AccessMode.In.conflicts(AccessMode.Out)
(False, True)
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from pypto.ir.types import Direction


class AccessMode(Enum):
    """How a task touches a tensor: reads it, overwrites it, both, or only adds into it atomically."""

    In = "In"
    Out = "Out"
    InOut = "InOut"
    Accumulate = "Accumulate"  # pl.assemble(..., atomic=pl.AtomicType.Add) and nothing else

    def __repr__(self) -> str:
        return self.name

    @classmethod
    def of(cls, direction: Direction) -> AccessMode:
        """The mode a parameter's direction implies."""
        return cls(direction.value)

    def conflicts(self, other: AccessMode) -> bool:
        """Whether two tasks touching one tensor in these modes must run in order: anything but two
        readers, or two tasks that both only accumulate (atomic adds commute)."""
        return not (self is other and self in (AccessMode.In, AccessMode.Accumulate))

    def join(self, other: AccessMode) -> AccessMode:
        """The mode of a task that touches one tensor both ways (e.g. through two arguments)."""
        return self if self is other else AccessMode.InOut

    @property
    def writes(self) -> bool:
        return self is not AccessMode.In


# The comparisons a dispatch predicate may make, by the Python operator that writes them.
PREDICATE_COMPARISONS: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    ">": operator.gt,
    "<": operator.lt,
    ">=": operator.ge,
    "<=": operator.le,
}


@dataclass(frozen=True)
class Predicate:
    """``predicate=(row_count[e] > 0)`` of a task: one comparison of one tensor element with an
    int, evaluated by the scheduler when the task is dispatched (after its dependencies), not by
    the orchestration. False: the task is retired without running; its dependents still proceed.

    ``tensor`` and the variable ``indices`` name variables of the orchestration function (an int
    index is a constant), as a kernel call's ``deps`` do.

    >>> p = Predicate("row_count", ("e",), ">", 0)
    >>> str(p), p.holds(3)
    ('row_count[e] > 0', True)
    """

    tensor: str
    indices: tuple[str | int, ...]
    cmp: str
    value: int

    def __post_init__(self) -> None:
        if self.cmp not in PREDICATE_COMPARISONS:
            raise ValueError(
                f"a predicate compares with one of {', '.join(PREDICATE_COMPARISONS)}, got {self.cmp!r}"
            )

    def holds(self, element: Any) -> bool:
        """Whether the element read at dispatch satisfies the comparison."""
        return bool(PREDICATE_COMPARISONS[self.cmp](element, self.value))

    def names(self) -> tuple[str, ...]:
        """The variables the predicate reads: the tensor, then its variable indices."""
        return (self.tensor, *(i for i in self.indices if isinstance(i, str)))

    def __str__(self) -> str:
        return f"{self.tensor}[{', '.join(map(str, self.indices))}] {self.cmp} {self.value}"
