"""@pl.jit specializes on its arguments, compiles once per key and runs through the backend."""

import re

import pytest
import torch

import pypto.language as pl
from pypto.ir import (
    ParseError,
    SpecializationError,
    TensorType,
    UnsupportedDtypeError,
)
from pypto.passes import PASS_REGISTRY
from pypto.runtime import CompiledProgram, RunConfig


@pl.jit
def scaled(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(a, 2.0)
    return out


@pl.jit
def fixed(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.exp(a)
    return out


def fresh(kernel):
    kernel.cache_clear()
    return kernel


def test_second_call_with_the_same_shapes_does_not_recompile(backend, config):
    kernel = fresh(scaled)
    a, out = torch.ones(64, 64), torch.zeros(64, 64)
    kernel(a, out, config=config)
    kernel(torch.ones(64, 64), torch.zeros(64, 64), config=config)
    assert kernel.cache_info() == (1, 1, 1)
    assert len(backend.calls) == 2
    assert backend.calls[0][0] is backend.calls[1][0]


def test_different_shapes_or_dtypes_compile_again(backend, config):
    kernel = fresh(scaled)
    kernel(torch.ones(64, 64), torch.zeros(64, 64), config=config)
    kernel(torch.ones(128, 64), torch.zeros(128, 64), config=config)
    kernel(torch.ones(64, 64, dtype=torch.float16), torch.zeros(64, 64, dtype=torch.float16), config=config)
    assert kernel.cache_info() == (0, 3, 3)
    params = [call[0].entry_function.params[0].var.type for call in backend.calls]
    assert params == [
        TensorType((64, 64), pl.FP32),
        TensorType((128, 64), pl.FP32),
        TensorType((64, 64), pl.FP16),
    ]


def test_another_platform_or_options_compile_again(backend, config):
    kernel = fresh(fixed)
    kernel.compile(config=config)
    kernel.compile(config=RunConfig(platform="testsim", pipeline=(), options={"k": 1}))
    kernel.compile(config=RunConfig(platform="a2a3", pipeline=()))
    assert kernel.cache_info().misses == 3


def test_call_returns_the_out_tensors_and_keeps_the_report(backend, config):
    kernel = fresh(scaled)
    a, out = torch.ones(8, 8), torch.zeros(8, 8)
    result = kernel(a, out, config=config)
    assert result is out
    assert kernel.last_report is not None and kernel.last_report.total_cycles == 100
    _, args, options = backend.calls[0]
    assert args[0] is a and args[1] is out
    assert options["enable_profiling"] is False


def test_returned_values_come_from_the_backend_report_when_it_gives_them(backend, config):
    kernel = fresh(scaled)
    marker = torch.full((8, 8), 7.0)
    backend.outputs = (marker,)
    assert kernel(torch.ones(8, 8), torch.zeros(8, 8), config=config) is marker


def test_keyword_arguments_bind_like_python(backend, config):
    kernel = fresh(scaled)
    a, out = torch.ones(8, 8), torch.zeros(8, 8)
    assert kernel(out=out, a=a, config=config) is out
    assert backend.calls[0][1] == [a, out]


def test_compile_and_lower_need_no_arguments_when_fully_annotated(backend, config):
    kernel = fresh(fixed)
    compiled = kernel.compile(config=config)
    assert isinstance(compiled, CompiledProgram)
    assert kernel.lower(config=config) is compiled.lowered
    assert [f.name for f in compiled.lowered.functions.values()] == ["fixed"]
    a, out = torch.ones(64, 64), torch.zeros(64, 64)
    assert compiled.run(a, out) is out


def test_compiling_a_bare_tensor_kernel_without_arguments_names_the_parameter(backend, config):
    with pytest.raises(SpecializationError) as info:
        fresh(scaled).compile(config=config)
    assert info.value.message == "parameter 'a' is annotated pl.Tensor, which fixes no shape and dtype"


def test_unsupported_torch_dtype_is_a_type_error_naming_dtype_and_supported_ones(backend, config):
    with pytest.raises(TypeError) as info:
        fresh(scaled)(torch.ones(4, 4, dtype=torch.complex64), torch.zeros(4, 4), config=config)
    err = info.value
    assert isinstance(err, UnsupportedDtypeError)
    assert "argument 'a' has dtype torch.complex64, which PyPTO does not support" in err.message
    assert "torch.float16" in err.message and "torch.bfloat16" in err.message


def test_shape_contradicting_the_annotation_names_the_parameter(backend, config):
    with pytest.raises(SpecializationError) as info:
        fresh(fixed)(torch.ones(32, 64), torch.zeros(64, 64), config=config)
    assert info.value.message == (
        "argument 'a' has shape [32, 64], but parameter 'a' is annotated pl.Tensor[[64, 64], pl.FP32]"
    )
    assert info.value.span.line == fixed.source.span(fixed.source.tree.args.args[0]).line


def test_dtype_contradicting_the_annotation_names_the_parameter(backend, config):
    with pytest.raises(SpecializationError, match=re.escape("argument 'out' has dtype torch.float16")):
        fresh(fixed)(torch.ones(64, 64), torch.zeros(64, 64, dtype=torch.float16), config=config)


def test_wrong_argument_count_is_a_clear_error(backend, config):
    with pytest.raises(SpecializationError) as info:
        fresh(fixed)(torch.ones(64, 64), config=config)
    assert info.value.message == "fixed(): missing a required argument: 'out'"
    assert info.value.hint == "fixed takes (a, out)"


def test_compiled_program_rejects_arguments_it_was_not_compiled_for(backend, config):
    compiled = fresh(fixed).compile(config=config)
    with pytest.raises(SpecializationError, match=re.escape("argument 'a' is Tensor[[8, 8], FP32]")):
        compiled.run(torch.ones(8, 8), torch.zeros(64, 64))
    with pytest.raises(SpecializationError, match="takes 2 argument"):
        compiled.run(torch.ones(64, 64))


def test_parse_errors_are_raised_only_when_the_kernel_is_first_used():
    @pl.jit
    def broken(a):
        return a

    with pytest.raises(ParseError, match="Parameter 'a' missing type annotation"):
        broken.parse()


def test_run_config_dump_passes_writes_one_file_per_pass(backend, tmp_path, monkeypatch):
    monkeypatch.setitem(PASS_REGISTRY, "KeepProgram", "lang_test_passes:KeepProgram")
    config = RunConfig(platform="testsim", pipeline=("KeepProgram", "KeepProgram"), dump_passes=tmp_path)
    fresh(fixed).compile(config=config)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["01_after_KeepProgram.py", "02_after_KeepProgram.py"]
    assert "pl.tensor.exp(a)" in (tmp_path / names[0]).read_text()


def test_dump_passes_is_written_when_the_compile_cache_already_holds_the_program(
    backend, tmp_path, monkeypatch
):
    monkeypatch.setitem(PASS_REGISTRY, "KeepProgram", "lang_test_passes:KeepProgram")
    a, out = torch.ones(64, 64), torch.zeros(64, 64)
    kernel = fresh(fixed)
    kernel(a, out, config=RunConfig(platform="testsim", pipeline=("KeepProgram",)))
    dumps = tmp_path / "dumps"
    kernel(a, out, config=RunConfig(platform="testsim", pipeline=("KeepProgram",), dump_passes=dumps))
    assert sorted(p.name for p in dumps.iterdir()) == ["01_after_KeepProgram.py"]
    kernel(a, out, config=RunConfig(platform="testsim", pipeline=("KeepProgram",)))
    assert kernel.cache_info().hits == 1  # a call without dumps uses the cache again
