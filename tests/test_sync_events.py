"""Explicit cross-core events (issue #35 item 6): ``pl.system.sync_set`` / ``sync_wait`` with a
``pl.PipeType``, ``pl.system.set_ffts``, on a2a3sim against torch. The AIC's set releases both AIV
lanes' waits; a lane's set counts toward the AIC's wait, which needs both lanes. A set and the wait
that takes it order GM between the cores (no syncall, fence or invalidate); a missing set is a
deadlock naming the wait, a set nobody waits for an ``EventError``."""

import pytest
import torch

import pypto.language as pl
from pypto.ir import DeadlockError, ParseError, PyptoError, RaceError, TypeCheckError
from pypto.runtime import compile_program, run
from pypto_sim_a2a3.errors import EventError

N = 64
F16, F32 = pl.Tensor[[N, N], pl.FP16], pl.Tensor[[N, N], pl.FP32]


def operands(seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(N, N, generator=g).half(), torch.randn(N, N, generator=g).half()


def group_program(*, sets: int = 1, waits: bool = True, event=0, pipe=pl.PipeType.FIX):
    """The AIC writes a @ b to GM and sets the event ``sets`` times; each AIV lane waits once, then
    reads its half and writes exp of it."""

    @pl.program
    class Group:
        @pl.function(type=pl.FunctionType.AIC)
        def cube(self, a: F16, b: F16, c: pl.Out[F32]) -> F32:
            la = pl.move(pl.load(a, [0, 0], [N, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
            rb = pl.move(pl.load(b, [0, 0], [N, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            c = pl.store(pl.matmul(la, rb), [0, 0], c)
            for _ in pl.range(sets):
                pl.system.sync_set(event, pipe=pipe)
            return c

        @pl.function(type=pl.FunctionType.AIV)
        def vector(self, c: F32, out: pl.Out[F32]) -> F32:
            if waits:
                pl.system.sync_wait(event, pipe=pl.PipeType.MTE2)
            lane = pl.get_subblock_idx()
            t = pl.load(c, [lane * (N // 2), 0], [N // 2, N])
            out = pl.store(pl.exp(t), [lane * (N // 2), 0], out)
            return out

        @pl.function(type=pl.FunctionType.Group)
        def group(self, a: F16, b: F16, c: pl.Out[F32], out: pl.Out[F32]) -> F32:
            self.cube(a, b, c)
            out = self.vector(c, out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: F16, b: F16, c: pl.Out[F32], out: pl.Out[F32]) -> F32:
            out = self.group(a, b, c, out)
            return out

    return Group


def run_group(program):
    a, b = operands()
    c, out = torch.zeros(N, N), torch.zeros(N, N)
    compiled = compile_program(program)
    compiled.run(a, b, c, out)
    return out, torch.exp(a.float() @ b.float()), compiled.last_report


def test_an_aic_set_releases_both_lanes_and_orders_the_gm_write_before_their_reads():
    out, want, _ = run_group(group_program())
    torch.testing.assert_close(out, want)


def test_the_wait_holds_each_lane_until_the_set_fired():
    _, _, report = run_group(group_program())
    slices = report.timeline
    # the set fires once the AIC's store has left the fixpipe; each lane's load comes after it
    stored = max(s.end for s in slices if s.core == "cg0.AIC" and s.unit == "FIXPIPE")
    for lane in ("cg0.AIV0", "cg0.AIV1"):
        assert min(s.start for s in slices if s.core == lane and s.unit == "MTE2") >= stored


def test_without_the_wait_the_lanes_read_the_write_unordered():
    with pytest.raises(RaceError) as info:
        run_group(group_program(waits=False))
    assert "sync_set" in info.value.hint


def test_a_wait_no_core_sets_is_a_deadlock_naming_the_wait():
    with pytest.raises(DeadlockError) as info:
        run_group(group_program(sets=0))
    message = str(info.value)
    assert "pl.system.sync_wait(0) on AIV0 blocks" in message
    assert "needs a sync_set(0) from AIC, which set it 0 time(s)" in message


def test_a_set_nobody_waits_for_is_an_event_error_at_the_end():
    with pytest.raises(EventError) as info:
        run_group(group_program(sets=2))
    assert "AIC set event 0 2 time(s)" in info.value.message
    assert "waited for it only 1 time(s)" in info.value.message


def test_a_flag_counts_at_most_fifteen_pending_sets():
    with pytest.raises(EventError) as info:
        run_group(group_program(sets=17))  # one is waited for, 16 would pend
    assert "the flag counts no more" in info.value.message


def test_the_event_id_is_checked_at_the_users_line():
    with pytest.raises(TypeCheckError) as info:
        group_program(event=14)
    assert "event_id must be an int in 0..13 (14 and 15 are reserved)" in info.value.message
    assert info.value.span is not None and info.value.hint


@pytest.mark.parametrize("pipe", [pl.PipeType.ALL, pl.PipeType.FIX, pl.PipeType.MTE3])
def test_every_pipe_name_runs(pipe):
    out, want, _ = run_group(group_program(pipe=pipe))
    torch.testing.assert_close(out, want)


@pl.program
class LanesToCube:
    """Each lane writes its half of exp(x) to GM and sets event 5; the AIC waits (one set from
    each lane), reads the whole of it back and multiplies it by w."""

    @pl.function(type=pl.FunctionType.AIV)
    def vector(self, x: F32, y: pl.Out[pl.Tensor[[N, N], pl.FP16]]) -> pl.Tensor[[N, N], pl.FP16]:
        lane = pl.get_subblock_idx()
        t = pl.load(x, [lane * (N // 2), 0], [N // 2, N])
        y = pl.store(pl.cast(pl.exp(t), pl.FP16), [lane * (N // 2), 0], y)
        pl.system.sync_set(5, pipe=pl.PipeType.MTE3)
        return y

    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, y: pl.Tensor[[N, N], pl.FP16], w: F16, out: pl.Out[F32]) -> F32:
        pl.system.sync_wait(5, pipe=pl.PipeType.MTE2)
        ly = pl.move(pl.load(y, [0, 0], [N, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        rw = pl.move(pl.load(w, [0, 0], [N, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        out = pl.store(pl.matmul(ly, rw), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Group)
    def group(self, x: F32, w: F16, y: pl.Out[pl.Tensor[[N, N], pl.FP16]], out: pl.Out[F32]) -> F32:
        self.vector(x, y)
        out = self.cube(y, w, out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: F32, w: F16, y: pl.Out[pl.Tensor[[N, N], pl.FP16]], out: pl.Out[F32]) -> F32:
        out = self.group(x, w, y, out)
        return out


def test_the_aic_wait_takes_one_set_from_each_lane():
    g = torch.Generator().manual_seed(1)
    x, w = torch.randn(N, N, generator=g) * 0.1, torch.randn(N, N, generator=g).half()
    y, out = torch.zeros(N, N, dtype=torch.float16), torch.zeros(N, N)
    run(LanesToCube, x, w, y, out)
    torch.testing.assert_close(out, torch.exp(x).half().float() @ w.float(), rtol=2e-3, atol=2e-3)


@pl.program
class Mixed:
    """One InCore kernel: core_type= keeps each event op on its side when it is split."""

    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, a: F16, b: F16, c: pl.Out[F32], out: pl.Out[F32]) -> F32:
        la = pl.move(pl.load(a, [0, 0], [N, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        rb = pl.move(pl.load(b, [0, 0], [N, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        c = pl.store(pl.matmul(la, rb), [0, 0], c)
        pl.system.sync_set(0, pipe=pl.PipeType.FIX, core_type="aic")
        pl.system.sync_wait(0, pipe=pl.PipeType.MTE2, core_type="aiv")
        out = pl.store(pl.exp(pl.load(c, [0, 0], [N, N])), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: F16, b: F16, c: pl.Out[F32], out: pl.Out[F32]) -> F32:
        out = self.kernel(a, b, c, out)
        return out


def test_core_type_places_the_event_ops_of_a_mixed_kernel():
    out, want, _ = run_group(Mixed)
    torch.testing.assert_close(out, want)


def test_a_core_type_other_than_aic_or_aiv_is_a_parse_error():
    with pytest.raises(ParseError) as info:

        @pl.program
        class Bad:
            @pl.function(type=pl.FunctionType.AIV)
            def vector(self, x: F32) -> F32:
                pl.system.sync_wait(0, core_type="mix")
                return x

    assert 'core_type must be "aic" or "aiv"' in info.value.message


def dynamic_program(step):
    @pl.program
    class Dynamic:
        @pl.function(type=pl.FunctionType.AIC)
        def cube(self, a: F16, b: F16, e: pl.Scalar[pl.INDEX], c: pl.Out[F32]) -> F32:
            la = pl.move(pl.load(a, [0, 0], [N, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
            rb = pl.move(pl.load(b, [0, 0], [N, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            c = pl.store(pl.matmul(la, rb), [0, 0], c)
            pl.system.sync_set(e, pipe=pl.PipeType.ALL)
            return c

        @pl.function(type=pl.FunctionType.AIV)
        def vector(self, c: F32, e: pl.Scalar[pl.INDEX], out: pl.Out[F32]) -> F32:
            pl.system.sync_wait(e, pipe=pl.PipeType.ALL)
            lane = pl.get_subblock_idx()
            out = pl.store(pl.exp(pl.load(c, [lane * 32, 0], [32, N])), [lane * 32, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Group)
        def group(self, a: F16, b: F16, e: pl.Scalar[pl.INDEX], c: pl.Out[F32], out: pl.Out[F32]) -> F32:
            self.cube(a, b, e, c)
            out = self.vector(c, e, out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: F16, b: F16, c: pl.Out[F32], out: pl.Out[F32]) -> F32:
            for i in pl.range(2):
                out = self.group(a, b, i * step, c, out)
            return out

    return Dynamic


def test_a_run_time_event_id_is_an_index_scalar():
    out, want, _ = run_group(dynamic_program(13))  # events 0 and 13
    torch.testing.assert_close(out, want)


def test_a_run_time_event_id_is_checked_when_it_runs():
    with pytest.raises(EventError) as info:
        run_group(dynamic_program(14))
    assert "the run-time event id is 14, outside 0..13 (14 and 15 are reserved)" in info.value.message


def test_the_printed_program_reads_back():
    for program in (dynamic_program(13), group_program(), Mixed):
        text = program.as_python()
        assert pl.parse(text).as_python() == text


def test_set_ffts_takes_an_int64_workspace_of_256_elements():
    @pl.program
    class Ffts:
        @pl.function(type=pl.FunctionType.AIV)
        def vector(self, ws: pl.Tensor[[256], pl.INT64], x: F32, out: pl.Out[F32]) -> F32:
            pl.system.set_ffts(ws)
            out = pl.store(pl.load(x, [0, 0], [N, N]), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, ws: pl.Tensor[[256], pl.INT64], x: F32, out: pl.Out[F32]) -> F32:
            out = self.vector(ws, x, out)
            return out

    x, out = torch.randn(N, N), torch.zeros(N, N)
    run(Ffts, torch.zeros(256, dtype=torch.int64), x, out)
    torch.testing.assert_close(out, x)
    with pytest.raises(TypeCheckError) as info:

        @pl.program
        class Small:
            @pl.function(type=pl.FunctionType.AIV)
            def vector(self, ws: pl.Tensor[[128], pl.INT64], x: F32) -> F32:
                pl.system.set_ffts(ws)
                return x

    assert "1-D INT64 workspace of at least 256 elements" in info.value.message


def test_ffts_modes_other_than_the_core_groups_are_refused_when_run():
    with pytest.raises(TypeCheckError):
        group_program_with_mode(5)
    with pytest.raises(EventError) as info:
        run_group(group_program_with_mode(0))
    assert "ffts_mode=2" in info.value.message


def group_program_with_mode(mode):
    @pl.program
    class Mode:
        @pl.function(type=pl.FunctionType.AIC)
        def cube(self, a: F16, b: F16, c: pl.Out[F32]) -> F32:
            pl.system.sync_set(1, pipe=pl.PipeType.ALL, ffts_mode=mode)
            return c

        @pl.function(type=pl.FunctionType.AIV)
        def vector(self, c: F32, out: pl.Out[F32]) -> F32:
            pl.system.sync_wait(1)
            return out

        @pl.function(type=pl.FunctionType.Group)
        def group(self, a: F16, b: F16, c: pl.Out[F32], out: pl.Out[F32]) -> F32:
            self.cube(a, b, c)
            out = self.vector(c, out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: F16, b: F16, c: pl.Out[F32], out: pl.Out[F32]) -> F32:
            out = self.group(a, b, c, out)
            return out

    return Mode


def test_pipe_type_names_every_pipe():
    assert [p.name for p in pl.PipeType] == ["MTE1", "MTE2", "MTE3", "M", "V", "S", "FIX", "ALL"]
    assert issubclass(EventError, PyptoError)
