"""A bad annotation is an error at that annotation, with a caret and a hint: when Python evaluates
it at ``def`` time (the traceback then ends on the user's line) and when the parser does."""

import traceback

import pytest
from lang_diagnostics import module_at, rendered

from pypto.ir import ParseError


def define(tmp_path, annotation, name="bad_annotation"):
    path = tmp_path / f"{name}.py"
    module = module_at(
        path,
        "import pypto.language as pl\n\n\n"
        "@pl.jit\n"
        f"def kernel(a: {annotation}, out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):\n"
        "    return out\n",
    )
    return module, path


@pytest.mark.parametrize(
    ("annotation", "message", "hint"),
    [
        (
            'pl.Tensor[[64, 64], "fp32"]',
            "pl.Tensor dtype must be a pl dtype such as pl.FP32, got 'fp32'",
            "pl.FP32",
        ),
        (
            "pl.Tensor[[64, -1], pl.FP32]",
            "pl.Tensor shape must hold positive ints, got [64, -1]",
            "at least 1",
        ),
        ("pl.Tensor[64, pl.FP32]", "pl.Tensor shape must be a non-empty list of ints, got 64", "as a list"),
        (
            "pl.Out[pl.Tensor[[0, 64], pl.FP32]]",
            "pl.Tensor shape must hold positive ints, got [0, 64]",
            "at least 1",
        ),
        (
            "pl.Tile[[64, 64], pl.FP32, 3]",
            "pl.Tile memory space must be a pl.Mem member, got 3",
            "pl.Mem.Vec",
        ),
        ("pl.Out[3]", "pl.Out[...] wraps a tensor annotation, got 3", "pl.Out[pl.Tensor"),
    ],
)
def test_a_bad_annotation_at_def_time_points_at_it(tmp_path, annotation, message, hint):
    with pytest.raises(ParseError) as info:
        define(tmp_path, annotation)
    err = rendered(info.value)
    path = tmp_path / "bad_annotation.py"
    column = path.read_text().splitlines()[4].index(annotation.split("[")[0]) + 1
    assert err.header.startswith(f"{path}:5:")
    assert int(err.header.split(":")[2]) >= column
    assert info.value.message == message
    assert hint in err.hint
    last = traceback.extract_tb(info.value.__traceback__)[-1]
    assert (last.filename, last.lineno) == (str(path), 5)


def test_a_postponed_annotation_is_checked_by_the_parser_at_the_annotation(tmp_path):
    path = tmp_path / "postponed.py"
    module = module_at(
        path,
        "from __future__ import annotations\n\n"
        "import pypto.language as pl\n\n\n"
        "@pl.jit\n"
        'def kernel(a: pl.Tensor[[64, 64], "fp32"], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):\n'
        "    return out\n",
    )
    with pytest.raises(ParseError) as info:
        module.kernel.parse()
    err = rendered(info.value)
    assert err.header.startswith(f"{path}:7:15: error: pl.Tensor dtype must be a pl dtype")
    assert err.underlined == 'pl.Tensor[[64, 64], "fp32"]'
    assert "pl.FP32" in err.hint
