"""``pl.spmd`` in its four forms, run on a2a3sim against torch: the body of ops that is itself the
kernel, the dispatch of a kernel called in its body, the options, and a soft syncall that counts
the arrivals of every block of the launch."""

from itertools import combinations

import pytest
import torch

import pypto.language as pl
from pypto.ir import DeadlockError, ParseError, RaceError, structural_diff
from pypto.ir.targets import get_target
from pypto.runtime import RunConfig, compile_program
from pypto_sim_a2a3.errors import LaunchError


def line_of(text: str) -> int:
    with open(__file__) as f:
        return next(i for i, line in enumerate(f, 1) if text in line)


R, C = 16, 64
T = pl.Tensor[[4 * R, C], pl.FP32]
WS = pl.Tensor[[16], pl.INT32]
A2A3 = get_target("a2a3")


def tensors():
    return torch.randn(4 * R, C), torch.zeros(4 * R, C)


def blocks_of(report, kernel):
    return sorted((t.block, t.start_cycle, t.end_cycle) for t in report.tasks if t.kernel == kernel)


# ---------------------------------------------------------------- the kernel form


@pl.jit
def exp_rows(x: T, out: pl.Out[T]):
    for i in pl.spmd(4, name_hint="rows"):
        out[i * R : i * R + R, :] = pl.exp(x[i * R : i * R + R, :])
    return out


def test_a_spmd_body_of_ops_is_the_kernel_launched_on_n_blocks_with_i_its_block_index():
    x, out = tensors()
    exp_rows(x, out)
    torch.testing.assert_close(out, x.exp())
    report = exp_rows.last_report
    assert {(t.kernel, t.task_id, t.block) for t in report.tasks} == {("rows", 1, b) for b in range(4)}
    assert len({t.core_group for t in report.tasks}) == 4


@pl.jit.incore
def exp_block(x: T, y: pl.Out[T]):
    row = pl.tile.get_block_idx() * R
    pl.store(pl.exp(pl.load(x, [row, 0], [R, C])), [row, 0], y)
    return y


def test_with_spmd_dispatches_the_kernel_its_body_calls_which_reads_pl_tile_get_block_idx():
    @pl.jit
    def dispatch(x: T, out: pl.Out[T]):
        with pl.spmd(4):
            out = exp_block(x, out)
        return out

    x, out = tensors()
    dispatch(x, out)
    torch.testing.assert_close(out, x.exp())
    assert [b for b, _, _ in blocks_of(dispatch.last_report, "exp_block")] == [0, 1, 2, 3]


@pl.program
class Dispatch:
    @pl.function(type=pl.FunctionType.InCore)
    def double_rows(self, x: T, y: pl.Out[T]):
        row = pl.get_block_idx() * R
        pl.store(pl.mul(pl.load(x, [row, 0], [R, C]), 2.0), [row, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: T, out: pl.Out[T]):
        with pl.spmd(4):
            out = self.double_rows(x, out)
        return out


def test_with_spmd_in_a_program_dispatches_its_incore_function_on_n_blocks():
    x, out = tensors()
    compiled = compile_program(Dispatch, RunConfig())
    compiled.run(x, out)
    torch.testing.assert_close(out, x * 2)
    assert [b for b, _, _ in blocks_of(compiled.last_report, "double_rows")] == [0, 1, 2, 3]


# ---------------------------------------------------------------- options


def test_optimizations_split_the_kernel_of_a_spmd_body_over_both_vector_lanes():
    @pl.jit
    def split_rows(x: T, out: pl.Out[T]):
        for i in pl.spmd(2, name_hint="halves", optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
            out[i * 2 * R : i * 2 * R + 2 * R, :] = pl.exp(x[i * 2 * R : i * 2 * R + 2 * R, :])
        return out

    x, out = tensors()
    split_rows(x, out)
    torch.testing.assert_close(out, x.exp())
    busy = split_rows.last_report.busy_cycles
    assert all(busy[f"cg{g}.AIV{lane}"] > 0 for g in range(2) for lane in range(2))


BIG = pl.Tensor[[22 * 32, C], pl.FP32]


@pl.jit
def behind_long_tasks(x: T, big: BIG, out: pl.Out[T], far: pl.Out[BIG]):
    for j in pl.parallel(22):  # 22 of the 24 core groups busy for a while
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="long"):
            far[j * 32 : j * 32 + 32, :] = pl.exp(pl.exp(pl.exp(big[j * 32 : j * 32 + 32, :])))
    for i in pl.spmd(4, name_hint="together", sync_start=True):
        out[i * R : i * R + R, :] = pl.exp(x[i * R : i * R + R, :])
    return out


def test_sync_start_starts_no_block_before_every_block_has_a_core_group():
    """Two groups are free while the long tasks run: the four blocks wait until four are."""
    x, out = tensors()
    big, far = torch.randn(22 * 32, C), torch.zeros(22 * 32, C)
    behind_long_tasks(x, big, out, far)
    torch.testing.assert_close(out, x.exp())
    torch.testing.assert_close(far, big.exp().exp().exp())
    report = behind_long_tasks.last_report
    long_ends = sorted(t.end_cycle for t in report.tasks if t.kernel == "long")
    starts = [start for _, start, _ in blocks_of(report, "together")]
    assert len(starts) == 4 and min(starts) >= long_ends[1]


def test_sync_start_of_more_blocks_than_core_groups_is_a_launch_error():
    @pl.jit
    def too_many(x: T, out: pl.Out[T]):
        for i in pl.spmd(A2A3.core_groups + 1, sync_start=True):
            out[(i % 4) * R : (i % 4) * R + R, :] = pl.exp(x[(i % 4) * R : (i % 4) * R + R, :])
        return out

    with pytest.raises(LaunchError) as info:
        too_many(*tensors())
    assert info.value.message == (
        f"pl.spmd({A2A3.core_groups + 1}, sync_start=True) asks {A2A3.core_groups + 1} blocks to start "
        f"together, but a2a3 has {A2A3.core_groups} core groups"
    )
    assert "pl.system.available_cluster_count()" in info.value.hint


def test_deps_order_the_launch_after_a_task_inside_manual_scope():
    @pl.jit
    def ordered(x: T, out: pl.Out[T]):
        scratch = pl.create_tensor([4 * R, C], pl.FP32)
        with pl.manual_scope():
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="produce") as produced:
                scratch[:] = pl.exp(x)
            with pl.spmd(4, name_hint="consume", deps=[produced]) as consumed:
                i = pl.get_block_idx()
                out[i * R : i * R + R, :] = pl.add(scratch[i * R : i * R + R, :], x[i * R : i * R + R, :])
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="after", deps=[consumed]):
                out[0:1, :] = pl.neg(out[0:1, :])
        return out

    x, out = tensors()
    ordered(x, out)
    want = x.exp() + x
    want[0:1] = -want[0:1]
    torch.testing.assert_close(out, want)
    report = ordered.last_report
    produced_end = max(t.end_cycle for t in report.tasks if t.kernel == "produce")
    assert all(start >= produced_end for _, start, _ in blocks_of(report, "consume"))
    assert {(e.src, e.dst) for e in report.edges} == {(1, 2), (2, 3)}  # only the declared ones


def test_deps_on_the_for_or_bare_with_form_is_an_error():
    with pytest.raises(ParseError) as info:

        @pl.jit
        def bare(x: T, out: pl.Out[T]):
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="produce") as produced:
                out[:] = pl.exp(x)
            for i in pl.spmd(4, deps=[produced]):
                out[i * R : i * R + R, :] = pl.exp(x[i * R : i * R + R, :])
            return out

        bare.lower(*tensors())
    assert "pl.spmd() does not accept 'deps=' here" in info.value.message
    assert info.value.span.line == line_of("for i in pl.spmd(4, deps=[produced]):")
    assert "as tid" in info.value.hint


@pl.jit
def when_flagged(x: T, flags: pl.Tensor[[1], pl.INT32], out: pl.Out[T]):
    for i in pl.spmd(4, name_hint="flagged", predicate=(flags[0] > 0)):
        out[i * R : i * R + R, :] = pl.exp(x[i * R : i * R + R, :])
    return out


def test_a_predicate_launches_the_blocks_only_when_it_holds_at_dispatch():
    x, out = tensors()
    when_flagged(x, torch.tensor([0], dtype=torch.int32), out)
    report = when_flagged.last_report
    assert torch.count_nonzero(out) == 0 and blocks_of(report, "flagged") == []
    assert [t.skipped for t in report.submitted] == [True]  # submitted, then retired without running
    when_flagged(x, torch.tensor([1], dtype=torch.int32), out)
    torch.testing.assert_close(out, x.exp())
    assert len(blocks_of(when_flagged.last_report, "flagged")) == 4


def test_a_predicate_that_is_not_one_element_comparison_is_an_error():
    with pytest.raises(ParseError) as info:

        @pl.jit
        def never(x: T, out: pl.Out[T]):
            for i in pl.spmd(4, predicate=False):
                out[i * R : i * R + R, :] = pl.exp(x[i * R : i * R + R, :])
            return out

        never.lower(*tensors())
    assert info.value.message == "predicate= takes one comparison, got `False`"
    assert "tensor element with an int literal" in info.value.hint


def test_the_chip_counts_come_from_the_target():
    assert pl.system.available_cluster_count() == A2A3.core_groups == 24
    assert pl.system.available_aiv_count() == A2A3.core_groups * A2A3.aiv_per_group == 48


# ---------------------------------------------------------------- barriers across blocks


@pl.jit
def soft_barrier(x: T, ws: WS, out: pl.Out[T]):
    for i in pl.spmd(4, name_hint="barrier"):
        t = pl.exp(pl.load(x, [i * R, 0], [R, C]))
        for _ in pl.range(i * 4):  # block i arrives late in proportion to i
            t = pl.add(t, 0.0)
        pl.system.syncall(core_type="aiv_only", mode="soft", gm_workspace=ws, used_cores=4)
        pl.store(t, [i * R, 0], out)
    return out


def test_a_soft_syncall_counts_the_arrivals_of_every_block_of_the_launch():
    x, out = tensors()
    soft_barrier(x, torch.zeros(16, dtype=torch.int32), out)
    torch.testing.assert_close(out, x.exp())
    blocks = blocks_of(soft_barrier.last_report, "barrier")
    assert len(blocks) == 4
    # No block leaves the barrier before the last one reached it: their ends lie close together
    # although their work before the barrier grows with the block index.
    ends = [end for _, _, end in blocks]
    starts = [start for _, start, _ in blocks]
    assert max(ends) - min(ends) < (max(ends) - max(starts)) / 2


def test_a_hard_syncall_on_the_whole_chip_meets_every_block():
    @pl.jit
    def whole_chip(x: pl.Tensor[[24 * 8, C], pl.FP32], out: pl.Out[pl.Tensor[[24 * 8, C], pl.FP32]]):
        for i in pl.spmd(pl.system.available_cluster_count(), name_hint="chip"):
            t = pl.exp(pl.load(x, [i * 8, 0], [8, C]))
            pl.system.syncall(core_type="aiv")
            pl.store(t, [i * 8, 0], out)
        return out

    x, out = torch.randn(24 * 8, C), torch.zeros(24 * 8, C)
    whole_chip(x, out)
    torch.testing.assert_close(out, x.exp())
    assert len(blocks_of(whole_chip.last_report, "chip")) == 24


def exchange_kernel(*, fence: bool = True, invalidate: bool = True, sync: bool = True):
    """Each block writes its rows of ``mid``, then reads the next block's: legal only through a
    syncall round with the GM ordering sequence around it."""

    @pl.jit
    def exchange(x: T, ws: WS, mid: pl.Out[T], out: pl.Out[T]):
        for i in pl.spmd(4, sync_start=True, name_hint="exchange"):
            pl.store(pl.exp(pl.load(x, [i * R, 0], [R, C])), [i * R, 0], mid)
            pl.system.cacheinvalid()
            if fence:
                pl.system.fence()
            if sync:
                pl.system.syncall(core_type="aiv_only", mode="soft", gm_workspace=ws, used_cores=4)
            if invalidate:
                pl.system.cacheinvalid()
            pl.store(pl.load(mid, [((i + 1) % 4) * R, 0], [R, C]), [i * R, 0], out)
        return mid, out

    return exchange


def test_blocks_exchange_data_through_gm_across_a_syncall_round():
    x, mid, out = torch.randn(4 * R, C), torch.zeros(4 * R, C), torch.zeros(4 * R, C)
    exchange_kernel()(x, torch.zeros(16, dtype=torch.int32), mid, out)
    torch.testing.assert_close(out, x.exp().roll(-R, 0))


@pytest.mark.parametrize(
    ("missing", "says"),
    [
        ({"fence": False}, "of block 1 did not pl.system.fence after publishing its write"),
        ({"invalidate": False}, "of block 0 did not pl.system.cacheinvalid the data after the syncall"),
        ({"sync": False}, "the 4 blocks of one pl.spmd launch run unordered"),
    ],
)
def test_a_block_exchange_missing_part_of_the_ordering_sequence_is_a_race(missing, says):
    x, mid, out = torch.randn(4 * R, C), torch.zeros(4 * R, C), torch.zeros(4 * R, C)
    with pytest.raises(RaceError) as info:
        exchange_kernel(**missing)(x, torch.zeros(16, dtype=torch.int32), mid, out)
    assert says in info.value.message
    assert "reads mid[16:32, 0:64]" in info.value.message
    assert "pl.system.syncall" in info.value.hint


def test_a_barrier_over_more_blocks_than_core_groups_is_a_deadlock_that_names_the_unstarted_blocks():
    @pl.jit
    def too_wide(x: T, ws: WS, out: pl.Out[T]):
        for i in pl.spmd(30):
            t = pl.exp(pl.load(x, [(i % 4) * R, 0], [R, C]))
            pl.system.syncall(mode="soft", gm_workspace=ws, used_cores=30)
            pl.store(t, [(i % 4) * R, 0], out)
        return out

    x, out = tensors()
    with pytest.raises(DeadlockError) as info:
        too_wide(x, torch.zeros(16, dtype=torch.int32), out)
    assert "24 of 30 core(s) arrived" in info.value.message
    assert "6 counted core(s) never started (AIV0 of block 24" in info.value.message
    assert "sync_start=True" in info.value.hint and "available_cluster_count()" in info.value.hint


@pytest.mark.parametrize("core_type", ["aiv_only", "aiv"])
def test_core_type_takes_pypto_spellings(core_type):
    @pl.jit
    def lanes(x: T, ws: WS, out: pl.Out[T]):
        for i in pl.spmd(2):
            t = pl.exp(pl.load(x, [i * R, 0], [R, C]))
            pl.system.syncall(core_type=core_type, mode="soft", gm_workspace=ws, used_cores=2)
            pl.store(t, [i * R, 0], out)
        return out

    x, out = tensors()
    lanes(x, torch.zeros(16, dtype=torch.int32), out)
    torch.testing.assert_close(out[: 2 * R], x[: 2 * R].exp())


def test_a_spmd_body_that_neither_reads_the_index_nor_dispatches_is_an_error():
    @pl.jit
    def same_work(x: T, out: pl.Out[T]):
        for _i in pl.spmd(4):
            out[0:R, :] = pl.exp(x[0:R, :])
        return out

    with pytest.raises(ParseError) as info:
        same_work.parse(*tensors())
    assert info.value.message == (
        "pl.spmd(4) launches its body on 4 blocks, but it never reads the block index (the pl.spmd "
        "variable or pl.get_block_idx()): every block would do the same work"
    )
    assert "offset the block's work by its index" in info.value.hint


def test_blocks_of_the_kernel_form_overlap_in_time():
    x, out = tensors()
    exp_rows(x, out)
    spans = [(s, e) for _, s, e in blocks_of(exp_rows.last_report, "rows")]
    assert all(max(a[0], b[0]) < min(a[1], b[1]) for a, b in combinations(spans, 2))


@pl.program
class KernelForm:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: T, flags: pl.Tensor[[1], pl.INT32], out: pl.Out[T]):
        for i in pl.spmd(4, name_hint="rows", sync_start=True, predicate=(flags[0] > 0)):
            out[i * R : i * R + R, :] = pl.exp(x[i * R : i * R + R, :])
        return out


def test_the_kernel_form_in_a_program_prints_as_pl_that_reads_back_equal_and_runs():
    text = KernelForm.as_python()
    assert (
        "with pl.spmd(4, sync_start=True, predicate=(flags[0] > 0)):" in text and "name_hint='rows'" in text
    )
    assert structural_diff(pl.parse(text), KernelForm) is None
    x, out = tensors()
    compiled = compile_program(KernelForm, RunConfig())
    compiled.run(x, torch.ones(1, dtype=torch.int32), out)
    torch.testing.assert_close(out, x.exp())
    assert [b for b, _, _ in blocks_of(compiled.last_report, "rows")] == [0, 1, 2, 3]
