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
        with pl.cluster():  # noqa: SIM117  (two scopes: the DSL takes one context per with)
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


def _program_error(source: str, tmp_path, error=ParseError):
    path = tmp_path / "prog.py"
    path.write_text("import pypto.language as pl\n" + source)
    spec = importlib.util.spec_from_file_location("prog", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    with pytest.raises(error) as info:
        spec.loader.exec_module(module)
    return info.value


def test_several_func_attr_calls_merge():
    @pl.program
    class Merged:
        @pl.function(type=pl.FunctionType.InCore)
        def kernel(self, x: T, out: pl.Out[T]) -> T:
            pl.func_attr({"note": 1})
            pl.func_attr({"split": pl.SplitMode.NONE})
            out = pl.store(pl.load(x, [0, 0], [64, 64]), [0, 0], out)
            return out

    attrs = Merged.function("kernel").attrs
    assert attrs["note"] == 1 and attrs["split"] is pl.SplitMode.NONE


@pytest.mark.parametrize(
    "attrs",
    ['pl.func_attr({"note": 1})\n        pl.func_attr({"note": 2})', 'pl.func_attr({"note": 1, "note": 2})'],
)
def test_a_func_attr_key_declared_twice_is_an_error_naming_it(attrs, tmp_path):
    err = _program_error(
        f"""
@pl.program
class Twice:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, x: pl.Tensor[[64, 64], pl.FP32]) -> pl.Tensor[[64, 64], pl.FP32]:
        {attrs}
        return x
""",
        tmp_path,
    )
    assert "pl.func_attr declares 'note' twice" in err.message


def test_strict_ssa_rejects_a_second_binding_and_the_write_sugar(tmp_path):
    from pypto.ir import SSAViolationError

    err = _program_error(
        """
@pl.program
class Strict:
    @pl.function(type=pl.FunctionType.InCore, strict_ssa=True)
    def kernel(self, x: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        t = pl.load(x, [0, 0], [64, 64])
        t = pl.exp(t)
        return out
""",
        tmp_path,
        SSAViolationError,
    )
    assert "'t' is bound a second time, which strict_ssa=True forbids" in err.message
    err = _program_error(
        """
@pl.program
class StrictSugar:
    @pl.function(type=pl.FunctionType.Opaque, strict_ssa=True)
    def main(self, x: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.exp(x)
        return out
""",
        tmp_path,
        SSAViolationError,
    )
    assert "rebinds 'out', which strict_ssa=True forbids" in err.message


def test_strict_ssa_accepts_a_program_that_binds_each_name_once():
    @pl.program
    class Once:
        @pl.function(type=pl.FunctionType.InCore, strict_ssa=True)
        def kernel(self, x: T, out: pl.Out[T]) -> T:
            t = pl.load(x, [0, 0], [64, 64])
            e = pl.exp(t)
            stored = pl.store(e, [0, 0], out)
            return stored

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: T, out: pl.Out[T]) -> T:
            result = self.kernel(x, out)
            return result

    from pypto.runtime import run

    x, out = torch.randn(64, 64), torch.zeros(64, 64)
    run(Once, x, out)
    torch.testing.assert_close(out, torch.exp(x))


@pl.jit
def parallel_sum(x: pl.Tensor[[128, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.full([32, 64], pl.FP32, 0.0)
        for i in pl.parallel(4):  # carried like pl.range (PyPTO's loop table)
            acc = pl.add(acc, pl.load(x, [i * 32, 0], [32, 64]))
        pl.store(acc, [0, 0], out)
    return out


def test_a_parallel_loop_carries_a_rebound_name():
    x, out = torch.randn(128, 64), torch.zeros(32, 64)
    parallel_sum(x, out)
    torch.testing.assert_close(out, x.reshape(4, 32, 64).sum(0), rtol=1e-5, atol=1e-5)


CA, CB, CC = pl.Tensor[[64, 128], pl.FP16], pl.Tensor[[128, 64], pl.FP16], pl.Tensor[[128, 64], pl.FP32]


def cluster_program(hint: str = ""):
    @pl.program
    class SpmdCluster:
        """A cluster around a two-block pl.spmd of an AIC and an AIV kernel: one Group, two blocks."""

        @pl.function(type=pl.FunctionType.AIC)
        def cube(self, a: CA, b: CB):
            pl.aic_initialize_pipe(dir_mask=1, slot_size=16384, slot_num=2)
            left = pl.move(pl.load(a, [0, 0], [64, 128], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
            right = pl.move(
                pl.load(b, [0, 0], [128, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right
            )
            pl.tpush_to_aiv(pl.matmul(left, right, out_dtype=pl.FP32), split=pl.SplitMode.UP_DOWN)

        @pl.function(type=pl.FunctionType.AIV)
        def vec(self, out: pl.Out[CC]) -> CC:
            pl.aiv_initialize_pipe(dir_mask=1, slot_size=16384, slot_num=2)
            half = pl.tpop_from_aic(shape=[32, 64], dtype=pl.FP32, split=pl.SplitMode.UP_DOWN)
            r = pl.exp(half)
            pl.tfree_to_aic(half)
            return pl.store(r, [pl.get_block_idx() * 64 + pl.get_subblock_idx() * 32, 0], out)

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: CA, b: CB, out: pl.Out[CC]) -> CC:
            with pl.cluster():  # noqa: SIM117  (two scopes: the DSL takes one context per with)
                with pl.spmd(2, allow_early_resolve=bool(hint)):
                    self.cube(a, b)
                    out = self.vec(out)
            return out

    return SpmdCluster


def test_a_spmd_inside_a_cluster_launches_the_group_on_every_block():
    from pypto.runtime import run

    g = torch.Generator().manual_seed(5)
    a, b = torch.randn(64, 128, generator=g).half() / 4, torch.randn(128, 64, generator=g).half() / 4
    out = torch.zeros(128, 64)
    run(cluster_program(), a, b, out)
    ref = torch.exp(a.float() @ b.float())
    torch.testing.assert_close(out, torch.cat([ref, ref]), rtol=1e-3, atol=1e-3)


def test_a_scheduling_hint_on_a_spmd_inside_a_cluster_is_an_error():
    from pypto.runtime import compile_program

    with pytest.raises(ParseError) as info:
        compile_program(cluster_program("hint"))
    assert "allow_early_resolve= on a pl.spmd inside a pl.cluster()" in info.value.message


@pl.jit
def spelled_out(a: pl.Tensor[[64, 64], pl.FP16], b: pl.Tensor[[64, 64], pl.FP16], out: pl.Out[T]):
    with pl.at(
        level=pl.Level.CORE_GROUP,
        optimizations=[
            pl.optimizations.split(pl.SplitMode.UP_DOWN),
            pl.optimizations.cross_core_slot(slot_num=2),
        ],
    ):
        out[:] = pl.exp(pl.matmul(a, b, out_dtype=pl.FP32))
    return out


def test_the_optimizations_namespace_spells_the_scope_options():
    g = torch.Generator().manual_seed(8)
    a, b = torch.randn(64, 64, generator=g).half() / 8, torch.randn(64, 64, generator=g).half() / 8
    out = torch.zeros(64, 64)
    spelled_out(a, b, out)
    torch.testing.assert_close(out, torch.exp(a.float() @ b.float()), rtol=1e-3, atol=1e-3)


@pl.jit.incore(level=pl.Level.CORE_GROUP)
def doubled_at_level(x: T, out: pl.Out[T]):
    out[:] = pl.add(x, x)
    return out


@pl.jit
def calls_leveled(x: T, out: pl.Out[T]):
    return doubled_at_level(x, out)


def test_an_incore_helper_takes_the_core_group_level():
    x, out = torch.randn(64, 64), torch.zeros(64, 64)
    calls_leveled(x, out)
    torch.testing.assert_close(out, x + x)


def test_an_incore_helper_at_another_level_is_an_error_at_the_decorator():
    from pypto.language.errors import JitOptionError

    with pytest.raises(JitOptionError) as info:

        @pl.jit.incore(level=pl.Level.CHIP)
        def chip_wide(x: T, out: pl.Out[T]):
            out[:] = x
            return out

    assert "does not make a kernel yet" in info.value.message


def test_a_scheduling_hint_on_a_named_spmd_inside_a_cluster_is_an_error_at_the_keyword():
    # The hint is rejected before anything else about the launch (here: `as tid` over two calls).
    source = """
import pypto.language as pl


@pl.program
class Clustered:
    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, a: pl.Tensor[[64, 128], pl.FP16], b: pl.Tensor[[128, 64], pl.FP16]):
        pl.aic_initialize_pipe(dir_mask=1, slot_size=16384, slot_num=2)

    @pl.function(type=pl.FunctionType.AIV)
    def vec(self, out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        pl.aiv_initialize_pipe(dir_mask=1, slot_size=16384, slot_num=2)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        a: pl.Tensor[[64, 128], pl.FP16],
        b: pl.Tensor[[128, 64], pl.FP16],
        out: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
    ) -> pl.Tensor[[64, 64], pl.FP32]:
        with pl.cluster():
            with pl.spmd(1, allow_early_resolve=True) as tid:
                self.cube(a, b)
                out = self.vec(out)
        return out
"""
    with pytest.raises(ParseError) as info:
        pl.parse(source)
    assert info.value.message == (
        "allow_early_resolve= on a pl.spmd inside a pl.cluster(): the cluster's launch carries no such hint"
    )
    assert info.value.span.line == 24
    assert (
        info.value.hint
        == "move allow_early_resolve= out of the cluster (onto a launch of its own), or drop it"
    )


def test_pass_dump_levels_map_onto_dump_passes(tmp_path):
    from pypto.ir import PassDumpLevel
    from pypto.runtime import RunConfig

    @pl.jit
    def exp(x: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.exp(x)
        return out

    assert RunConfig(dump_passes=PassDumpLevel.NONE).dump_passes is False
    assert RunConfig(dump_passes=PassDumpLevel.CONCISE).dump_passes is True
    config = RunConfig(dump_passes=PassDumpLevel.EXPLICIT, save_kernels_dir=tmp_path)
    exp.compile(torch.randn(64, 64), torch.zeros(64, 64), config=config)
    dumps = sorted(p.name for p in (tmp_path / "passes_dump").iterdir())
    assert dumps[0] == "01_after_OutlineScopes.py"
