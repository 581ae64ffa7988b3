"""Dynamic extents at run time: matching argument shapes against shapes that hold a ``DynDim``.

A tensor type ``[M, 128]`` fits an argument of shape ``(300, 128)`` and binds ``M = 300``; every
tensor of one call that names ``M`` must agree on it. The runtime, the specializer and every
backend's walker bind extents through :class:`ExtentBinding`, so they report a mismatch alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeGuard, cast

from pypto.ir.dtypes import DataType
from pypto.ir.errors import SpecializationError
from pypto.ir.nodes import DynDim
from pypto.ir.types import TensorType


def tensor_type(shape: Sequence[int | DynDim], dtype: DataType) -> TensorType:
    """The tensor type of an annotated shape whose extents may be dynamic. ``TensorType.shape`` is
    typed as ints for the arithmetic most code does on static shapes; a ``DynDim`` entry is what
    :func:`is_dynamic` and :func:`dynamic_extents` find."""
    return TensorType(cast(tuple[int, ...], tuple(shape)), dtype)


def dynamic_extents(t: object) -> list[DynDim]:
    """The dynamic extents of a tensor type, in axis order (none for other types)."""
    if not isinstance(t, TensorType):
        return []
    return [d for d in cast(tuple[object, ...], t.shape) if isinstance(d, DynDim)]


def is_dynamic(t: object) -> TypeGuard[TensorType]:
    """Whether ``t`` is a tensor type with a dynamic extent."""
    return isinstance(t, TensorType) and any(isinstance(d, DynDim) for d in t.shape)


def shape_fits(shape: Sequence[int], t: TensorType) -> bool:
    """Whether a concrete ``shape`` has ``t``'s rank and its static extents."""
    if len(shape) != len(t.shape):
        return False
    return all(isinstance(want, DynDim) or want == got for want, got in zip(t.shape, shape, strict=True))


class ExtentBinding:
    """The values of one call's dynamic extents, with the parameter and axis that fixed each."""

    def __init__(self) -> None:
        self.values: dict[str, int] = {}
        self._fixed_by: dict[str, tuple[str, int]] = {}

    def bind(self, param: str, t: TensorType, shape: Sequence[int]) -> None:
        """Bind the extents ``t`` names from the argument ``shape`` of parameter ``param``; an
        extent another parameter bound to a different value is a ``SpecializationError``."""
        for axis, (want, got) in enumerate(zip(t.shape, shape, strict=True)):
            if not isinstance(want, DynDim):
                continue
            value = int(got)
            known = self.values.get(want.name)
            if known is None:
                self.values[want.name] = value
                self._fixed_by[want.name] = (param, axis)
            elif known != value:
                first, first_axis = self._fixed_by[want.name]
                raise SpecializationError(
                    f"dynamic extent {want.name} is {known} in '{first}' (dim {first_axis}) but {value} "
                    f"in '{param}' (dim {axis}): tensors annotated with the same {want.name} must agree",
                    hint=f"pass tensors whose dim {axis} of '{param}' equals dim {first_axis} of "
                    f"'{first}', or give them different pl.dynamic extents",
                )
