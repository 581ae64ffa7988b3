"""The task graph's vocabulary: how one kernel call (one task) touches each tensor argument.

Every ``call`` in a lowered orchestration function is a task. ``DeriveTaskDependencies`` gives it
``attrs["access"]``, one :class:`AccessMode` per argument (None for a scalar); a runtime orders two
tasks that touch one tensor when their modes :meth:`~AccessMode.conflicts`.

>>> AccessMode.In.conflicts(AccessMode.In), AccessMode.In.conflicts(AccessMode.Out)
(False, True)
"""

from __future__ import annotations

from enum import Enum

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
