"""Blocks whose loops and branches depend on the block or on data replay the earlier block whose
control took the same course (:mod:`pypto_sim_a2a3.fast.control`): no numbers walk first, the
numbers of the blocks of one trace walked together, and a run reports what the full engine does
(``PYPTO_SIM_REPLAY=off``). ``PYPTO_SIM_CHECK_REPLAY`` checks each trace against the full walk."""

from __future__ import annotations

import pytest
import torch
from sim_lowered import FunctionBuilder, Mem, program, rand, tensor_t

from pypto.ir import Direction, FunctionKind, If, PyptoError
from pypto_sim_a2a3 import A2A3SimBackend, OutOfBoundsError
from pypto_sim_a2a3.engine.steering import control_of
from pypto_sim_a2a3.fast import replay, runner
from pypto_sim_a2a3.options import SimOptions

CHUNK, COLS = 16, 64


def _strided_kernel(rows: int, blocks: int) -> FunctionBuilder:
    """``out = exp(a)`` by chunks of 16 rows: block ``g`` takes chunks g, g + blocks, ... (its loop
    starts at the block index, so blocks loop 2 or 3 times when the chunks do not divide)."""
    k = FunctionBuilder("rows", FunctionKind.AIV)
    a = k.param("a", tensor_t((rows, COLS)))
    out = k.param("out", tensor_t((rows, COLS)), Direction.Out)
    block = k.op("block", "get_block_idx")
    chunks = (rows + CHUNK - 1) // CHUNK
    with k.loop("t", block, chunks, blocks) as t:
        row = k.op("row", "scalar.mul", t, CHUNK)
        x = k.op("x", "tile.load", a, [row, 0], shape=(CHUNK, COLS), target_memory=Mem.Vec)
        k.do("tile.store", k.op("y", "tile.exp", x), [row, 0], out)
    return k


def _launch(kernel, blocks: int, *params):
    b = FunctionBuilder("host", FunctionKind.Orchestration)
    b.call("rows", *(b.param(name, t, d) for name, t, d in params), block_num=blocks)
    return program(b.build(), kernel)


def _rows_launch(kernel, rows: int, blocks: int):
    return _launch(
        kernel,
        blocks,
        ("a", tensor_t((rows, COLS)), Direction.In),
        ("out", tensor_t((rows, COLS)), Direction.Out),
    )


def _ghosts(monkeypatch) -> list[int]:
    made: list[int] = []
    original = replay.GhostBlock.__init__

    def counting(self, *args, **kwargs):
        original(self, *args, **kwargs)
        made.append(self.launch.site.block)

    monkeypatch.setattr(replay.GhostBlock, "__init__", counting)
    return made


def _alone(monkeypatch) -> list[int]:
    """The blocks whose numbers the fast runner walked alone (not in a batch)."""
    walked: list[int] = []
    original = runner.walk_numbers

    def counting(launch, frames):
        walked.append(launch.site.block)
        return original(launch, frames)

    monkeypatch.setattr(runner, "walk_numbers", counting)
    return walked


def _run(prog, args, options):
    try:
        return A2A3SimBackend().run(prog, list(args), options)
    except PyptoError as error:
        return error


def _both(monkeypatch, prog, *args, timing_only: bool = False, check: bool = True):
    """The report (or the error) and the arguments after the run, with replay (its check mode
    on) and without; fresh copies of the arguments each time."""
    options = {"timing_only": True} if timing_only else {}
    outcomes = []
    for mode in ("on", "off"):
        monkeypatch.setenv("PYPTO_SIM_REPLAY", mode)
        monkeypatch.setenv("PYPTO_SIM_CHECK_REPLAY", "1" if check and mode == "on" else "0")
        copies = [a.clone() for a in args]
        outcomes.append((_run(prog, copies, options), copies))
    return outcomes


def _same_reports(one, other) -> None:
    for field in ("total_cycles", "tasks", "busy_cycles", "stall_cycles", "timeline", "heaps", "submitted"):
        assert getattr(one, field) == getattr(other, field), field


def test_blocks_whose_loops_start_at_the_block_index_replay_by_trip_count_with_batched_numbers(monkeypatch):
    blocks, rows = 8, 20 * CHUNK  # 20 chunks: blocks 0-3 loop 3 times, blocks 4-7 twice
    prog = _rows_launch(_strided_kernel(rows, blocks).build(), rows, blocks)
    x = rand(rows, COLS)
    monkeypatch.setenv("PYPTO_SIM_CHECK_REPLAY", "0")
    monkeypatch.setenv("PYPTO_SIM_REPLAY", "on")
    ghosts, alone = _ghosts(monkeypatch), _alone(monkeypatch)
    out = torch.zeros_like(x)
    fast = A2A3SimBackend().run(prog, [x, out], {})
    assert sorted(ghosts) == [1, 2, 3, 5, 6, 7]  # blocks 0 and 4 ran on the full engine
    assert alone == []  # no block walked for its numbers alone: each trace's blocks walked together
    monkeypatch.setenv("PYPTO_SIM_REPLAY", "off")
    full_out = torch.zeros_like(x)
    full = A2A3SimBackend().run(prog, [x, full_out], {})
    _same_reports(fast, full)
    assert torch.equal(out, full_out) and torch.equal(out, x.exp())


def test_the_control_trace_counts_iterations_and_leaves_gm_offsets_out():
    blocks, rows = 8, 20 * CHUNK
    kernel = _strided_kernel(rows, blocks).build()
    control = control_of(kernel)
    assert control.traceable
    assert control.names == {"block"}  # the loop's start; its variable only moves GM offsets


def _flagged_kernel(rows: int, flagged: int = 64) -> FunctionBuilder:
    """Block ``b`` reads ``flags[b]``: if it is positive, ``out`` rows of the block are ``exp(a)``
    computed twice over (a branch on data), else ``a`` copied."""
    k = FunctionBuilder("rows", FunctionKind.AIV)
    a = k.param("a", tensor_t((rows, COLS)))
    flags = k.param("flags", tensor_t((flagged,)))
    out = k.param("out", tensor_t((rows, COLS)), Direction.Out)
    block = k.op("block", "get_block_idx")
    row = k.op("row", "scalar.mul", block, CHUNK)
    flag = k.op("flag", "scalar.read", flags, [block])
    x = k.op("x", "tile.load", a, [row, 0], shape=(CHUNK, COLS), target_memory=Mem.Vec)
    k._bodies.append([])
    y = k.op("y", "tile.exp", x)
    k.op("z", "tile.exp", y)
    k.do("tile.store", y, [row, 0], out)
    then_body = tuple(k._bodies.pop())
    k._bodies.append([])
    k.do("tile.store", x, [row, 0], out)
    else_body = tuple(k._bodies.pop())
    k._emit(If(k.scalar("scalar.gt", flag, 0.0), then_body, else_body, k.span()))
    return k


def test_blocks_that_branch_on_data_replay_the_first_that_took_the_same_arm(monkeypatch):
    blocks, rows = 8, 8 * CHUNK
    prog = _launch(
        _flagged_kernel(rows).build(),
        blocks,
        ("a", tensor_t((rows, COLS)), Direction.In),
        ("flags", tensor_t((64,)), Direction.In),
        ("out", tensor_t((rows, COLS)), Direction.Out),
    )
    x = rand(rows, COLS)
    flags = torch.zeros(64)
    flags[[0, 3, 5]] = 1.0  # blocks 0, 3 and 5 take the then arm
    ghosts = _ghosts(monkeypatch)
    (on, (_, _, out_on)), (off, (_, _, out_off)) = _both(monkeypatch, prog, x, flags, torch.zeros_like(x))
    assert sorted(ghosts) == [2, 3, 4, 5, 6, 7]  # block 0 (then) and block 1 (else) ran in full
    _same_reports(on, off)
    expected = x.clone()
    for b in (0, 3, 5):
        expected[b * CHUNK : (b + 1) * CHUNK] = x[b * CHUNK : (b + 1) * CHUNK].exp()
    assert torch.equal(out_on, out_off) and torch.equal(out_on, expected)


def test_a_data_branch_replays_alike_in_a_timing_only_run(monkeypatch):
    blocks, rows = 8, 8 * CHUNK
    prog = _launch(
        _flagged_kernel(rows).build(),
        blocks,
        ("a", tensor_t((rows, COLS)), Direction.In),
        ("flags", tensor_t((64,)), Direction.In),
        ("out", tensor_t((rows, COLS)), Direction.Out),
    )
    x, flags = rand(rows, COLS), torch.zeros(64)
    flags[[1, 2]] = 1.0
    ghosts = _ghosts(monkeypatch)
    (on, _), (off, _) = _both(monkeypatch, prog, x, flags, torch.zeros_like(x), timing_only=True)
    assert sorted(ghosts) == [2, 3, 4, 5, 6, 7]  # block 0 (else) and block 1 (then) ran in full
    _same_reports(on, off)


def test_an_on_chip_offset_from_the_block_index_leaves_the_blocks_one_trace(monkeypatch):
    """Each block stores rows ``block % 2 * 8`` onwards of its loaded tile (an on-chip slice at an
    offset that depends on the block): its steps are every other block's."""
    blocks, rows = 6, 6 * CHUNK
    k = FunctionBuilder("rows", FunctionKind.AIV)
    a = k.param("a", tensor_t((rows, COLS)))
    out = k.param("out", tensor_t((blocks * 8, COLS)), Direction.Out)
    block = k.op("block", "get_block_idx")
    x = k.op(
        "x",
        "tile.load",
        a,
        [k.scalar("scalar.mul", block, CHUNK), 0],
        shape=(CHUNK, COLS),
        target_memory=Mem.Vec,
    )
    first = k.op("first", "scalar.mul", k.scalar("scalar.mod", block, 2), 8)
    half = k.op("half", "tile.slice", x, [first, 0], shape=(8, COLS))
    k.do("tile.store", half, [k.scalar("scalar.mul", block, 8), 0], out)
    prog = _launch(
        k.build(),
        blocks,
        ("a", tensor_t((rows, COLS)), Direction.In),
        ("out", tensor_t((blocks * 8, COLS)), Direction.Out),
    )
    x_in = rand(rows, COLS)
    ghosts = _ghosts(monkeypatch)
    (on, (_, out_on)), (off, (_, out_off)) = _both(monkeypatch, prog, x_in, torch.zeros(blocks * 8, COLS))
    assert sorted(ghosts) == [1, 2, 3, 4, 5]
    _same_reports(on, off)
    assert torch.equal(out_on, out_off)
    for b in range(blocks):
        lo = b * CHUNK + b % 2 * 8
        assert torch.equal(out_on[b * 8 : b * 8 + 8], x_in[lo : lo + 8])


def test_an_out_of_bounds_load_in_one_replayed_block_is_the_same_error_at_the_same_line(monkeypatch):
    blocks, rows = 8, 20 * CHUNK - 8  # the last chunk (block 3's third) runs past the end
    prog = _rows_launch(_strided_kernel(rows, blocks).build(), rows, blocks)
    x = rand(rows, COLS)
    (on, _), (off, _) = _both(monkeypatch, prog, x, torch.zeros_like(x))
    assert isinstance(on, OutOfBoundsError) and isinstance(off, OutOfBoundsError)
    assert (on.message, on.span, on.hint) == (off.message, off.span, off.hint)


def test_a_control_error_in_the_trace_walk_leaves_the_block_to_its_numbers_walk(monkeypatch):
    """A branch on ``flags[b]`` read past the end of ``flags`` in the last block: the trace walk
    cannot follow that block, whose own walk reports the read where the full engine does."""
    blocks, rows = 8, 8 * CHUNK
    kernel = _flagged_kernel(rows, 7).build()
    prog = _launch(
        kernel,
        blocks,
        ("a", tensor_t((rows, COLS)), Direction.In),
        ("flags", tensor_t((7,)), Direction.In),
        ("out", tensor_t((rows, COLS)), Direction.Out),
    )
    (on, _), (off, _) = _both(monkeypatch, prog, rand(rows, COLS), torch.ones(7), torch.zeros(rows, COLS))
    assert isinstance(on, OutOfBoundsError) and isinstance(off, OutOfBoundsError)
    assert (on.message, on.span, on.hint) == (off.message, off.span, off.hint)


def test_the_check_mode_catches_a_trace_that_misses_what_decides_the_steps(monkeypatch):
    blocks, rows = 8, 20 * CHUNK
    prog = _rows_launch(_strided_kernel(rows, blocks).build(), rows, blocks)
    monkeypatch.setattr(runner, "control_key", lambda placements, site, steps: ((),))  # blind to trips
    monkeypatch.setenv("PYPTO_SIM_REPLAY", "on")
    monkeypatch.setenv("PYPTO_SIM_CHECK_REPLAY", "1")
    x = rand(rows, COLS)
    with pytest.raises(
        AssertionError, match="has the control trace of an earlier block but walks differently"
    ):
        A2A3SimBackend().run(prog, [x, torch.zeros_like(x)], {})


def test_the_blocks_that_take_one_arm_walk_their_numbers_together(monkeypatch):
    """Each block reads its flag from GM (a scalar read, one per block of the batch) and branches
    on it: the blocks of each arm walk their numbers in one batch, none alone."""
    blocks, rows = 8, 8 * CHUNK
    prog = _launch(
        _flagged_kernel(rows).build(),
        blocks,
        ("a", tensor_t((rows, COLS)), Direction.In),
        ("flags", tensor_t((64,)), Direction.In),
        ("out", tensor_t((rows, COLS)), Direction.Out),
    )
    x, flags = rand(rows, COLS), torch.zeros(64)
    flags[[0, 3, 5]] = 1.0
    monkeypatch.setenv("PYPTO_SIM_CHECK_REPLAY", "0")
    monkeypatch.setenv("PYPTO_SIM_REPLAY", "on")
    alone = _alone(monkeypatch)
    out = torch.zeros_like(x)
    fast = A2A3SimBackend().run(prog, [x, flags, out], {})
    assert alone == []
    monkeypatch.setenv("PYPTO_SIM_REPLAY", "off")
    full_out = torch.zeros_like(x)
    _same_reports(fast, A2A3SimBackend().run(prog, [x, flags, full_out], {}))
    assert torch.equal(out, full_out)


def test_a_branch_on_a_value_only_tile_math_computes_is_traced_with_that_math(monkeypatch):
    """The flag is the first element of the block's loaded tile (a load and a tile read): the trace
    walk computes both, and the blocks replay the first that took their arm."""
    blocks, rows = 8, 8 * CHUNK
    k = FunctionBuilder("rows", FunctionKind.AIV)
    a = k.param("a", tensor_t((rows, COLS)))
    out = k.param("out", tensor_t((rows, COLS)), Direction.Out)
    row = k.op("row", "scalar.mul", k.op("block", "get_block_idx"), CHUNK)
    x = k.op("x", "tile.load", a, [row, 0], shape=(CHUNK, COLS), target_memory=Mem.Vec)
    flag = k.op("flag", "tile.read", x, [0, 0])
    k._bodies.append([])
    k.do("tile.store", k.op("y", "tile.exp", x), [row, 0], out)
    then_body = tuple(k._bodies.pop())
    k._bodies.append([])
    k.do("tile.store", x, [row, 0], out)
    else_body = tuple(k._bodies.pop())
    k._emit(If(k.scalar("scalar.gt", flag, 0.0), then_body, else_body, k.span()))
    kernel = k.build()
    assert control_of(kernel).traceable and "x" in control_of(kernel).names
    prog = _rows_launch(kernel, rows, blocks)
    x_in = -rand(rows, COLS).abs()
    for b in (1, 4, 6):
        x_in[b * CHUNK, 0] = 1.0
    ghosts, signed = _ghosts(monkeypatch), []
    by_signature = runner.FastRunner._replay_by_signature
    monkeypatch.setattr(
        runner.FastRunner, "_replay_by_signature", lambda self, b: signed.append(b) or by_signature(self, b)
    )
    (on, (_, out_on)), (off, (_, out_off)) = _both(monkeypatch, prog, x_in, torch.zeros_like(x_in))
    assert sorted(ghosts) == [2, 3, 4, 5, 6, 7] and signed == []  # every block traced
    _same_reports(on, off)
    assert torch.equal(out_on, out_off)
    assert torch.equal(out_on[CHUNK : 2 * CHUNK], x_in[CHUNK : 2 * CHUNK].exp())


def test_the_check_mode_is_off_unless_the_environment_turns_it_on():
    assert not SimOptions.from_env({}).check_replay
    assert not SimOptions.from_env({"PYPTO_SIM_CHECK_REPLAY": "off"}).check_replay
    assert SimOptions.from_env({"PYPTO_SIM_CHECK_REPLAY": "1"}).check_replay
