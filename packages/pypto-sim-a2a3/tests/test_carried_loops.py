"""Loop-carried values in hand-built kernels: iter_args, yields copied into their buffer, results."""

from __future__ import annotations

import torch
from sim_lowered import FunctionBuilder, Mem, rand, run, single, tensor_t

from pypto.ir import INDEX, Const, Direction, FunctionKind


def carried_sum_kernel(stop: int):
    """``acc`` starts as row block 0 and adds blocks 1 .. stop-1; ``n`` counts the iterations;
    the result is stored plus ``n``."""
    k = FunctionBuilder("carried", FunctionKind.AIV)
    x_gm = k.param("x", tensor_t((128, 64)))
    out = k.param("out", tensor_t((32, 64)), Direction.Out)
    acc0 = k.op("acc0", "tile.load", x_gm, [0, 0], shape=(32, 64), target_memory=Mem.Vec)
    with k.carried_loop("i", 1, stop, {"acc": acc0, "n": Const(0, INDEX)}) as loop:
        acc, n = loop.iter_args
        row = k.scalar("scalar.mul", loop.var, 32)
        t = k.op("t", "tile.load", x_gm, [row, 0], shape=(32, 64), target_memory=Mem.Vec)
        loop.yields += [k.op("acc_next", "tile.add", acc, t), k.scalar("scalar.add", n, 1)]
    acc_out, n_out = loop.results
    y = k.op("y", "tile.adds", acc_out, k.scalar("scalar.add", n_out, 0.0))
    k.do("tile.store", y, [0, 0], out)
    return k.build()


def test_each_yield_is_copied_into_the_iter_arg_buffer_and_the_result_holds_the_last():
    x, out = rand(128, 64), torch.zeros(32, 64)
    run(single(carried_sum_kernel(4)), x, out)
    torch.testing.assert_close(out, x.view(4, 32, 64).sum(0) + 3)


def test_a_loop_without_iterations_leaves_the_init_values_in_its_results():
    x, out = rand(128, 64, seed=1), torch.zeros(32, 64)
    run(single(carried_sum_kernel(1)), x, out)
    torch.testing.assert_close(out, x[:32], rtol=0, atol=0)
