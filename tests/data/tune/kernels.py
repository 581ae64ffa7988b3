"""Kernels for the tests of ``pypto tune`` (tests/test_cli_tune.py).

``seed`` is a plain ``@pl.jit`` kernel whose body reads ``tile_m``, ``slot_num`` and ``split``,
which nothing here defines: ``--grid`` gives them. ``tuned_seed`` is the same kernel under
``@pl.autotune`` with fully annotated parameters (its last config is infeasible: the ring of four
128-row slots does not fit in UB). ``scaled`` takes ``scale`` as a parameter, which a grid passes
as the argument.
"""

# The kernels read the names the configurations give: nothing in this module defines them.
# ruff: noqa: F821

import pypto.language as pl

M, K, N = 256, 256, 128


@pl.jit
def seed(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
    M = a.shape[0]
    with pl.at(
        level=pl.Level.CORE_GROUP,
        optimizations=[pl.split(split), pl.cross_core_slot(slot_num=slot_num)],
        name_hint="mixed",
    ):
        for i in pl.range(0, M, tile_m):
            acc = pl.matmul(a[i : i + tile_m, :], b, out_dtype=pl.FP32)
            out[i : i + tile_m, :] = pl.add(acc, bias[i : i + tile_m, :])
    return out


TUNED_CONFIGS = [
    pl.Config(tile_m=64, slot_num=2, split=pl.SplitMode.UP_DOWN),
    pl.Config(tile_m=128, slot_num=2, split=pl.SplitMode.UP_DOWN),
    pl.Config(tile_m=128, slot_num=4, split=pl.SplitMode.UP_DOWN),
]


@pl.autotune(configs=TUNED_CONFIGS, key=["M"])
@pl.jit
def tuned_seed(
    a: pl.Tensor[[M, K], pl.FP16],
    b: pl.Tensor[[K, N], pl.FP16],
    bias: pl.Tensor[[M, N], pl.FP32],
    out: pl.Out[pl.Tensor[[M, N], pl.FP32]],
):
    M = a.shape[0]
    with pl.at(
        level=pl.Level.CORE_GROUP,
        optimizations=[pl.split(split), pl.cross_core_slot(slot_num=slot_num)],
        name_hint="mixed",
    ):
        for i in pl.range(0, M, tile_m):
            acc = pl.matmul(a[i : i + tile_m, :], b, out_dtype=pl.FP32)
            out[i : i + tile_m, :] = pl.add(acc, bias[i : i + tile_m, :])
    return out


@pl.jit
def scaled(x: pl.Tensor[[256, 64], pl.FP32], out: pl.Out[pl.Tensor[[256, 64], pl.FP32]], scale: pl.FP32):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="scaled"):
        for i in pl.range(0, 256, rows):
            out[i : i + rows, :] = pl.mul(x[i : i + rows, :], scale)
    return out
