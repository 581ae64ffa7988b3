"""Generated ``pl.spmd`` programs run three ways on a2a3sim: the later blocks replayed with their
numbers walked together (``pypto_sim_a2a3.fast.batch``), replayed with their numbers walked block by
block (``PYPTO_SIM_BATCH=off``), and every block on the full engine (``PYPTO_SIM_REPLAY=off``).
The three must leave the same numbers, bit for bit, and report the same modeled run.

Each program is a chain of vector ops on a block of rows, optionally through a matmul on the cube
(a mixed kernel, split as drawn). ``PYPTO_FUZZ_EXAMPLES=N`` draws N programs with a fresh seed.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass

import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

EXAMPLES = int(os.environ.get("PYPTO_FUZZ_EXAMPLES", "0"))
PROFILE = settings(
    max_examples=EXAMPLES or 12,
    derandomize=not EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

UNARY = (
    "pl.exp({x})",
    "pl.sigmoid({x})",
    "pl.abs({x})",
    "pl.relu({x})",
    "pl.neg({x})",
    "pl.sqrt(pl.abs({x}))",
)
BINARY = ("pl.add({x}, {y})", "pl.mul({x}, {y})", "pl.maximum({x}, {y})", "pl.sub({x}, {y})")
SCALAR = ("pl.mul({x}, 0.5)", "pl.add({x}, 1.25)")
ROWWISE = (
    "pl.row_expand_sub({x}, pl.row_max({x}))",  # reductions and broadcasts run block by block
    "pl.row_expand_mul({x}, pl.row_sum({x}))",
    "pl.cast(pl.cast({x}, pl.FP16), pl.FP32)",
)


@dataclass
class Spmd:
    blocks: int
    rows: int
    cols: int
    steps: list[str]
    matmul: str | None  # the split of a matmul before the chain, or None

    def source(self) -> str:
        split = f", optimizations=[pl.split(pl.SplitMode.{self.matmul})]" if self.matmul else ""
        lines = [
            "import pypto.language as pl",
            "",
            "",
            "@pl.jit",
            "def kernel(a: pl.Tensor, b: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):",
            f'    for i in pl.spmd({self.blocks}, name_hint="rows"{split}):',
            f"        r0 = i * {self.rows}",
            f"        x = a[r0 : r0 + {self.rows}, :]",
            f"        y = b[r0 : r0 + {self.rows}, :]",
        ]
        if self.matmul:
            lines.append("        x = pl.matmul(pl.cast(x, pl.FP16), w, out_dtype=pl.FP32)")
        for step in self.steps:
            lines.append(f"        x = {step.format(x='x', y='y')}")
        lines += [f"        out[r0 : r0 + {self.rows}, :] = x", "    return out", ""]
        return "\n".join(lines)


@st.composite
def spmd_programs(draw) -> Spmd:
    matmul = draw(st.sampled_from((None, None, "UP_DOWN", "LEFT_RIGHT")))
    # A LEFT_RIGHT split halves the rows a row reduction needs whole: the compiler rejects it.
    ops = UNARY + BINARY + SCALAR + (() if matmul == "LEFT_RIGHT" else ROWWISE)
    return Spmd(
        blocks=draw(st.sampled_from((2, 3, 5, 26, 33))),
        rows=draw(st.sampled_from((16, 32, 48))),
        cols=draw(st.sampled_from((16, 40, 64))),
        steps=draw(st.lists(st.sampled_from(ops), min_size=1, max_size=4)),
        matmul=matmul,
    )


def _load(path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.kernel


@PROFILE
@given(program=spmd_programs())
def test_batched_blockwise_and_full_engine_runs_agree_bit_for_bit(
    tmp_path_factory, monkeypatch, batched_blocks, program
):
    path = tmp_path_factory.mktemp("spmd") / "generated_spmd.py"
    path.write_text(program.source())
    kernel = _load(path)
    batched_blocks.clear()  # hypothesis runs many programs in one test
    gen = torch.Generator().manual_seed(0)
    m = program.blocks * program.rows
    inputs = (
        torch.randn(m, program.cols, generator=gen),
        torch.randn(m, program.cols, generator=gen),
        (torch.randn(program.cols, program.cols, generator=gen) / program.cols).half(),
    )
    runs = []
    for replaying, batching in (("on", "on"), ("on", "off"), ("off", "on")):
        monkeypatch.setenv("PYPTO_SIM_REPLAY", replaying)
        monkeypatch.setenv("PYPTO_SIM_BATCH", batching)
        out = torch.zeros(m, program.cols)
        kernel(*(t.clone() for t in inputs), out)
        runs.append((kernel.last_report, out))
    (first, first_out), *others = runs
    for report, out in others:
        assert torch.equal(out.view(torch.int32), first_out.view(torch.int32)), program.source()  # bits
        for field in ("total_cycles", "tasks", "busy_cycles", "stall_cycles", "timeline", "rings", "heaps"):
            assert getattr(report, field) == getattr(first, field), (field, program.source())
    assert batched_blocks == list(range(1, program.blocks)), (
        program.source()
    )  # the batch ran every later block
