"""The in-memory compile cache covers every module global and closure value a kernel body reads:
change one (rebind it, or mutate a list or an object it names) and the next call compiles again
with the new value instead of running the old program."""

import types

import torch

import pypto.language as pl
from pypto.ir import Call, Const, TileType
from pypto.ir.nodes import walk_expr, walk_stmts

SCALE = 2
ROWS = [16, 64]
SETTINGS = types.SimpleNamespace(bias=1.0)


@pl.jit
def scaled(a: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], ROWS)
        pl.store(pl.add(pl.mul(t, SCALE), SETTINGS.bias), [0, 0], out)
    return out


def constants(program, op):
    return [
        e.args[1].value
        for fn in program.functions.values()
        for stmt in walk_stmts(fn.body)
        for root in ([stmt.value] if hasattr(stmt, "value") else [])
        for e in walk_expr(root)
        if isinstance(e, Call) and e.op == op and isinstance(e.args[1], Const)
    ]


def loaded_shape(program):
    return next(
        e.type.shape
        for fn in program.functions.values()
        for stmt in walk_stmts(fn.body)
        for root in ([stmt.value] if hasattr(stmt, "value") else [])
        for e in walk_expr(root)
        if isinstance(e, Call) and e.op == "tile.load" and isinstance(e.type, TileType)
    )


def run(kernel, backend, config):
    kernel(torch.ones(16, 64), torch.zeros(16, 64), config=config)
    return backend.calls[-1][0]


def test_rebinding_a_module_global_compiles_again(backend, config, monkeypatch):
    scaled.cache_clear()
    assert constants(run(scaled, backend, config), "tile.muls") == [2.0]
    monkeypatch.setitem(globals(), "SCALE", 3)
    assert constants(run(scaled, backend, config), "tile.muls") == [3.0]
    assert scaled.cache_info().misses == 2
    run(scaled, backend, config)
    assert scaled.cache_info().hits == 1  # unchanged values hit the cache again


def test_an_attribute_of_a_global_object_is_read_again(backend, config, monkeypatch):
    scaled.cache_clear()
    assert constants(run(scaled, backend, config), "tile.adds") == [1.0]
    monkeypatch.setattr(SETTINGS, "bias", 10.0)
    assert constants(run(scaled, backend, config), "tile.adds") == [10.0]


def test_mutating_a_global_list_used_as_a_shape_compiles_again(backend, config):
    scaled.cache_clear()
    assert loaded_shape(run(scaled, backend, config)) == (16, 64)
    ROWS[0] = 8
    try:
        assert loaded_shape(run(scaled, backend, config)) == (8, 64)
    finally:
        ROWS[0] = 16


def test_a_closure_value_is_part_of_the_key(backend, config):
    factor = 2.0

    @pl.jit
    def closed(a: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.mul(a, factor)
        return out

    assert constants(run(closed, backend, config), "tensor.muls") == [2.0]
    factor = 5.0
    assert constants(run(closed, backend, config), "tensor.muls") == [5.0]
    assert closed.cache_info() == (0, 2, 1)


HELPER_SCALE = 4.0


@pl.jit.inline
def scale_by_helper_global(x):
    return pl.mul(x, HELPER_SCALE)


@pl.jit
def via_helper(a: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = scale_by_helper_global(a)
    return out


def test_a_global_read_by_a_called_helper_counts_too(backend, config, monkeypatch):
    via_helper.cache_clear()
    assert constants(run(via_helper, backend, config), "tensor.muls") == [4.0]
    monkeypatch.setitem(globals(), "HELPER_SCALE", 0.5)
    assert constants(run(via_helper, backend, config), "tensor.muls") == [0.5]
