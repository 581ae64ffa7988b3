"""The task graph end to end on a2a3sim: each dependency rule, concurrency on different core groups,
the split-K example's concurrent partial products, the trace's flow arrows, and the RaceError when a
removed edge was needed."""

import importlib.util
import json
import re
import subprocess
import sys
from itertools import combinations, pairwise
from pathlib import Path

import pytest
import torch

import pypto.language as pl
from pypto.ir import RaceError, structural_diff
from pypto.runtime import RunConfig, run

ROOT = Path(__file__).resolve().parent.parent
R, C = 64, 128
T = pl.Tensor[[R, C], pl.FP32]


def spans(report):
    """task id -> (start, end) over its blocks."""
    out = {}
    for t in report.tasks:
        start, end = out.get(t.task_id, (t.start_cycle, t.end_cycle))
        out[t.task_id] = (min(start, t.start_cycle), max(end, t.end_cycle))
    return out


def overlap(a, b):
    return a[0] < b[1] and b[0] < a[1]


def edges(report):
    return {(e.src, e.dst): e.tensor for e in report.edges}


def args(n_in=1, n_out=1):
    torch.manual_seed(0)
    return [torch.randn(R, C) for _ in range(n_in)] + [torch.zeros(R, C) for _ in range(n_out)]


# ---------------------------------------------------------------- the rules


@pl.jit
def read_after_write(x: T, out: pl.Out[T]):
    scratch = pl.create_tensor([R, C], pl.FP32)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="produce"):
        scratch[:] = pl.exp(x)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="consume"):
        out[:] = pl.add(scratch, x)
    return out


def test_a_reader_waits_for_the_last_writer():
    x, out = args()
    read_after_write(x, out)
    torch.testing.assert_close(out, x.exp() + x)
    report = read_after_write.last_report
    assert edges(report) == {(1, 2): "scratch"}
    first, second = spans(report).values()
    assert first[1] < second[0]


@pl.jit
def write_after_read(x: T, y: T, out: pl.Out[T]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="read_x"):
        out[:] = pl.exp(x)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="read_x_too"):
        y[:] = pl.neg(x)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="overwrite_x"):
        x[:] = pl.add(y, y)
    return out


def test_a_writer_waits_for_the_earlier_readers_and_readers_run_at_once():
    x, y, out = args(2, 1)
    original = x.clone()
    write_after_read(x, y, out)
    torch.testing.assert_close(out, original.exp())
    torch.testing.assert_close(x, -2 * original)
    report = write_after_read.last_report
    assert edges(report) == {(1, 3): "x", (2, 3): "y"}
    reads = spans(report)
    assert overlap(reads[1], reads[2])


@pl.jit
def write_after_write(x: T, out: pl.Out[T]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="first"):
        out[:] = pl.exp(x)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="second"):
        out[:] = pl.neg(x)
    return out


def test_a_writer_waits_for_the_last_writer():
    x, out = args()
    write_after_write(x, out)
    torch.testing.assert_close(out, -x)
    assert edges(write_after_write.last_report) == {(1, 2): "out"}


@pl.jit
def declared(x: T, y: T, a: pl.Out[T], b: pl.Out[T]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="first") as first:
        a[:] = pl.exp(x)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="second", deps=[first]):
        b[:] = pl.exp(y)
    return a, b


def test_deps_add_an_edge_between_tasks_that_share_no_tensor():
    declared(*args(2, 2))
    report = declared.last_report
    assert edges(report) == {(1, 2): None}
    first, second = spans(report).values()
    assert first[1] < second[0]


@pl.jit
def independent(x: T, y: T, a: pl.Out[T], b: pl.Out[T]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="left"):
        a[:] = pl.exp(x)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="right"):
        b[:] = pl.exp(y)
    return a, b


def test_source_order_alone_never_orders_tasks():
    x, y, a, b = args(2, 2)
    independent(x, y, a, b)
    torch.testing.assert_close(b, y.exp())
    report = independent.last_report
    assert report.edges == []
    assert {t.core_group for t in report.tasks} == {0, 1}
    left, right = spans(report).values()
    assert overlap(left, right)


@pl.jit
def rows_in_parallel(x: pl.Tensor[[8 * R, C], pl.FP32], out: pl.Out[pl.Tensor[[8 * R, C], pl.FP32]]):
    for i in pl.parallel(8):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="rows"):
            out[i * R : i * R + R, :] = pl.exp(pl.exp(x[i * R : i * R + R, :]))
    return out


@pl.jit
def rows_in_sequence(x: pl.Tensor[[8 * R, C], pl.FP32], out: pl.Out[pl.Tensor[[8 * R, C], pl.FP32]]):
    for i in pl.range(8):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="rows"):
            out[i * R : i * R + R, :] = pl.exp(pl.exp(x[i * R : i * R + R, :]))
    return out


def test_independent_tasks_overlap_and_the_makespan_is_well_below_the_sum_of_their_times():
    x = torch.randn(8 * R, C) / 4
    fast, slow = torch.zeros(8 * R, C), torch.zeros(8 * R, C)
    rows_in_parallel(x, fast)
    rows_in_sequence(x, slow)
    torch.testing.assert_close(fast, x.exp().exp())
    torch.testing.assert_close(slow, fast)
    parallel, sequential = rows_in_parallel.last_report, rows_in_sequence.last_report
    busy = sum(end - start for start, end in spans(parallel).values())
    assert len({t.core_group for t in parallel.tasks}) == 8
    assert parallel.total_cycles < 0.4 * busy
    # the same tasks in a pl.range loop all write out: each waits for the last
    assert len(sequential.edges) == 7
    ordered = sorted(spans(sequential).values())
    assert all(a[1] < b[0] for a, b in pairwise(ordered))
    assert sequential.total_cycles > busy > 2.5 * parallel.total_cycles


@pl.jit
def two_accumulators(
    a: pl.Tensor[[R, R], pl.FP32], b: pl.Tensor[[R, R], pl.FP32], out: pl.InOut[pl.Tensor[[R, R], pl.FP32]]
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="k_low"):
        pl.assemble(out, pl.matmul(a[:, 0:32], b[0:32, :]), [0, 0], atomic=pl.AtomicType.Add)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="k_high"):
        pl.assemble(out, pl.matmul(a[:, 32:64], b[32:64, :]), [0, 0], atomic=pl.AtomicType.Add)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="scale"):
        out[:] = pl.mul(out, 2.0)
    return out


def test_tasks_that_only_add_into_a_tensor_do_not_wait_for_each_other_but_its_reader_waits_for_both():
    a, b, out = torch.randn(R, R), torch.randn(R, R), torch.ones(R, R)
    two_accumulators(a, b, out)
    torch.testing.assert_close(out, 2 * (1 + a @ b), rtol=1e-4, atol=1e-4)
    report = two_accumulators.last_report
    assert edges(report) == {(1, 3): "out", (2, 3): "out"}
    low, high, scale = spans(report).values()
    assert overlap(low, high) and max(low[1], high[1]) < scale[0]


@pl.jit
def spmd_rows(x: pl.Tensor[[4 * R, C], pl.FP32], out: pl.Out[pl.Tensor[[4 * R, C], pl.FP32]]):
    for i in pl.spmd(4):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="rows"):
            out[i * R : i * R + R, :] = pl.exp(x[i * R : i * R + R, :])
    return out


def test_spmd_runs_one_task_on_four_core_groups_each_with_its_block_index():
    x, out = torch.randn(4 * R, C), torch.zeros(4 * R, C)
    spmd_rows(x, out)
    torch.testing.assert_close(out, x.exp())
    report = spmd_rows.last_report
    assert {(t.task_id, t.block, t.core_group) for t in report.tasks} == {(1, b, b) for b in range(4)}
    blocks = [(t.start_cycle, t.end_cycle) for t in report.tasks]
    assert all(overlap(a, b) for a, b in combinations(blocks, 2))


# ---------------------------------------------------------------- removing edges


@pl.jit
def no_dep_args_needed(x: T, out: pl.Out[T]):
    scratch = pl.create_tensor([R, C], pl.FP32)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="produce"):
        scratch[:] = pl.exp(x)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="consume", no_dep_args=[scratch]):
        out[:] = pl.add(scratch, x)
    return out


@pl.jit
def manual_dep_needed(x: T, out: pl.Out[T]):
    scratch = pl.create_tensor([R, C], pl.FP32, manual_dep=True)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="produce"):
        scratch[:] = pl.exp(x)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="consume"):
        out[:] = pl.add(scratch, x)
    return out


@pl.jit
def manual_scope_needed(x: T, out: pl.Out[T]):
    scratch = pl.create_tensor([R, C], pl.FP32)
    with pl.manual_scope():
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="produce"):
            scratch[:] = pl.exp(x)
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="consume"):
            out[:] = pl.add(scratch, x)
    return out


@pytest.mark.parametrize("kernel", [no_dep_args_needed, manual_dep_needed, manual_scope_needed])
def test_removing_an_edge_the_data_needs_is_a_race_naming_both_tasks_the_tensor_and_both_lines(kernel):
    with pytest.raises(RaceError) as info:
        kernel(*args())
    message = str(info.value)
    assert "task 1 (kernel produce at " in message and "task 2 (kernel consume at " in message
    assert "scratch" in message and "no dependency orders the two tasks" in message
    lines = set(re.findall(rf"{Path(__file__).name}:(\d+)", message))
    assert len(lines) >= 4  # both scopes and both accesses


@pl.jit
def spmd_same_rows(x: T, out: pl.Out[T]):
    for i in pl.spmd(4):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="rows"):
            out[0:16, :] = pl.exp(x[i * 16 : i * 16 + 16, :])  # every block: rows 0:16
    return out


@pl.jit
def parallel_same_rows(x: T, out: pl.Out[T]):
    for i in pl.parallel(4):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="rows"):
            out[0:16, :] = pl.exp(x[i * 16 : i * 16 + 16, :])  # every iteration: rows 0:16
    return out


def test_two_blocks_of_one_spmd_launch_writing_the_same_rows_are_named_by_block_with_a_hint_that_fits():
    """deps= cannot order the blocks of one task: the hint offsets by the block index instead."""
    with pytest.raises(RaceError) as info:
        spmd_same_rows(*args())
    where = f"{Path(__file__)}:{_line('# every block: rows 0:16')}"
    assert re.fullmatch(
        rf"block \d of task 1 \(kernel rows at .*\) writes out\[0:16, 0:{C}\] at {where} and block \d of task "
        rf"1 \(kernel rows at .*\) writes out at {where}, but no dependency orders the two tasks: the 4 "
        "blocks of one pl.spmd launch run unordered",
        info.value.message,
    ), info.value.message
    assert "deps=" not in info.value.hint and "pl.get_block_idx()" in info.value.hint


def test_two_iterations_of_a_parallel_loop_writing_the_same_rows_have_a_hint_that_fits():
    with pytest.raises(RaceError) as info:
        parallel_same_rows(*args())
    assert info.value.message.endswith(
        "they are iterations of one pl.parallel loop, which asserts they are independent"
    )
    assert "deps=" not in info.value.hint and "pl.range" in info.value.hint


def _line(text):
    with open(__file__) as source:
        return next(n for n, line in enumerate(source, 1) if text in line)


@pl.jit
def manual_scope_declared(x: T, out: pl.Out[T]):
    scratch = pl.create_tensor([R, C], pl.FP32, manual_dep=True)
    with pl.manual_scope():
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="produce") as produced:
            scratch[:] = pl.exp(x)
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="consume", deps=[produced]):
            out[:] = pl.add(scratch, x)
    return out


def test_a_declared_edge_restores_the_order_a_removed_one_gave():
    x, out = args()
    manual_scope_declared(x, out)
    torch.testing.assert_close(out, x.exp() + x)
    assert edges(manual_scope_declared.last_report) == {(1, 2): None}


@pl.jit
def disjoint_halves(x: T, out: pl.Out[T]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="top"):
        out[0 : R // 2, :] = pl.exp(x[0 : R // 2, :])
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="bottom", no_dep_args=[out]):
        out[R // 2 : R, :] = pl.exp(x[R // 2 : R, :])
    return out


def test_no_dep_args_removes_a_false_edge_between_writers_of_disjoint_regions():
    x, out = args()
    disjoint_halves(x, out)
    torch.testing.assert_close(out, x.exp())
    report = disjoint_halves.last_report
    assert report.edges == []
    top, bottom = spans(report).values()
    assert overlap(top, bottom)


# ---------------------------------------------------------------- the examples


def _example(path):
    spec = importlib.util.spec_from_file_location(path.stem.lstrip("0123456789_"), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------- allow_early_resolve


def produce_then_consume(early: bool):
    """A producer whose last statement works on tiles only (its outputs are final before it),
    and a reader of what it wrote."""

    @pl.jit
    def kernel(x: T, out: pl.Out[T]):
        scratch = pl.create_tensor([R, C], pl.FP32)
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="produce", allow_early_resolve=early):
            y = pl.exp(x)
            scratch[:] = y
            tail = pl.exp(pl.mul(y, y))  # noqa: F841  (on-chip work after the last store)
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="consume"):
            out[:] = pl.add(scratch, x)
        return out

    return kernel


def test_an_early_resolve_task_lets_its_reader_start_once_its_outputs_are_final():
    starts = {}
    for early in (False, True):
        kernel = produce_then_consume(early)
        x, out = args()
        kernel(x, out)
        torch.testing.assert_close(out, x.exp() + x)
        report = kernel.last_report
        assert edges(report) == {(1, 2): "scratch"}
        produce, consume = spans(report).values()
        starts[early] = consume[0]
        if early:
            assert produce[0] < consume[0] < produce[1]  # before the producer's end
        else:
            assert produce[1] < consume[0]
    assert starts[True] < starts[False]


def spmd_produce_then_consume(early: bool):
    """As :func:`produce_then_consume`, the producer on 4 blocks, each writing its rows."""
    rows = R // 4

    @pl.jit
    def kernel(x: T, out: pl.Out[T]):
        scratch = pl.create_tensor([R, C], pl.FP32)
        for i in pl.spmd(4):
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="produce", allow_early_resolve=early):
                y = pl.exp(x[i * rows : i * rows + rows, :])
                scratch[i * rows : i * rows + rows, :] = y
                tail = pl.exp(pl.mul(y, y))  # noqa: F841
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="consume"):
            out[:] = pl.add(scratch, x)
        return out

    return kernel


def test_an_early_resolve_spmd_task_resolves_once_every_block_has_stored_its_rows():
    starts = {}
    for early in (False, True):
        kernel = spmd_produce_then_consume(early)
        x, out = args()
        kernel(x, out)
        torch.testing.assert_close(out, x.exp() + x)
        blocks = [t for t in kernel.last_report.tasks if t.kernel == "produce"]
        (consume,) = [t for t in kernel.last_report.tasks if t.kernel == "consume"]
        assert len(blocks) == 4
        starts[early] = consume.start_cycle
        if early:  # resolved when the last of the 4 blocks' stores completes, before its block ends
            timeline = kernel.last_report.timeline
            stores = [s for s in timeline if s.task == "produce" and s.name == "tile.store"]
            (resolve,) = [s for s in timeline if s.name == "resolve produce"]
            assert len(stores) == 4
            assert resolve.start == max(s.start + s.cycles for s in stores)
            assert resolve.start < max(b.end_cycle for b in blocks)
    assert starts[True] < starts[False]


def test_allow_early_resolve_prints_on_the_scope_and_on_its_kernel_call_and_reads_back(tmp_path):
    kernel = produce_then_consume(True)
    x, out = args()
    scoped = kernel.parse(x, out)
    assert "name_hint='produce', allow_early_resolve=True):" in scoped.as_python()  # the pl.at scope
    assert structural_diff(scoped, pl.parse(scoped.as_python())) is None
    kernel(x, out, config=RunConfig(dump_passes=tmp_path))
    dumps = sorted(tmp_path.glob("*.py"))
    texts = [dump.read_text() for dump in dumps]
    assert all(re.search(r"self\.produce\(x, scratch, .*allow_early_resolve=True", text) for text in texts)
    for dump, text in zip(dumps, texts, strict=True):
        program = pl.parse(text, filename=str(dump))
        got = torch.zeros(R, C)
        run(program, x, got, config=RunConfig(platform="a2a3sim"))
        torch.testing.assert_close(got, out)


def test_the_split_k_partials_run_concurrently_after_the_zero_init():
    example = _example(ROOT / "examples" / "advanced" / "01_split_k.py")
    a, b = torch.randn(example.M, example.K) / 8, torch.randn(example.K, example.N) / 8
    c = torch.full((example.M, example.N), float("nan"))
    example.split_k(a, b, c)
    torch.testing.assert_close(c, a @ b, rtol=1e-4, atol=1e-4)
    report = example.split_k.last_report
    tasks = spans(report)
    zero, *partials = (tasks[i] for i in sorted(tasks))
    assert len(partials) == 4 and len({t.core_group for t in report.tasks if t.kernel == "partial"}) == 4
    assert all(zero[1] < p[0] for p in partials)
    assert all(overlap(p, q) for p, q in combinations(partials, 2))
    assert {e.src for e in report.edges} == {1}  # each partial waits for zero_c, none for another


def test_the_task_graph_example_trace_draws_each_edge_as_a_flow_arrow(tmp_path):
    script = ROOT / "examples" / "intermediate" / "07_task_graph.py"
    result = subprocess.run(
        [sys.executable, str(script), "--profile", str(tmp_path)], capture_output=True, text=True, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "OK"
    events = json.loads((tmp_path / "trace.json").read_text())["traceEvents"]
    flows = [e for e in events if e.get("cat") == "dependency"]
    assert sorted(e["name"] for e in flows if e["ph"] == "s") == ["deps=", "via scratch"]
    tasks = [e for e in events if e["ph"] == "X" and e["cat"] == "task"]
    for flow in flows:
        on_thread = [e for e in tasks if (e["pid"], e["tid"]) == (flow["pid"], flow["tid"])]
        assert any(e["ts"] <= flow["ts"] <= e["ts"] + e["dur"] for e in on_thread)
    groups = {e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert {"core group 0", "core group 1"} <= groups
