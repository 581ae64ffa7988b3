"""Scalar array ops: a small fixed-size array of scalars in a core's scalar memory.

``array.create`` makes one (every element zero), ``array.get_element`` reads an element and
``array.update_element`` writes one. An array is a value, like a scalar: ``array.update_element``
gives the array with the element written (``arr2 = array.update_element(arr, i, v)``), so a loop
carries an array it writes like any other rebound name, and the side split treats it as scalar
control state. The DSL writes them ``pl.array.create(n, dtype)``, ``arr[i]`` and ``arr[i] = v``
(``pl.array.get_element`` / ``pl.array.update_element`` by name).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pypto.ir.dtypes import DataType
from pypto.ir.errors import SourceSpan
from pypto.ir.nodes import Const, Expr
from pypto.ir.ops.rules import check_scalar_fits, fail
from pypto.ir.ops.spec import REQUIRED, Attr, Level, Operand, OpSpec, Role, TaskIds, Unit, declare
from pypto.ir.types import ArrayType, ScalarType, Type, describe

# The most elements one array holds: the scalar memory a core keeps for them (4 KiB of 4-byte words).
MAX_ARRAY_SIZE = 1024


def create(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    op = spec.name
    size, dtype = attrs.get("size"), attrs.get("dtype")
    if not isinstance(size, int) or isinstance(size, bool) or not 1 <= size <= MAX_ARRAY_SIZE:
        raise fail(
            op,
            f"the size must be an int from 1 to {MAX_ARRAY_SIZE}, got {size!r}",
            span,
            f"a scalar array holds at most {MAX_ARRAY_SIZE} elements in scalar memory: keep more "
            "values in a tensor (pl.create_tensor) and read them with pl.read",
        )
    if not isinstance(dtype, DataType) or not (dtype.is_integer or dtype.is_float or dtype.is_task_id):
        raise fail(
            op,
            f"the elements must be an integer, float, INDEX or TASK_ID dtype, got {dtype!r}",
            span,
            "write a dtype such as pl.INT32, pl.INDEX or pl.FP32 (pl.TASK_ID for task ids)",
        )
    return ArrayType(size, dtype)


def _array(op: str, e: Expr, span: SourceSpan | None) -> ArrayType:
    if not isinstance(e.type, ArrayType):
        raise fail(
            op,
            f"works on a scalar array, got {describe(e.type)}",
            span,
            "make one with pl.array.create(n, dtype)",
        )
    return e.type


def check_index(op: str, array: ArrayType, index: Expr, span: SourceSpan | None) -> None:
    """An integer index; a constant one inside the array (a run-time one the backend checks)."""
    t = index.type
    if not isinstance(t, ScalarType) or not t.dtype.is_integer:
        raise fail(
            op,
            f"the index must be an integer scalar, got {describe(t)}",
            span,
            "index the array with an int, a loop index or an integer run-time scalar "
            "(convert a float with pl.cast(x, pl.INDEX))",
        )
    if isinstance(index, Const) and not 0 <= index.value < array.size:
        raise fail(
            op,
            f"index {index.value} is outside the array of {array.size} elements",
            span,
            f"index it from 0 to {array.size - 1}",
        )


def get(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    array = _array(spec.name, args[0], span)
    check_index(spec.name, array, args[1], span)
    return ScalarType(array.dtype)


def set_(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    array = _array(spec.name, args[0], span)
    check_index(spec.name, array, args[1], span)
    value = args[2]
    if not isinstance(value.type, ScalarType):
        raise fail(
            spec.name,
            f"the written value must be a scalar, got {describe(value.type)}",
            span,
            "write one number or run-time scalar per element: arr[i] = v",
        )
    if (value.type.dtype is DataType.TASK_ID) != (array.dtype is DataType.TASK_ID):
        raise fail(
            spec.name,
            f"writes {describe(value.type)} into an array of {array.dtype.name}",
            span,
            "keep task ids in a pl.TASK_ID array (tids = pl.array.create(n, pl.TASK_ID); tids[i] = tid) "
            "and numbers in a number array",
        )
    if array.dtype is not DataType.TASK_ID:
        check_scalar_fits(spec.name, value, array.dtype, span, "the written value")
    return array


def _declare() -> None:
    s = Level.SCALAR
    array = Operand("array", Role.ARRAY)
    index = Operand("index", Role.SCALAR)
    declare(
        OpSpec(
            "array.create",
            s,
            Unit.SCALAR,
            create,
            (),
            (Attr("size", int, REQUIRED), Attr("dtype", DataType, REQUIRED)),
            traits=(TaskIds(),),
            dsl="array.create",
            signature="pl.array.create(size, dtype)",
            doc="a scalar array of size elements of dtype in scalar memory, every element zero",
        )
    )
    declare(
        OpSpec(
            "array.get_element",
            s,
            Unit.SCALAR,
            get,
            (array, index),
            traits=(TaskIds(),),
            dsl="array.get_element",
            signature="pl.array.get_element(array, index)",
            doc="one element of a scalar array (written arr[i])",
        )
    )
    declare(
        OpSpec(
            "array.update_element",
            s,
            Unit.SCALAR,
            set_,
            (array, index, Operand("value", Role.SCALAR)),
            traits=(TaskIds(),),
            dsl="array.update_element",
            signature="pl.array.update_element(array, index, value)",
            doc="the scalar array with one element written (written arr[i] = v)",
        )
    )


_declare()
