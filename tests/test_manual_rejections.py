"""Programs PyPTO's manual rejects are rejected here too: at the user's line, with a hint."""

import pytest
import torch

import pypto.language as pl
from pypto.ir import ParseError


def test_a_program_method_without_self_is_an_error_at_its_first_parameter():
    source = """
import pypto.language as pl


@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(x: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        out[:] = pl.add(x, x)
        return out
"""
    with pytest.raises(ParseError) as info:
        pl.parse(source)
    assert info.value.message == "method kernel of @pl.program P has no self parameter"
    assert info.value.span.line == 8
    assert info.value.hint is not None and "def kernel(self, ...)" in info.value.hint


def test_an_unrolled_loop_takes_no_init_values():
    @pl.jit
    def carried(x: pl.Tensor[[32, 32], pl.FP32], out: pl.Out[pl.Tensor[[32, 32], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(x, [0, 0], [32, 32])
            for _i, (acc,) in pl.unroll(4, init_values=(t,)):
                acc2 = pl.add(acc, t)
                acc3 = pl.yield_(acc2)
            pl.store(acc3, [0, 0], out)
        return out

    with pytest.raises(ParseError) as info:
        carried(torch.randn(32, 32), torch.zeros(32, 32))
    assert info.value.message == "pl.unroll() takes no init_values=: an unrolled loop carries no values"
    assert "pl.range(..., init_values=(...))" in (info.value.hint or "")


def test_an_unrolled_loop_over_a_run_time_bound_is_an_error():
    @pl.jit
    def bounded(
        x: pl.Tensor[[128, 32], pl.FP32],
        n: pl.Tensor[[1], pl.INT32],
        out: pl.Out[pl.Tensor[[128, 32], pl.FP32]],
    ):
        with pl.at(level=pl.Level.CORE_GROUP):
            stop = pl.read(n, [0])
            for i in pl.unroll(stop):
                pl.store(pl.load(x, [i * 32, 0], [32, 32]), [i * 32, 0], out)
        return out

    with pytest.raises(ParseError) as info:
        bounded(torch.randn(128, 32), torch.tensor([2], dtype=torch.int32), torch.zeros(128, 32))
    assert info.value.message.startswith("pl.unroll() bounds must be known at compile time")
    assert "pl.range" in (info.value.hint or "")


def test_an_unrolled_loop_over_a_static_shape_still_runs():
    @pl.jit
    def copied(x: pl.Tensor[[128, 32], pl.FP32], out: pl.Out[pl.Tensor[[128, 32], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.unroll(x.shape[0] // 32):
                pl.store(pl.load(x, [i * 32, 0], [32, 32]), [i * 32, 0], out)
        return out

    x, out = torch.randn(128, 32), torch.zeros(128, 32)
    copied(x, out)
    torch.testing.assert_close(out, x)


MESSAGE = "columns"


def test_a_static_assert_message_must_be_a_string_literal():
    @pl.jit
    def checked(x: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
        pl.static_assert(x.shape[1] == 128, MESSAGE)
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.mul(x, 2.0)
        return out

    with pytest.raises(ParseError) as info:
        checked(torch.randn(64, 128), torch.zeros(64, 128))
    assert info.value.message == "pl.static_assert: the message must be a string literal"


def test_a_static_assert_with_a_literal_message_passes():
    @pl.jit
    def checked(x: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
        pl.static_assert(x.shape[1] == 128, "expected 128 columns")
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.mul(x, 2.0)
        return out

    x, out = torch.randn(64, 128), torch.zeros(64, 128)
    checked(x, out)
    torch.testing.assert_close(out, 2 * x)


class Settings:
    """A captured Python object that folds to no kernel value."""


SETTINGS = Settings()


def test_a_captured_object_that_cannot_be_folded_is_named_in_the_error():
    @pl.jit
    def scaled(x: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.mul(x, SETTINGS)
        return out

    with pytest.raises(ParseError) as info:
        scaled(torch.randn(64, 64), torch.zeros(64, 64))
    assert "'SETTINGS', a Python Settings object captured from the enclosing scope" in info.value.message
    assert info.value.hint == (
        "pass SETTINGS to the kernel as a parameter instead of capturing it, or capture a number"
    )
    assert info.value.span.line == line_of_mul()


def line_of_mul() -> int:
    import inspect

    lines, first = inspect.getsourcelines(test_a_captured_object_that_cannot_be_folded_is_named_in_the_error)
    return first + next(i for i, text in enumerate(lines) if "pl.mul(x, SETTINGS)" in text)
