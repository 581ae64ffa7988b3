"""Values that leave control flow, on a2a3sim against torch (issue #12 item 2): a name bound in
the arms of a run-time if, ``pl.yield_`` ending an arm or a loop body, ``pl.while_`` with a
run-time condition, ``break`` and ``continue``. Every compile here is ROUNDTRIP-verified
(tests/conftest.py): each pass dump prints as pl that reads back equal."""

import pytest
import torch

import pypto.language as pl
from pypto.ir import If, While, structural_diff
from pypto.ir.nodes import walk_stmts
from pypto.runtime import RunConfig

SIM = RunConfig(platform="a2a3sim")
X = pl.Tensor[[128, 64], pl.FP32]
B = pl.Tensor[[32, 64], pl.FP32]
N = pl.Tensor[[4], pl.INT32]
STOP_EARLY = True  # a compile-time condition


def rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def flag(value: int) -> torch.Tensor:
    return torch.tensor([value, 0, 0, 0], dtype=torch.int32)


def blocks(x: torch.Tensor) -> torch.Tensor:
    return x.view(4, 32, 64)


@pl.jit
def both_arms(x: X, n: N, out: pl.Out[B]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [32, 64])
        if pl.read(n, [0]) > 0:  # noqa: SIM108 (the if statement is what is tested)
            r = pl.exp(t)
        else:
            r = pl.mul(t, 2.0)
        pl.store(r, [0, 0], out)
    return out


@pl.jit
def explicit_yields(x: X, n: N, out: pl.Out[B]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [32, 64])
        if pl.read(n, [0]) > 0:  # noqa: SIM108 (the if statement is what is tested)
            r = pl.yield_(pl.exp(t))
        else:
            r = pl.yield_(pl.mul(t, 2.0))
        pl.store(r, [0, 0], out)
    return out


@pl.jit
def one_arm(x: X, n: N, out: pl.Out[B]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [32, 64])
        if pl.read(n, [0]) > 0:
            t = pl.exp(t)
        pl.store(t, [0, 0], out)
    return out


@pl.jit
def chosen_offset(x: X, n: N, out: pl.Out[B]):
    with pl.at(level=pl.Level.CORE_GROUP):
        if pl.read(n, [0]) > 0:  # noqa: SIM108 (the if statement is what is tested)
            row = 32
        else:
            row = 96
        pl.store(pl.load(x, [row, 0], [32, 64]), [0, 0], out)
    return out


@pytest.mark.parametrize("kernel", [both_arms, explicit_yields])
@pytest.mark.parametrize("taken", [1, 0])
def test_a_tile_bound_in_both_arms_of_a_run_time_if_exists_after_it(kernel, taken):
    x, out = rand(128, 64), torch.zeros(32, 64)
    kernel(x, flag(taken), out, config=SIM)
    torch.testing.assert_close(out, x[:32].exp() if taken else x[:32] * 2)


@pytest.mark.parametrize("taken", [1, 0])
def test_a_name_rebound_in_one_arm_keeps_its_old_value_from_the_other(taken):
    x, out = rand(128, 64, seed=1), torch.zeros(32, 64)
    one_arm(x, flag(taken), out, config=SIM)
    torch.testing.assert_close(out, x[:32].exp() if taken else x[:32])


@pytest.mark.parametrize("taken", [1, 0])
def test_a_scalar_leaving_an_if_is_an_offset(taken):
    x, out = rand(128, 64, seed=2), torch.zeros(32, 64)
    chosen_offset(x, flag(taken), out, config=SIM)
    torch.testing.assert_close(out, x[32:64] if taken else x[96:])


def test_the_implicit_and_the_explicit_if_forms_are_one_program():
    implicit, explicit = (k.parse().entry_function.body[0] for k in (both_arms, explicit_yields))
    assert structural_diff(implicit, explicit, names=False) is None
    branch = next(s for s in implicit.body if isinstance(s, If))
    assert len(branch.results) == 1 and branch.then_yields and branch.else_yields
    printed = both_arms.lower(rand(128, 64), flag(1), torch.zeros(32, 64)).as_python()
    assert "= pl.yield_(" in printed and "else:" in printed


@pl.jit
def renamed_results(x: X, total: pl.Out[B], top: pl.Out[B]):
    with pl.at(level=pl.Level.CORE_GROUP):
        first = pl.load(x, [0, 0], [32, 64])
        for i, (s, m) in pl.range(1, 4, init_values=(first, first)):
            t = pl.load(x, [i * 32, 0], [32, 64])
            s_out, m_out = pl.yield_(pl.add(s, t), pl.maximum(m, t))
        pl.store(s_out, [0, 0], total)
        pl.store(m_out, [0, 0], top)
    return total, top


def test_names_bound_by_the_yield_ending_a_loop_body_hold_its_results_after_it():
    x, total, top = rand(128, 64, seed=3), torch.zeros(32, 64), torch.zeros(32, 64)
    renamed_results(x, total, top, config=SIM)
    torch.testing.assert_close(total, blocks(x).sum(0))
    torch.testing.assert_close(top, blocks(x).amax(0))


@pl.jit
def while_below(x: X, n: N, out: pl.Out[B]):
    with pl.at(level=pl.Level.CORE_GROUP):
        limit = pl.read(n, [0])
        acc = pl.full([32, 64], pl.FP32, 0.0)
        for (i,) in pl.while_(init_values=(0,)):
            pl.cond(i < limit)
            acc = pl.add(acc, pl.load(x, [i * 32, 0], [32, 64]))
            i = i + 1
        pl.store(acc, [0, 0], out)
    return out


@pytest.mark.parametrize("limit", [0, 1, 3, 4])
def test_a_while_loop_runs_while_its_run_time_condition_holds(limit):
    x, out = rand(128, 64, seed=4), torch.zeros(32, 64)
    while_below(x, flag(limit), out, config=SIM)
    torch.testing.assert_close(out, blocks(x)[:limit].sum(0))


def test_a_while_loop_prints_as_pl_while_with_its_condition_first():
    program = while_below.lower(rand(128, 64), flag(2), torch.zeros(32, 64))
    kernel = next(f for f in program.functions.values() if f.name.endswith("incore_0"))
    loop = next(s for s in kernel.body if isinstance(s, While))
    assert [a.type.__class__.__name__ for a in loop.iter_args] == ["ScalarType", "TileType"]
    lines = [line.strip() for line in program.as_python().splitlines()]
    header = next(k for k, line in enumerate(lines) if "pl.while_(" in line)
    assert lines[header] == "for (i, acc_1) in pl.while_(init_values=(0, acc)):"
    assert lines[header + 1] == "pl.cond(i < limit)"


@pl.jit
def skip_and_stop(x: X, n: N, out: pl.Out[B]):
    with pl.at(level=pl.Level.CORE_GROUP):
        limit = pl.read(n, [0])
        acc = pl.full([32, 64], pl.FP32, 0.0)
        for i in pl.range(4):
            if i == 1:
                continue
            if i >= limit:
                break
            acc = pl.add(acc, pl.load(x, [i * 32, 0], [32, 64]))
        pl.store(acc, [0, 0], out)
    return out


@pytest.mark.parametrize("limit", [0, 2, 3, 4])
def test_break_and_continue_on_run_time_conditions(limit):
    x, out = rand(128, 64, seed=5), torch.zeros(32, 64)
    skip_and_stop(x, flag(limit), out, config=SIM)
    want = sum((blocks(x)[i] for i in range(min(limit, 4)) if i != 1), torch.zeros(32, 64))
    torch.testing.assert_close(out, want)


@pl.jit
def continue_with_a_value(x: X, out: pl.Out[B]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.full([32, 64], pl.FP32, 0.0)
        for i in pl.range(4):
            t = pl.load(x, [i * 32, 0], [32, 64])
            if i < 2:
                acc = pl.sub(acc, t)
                continue
            acc = pl.add(acc, t)
        pl.store(acc, [0, 0], out)
    return out


def test_a_value_bound_before_continue_is_the_next_iterations():
    x, out = rand(128, 64, seed=6), torch.zeros(32, 64)
    continue_with_a_value(x, out, config=SIM)
    b = blocks(x)
    torch.testing.assert_close(out, b[2] + b[3] - b[0] - b[1])


@pl.jit
def stop_at_compile_time(x: X, out: pl.Out[B]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.full([32, 64], pl.FP32, 0.0)
        for i in pl.range(4):
            acc = pl.add(acc, pl.load(x, [i * 32, 0], [32, 64]))
            if STOP_EARLY:
                break
            acc = pl.mul(acc, 100.0)
        pl.store(acc, [0, 0], out)
    return out


def test_a_break_on_a_compile_time_condition_ends_the_loop_there():
    x, out = rand(128, 64, seed=7), torch.zeros(32, 64)
    stop_at_compile_time(x, out, config=SIM)
    torch.testing.assert_close(out, x[:32])


@pl.jit
def count_up(x: X, n: N, out: pl.Out[B]):
    with pl.at(level=pl.Level.CORE_GROUP):
        limit = pl.read(n, [0])
        acc = pl.full([32, 64], pl.FP32, 0.0)
        for (i,) in pl.while_(init_values=(0,)):
            pl.cond(i < 4)
            if i == limit:
                break
            acc = pl.add(acc, pl.load(x, [i * 32, 0], [32, 64]))
            i = i + 1
        pl.store(acc, [0, 0], out)
    return out


@pytest.mark.parametrize("limit", [0, 2, 9])
def test_break_leaves_a_while_loop(limit):
    x, out = rand(128, 64, seed=8), torch.zeros(32, 64)
    count_up(x, flag(limit), out, config=SIM)
    torch.testing.assert_close(out, blocks(x)[: min(limit, 4)].sum(0))


@pl.jit
def host_if(x: X, n: N, out: pl.Out[X]):
    if pl.read(n, [0]) > 0:  # noqa: SIM108 (the if statement is what is tested)
        rows = 64
    else:
        rows = 32
    for j in pl.range(0, rows, 32):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.exp(pl.load(x, [j, 0], [32, 64])), [j, 0], out)
    return out


@pytest.mark.parametrize("taken", [1, 0])
def test_a_value_leaving_an_orchestration_if_bounds_a_loop_of_tasks(taken):
    x, out = rand(128, 64, seed=9), torch.zeros(128, 64)
    host_if(x, flag(taken), out, config=SIM)
    rows = 64 if taken else 32
    torch.testing.assert_close(out[:rows], x[:rows].exp())
    assert not out[rows:].any()


@pl.jit
def mixed_pick(
    a: pl.Tensor[[128, 128], pl.FP16],
    b: pl.Tensor[[128, 128], pl.FP16],
    n: N,
    out: pl.Out[pl.Tensor[[128, 128], pl.FP32]],
):
    with pl.at(
        level=pl.Level.CORE_GROUP,
        optimizations=[pl.split(pl.SplitMode.UP_DOWN), pl.cross_core_slot(slot_num=1)],
        name_hint="mixed_pick",
    ):
        a_l = pl.move(pl.load(a, [0, 0], [128, 128], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        b_r = pl.move(pl.load(b, [0, 0], [128, 128], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        c = pl.move(pl.matmul(a_l, b_r), target_memory=pl.Mem.Vec)
        if pl.read(n, [0]) > 0:  # noqa: SIM108 (the if statement is what is tested)
            r = pl.exp(c)
        else:
            r = pl.mul(c, 2.0)
        pl.store(r, [0, 0], out)
    return out


@pytest.mark.parametrize("taken", [1, 0])
def test_a_vector_tile_leaving_an_if_of_a_split_mixed_kernel_is_halved_per_lane(taken):
    torch.manual_seed(0)
    a, b = (torch.randn(128, 128, dtype=torch.float16) * 0.1 for _ in range(2))
    out = torch.zeros(128, 128)
    mixed_pick(a, b, flag(taken), out, config=SIM)
    ref = a.float() @ b.float()
    torch.testing.assert_close(out, ref.exp() if taken else ref * 2, rtol=1e-3, atol=1e-3)
    aiv = mixed_pick.lower(a, b, flag(taken), out).functions["mixed_pick_aiv"]
    branch = next(s for s in aiv.body if isinstance(s, If))
    assert branch.results[0].type.shape == (64, 128)  # each lane's half


@pytest.mark.parametrize("taken", [1, 0])
def test_a_tensor_leaving_an_if_inside_a_scope_is_the_taken_arms_value(taken):
    @pl.jit
    def tensor_pick(x: X, n: N, out: pl.Out[X]):
        with pl.at(level=pl.Level.CORE_GROUP):
            if pl.read(n, [0]) > 0:  # noqa: SIM108 (the if statement is what is tested)
                r = pl.exp(x)
            else:
                r = pl.mul(x, 2.0)
            out[:] = pl.add(r, 1.0)
        return out

    x, out = rand(128, 64), torch.zeros(128, 64)
    tensor_pick(x, flag(taken), out, config=SIM)
    torch.testing.assert_close(out, (x.exp() if taken else x * 2) + 1)


def gated_exp(gate: bool):
    @pl.jit
    def kernel(x: X, n: N, out: pl.Out[B]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(x, [0, 0], [32, 64])
            if gate and pl.read(n, [0]) > 0:  # a compile-time flag, then a run-time condition
                t = pl.exp(t)
            pl.store(t, [0, 0], out)
        return out

    return kernel


@pytest.mark.parametrize(("gate", "taken", "exp"), [(True, 1, True), (True, 0, False), (False, 1, False)])
def test_a_compile_time_operand_of_and_leaves_the_run_time_last_one_as_the_condition(gate, taken, exp):
    kernel = gated_exp(gate)
    program = kernel.parse()
    ifs = [s for fn in program.functions.values() for s in walk_stmts(fn.body) if isinstance(s, If)]
    assert len(ifs) == (1 if gate else 0)  # `False and ...` folds away, `True and c` is `c`
    x, out = rand(32 * 4, 64, seed=11), torch.zeros(32, 64)
    kernel(x, flag(taken), out, config=SIM)
    torch.testing.assert_close(out, x[:32].exp() if exp else x[:32])
