import pytest

from pypto.ir import (
    INDEX,
    UNIT,
    Assign,
    Const,
    DataType,
    Direction,
    Eval,
    For,
    Function,
    FunctionKind,
    MemorySpace,
    Param,
    Program,
    TensorType,
    TupleExpr,
    TupleType,
    Var,
    VerificationError,
    make_call,
    print_ir,
    verify_program,
)


def _offsets(*elements):
    return TupleExpr(tuple(elements), TupleType(tuple(e.type for e in elements)))


def chunked_add() -> Program:
    """A [512, 128] add done in four [128, 128] chunks."""
    t = TensorType((512, 128), DataType.FP32)
    a, b, c = Var("a", t), Var("b", t), Var("c", t)
    i = Var("i", INDEX)
    row = make_call("scalar.mul", (i, Const(128, INDEX)))
    load = {"shape": (128, 128), "target_memory": MemorySpace.Vec}
    ta = make_call("tile.load", (a, _offsets(row, Const(0, INDEX))), load)
    tb = make_call("tile.load", (b, _offsets(row, Const(0, INDEX))), load)
    va, vb = Var("ta", ta.type), Var("tb", tb.type)
    tc = make_call("tile.add", (va, vb))
    vc = Var("tc", tc.type)
    body = (
        Assign(va, ta),
        Assign(vb, tb),
        Assign(vc, tc),
        Eval(make_call("tile.store", (vc, _offsets(row, Const(0, INDEX)), c))),
    )
    loop = For(i, Const(0, INDEX), Const(4, INDEX), Const(1, INDEX), body)
    params = (Param(a), Param(b), Param(c, Direction.Out))
    kernel = Function("add_chunks", params, (loop,), FunctionKind.AIV)
    entry = Function(
        "main",
        params,
        (Eval(make_call("call", (a, b, c), {"callee": "add_chunks"}, type=UNIT)),),
        FunctionKind.Orchestration,
    )
    return Program("main", (entry, kernel), "main")


def test_printer_prints_pl_style_text():
    text = print_ir(chunked_add())
    assert "@pl.function(type=pl.FunctionType.AIV)" in text
    assert (
        "def add_chunks(self, a: pl.Tensor[[512, 128], pl.FP32], b: pl.Tensor[[512, 128], pl.FP32], c: pl.Out[pl.Tensor[[512, 128], pl.FP32]]):"
        in text
    )
    assert "        for i in pl.range(0, 4, 1):" in text
    assert (
        "ta: pl.Tile[[128, 128], pl.FP32, pl.Mem.Vec] = pl.tile.load(a, [i * 128, 0], shape=[128, 128], target_memory=pl.Mem.Vec)"
        in text
    )
    assert "pl.tile.store(tc, [i * 128, 0], c)" in text
    assert "self.add_chunks(a, b, c)" in text


def test_verifier_accepts_a_well_formed_program():
    verify_program(chunked_add())


def test_verifier_rejects_a_use_before_definition():
    program = chunked_add()
    kernel = program.function("add_chunks")
    loop = kernel.body[0]
    broken_body = (loop.body[2], *loop.body[:2], loop.body[3])
    from dataclasses import replace

    broken = replace(kernel, body=(replace(loop, body=broken_body),))
    with pytest.raises(VerificationError, match="ta is used before it is defined"):
        verify_program(program.replace_function(broken))


def test_verifier_rejects_a_call_to_an_unknown_kernel():
    program = chunked_add()
    with pytest.raises(VerificationError, match="unknown kernel 'add_chunks'"):
        verify_program(Program("main", (program.entry_function,), "main"))
