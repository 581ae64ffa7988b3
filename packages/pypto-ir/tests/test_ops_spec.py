"""The op registry: specs, traits and the attribute schema the verifier checks."""

import pytest

from pypto.ir import (
    INDEX,
    Const,
    Function,
    FunctionKind,
    Program,
    TensorType,
    VerificationError,
    verify_program,
)
from pypto.ir.dtypes import DataType
from pypto.ir.nodes import Assign, Call, Param, Var
from pypto.ir.ops import (
    OPS,
    Broadcast,
    Elementwise,
    GmAccess,
    Level,
    PadValue,
    PipeEnd,
    Reduction,
    Side,
    get_op,
    ops_with,
    tensor,
    tile,
)
from pypto.ir.types import Direction


def test_handles_name_registered_ops_and_refuse_unknown_ones():
    assert (
        tile.add == "tile.add"
        and tensor.row_max == "tensor.row_max"
        and tile.tpush_to_aiv == "tile.tpush_to_aiv"
    )
    with pytest.raises(AttributeError, match=r"no op 'tile\.nonesuch' is declared"):
        tile.nonesuch  # noqa: B018


def test_every_tensor_op_that_lowers_names_a_tile_op_of_the_same_family():
    for spec in OPS.values():
        lowers = [t for t in spec.traits if type(t).__name__ == "Lowers"]
        for trait in lowers:
            target = get_op(trait.to)
            assert target.level is Level.TILE
            assert target.unit is spec.unit, spec.name


def test_traits_describe_the_families():
    assert {s.name for s in ops_with(Reduction, Level.TILE)} == {
        f"tile.{axis}_{kind}"
        for axis in ("row", "col")
        for kind in ("max", "sum", "min", "prod", "argmax", "argmin")
    }
    assert get_op(tile.col_sum).trait(Reduction) == Reduction(0, "add")
    assert get_op(tile.col_prod).trait(Reduction) == Reduction(0, "mul", PadValue.one)
    assert get_op(tile.row_argmax).trait(Reduction) == Reduction(1, None, PadValue.min)
    assert get_op(tile.row_expand_div).trait(Broadcast) == Broadcast(1)
    assert get_op(tile.add).trait(Elementwise) == Elementwise("tile.adds", "scalar.add")
    assert get_op(tensor.div).trait(Elementwise) == Elementwise("tensor.divs", "scalar.truediv")
    assert get_op(tile.store).trait(GmAccess) == GmAccess(2, 1, write=True, tile=0)
    assert get_op(tile.tpop_from_aic).trait(PipeEnd).side is Side.VECTOR
    assert get_op(tile.store_atomic).reads == (0, 2) and get_op(tile.store_atomic).writes == (2,)


def _program_with(call: Call) -> Program:
    a = Var("a", TensorType((16, 16), DataType.FP32))
    x = Var("x", call.type)
    body = (Assign(x, call),)
    fn = Function("main", (Param(a, Direction.In),), body, FunctionKind.Orchestration)
    return Program("p", (fn,), "main")


def test_the_verifier_checks_attributes_against_the_schema():
    good = Call(
        tensor.create, (), TensorType((4, 4), DataType.FP32), {"shape": (4, 4), "dtype": DataType.FP32}
    )
    verify_program(_program_with(good))
    unknown = Call(tensor.create, (), good.type, {**good.attrs, "colour": "red"})
    with pytest.raises(VerificationError, match=r"tensor\.create has no attribute 'colour'"):
        verify_program(_program_with(unknown))
    wrong_kind = Call(tensor.create, (), good.type, {**good.attrs, "manual_dep": "yes"})
    with pytest.raises(VerificationError, match="attribute manual_dep='yes' is not a bool"):
        verify_program(_program_with(wrong_kind))
    missing = Call(tensor.create, (), good.type, {"shape": (4, 4)})
    with pytest.raises(VerificationError, match="misses attribute"):
        verify_program(_program_with(missing))
    extra_operand = Call(tensor.create, (Const(1, INDEX), Const(2, INDEX)), good.type, good.attrs)
    with pytest.raises(VerificationError, match=r"takes \(shape\), got 2"):
        verify_program(_program_with(extra_operand))


def test_every_tensor_compute_op_lowers_to_a_tile_op():
    """The tiler maps each tensor op to the tile op of its Lowers trait; only the allocation and
    the writes into a tensor are not computations, and a paged gather is a loop of row copies."""
    from pypto.ir.ops import Lowers

    missing = {s.name for s in OPS.values() if s.level is Level.TENSOR and not s.has(Lowers)}
    assert missing == {
        tensor.create,
        tensor.assemble,
        tensor.scatter_update,  # tile.mscatter of each row block
        tensor.paged_gather,  # a loop of tile.gather_row
        tensor.set_validshape,  # a view
    }


def test_a_handle_stops_resolving_when_its_op_leaves_the_registry():
    from pypto.ir.ops import OpSpec, Unit, declare, undeclare
    from pypto.ir.ops.rules import unit_result

    declare(OpSpec("tile.throwaway", Level.TILE, Unit.VECTOR, unit_result))
    assert tile.throwaway == "tile.throwaway"  # resolved, then cached
    undeclare("tile.throwaway")
    with pytest.raises(AttributeError):
        tile.throwaway  # noqa: B018
