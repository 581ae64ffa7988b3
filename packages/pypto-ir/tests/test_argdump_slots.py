"""Which arguments of a kernel call the argument dump takes at each level (``pypto.ir.argdump``):
none at 0, the marked (``dumps`` attr) at 1, every tensor at 2, each with its role."""

from pypto.ir import (
    UNIT,
    AccessMode,
    Call,
    DataType,
    Direction,
    Function,
    FunctionKind,
    Param,
    ScalarType,
    TensorType,
    Var,
)
from pypto.ir.argdump import FULL, MARKED, OFF, DumpRole, dump_slots
from pypto.ir.ops import op

T = TensorType((16, 16), DataType.FP32)
INDEX = ScalarType(DataType.INDEX)


def _call(dumps=()):
    params = (
        Param(Var("a", T), Direction.In),
        Param(Var("n", INDEX), Direction.In),
        Param(Var("acc", T), Direction.InOut),
        Param(Var("o", T), Direction.Out),
    )
    kernel = Function("k", params, (), FunctionKind.InCore)
    args = (Var("x", T), Var("m", INDEX), Var("total", T), Var("y", T))
    attrs = {"callee": "k", **({"dumps": dumps} if dumps else {})}
    call = Call(op.call, args, UNIT, attrs)
    modes = (AccessMode.In, None, AccessMode.InOut, AccessMode.Out)
    return call, kernel, modes


def test_level_0_takes_nothing_even_when_marked():
    call, kernel, modes = _call(("x", "y"))
    assert dump_slots(call, kernel, modes, OFF) == ()


def test_level_1_takes_the_marked_tensors_only():
    call, kernel, modes = _call(("y", "x"))
    slots = dump_slots(call, kernel, modes, MARKED)
    assert [(s.index, s.tensor, s.param, s.role) for s in slots] == [
        (0, "x", "a", DumpRole.input),
        (3, "y", "o", DumpRole.output),
    ]
    assert dump_slots(_call()[0], kernel, modes, MARKED) == ()


def test_level_2_takes_every_tensor_with_its_role_and_no_scalar():
    call, kernel, modes = _call()
    slots = dump_slots(call, kernel, modes, FULL)
    assert [(s.tensor, s.role) for s in slots] == [
        ("x", DumpRole.input),
        ("total", DumpRole.inout),
        ("y", DumpRole.output),
    ]
    assert [(s.role.reads, s.role.writes) for s in slots] == [(True, False), (True, True), (False, True)]


def test_an_atomic_accumulation_is_dumped_before_and_after():
    assert DumpRole.of(AccessMode.Accumulate) is DumpRole.inout
