"""``with pl.cluster():`` — the AIC kernel and the AIV kernel its body calls run together on one
core group as a ``Group`` (the explicit form's pipes connect them), against torch; its errors."""

import pytest
import torch

import pypto.language as pl
from pypto.ir import FunctionKind, ParseError
from pypto.runtime import RunConfig, compile_program, run

A = pl.Tensor[[128, 256], pl.FP16]
B = pl.Tensor[[256, 128], pl.FP16]
C = pl.Tensor[[128, 128], pl.FP32]


@pl.program
class Clustered:
    @pl.function(type=pl.FunctionType.AIV)
    def vector(self, bias: C, out: pl.Out[C]) -> C:
        pl.aiv_initialize_pipe(dir_mask=1, slot_size=32768, slot_num=2)
        lane = pl.get_subblock_idx()
        half = pl.tpop_from_aic(shape=[64, 128], dtype=pl.FP32, split=pl.SplitMode.UP_DOWN)
        total = pl.add(half, pl.load(bias, [lane * 64, 0], [64, 128]))
        pl.tfree_to_aic(half)
        out = pl.store(total, [lane * 64, 0], out)
        return out

    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, a: A, b: B):
        pl.aic_initialize_pipe(dir_mask=1, slot_size=32768, slot_num=2)
        left = pl.move(pl.load(a, [0, 0], [128, 256], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        right = pl.move(pl.load(b, [0, 0], [256, 128], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        pl.tpush_to_aiv(pl.matmul(left, right, out_dtype=pl.FP32), split=pl.SplitMode.UP_DOWN)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: A, b: B, bias: C, out: pl.Out[C]) -> C:
        with pl.cluster(name_hint="mm_bias"):  # the AIV kernel may be called first
            out = self.vector(bias, out)
            self.cube(a, b)
        return out


def inputs():
    torch.manual_seed(0)
    return (
        torch.randn(128, 256).half(),
        torch.randn(256, 128).half(),
        torch.randn(128, 128),
        torch.zeros(128, 128),
    )


def test_a_cluster_runs_its_aic_and_aiv_kernels_together_as_a_group():
    a, b, bias, out = inputs()
    run(Clustered, a, b, bias, out)
    torch.testing.assert_close(out, a.float() @ b.float() + bias, rtol=1e-2, atol=1e-2)
    compiled = compile_program(Clustered, RunConfig())
    group = compiled.lowered.functions["mm_bias"]
    assert group.kind is FunctionKind.Group
    assert [p.var.name for p in group.params] == ["bias", "out", "a", "b"]
    compiled.run(a, b, bias, out.zero_())
    units = {t.kernel for t in compiled.last_report.tasks}
    assert units == {"mm_bias"}  # one task on one core group


def test_a_cluster_prints_as_a_cluster_level_scope_that_reads_back():
    text = Clustered.as_python()
    assert "with pl.at(level=pl.Level.CLUSTER, name_hint='mm_bias'):" in text
    a, b, bias, out = inputs()
    run(pl.parse(text), a, b, bias, out)
    torch.testing.assert_close(out, a.float() @ b.float() + bias, rtol=1e-2, atol=1e-2)


def _program(body: str) -> str:
    return f"""
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.AIV)
    def vec(self, x: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
        pl.store(pl.load(x, [0, 0], [16, 16]), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
{body}
        return out
"""


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "        with pl.cluster():\n            self.vec(x, out)\n            self.vec(x, out)",
            "a pl.cluster() runs one AIC kernel and one AIV kernel together; this one calls vec (AIV), vec (AIV)",
        ),
        (
            "        with pl.cluster(optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):\n            self.vec(x, out)",
            "a cluster takes name_hint=, deps= and no_dep_args= only",
        ),
        (
            "        with pl.cluster(level=pl.Level.CORE_GROUP):\n            self.vec(x, out)",
            "pl.cluster() is a level of its own: it takes no level=",
        ),
    ],
)
def test_cluster_mistakes_are_parse_errors_at_the_cluster(body, message):
    with pytest.raises(ParseError) as info:
        compile_program(pl.parse(_program(body)), RunConfig())
    assert message in info.value.message
    assert "with pl.cluster(" in str(info.value)


def test_a_cluster_body_holds_kernel_calls_only():
    body = "        with pl.cluster():\n            y = pl.create_tensor([16, 16], pl.FP32)\n            self.vec(x, out)"
    with pytest.raises(ParseError) as info:
        compile_program(pl.parse(_program(body)), RunConfig())
    assert info.value.message == "a pl.cluster() body holds kernel calls only"
    assert "pl.create_tensor([16, 16], pl.FP32)" in str(info.value)
    assert "one AIC kernel and one AIV kernel" in info.value.hint


@pl.program
class ClusterPerBlock:
    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, a: pl.Tensor[[64, 128], pl.FP16], b: pl.Tensor[[128, 64], pl.FP16]):
        pl.aic_initialize_pipe(dir_mask=1, slot_size=16384, slot_num=2)
        left = pl.move(pl.load(a, [0, 0], [64, 128], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        right = pl.move(pl.load(b, [0, 0], [128, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        pl.tpush_to_aiv(pl.matmul(left, right, out_dtype=pl.FP32), split=pl.SplitMode.UP_DOWN)

    @pl.function(type=pl.FunctionType.AIV)
    def relu(self, out: pl.Out[pl.Tensor[[128, 64], pl.FP32]]) -> pl.Tensor[[128, 64], pl.FP32]:
        pl.aiv_initialize_pipe(dir_mask=1, slot_size=16384, slot_num=2)
        half = pl.tpop_from_aic(shape=[32, 64], dtype=pl.FP32, split=pl.SplitMode.UP_DOWN)
        result = pl.relu(half)
        pl.tfree_to_aic(half)
        return pl.store(result, [pl.get_block_idx() * 64 + pl.get_subblock_idx() * 32, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        a: pl.Tensor[[64, 128], pl.FP16],
        b: pl.Tensor[[128, 64], pl.FP16],
        out: pl.Out[pl.Tensor[[128, 64], pl.FP32]],
    ) -> pl.Tensor[[128, 64], pl.FP32]:
        with pl.spmd(2):  # noqa: SIM117 (one context per with in pl); the kernels read their block index
            with pl.cluster(name_hint="matmul_relu"):
                self.cube(a, b)
                out = self.relu(out)
        return out


def test_a_cluster_in_a_spmd_dispatch_runs_on_every_block():
    a, b, out = torch.randn(64, 128).half(), torch.randn(128, 64).half(), torch.zeros(128, 64)
    run(ClusterPerBlock, a, b, out)
    product = torch.relu(a.float() @ b.float())
    torch.testing.assert_close(out, torch.cat([product, product]), rtol=1e-2, atol=1e-2)
