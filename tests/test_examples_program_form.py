"""The mixed-kernel, task-graph and split-K examples written as ``@pl.program`` classes: the same
numbers as the ``@pl.jit`` examples, the same tasks, the same modeled cycles (issue #11)."""

import importlib.util
from pathlib import Path

import pytest
import torch

import pypto.language as pl
from pypto.runtime import RunConfig, compile_program

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def example(relative: str):
    spec = importlib.util.spec_from_file_location(Path(relative).stem, EXAMPLES / relative)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_program(program, *args):
    compiled = compile_program(program, RunConfig(platform="a2a3sim"))
    compiled.run(*args)
    return compiled.last_report


M, K, N = 512, 256, 128
A, B, C = pl.Tensor[[M, K], pl.FP16], pl.Tensor[[K, N], pl.FP16], pl.Tensor[[M, N], pl.FP32]


@pl.program
class MixedScope:
    @pl.function(type=pl.FunctionType.Orchestration)
    def mixed_matmul_bias(self, a: A, b: B, bias: C, out: pl.Out[C]):
        with pl.at(
            level=pl.Level.CORE_GROUP,
            optimizations=[pl.split(pl.SplitMode.UP_DOWN), pl.cross_core_slot(slot_num=2)],
            name_hint="mixed",
        ):
            acc = pl.matmul(a, b, out_dtype=pl.FP32)
            out[:] = pl.add(acc, bias)
        return out


@pl.program
class MixedFunction:
    """The same kernel as an InCore function whose attributes ask for the split."""

    @pl.function(type=pl.FunctionType.InCore)
    def mixed(self, a: A, b: B, bias: C, out: pl.Out[C]):
        pl.func_attr({"split": pl.SplitMode.UP_DOWN, "slot_num": 2})
        acc = pl.matmul(a, b, out_dtype=pl.FP32)
        out[:] = pl.add(acc, bias)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def mixed_matmul_bias(self, a: A, b: B, bias: C, out: pl.Out[C]):
        return self.mixed(a, b, bias, out)


@pytest.mark.parametrize("program", [MixedScope, MixedFunction], ids=["scope", "incore-function"])
def test_the_mixed_kernel_as_a_program_gives_the_examples_numbers_and_cycles(program):
    jit = example("advanced/03_mixed_kernel.py").mixed_kernel(pl.SplitMode.UP_DOWN, 2)
    torch.manual_seed(0)
    a, b = torch.randn(M, K, dtype=torch.float16), torch.randn(K, N, dtype=torch.float16)
    bias = torch.randn(M, N)
    theirs, mine = torch.zeros(M, N), torch.zeros(M, N)
    jit(a, b, bias, theirs)
    report = run_program(program, a, b, bias, mine)
    assert torch.allclose(mine, a.float() @ b.float() + bias, rtol=1e-2, atol=1e-2)
    assert torch.equal(mine, theirs)
    assert report.total_cycles == jit.last_report.total_cycles
    assert report.overlap == jit.last_report.overlap


R = 128
T = pl.Tensor[[R, R], pl.FP32]


@pl.program
class TaskGraph:
    @pl.function(type=pl.FunctionType.Orchestration)
    def task_graph(self, x: T, y: T, out: pl.Out[T], y_half: pl.Out[T]):
        scratch = pl.create_tensor([R, R], pl.FP32)
        workspace = pl.create_tensor([R, R], pl.FP32, manual_dep=True)
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="exp_x"):
            scratch[:] = pl.exp(x)
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="square_y") as squared:
            workspace[:] = pl.mul(y, y)
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="combine"):
            out[:] = pl.add(scratch, x)
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="halve_y", deps=[squared]):
            y_half[:] = pl.mul(workspace, 0.5)
        return out, y_half


def test_the_task_graph_as_a_program_builds_the_examples_tasks_and_edges():
    jit = example("intermediate/07_task_graph.py").task_graph
    torch.manual_seed(0)
    x, y = torch.randn(R, R), torch.randn(R, R)
    outs = [torch.zeros(R, R) for _ in range(4)]
    jit(x, y, outs[0], outs[1])
    report = run_program(TaskGraph, x, y, outs[2], outs[3])
    torch.testing.assert_close(outs[2], x.exp() + x)
    torch.testing.assert_close(outs[3], y * y * 0.5)
    assert torch.equal(outs[2], outs[0]) and torch.equal(outs[3], outs[1])

    def graph(r):
        names = {t.task_id: t.kernel for t in r.tasks}
        return sorted((names[e.src], names[e.dst], e.declared, e.tensor) for e in r.edges)

    assert graph(report) == graph(jit.last_report)
    assert graph(report) == [("exp_x", "combine", False, "scratch"), ("square_y", "halve_y", True, None)]
    assert report.total_cycles == jit.last_report.total_cycles


SM, SN, SK, SPLITS = 64, 64, 512, 4
KB = SK // SPLITS


@pl.program
class SplitK:
    @pl.function(type=pl.FunctionType.InCore)
    def zero_c(self, c: pl.Out[pl.Tensor[[SM, SN], pl.FP32]]):
        c[:] = pl.full([SM, SN], pl.FP32, 0.0)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def split_k(
        self,
        a: pl.Tensor[[SM, SK], pl.FP32],
        b: pl.Tensor[[SK, SN], pl.FP32],
        c: pl.Out[pl.Tensor[[SM, SN], pl.FP32]],
    ):
        c = self.zero_c(c)
        for k in pl.parallel(SPLITS):
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="partial"):
                part = pl.matmul(a[:, k * KB : k * KB + KB], b[k * KB : k * KB + KB, :])
                pl.assemble(c, part, [0, 0], atomic=pl.AtomicType.Add)
        return c


def test_split_k_as_a_program_gives_the_examples_numbers():
    jit = example("advanced/01_split_k.py").split_k
    torch.manual_seed(0)
    a, b = torch.randn(SM, SK), torch.randn(SK, SN)
    theirs, mine = torch.zeros(SM, SN), torch.zeros(SM, SN)
    jit(a, b, theirs)
    report = run_program(SplitK, a, b, mine)
    torch.testing.assert_close(mine, a @ b, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(mine, theirs, rtol=1e-5, atol=1e-5)  # atomic adds in any order
    assert sorted(t.kernel for t in report.tasks) == sorted(t.kernel for t in jit.last_report.tasks)
    assert report.total_cycles == jit.last_report.total_cycles
