"""Per-pass bisection: validate_pass_ir_codegen_results and CompiledProgram.validate_ir name the
first pass whose program computes something else."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

import pytest
import torch

import pypto.language as pl
from pypto.debug import PassResultMismatch, ValidationInputError, validate_pass_ir_codegen_results
from pypto.ir import Assign, Call, For, If, Program
from pypto.passes import PassContext
from pypto.runtime import RunConfig, hookimpl, register_plugin, reset_registry

PIPELINE = "outline-scopes,tile-matmul,tensor-to-tile,{wrong}infer-memory-space,vector-split,expand-mixed,stamp-tfree,allocate,task-deps"


def _swap_adds(body):
    out = []
    for s in body:
        if isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op == "tile.add":
            s = replace(s, value=replace(s.value, op="tile.sub"))
        elif isinstance(s, For):
            s = replace(s, body=_swap_adds(s.body))
        elif isinstance(s, If):
            s = replace(s, then_body=_swap_adds(s.then_body), else_body=_swap_adds(s.else_body))
        out.append(s)
    return tuple(out)


@dataclass(frozen=True)
class SubtractInsteadOfAdd:
    """A deliberately wrong pass: every tile.add becomes tile.sub."""

    name: ClassVar[str] = "SubtractInsteadOfAdd"
    pipeline_name: ClassVar[str] = "subtract-instead-of-add"

    def run(self, program: Program, ctx: PassContext) -> Program:
        functions = [replace(fn, body=_swap_adds(fn.body)) for fn in program.functions.values()]
        return Program(program.name, functions, program.entry, program.attrs)


class WrongPassPlugin:
    @hookimpl
    def pypto_register_passes(self, register):
        register(SubtractInsteadOfAdd)


@pytest.fixture
def wrong_pass():
    """The wrong pass registered for one test (other tests reset the registry)."""
    reset_registry()
    register_plugin(WrongPassPlugin(), name="wrong-pass")
    yield
    reset_registry()


@pl.jit
def add_bias(
    x: pl.Tensor[[64, 128], pl.FP32],
    bias: pl.Tensor[[64, 128], pl.FP32],
    out: pl.Out[pl.Tensor[[64, 128], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="add_bias"):
        out[:] = pl.exp(pl.add(x, bias))
    return out


def _inputs():
    torch.manual_seed(0)
    x, bias = torch.randn(64, 128), torch.randn(64, 128)
    return {"x": x, "bias": bias, "out": torch.zeros(64, 128)}, {"out": torch.exp(x + bias)}


def test_the_bisection_names_the_wrong_pass(tmp_path, capsys, wrong_pass):
    tensors, expected = _inputs()
    config = RunConfig(dump_passes=tmp_path, pipeline=PIPELINE.format(wrong="subtract-instead-of-add,"))
    compiled = add_bias.compile(*tensors.values(), config=config)
    with pytest.raises(
        PassResultMismatch, match=r"04_after_SubtractInsteadOfAdd.*'out' differs.*pass SubtractInsteadOfAdd"
    ) as err:
        compiled.validate_ir(tensors, expected, rtol=1e-5, atol=1e-5)
    assert "03_after_ConvertTensorToTileOps" in str(err.value.hint)
    printed = capsys.readouterr().out
    assert "==================== 03_after_ConvertTensorToTileOps ====================" in printed
    assert "validate tensor: 'out', max_abs_diff: 0.000000e+00, pass: True" in printed
    assert "pass: False" in printed
    assert tensors["out"].abs().sum() == 0  # the caller's tensors are not written


def test_every_pass_of_the_default_pipeline_keeps_the_meaning(tmp_path, capsys):
    tensors, expected = _inputs()
    compiled = add_bias.compile(*tensors.values(), config=RunConfig(dump_passes=tmp_path))
    results = compiled.validate_ir(tensors, expected, rtol=1e-5, atol=1e-5)
    assert len(results) >= 8 and all(d["out"] <= 1e-5 for d in results.values())
    assert capsys.readouterr().out.count("pass: True") == len(results) + 1  # and the parsed program


def test_one_dump_file_is_validated_alone(tmp_path):
    tensors, expected = _inputs()
    add_bias.compile(*tensors.values(), config=RunConfig(dump_passes=tmp_path))
    last = sorted(tmp_path.glob("*_after_*.py"))[-1]
    results = validate_pass_ir_codegen_results(last, tensors, expected, verbose=False)
    assert list(results) == [last.stem]


def test_a_program_compiled_without_dumps_has_nothing_to_validate():
    tensors, expected = _inputs()
    add_bias.cache_clear()  # not the program an earlier test compiled with dumps
    compiled = add_bias.compile(*tensors.values())
    with pytest.raises(FileNotFoundError, match="dump_passes=True"):
        compiled.validate_ir(tensors, expected)


def test_a_missing_tensor_and_an_unknown_expected_name_are_errors(tmp_path):
    tensors, expected = _inputs()
    add_bias.compile(*tensors.values(), config=RunConfig(dump_passes=tmp_path))
    with pytest.raises(ValidationInputError, match="no tensor given for bias"):
        validate_pass_ir_codegen_results(tmp_path, {"x": tensors["x"], "out": tensors["out"]}, expected)
    with pytest.raises(ValidationInputError, match="'result'"):
        validate_pass_ir_codegen_results(tmp_path, tensors, {"result": expected["out"]})
    with pytest.raises(FileNotFoundError):
        validate_pass_ir_codegen_results(tmp_path / "nowhere", tensors, expected)


def test_a_wrong_expected_tensor_is_caught_before_any_pass(tmp_path):
    tensors, expected = _inputs()
    compiled = add_bias.compile(*tensors.values(), config=RunConfig(dump_passes=tmp_path))
    with pytest.raises(PassResultMismatch, match="00_as_parsed") as err:
        compiled.validate_ir(tensors, {"out": expected["out"] + 1.0})
    assert "expected tensors" in str(err.value.hint)
