"""Scalar parameters: a Python number is part of the key and is compiled in as a Const."""

import re

import pytest
import torch

import pypto.language as pl
from pypto.ir import Const, DataType, ScalarType, SpecializationError, Var


@pl.jit
def axpy(
    x: pl.Tensor[[16, 16], pl.FP32],
    alpha: pl.FP32,
    steps: pl.Scalar[pl.INDEX],
    out: pl.Out[pl.Tensor[[16, 16], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        for _i in pl.range(steps):
            out[:] = pl.mul(x, alpha)
    return out


def scope_ops(program):
    scope = program.entry_function.body[0]
    loop = scope.body[0]
    return loop, loop.body[0].value


def test_a_python_number_is_compiled_in_as_a_typed_const():
    loop, muls = scope_ops(axpy.parse(torch.ones(16, 16), 3, 4, torch.zeros(16, 16)))
    alpha = muls.args[1]
    assert isinstance(alpha, Const) and alpha.value == 3.0 and alpha.type == ScalarType(DataType.FP32)
    assert isinstance(loop.stop, Const) and loop.stop.value == 4


def test_the_scalar_parameter_stays_in_the_signature():
    params = axpy.parse(torch.ones(16, 16), 3, 4, torch.zeros(16, 16)).entry_function.params
    assert [(p.var.name, p.var.type) for p in params][1:3] == [
        ("alpha", ScalarType(DataType.FP32)),
        ("steps", ScalarType(DataType.INDEX)),
    ]


def test_without_arguments_scalars_are_run_time_parameters():
    program = axpy.parse()
    loop, muls = scope_ops(program)
    alpha, steps = (p.var for p in program.entry_function.params[1:3])
    assert isinstance(muls.args[1], Var) and muls.args[1] is alpha
    assert loop.stop is steps


def test_scalar_values_are_part_of_the_specialization_key(backend, config):
    axpy.cache_clear()
    x, out = torch.ones(16, 16), torch.zeros(16, 16)
    axpy(x, 2.0, 1, out, config=config)
    axpy(x, 2.0, 1, out, config=config)
    axpy(x, 0.5, 1, out, config=config)
    assert axpy.cache_info() == (1, 2, 2)
    assert backend.calls[-1][1][1] == 0.5


def test_a_tensor_passed_for_a_scalar_parameter_is_a_specialization_error():
    with pytest.raises(
        SpecializationError,
        match=re.escape("argument 'alpha' must be a Python number for pl.Scalar[pl.FP32]"),
    ):
        axpy.parse(torch.ones(16, 16), torch.ones(1), 1, torch.zeros(16, 16))


def test_a_fractional_value_for_an_integer_scalar_is_rejected():
    with pytest.raises(
        SpecializationError, match=re.escape("argument 'steps' must be an integer for pl.INDEX")
    ):
        axpy.parse(torch.ones(16, 16), 1.0, 2.5, torch.zeros(16, 16))


def test_scalar_defaults_specialize_compiles_without_arguments():
    @pl.jit
    def with_default(
        x: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]], k: pl.FP32 = 0.25
    ):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = x + k
        return out

    adds = with_default.parse().entry_function.body[0].body[0].value
    assert adds.op == "tensor.adds" and adds.args[1].value == 0.25
