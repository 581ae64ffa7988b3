"""Rebinding an output parameter writes nothing: a CompileWarning names the line and the fix."""

import pytest
from lang_diagnostics import line_of

import pypto.language as pl
from pypto.passes import CompileWarning

T64 = pl.Tensor[[64, 64], pl.FP32]


def test_rebinding_an_out_param_warns_with_the_line_and_the_fix():
    @pl.jit
    def rebinds(a: T64, out: pl.Out[T64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out = pl.exp(a)  # writes nothing
        return out

    with pytest.warns(CompileWarning) as record:
        rebinds.parse()
    (warning,) = record.list
    line = line_of(__file__, "out = pl.exp(a)  # writes nothing")
    assert (warning.filename, warning.lineno) == (__file__, line)
    assert str(warning.message) == (
        f"line {line}: `out = ...` rebinds the name and writes nothing to the output tensor 'out'; "
        "write into it with `out[:] = ...`"
    )


def test_writing_into_the_out_param_does_not_warn(recwarn):
    @pl.jit
    def writes(a: T64, out: pl.Out[T64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.exp(a)
        return out

    writes.parse()
    assert not [w for w in recwarn.list if issubclass(w.category, CompileWarning)]


def test_rebinding_an_input_param_does_not_warn(recwarn):
    @pl.jit
    def rebinds_input(a: T64, out: pl.Out[T64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            a = pl.exp(a)
            out[:] = a
        return out

    rebinds_input.parse()
    assert not [w for w in recwarn.list if issubclass(w.category, CompileWarning)]
