"""More of PyPTO's surface as its programs use it (issue #35 item 6): ``pl.store`` of a leading
region of a tile (``shapes``), integer scalars taken as another integer dtype at a call and at an
annotated assignment, ``pypto.runtime.TensorSpec``, a compiled program called without its outputs,
and ``pl.cluster()`` around one InCore kernel's launch."""

import importlib.util

import pytest
import torch

import pypto.language as pl
from pypto.ir import ParseError, SpecializationError, TypeCheckError
from pypto.ir import compile as ir_compile
from pypto.runtime import RunConfig, TensorSpec, TensorSpecError

T = pl.Tensor[[64, 64], pl.FP32]


@pl.jit
def partial_stores(x: T, n: pl.Tensor[[1], pl.INT32], out: pl.Out[T]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.exp(pl.load(x, [0, 0], [32, 64]))
        out = pl.store(t, [0, 0], out, [32, 64])  # the whole tile
        rows = pl.cast(pl.read(n, [0]), pl.INDEX)
        out = pl.store(t, [32, 0], out, [rows, 16])  # a run-time leading region
        out = pl.store(t, [48, 32], out, [8, 8])  # a constant one
    return out


def test_a_store_writes_the_leading_region_its_shapes_name():
    x, out = torch.randn(64, 64), torch.zeros(64, 64)
    partial_stores(x, torch.tensor([5], dtype=torch.int32), out)
    want = torch.zeros(64, 64)
    want[:32] = torch.exp(x[:32])
    want[32:37, :16] = torch.exp(x[:5, :16])
    want[48:56, 32:40] = torch.exp(x[:8, :8])
    torch.testing.assert_close(out, want)


@pytest.mark.parametrize(
    ("shapes", "message"),
    [
        ("[64, 64]", "shapes[0] is 64, but the tile holds 32 along dim 0"),
        ("[32]", "shapes must hold 2 extents, one per dim of"),
        ("[32, 0]", "shapes[1] is 0, but the tile holds 64 along dim 1"),
    ],
)
def test_a_store_region_the_tile_cannot_give_is_an_error_at_the_store(shapes, message, tmp_path):
    source = f"""
import pypto.language as pl

@pl.jit
def k(x: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [32, 64])
        out = pl.store(t, [0, 0], out, {shapes})
    return out
"""
    path = tmp_path / "store_region.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("store_region", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(ParseError) as info:
        module.k.parse()
    assert message in info.value.message
    assert info.value.hint


@pl.program
class Widths:
    """An INDEX scalar passed for an INT64 parameter, an INT32 expression kept as an INT64."""

    @pl.function(type=pl.FunctionType.InCore)
    def scaled(self, x: T, k: pl.Scalar[pl.INT64], out: pl.Out[T]) -> T:
        t = pl.load(x, [0, 0], [64, 64])
        out = pl.store(pl.mul(t, pl.cast(k, pl.FP32)), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: T, n: pl.Tensor[[1], pl.INT32], out: pl.Out[T]) -> T:
        m: pl.Scalar[pl.INT64] = pl.read(n, [0]) * 2  # an INT32 value, kept as INT64
        for i in pl.range(1, 2):  # i is an INDEX
            out = self.scaled(x, i + m, out)
        return out


def test_integer_scalars_convert_at_a_call_and_an_annotated_assignment():
    x, out = torch.randn(64, 64), torch.zeros(64, 64)
    from pypto.runtime import run

    run(Widths, x, torch.tensor([3], dtype=torch.int32), out)
    torch.testing.assert_close(out, x * 7)


def test_a_float_scalar_for_an_integer_parameter_is_still_an_error():
    with pytest.raises(TypeCheckError) as info:

        @pl.program
        class Floats:
            @pl.function(type=pl.FunctionType.InCore)
            def scaled(self, x: T, k: pl.Scalar[pl.INT64], out: pl.Out[T]) -> T:
                out = pl.store(pl.load(x, [0, 0], [64, 64]), [0, 0], out)
                return out

            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, x: T, s: pl.Scalar[pl.FP32], out: pl.Out[T]) -> T:
                out = self.scaled(x, s, out)
                return out

    assert "must be a pl.INT64 scalar, got Scalar[FP32]" in info.value.message
    assert "pl.cast(x, pl.INT64)" in info.value.hint


@pytest.mark.parametrize(
    ("init", "check"),
    [
        (None, lambda t: bool((t == 0).all())),
        (2.5, lambda t: bool((t == 2.5).all())),
        (torch.randn, lambda t: t.dtype == torch.bfloat16 and t.shape == (4, 8)),
        (lambda: torch.arange(32), lambda t: t.flatten().tolist() == list(range(32))),
        (torch.ones(32), lambda t: bool((t == 1).all())),
    ],
)
def test_a_tensor_spec_makes_its_tensor_from_its_init_value(init, check):
    spec = TensorSpec("x", [4, 8], torch.bfloat16, init_value=init)
    tensor = spec.create_tensor()
    assert tensor.shape == (4, 8) and tensor.dtype == torch.bfloat16
    assert check(tensor)


def test_a_tensor_spec_whose_init_value_does_not_fit_is_an_error():
    with pytest.raises(TensorSpecError) as info:
        TensorSpec("x", [4, 8], torch.float32, init_value=torch.ones(5)).create_tensor()
    assert "init_value has 5 elements, but shape [4, 8] holds 32" in info.value.message
    with pytest.raises(TensorSpecError):
        TensorSpec("x", [4, -1], torch.float32)


@pl.jit
def doubled(x: T, out: pl.Out[T]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(x, x)
    return out


def test_a_compiled_program_called_without_its_outputs_allocates_and_returns_them():
    x = torch.randn(64, 64)
    compiled = ir_compile(doubled.lower(x, torch.zeros(64, 64)), platform="a2a3sim")
    result = compiled(x)
    torch.testing.assert_close(result, x + x)
    with pytest.raises(SpecializationError) as info:
        compiled()
    assert "takes 2 argument(s)" in info.value.message


def test_a_dynamic_output_left_out_is_an_error_naming_it():
    M = pl.dynamic("M")

    @pl.program
    class Dyn:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[M, 64], pl.FP32], out: pl.Out[pl.Tensor[[M, 64], pl.FP32]]):
            with pl.at(level=pl.Level.CORE_GROUP):
                out[:] = pl.add(x, x)
            return out

    compiled = ir_compile(Dyn, platform="a2a3sim")
    with pytest.raises(SpecializationError) as info:
        compiled(torch.randn(64, 64))
    assert "called without its output 'out'" in info.value.message


@pl.program
class Clustered:
    """A cluster around a pl.spmd launch of one mixed InCore kernel."""

    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, a: pl.Tensor[[64, 64], pl.FP16], b: pl.Tensor[[64, 64], pl.FP16], out: pl.Out[T]) -> T:
        block = pl.get_block_idx()
        acc = pl.matmul(
            pl.move(pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left),
            pl.move(pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right),
        )
        part = pl.slice(pl.move(acc, target_memory=pl.Mem.Vec), [32, 64], [0, 0])
        out = pl.store(pl.relu(part), [block * 32, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[64, 64], pl.FP16], b: pl.Tensor[[64, 64], pl.FP16], out: pl.Out[T]) -> T:
        with pl.cluster():  # noqa: SIM117
            with pl.spmd(core_num=2):
                out = self.kernel(a, b, out)
        return out


def test_a_cluster_around_one_incore_kernel_is_that_kernels_launch():
    g = torch.Generator().manual_seed(3)
    a, b = torch.randn(64, 64, generator=g).half(), torch.randn(64, 64, generator=g).half()
    out = torch.zeros(64, 64)
    from pypto.runtime import run

    run(Clustered, a, b, out, config=RunConfig(platform="a2a3sim"))
    top = torch.relu(a.float() @ b.float())[:32]
    torch.testing.assert_close(out, torch.cat([top, top]), rtol=1e-3, atol=1e-3)


@pl.jit
def spmd_by_lane(x: pl.Tensor[[256, 64], pl.FP32], out: pl.Out[pl.Tensor[[256, 64], pl.FP32]]):
    for _ in pl.spmd(4):  # the body does not read the loop variable: blocks divide work themselves
        with pl.at(level=pl.Level.CORE_GROUP):
            block = pl.get_block_idx()
            for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.NONE):
                row = block * 64 + aiv_id * 32
                pl.store(pl.exp(pl.load(x, [row, 0], [32, 64])), [row, 0], out)
    return out


def test_a_loop_form_spmd_whose_regions_divide_the_work_by_lane_runs():
    x, out = torch.randn(256, 64), torch.zeros(256, 64)
    spmd_by_lane(x, out)
    torch.testing.assert_close(out, torch.exp(x))
