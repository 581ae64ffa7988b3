"""Structural equality of IR (pypto.ir.equality): what is equal, and the path to the first
difference. The programs are built from IR nodes directly."""

from dataclasses import dataclass, field, fields, replace

import pytest

from pypto.ir import (
    INDEX,
    TASK_ID,
    UNIT,
    Allocation,
    Assign,
    Call,
    Const,
    DataType,
    Direction,
    Eval,
    For,
    Function,
    FunctionKind,
    If,
    Level,
    LoopKind,
    MemoryPlan,
    MemorySpace,
    Param,
    Program,
    Reservation,
    Return,
    ScalarType,
    ScopeStmt,
    SourceSpan,
    SplitAivRegion,
    SplitMode,
    TensorType,
    TileType,
    TupleExpr,
    TupleType,
    Var,
    assert_structural_equal,
    duplicate_bindings,
    structural_diff,
    structural_equal,
)
from pypto.ir import nodes as ir_nodes
from pypto.ir.equality import _FIELDS

TENSOR = TensorType((128, 64), DataType.FP32)
TILE = TileType((64, 64), DataType.FP32, MemorySpace.Vec)
FP32 = ScalarType(DataType.FP32)
BOOL = ScalarType(DataType.BOOL)


@dataclass(frozen=True)
class Knobs:
    """What the sample program is made of; a test changes one knob to make one difference."""

    rename: str = ""  # appended to every variable name
    span: SourceSpan | None = None  # put on every node and on the reservation
    program_name: str = "main"
    entry: str = "main"
    program_attrs: dict = field(default_factory=dict)
    kernel_kind: FunctionKind = FunctionKind.AIV
    c_direction: Direction = Direction.Out
    extra_param: bool = False
    kernel_attrs_extra: dict = field(default_factory=dict)
    alloc_offset: int = 0
    slot_size: int = 4096
    loop_kind: LoopKind = LoopKind.range
    loop_stop: int = 2
    add_op: str = "tile.add"
    add_rhs_is_const: bool = False
    load_shape: tuple = (64, 64)
    add_type: TileType = TILE
    fill_value: float | int | bool = 0.0
    yield_loaded: bool = False  # yield the loaded tile instead of the sum
    else_arm: bool = False
    split_mode: SplitMode = SplitMode.UP_DOWN
    scope_level: Level = Level.CORE_GROUP
    second_hint: str = "k2"
    depend: bool = True
    store_row: int = 32
    trailing_return: bool = True
    functions_reversed: bool = False


def sample(k: Knobs = Knobs()) -> Program:
    """An AIV kernel ``k`` with a carried loop, an If and a split region, and an entry ``main`` that
    calls it from two scopes, the second depending on the first's task id."""
    sp = k.span
    name = lambda n: n + k.rename  # noqa: E731

    def var(n, t):
        return Var(name(n), t, sp)

    def idx(v):
        return Const(v, INDEX, sp)

    def offsets(*es):
        return TupleExpr(tuple(es), TupleType(tuple(e.type for e in es)), sp)

    a, c, m = var("a", TENSOR), var("c", TENSOR), var("m", INDEX)
    params = [Param(a), Param(c, k.c_direction), Param(m)]
    if k.extra_param:
        params.append(Param(var("extra", INDEX)))
    i, lane = var("i", INDEX), var("lane", INDEX)
    acc0, acc, acc_out, t, s = (var(n, TILE) for n in ("acc", "acc_1", "acc_2", "t", "s"))
    row = Call("scalar.mul", (i, idx(64)), INDEX, span=sp)
    load = Call(
        "tile.load",
        (a, offsets(row, idx(0))),
        TILE,
        {"shape": k.load_shape, "target_memory": MemorySpace.Vec},
        sp,
    )
    rhs = Const(0, INDEX, sp) if k.add_rhs_is_const else t
    loop = For(
        i,
        idx(0),
        idx(k.loop_stop),
        idx(1),
        (Assign(t, load, sp), Assign(s, Call(k.add_op, (acc, rhs), k.add_type, span=sp), sp)),
        k.loop_kind,
        sp,
        iter_args=(acc,),
        init_values=(acc0,),
        yields=(t if k.yield_loaded else s,),
        results=(acc_out,),
    )
    fill = Call(
        "tile.full", (Const(k.fill_value, FP32, sp),), TILE, {"dtype": DataType.FP32, "shape": (64, 64)}, sp
    )

    def store(r):
        return Eval(Call("tile.store", (acc_out, offsets(r, idx(0)), c), TENSOR, span=sp), sp)

    cond = Call("scalar.gt", (m, idx(0)), BOOL, span=sp)
    lane_row = Call("scalar.mul", (lane, idx(k.store_row)), INDEX, span=sp)
    kernel_body = (
        Assign(acc0, fill, sp),
        loop,
        If(cond, (store(idx(0)),), (store(idx(64)),) if k.else_arm else (), sp),
        SplitAivRegion(lane, (store(lane_row),), k.split_mode, sp),
    )
    plan = MemoryPlan(
        {"t": Allocation("t", MemorySpace.Vec, k.alloc_offset, 16384)},
        {MemorySpace.Vec: 16384},
        (Reservation(MemorySpace.Vec, 8192, "ring", slot_size=k.slot_size, span=sp),),
    )
    attrs = {"memory_plan": plan, "pipe_name": "k", **k.kernel_attrs_extra}
    kernel = Function("k", tuple(params), kernel_body, k.kernel_kind, sp, attrs)

    ea, ec, em, tid = var("a", TENSOR), var("c", TENSOR), var("m", INDEX), var("tid", TASK_ID)

    def launch():
        return (Eval(Call("call", (ea, ec, em), UNIT, {"callee": "k"}, sp), sp),)

    entry_body = [
        ScopeStmt(launch(), k.scope_level, "k", task=tid, span=sp),
        ScopeStmt(launch(), name_hint=k.second_hint, deps=(tid,) if k.depend else (), span=sp),
    ]
    if k.trailing_return:
        entry_body.append(Return((), sp))
    entry_params = (Param(ea), Param(ec, Direction.Out), Param(em))
    entry = Function("main", entry_params, tuple(entry_body), FunctionKind.Orchestration, sp)
    functions = (kernel, entry) if k.functions_reversed else (entry, kernel)
    return Program(k.program_name, functions, k.entry, k.program_attrs)


# ---------------------------------------------------------------- equal programs


def test_two_builds_of_one_program_are_equal():
    a, b = sample(), sample()
    assert structural_equal(a, b)
    assert structural_diff(a, b) is None
    assert_structural_equal(a, b)


def test_a_program_equals_itself():
    p = sample()
    assert structural_equal(p, p)


def test_the_order_of_functions_does_not_matter():
    assert structural_equal(sample(), sample(Knobs(functions_reversed=True)))


def test_spans_are_never_compared_not_even_in_attribute_values():
    here = SourceSpan("a.py", 3, 4, 9)
    there = SourceSpan("b.py", 70, 0)
    assert structural_equal(sample(Knobs(span=here)), sample(Knobs(span=there)))
    assert structural_equal(sample(Knobs(span=here)), sample(Knobs(span=None)))


def test_reservations_differing_only_in_span_are_equal():
    ring = Reservation(MemorySpace.Vec, 8192, "ring", span=SourceSpan("a.py", 1))
    assert ring == replace(ring, span=SourceSpan("b.py", 2))
    assert ring != replace(ring, size=4096)


def test_a_tile_type_valid_everywhere_equals_one_without_valid_shape():
    spelled = TileType((64, 64), DataType.FP32, MemorySpace.Vec, valid_shape=(64, 64))
    partial = TileType((64, 64), DataType.FP32, MemorySpace.Vec, valid_shape=(32, 64))
    assert structural_equal(TILE, spelled)
    assert structural_equal(TupleType((TILE, INDEX)), TupleType((spelled, INDEX)))
    assert structural_diff(TILE, partial) == (
        "pl.Tile[[64, 64], pl.FP32, pl.Mem.Vec] vs pl.Tile[[64, 64], pl.FP32, pl.Mem.Vec, valid_shape=[32, 64]]"
    )
    assert structural_equal(sample(Knobs(add_type=spelled)), sample())
    assert not structural_equal(sample(Knobs(add_type=partial)), sample())


def test_attribute_key_order_does_not_matter():
    x = Var("x", TENSOR)
    one = Call("tile.load", (x,), TILE, {"shape": (64, 64), "target_memory": MemorySpace.Vec})
    other = Call("tile.load", (x,), TILE, {"target_memory": MemorySpace.Vec, "shape": (64, 64)})
    assert structural_equal(one, other)


def test_a_list_attribute_equals_a_tuple_of_the_same_items_as_both_print_alike():
    x = Var("x", TENSOR)
    assert structural_equal(
        Call("tile.load", (x,), TILE, {"shape": (64, 64)}), Call("tile.load", (x,), TILE, {"shape": [64, 64]})
    )


# ---------------------------------------------------------------- differences, by path

K = "function 'k'"
LOOP = f"{K} body[1] (For)"
CASES = [
    (Knobs(program_name="other"), "name: 'main' vs 'other'"),
    (Knobs(entry="k"), "entry: 'main' vs 'k'"),
    (Knobs(program_attrs={"opt": 1}), "attrs: key 'opt' only on the right"),
    (Knobs(kernel_kind=FunctionKind.InCore), f"{K} kind: FunctionKind.AIV vs FunctionKind.InCore"),
    (Knobs(extra_param=True), f"{K}: 3 parameters vs 4"),
    (Knobs(c_direction=Direction.InOut), f"{K} params[1].direction: Direction.Out vs Direction.InOut"),
    (Knobs(kernel_attrs_extra={"split": SplitMode.UP_DOWN}), f"{K} attrs: key 'split' only on the right"),
    (Knobs(kernel_attrs_extra={"pipe_name": "q"}), f"{K} attrs['pipe_name']: 'k' vs 'q'"),
    (Knobs(alloc_offset=512), f"{K} attrs['memory_plan'].allocations['t'].offset: 0 vs 512"),
    (Knobs(slot_size=2048), f"{K} attrs['memory_plan'].reservations[0].slot_size: 4096 vs 2048"),
    (Knobs(loop_kind=LoopKind.parallel), f"{LOOP} kind: LoopKind.range vs LoopKind.parallel"),
    (Knobs(loop_stop=4), f"{LOOP} stop: Const 2 vs Const 4"),
    (Knobs(add_op="tile.sub"), f"{LOOP} body[1] (Assign) value.op: 'tile.add' vs 'tile.sub'"),
    (Knobs(add_rhs_is_const=True), f"{LOOP} body[1] (Assign) value.args[1]: Var 't' vs Const 0"),
    (Knobs(load_shape=(32, 64)), f"{LOOP} body[0] (Assign) value.attrs['shape'][0]: 64 vs 32"),
    (
        Knobs(add_type=TileType((64, 64), DataType.FP16, MemorySpace.Vec)),
        f"{LOOP} body[1] (Assign) value.type: pl.Tile[[64, 64], pl.FP32, pl.Mem.Vec] "
        "vs pl.Tile[[64, 64], pl.FP16, pl.Mem.Vec]",
    ),
    (Knobs(fill_value=0), f"{K} body[0] (Assign) value.args[0]: Const 0.0 vs Const 0"),
    (Knobs(fill_value=-0.0), f"{K} body[0] (Assign) value.args[0]: Const 0.0 vs Const -0.0"),
    (
        Knobs(yield_loaded=True),
        f"{LOOP} yields[0]: Var 's' vs Var 't': the left is bound at {LOOP} body[1] (Assign) target, "
        f"the right bound at {LOOP} body[0] (Assign) target",
    ),
    (Knobs(else_arm=True), f"{K} body[2] (If) else_body[0]: end of else_body vs Eval"),
    (
        Knobs(split_mode=SplitMode.LEFT_RIGHT),
        f"{K} body[3] (SplitAivRegion) mode: SplitMode.UP_DOWN vs SplitMode.LEFT_RIGHT",
    ),
    (
        Knobs(store_row=16),
        f"{K} body[3] (SplitAivRegion) body[0] (Eval) value.args[1].elements[0].args[1]: Const 32 vs Const 16",
    ),
    (
        Knobs(scope_level=Level.HOST),
        "function 'main' body[0] (ScopeStmt) level: Level.CORE_GROUP vs Level.HOST",
    ),
    (Knobs(second_hint="k3"), "function 'main' body[1] (ScopeStmt) name_hint: 'k2' vs 'k3'"),
    (Knobs(depend=False), "function 'main' body[1] (ScopeStmt) deps: 1 items vs 0"),
    (Knobs(trailing_return=False), "function 'main' body[2]: Return vs end of body"),
]


@pytest.mark.parametrize(("knobs", "line"), CASES, ids=[line for _, line in CASES])
def test_each_difference_is_found_at_its_path(knobs, line):
    assert structural_diff(sample(), sample(knobs)) == line
    assert not structural_equal(sample(), sample(knobs))


def test_a_missing_function_is_named():
    full, short = sample(), sample()
    short = short.with_functions(list(short.functions.values())[:1])
    assert structural_diff(full, short) == "functions: 'k' only on the left"


def test_consts_1_and_1_0_and_true_differ():
    one, one_f, true = Const(1, INDEX), Const(1.0, FP32), Const(True, BOOL)
    assert structural_diff(one, Const(1.0, INDEX)) == "Const 1 vs Const 1.0"
    assert structural_diff(one, Const(True, INDEX)) == "Const 1 vs Const True"
    assert structural_diff(one_f, Const(1.0, FP32)) is None
    assert structural_diff(true, Const(True, BOOL)) is None
    assert structural_diff(one, Const(1, FP32)) == ".type: pl.Scalar[pl.INDEX] vs pl.Scalar[pl.FP32]"
    assert structural_equal(Const(float("nan"), FP32), Const(float("nan"), FP32))


def test_attribute_values_are_strictly_typed():
    x = Var("x", TENSOR)
    assert structural_diff(
        Call("tile.load", (x,), TILE, {"n": 1}), Call("tile.load", (x,), TILE, {"n": True})
    ) == (".attrs['n']: 1 vs True")


def test_nodes_of_different_classes_differ():
    assert structural_diff(sample(), next(iter(sample().functions.values()))) == "Program vs Function"
    assert structural_diff(Var("x", INDEX), Const(0, INDEX)) == "Var 'x' vs Const 0"
    assert structural_diff(Return(()), Eval(Const(0, INDEX))) == "Return vs Eval"


# ---------------------------------------------------------------- variables


def test_renamed_variables_are_equal_only_up_to_names():
    renamed = sample(Knobs(rename="_r"))
    assert structural_equal(sample(), renamed, names=False)
    assert not structural_equal(sample(), renamed)
    assert structural_diff(sample(), renamed) == "function 'main' params[0]: Var 'a' vs Var 'a_r'"


def _two_loads(use_first: bool) -> Function:
    """``t = load(a); t = load(b); store(t)`` with two different variables named ``t``; the store
    uses the first or the second."""
    a, b, c = Var("a", TENSOR), Var("b", TENSOR), Var("c", TENSOR)
    first, second = Var("t", TILE), Var("t", TILE)
    store = Call("tile.store", (first if use_first else second, c), TENSOR)
    body = (
        Assign(first, Call("tile.load", (a,), TILE)),
        Assign(second, Call("tile.load", (b,), TILE)),
        Eval(store),
    )
    return Function("f", (Param(a), Param(b), Param(c, Direction.Out)), body, FunctionKind.AIV)


def test_a_use_of_another_binding_of_the_same_name_is_a_difference():
    line = (
        "function 'f' body[2] (Eval) value.args[0]: Var 't' vs Var 't': the left is bound at "
        "function 'f' body[0] (Assign) target, the right bound at function 'f' body[1] (Assign) target"
    )
    assert structural_diff(_two_loads(True), _two_loads(False)) == line
    assert structural_diff(_two_loads(True), _two_loads(False), names=False) == line
    assert structural_equal(_two_loads(False), _two_loads(False))


def test_two_left_variables_cannot_pair_with_one_right_variable():
    # Left binds two variables where the right binds one twice: the use of the left's first
    # no longer pairs with anything once the right rebinds.
    a, c = Var("a", TENSOR), Var("c", TENSOR)
    x1, x2, y = Var("x", TILE), Var("x", TILE), Var("x", TILE)

    def fn(first, second, used):
        body = (
            Assign(first, Call("tile.load", (a,), TILE)),
            Assign(second, Call("tile.load", (a,), TILE)),
            Eval(Call("tile.store", (used, c), TENSOR)),
        )
        return Function("f", (Param(a), Param(c, Direction.Out)), body, FunctionKind.AIV)

    assert structural_diff(fn(x1, x2, x1), fn(y, y, y)) == (
        "function 'f' body[2] (Eval) value.args[0]: Var 'x' vs Var 'x': the left is bound at "
        "function 'f' body[0] (Assign) target, the right bound at function 'f' body[1] (Assign) target"
    )
    assert structural_equal(fn(x1, x2, x2), fn(y, y, y))


def test_one_variable_bound_in_both_arms_equals_two_variables_of_its_name():
    # The printer prints both arms' binding as `x`; the parser makes two variables of them.
    a, c = Var("a", TENSOR), Var("c", TENSOR)

    def fn(then_x, else_x):
        def arm(x):
            return (Assign(x, Call("tile.load", (a,), TILE)), Eval(Call("tile.store", (x, c), TENSOR)))

        body = (If(Const(True, BOOL), arm(then_x), arm(else_x)),)
        return Function("f", (Param(a), Param(c, Direction.Out)), body, FunctionKind.AIV)

    x = Var("x", TILE)
    assert structural_equal(fn(x, x), fn(Var("x", TILE), Var("x", TILE)))
    assert structural_equal(fn(Var("x", TILE), Var("x", TILE)), fn(x, x))


def test_a_binding_site_compares_the_types_of_its_variables():
    a = Var("a", TENSOR)
    left = Function("f", (Param(a),), (), FunctionKind.AIV)
    right = Function("f", (Param(Var("a", TensorType((64, 64), DataType.FP32))),), (), FunctionKind.AIV)
    assert structural_diff(left, right) == (
        "function 'f' params[0].type: pl.Tensor[[128, 64], pl.FP32] vs pl.Tensor[[64, 64], pl.FP32]"
    )


def test_free_variables_compare_by_name_and_type():
    # A statement compared alone: its operands are bound outside it.
    def stmt(x):
        return Eval(Call("tile.store", (x, Var("c", TENSOR)), TENSOR))

    assert structural_equal(stmt(Var("x", TILE)), stmt(Var("x", TILE)))
    assert structural_diff(stmt(Var("x", TILE)), stmt(Var("y", TILE)), names=False) == (
        "value.args[0]: Var 'x' vs Var 'y'"
    )
    assert structural_diff(stmt(Var("x", TILE)), stmt(Var("x", TENSOR))) == (
        "value.args[0].type: pl.Tile[[64, 64], pl.FP32, pl.Mem.Vec] vs pl.Tensor[[128, 64], pl.FP32]"
    )


def test_a_free_variable_does_not_equal_a_bound_one():
    # The left's x is bound by the loop; the right's loop binds another variable and uses a free x.
    x_free, x_bound, i = Var("x", INDEX), Var("x", INDEX), Var("i", INDEX)

    def loop(var, used):
        return For(var, Const(0, INDEX), Const(4, INDEX), Const(1, INDEX), (Eval(used),))

    assert structural_diff(loop(x_bound, x_bound), loop(Var("x", INDEX), x_free)) == (
        "body[0] (Eval) value: Var 'x' vs Var 'x': the left is bound at var, the right bound nowhere here"
    )
    assert structural_equal(loop(i, x_free), loop(Var("i", INDEX), Var("x", INDEX)))


def test_task_ids_and_lanes_are_bindings():
    def entry(tid, dep):
        body = (ScopeStmt((), name_hint="a", task=tid), ScopeStmt((), name_hint="b", deps=(dep,)))
        return Function("main", (), body, FunctionKind.Orchestration)

    t1, t2 = Var("t", TASK_ID), Var("u", TASK_ID)
    assert structural_equal(entry(t1, t1), entry(t2, t2), names=False)
    assert (
        structural_diff(entry(t1, t1), entry(t2, t2))
        == "function 'main' body[0] (ScopeStmt) task: Var 't' vs Var 'u'"
    )
    assert structural_diff(entry(t1, t1), entry(None, Var("t", TASK_ID))) == (
        "function 'main' body[0] (ScopeStmt) task: Var 't' vs nothing"
    )


def test_each_function_pairs_its_variables_afresh():
    # The entry and the kernel share parameter objects (as outlining makes them); the other side
    # has separate ones: still equal.
    assert structural_equal(_shared_params(True), _shared_params(False))


def _shared_params(shared: bool) -> Program:
    a = Var("a", TENSOR)
    b = a if shared else Var("a", TENSOR)
    kernel = Function("k", (Param(a),), (Eval(Call("tile.load", (a,), TILE)),), FunctionKind.AIV)
    entry = Function(
        "main", (Param(b),), (Eval(Call("call", (b,), UNIT, {"callee": "k"})),), FunctionKind.Orchestration
    )
    return Program("main", (entry, kernel), "main")


# ---------------------------------------------------------------- the assertion


def test_assert_structural_equal_shows_the_line_and_both_sides_around_it():
    with pytest.raises(AssertionError) as info:
        assert_structural_equal(sample(), sample(Knobs(add_op="tile.sub")))
    text = str(info.value)
    lines = text.splitlines()
    assert lines[0] == f"{LOOP} body[1] (Assign) value.op: 'tile.add' vs 'tile.sub'"
    left, right = text.split("--- right, around the difference ---")
    assert (
        "--- left, around the difference ---\ns: pl.Tile[[64, 64], pl.FP32, pl.Mem.Vec] = pl.tile.add(acc_1, t)"
        in left
    )
    assert right.strip() == "s: pl.Tile[[64, 64], pl.FP32, pl.Mem.Vec] = pl.tile.sub(acc_1, t)"


def test_assert_structural_equal_prints_the_function_around_a_signature_difference():
    with pytest.raises(AssertionError) as info:
        assert_structural_equal(sample(), sample(Knobs(c_direction=Direction.InOut)))
    assert "c: pl.Out[pl.Tensor[[128, 64], pl.FP32]]" in str(info.value)
    assert "c: pl.InOut[pl.Tensor[[128, 64], pl.FP32]]" in str(info.value)


# ---------------------------------------------------------------- duplicate bindings


def test_duplicate_bindings_names_names_bound_by_two_variables():
    assert duplicate_bindings(_two_loads(True)) == ["t"]
    assert duplicate_bindings(list(sample().functions.values())[1]) == []


def test_duplicate_bindings_looks_into_nested_bodies_and_every_binding_site():
    i, j, lane, tid = Var("i", INDEX), Var("i", INDEX), Var("tid", INDEX), Var("tid", TASK_ID)
    acc, acc_in, acc_out = Var("acc", TILE), Var("acc", TILE), Var("acc", TILE)
    inner = For(j, Const(0, INDEX), Const(2, INDEX), Const(1, INDEX), (SplitAivRegion(lane, ()),))
    outer = For(
        i,
        Const(0, INDEX),
        Const(2, INDEX),
        Const(1, INDEX),
        (inner, Assign(acc_out, acc_in)),
        iter_args=(acc_in,),
        init_values=(acc,),
        yields=(acc_out,),
        results=(Var("r", TILE),),
    )
    fn = Function("f", (Param(acc),), (outer, ScopeStmt((), task=tid)), FunctionKind.AIV)
    assert duplicate_bindings(fn) == ["acc", "i", "tid"]


def test_a_variable_bound_twice_as_one_object_is_no_duplicate():
    x = Var("x", TILE)
    a = Var("a", TENSOR)
    load = Call("tile.load", (a,), TILE)
    fn = Function(
        "f", (Param(a),), (If(Const(True, BOOL), (Assign(x, load),), (Assign(x, load),)),), FunctionKind.AIV
    )
    assert duplicate_bindings(fn) == []


# ---------------------------------------------------------------- coverage of the node fields


def test_every_field_of_every_node_is_compared_but_spans():
    compound = [
        c
        for c in vars(ir_nodes).values()
        if isinstance(c, type) and issubclass(c, (ir_nodes.Stmt, ir_nodes.Expr))
    ]
    for cls in compound:
        if cls in (ir_nodes.Stmt, ir_nodes.Expr, Var, Const):
            continue  # the bases; variables and constants are compared by their own rules
        declared = {name for name, _ in _FIELDS[cls]}
        assert declared == {f.name for f in fields(cls)} - {"span"}, cls.__name__
