"""The later blocks of an spmd launch replay block 0's steps (:mod:`pypto_sim_a2a3.fast.replay`): which
launches may, and that what a run reports — cycles, slices, numbers, errors — is the same as
with every block on the full engine (``PYPTO_SIM_REPLAY=off``)."""

from __future__ import annotations

import torch
from sim_lowered import FunctionBuilder, Mem, program, rand, run, tensor_t

from pypto.ir import Direction, FunctionKind, PyptoError
from pypto_sim_a2a3 import OutOfBoundsError
from pypto_sim_a2a3.fast import replay
from pypto_sim_a2a3.fast.replay import uniform_control

ROWS, COLS = 32, 64


def _rows_kernel(rows: int, *, loop_stop=None, branch=None) -> FunctionBuilder:
    """``out[block rows] = exp(a[block rows])`` per block, in chunks of 16 rows."""
    k = FunctionBuilder("rows", FunctionKind.AIV)
    a = k.param("a", tensor_t((rows, COLS)))
    out = k.param("out", tensor_t((rows, COLS)), Direction.Out)
    block = k.op("block", "get_block_idx")
    base = k.op("base", "scalar.mul", block, ROWS)
    with k.loop("c", 0, loop_stop if loop_stop is not None else 2) as c:
        row = k.scalar("scalar.add", base, k.scalar("scalar.mul", c, 16))
        x = k.op("x", "tile.load", a, [row, 0], shape=(16, COLS), target_memory=Mem.Vec)
        k.do("tile.store", k.op("y", "tile.exp", x), [row, 0], out)
    return k


def _looping_kernel(rows: int, trips: str, *operands):
    """:func:`_rows_kernel` with a loop whose trip count is ``trips`` of the block index and
    ``operands`` (a scalar op such as ``scalar.mod``; ``None``: the block index itself)."""
    k = _rows_kernel(rows)
    block = k.op("b2", "get_block_idx")
    stop = block if trips is None else k.op("trips", trips, block, *operands)
    with k.loop("extra", 0, stop):
        k.op("t", "scalar.add", 1, 2)
    return k.build()


def _launch(kernel, rows: int, blocks: int):
    b = FunctionBuilder("host", FunctionKind.Orchestration)
    args = [b.param("a", tensor_t((rows, COLS))), b.param("out", tensor_t((rows, COLS)), Direction.Out)]
    b.call("rows", *args, block_num=blocks)
    return program(b.build(), kernel)


def _ghosts(monkeypatch) -> list[int]:
    made: list[int] = []
    original = replay.GhostBlock.__init__

    def counting(self, *args, **kwargs):
        original(self, *args, **kwargs)
        made.append(self.launch.site.block)

    monkeypatch.setattr(replay.GhostBlock, "__init__", counting)
    return made


def _both(monkeypatch, prog, *args):
    """The report (or the error) with replay, then without it; fresh copies of the arguments."""
    outcomes = []
    for mode in ("on", "off"):
        monkeypatch.setenv("PYPTO_SIM_REPLAY", mode)
        copies = [a.clone() for a in args]
        try:
            outcomes.append((run(prog, *copies), copies))
        except PyptoError as error:
            outcomes.append((error, copies))
    return outcomes


def _same_reports(one, other) -> None:
    for field in ("total_cycles", "tasks", "busy_cycles", "stall_cycles", "timeline", "heaps", "submitted"):
        assert getattr(one, field) == getattr(other, field), field


def test_the_blocks_after_the_first_are_replayed_and_report_what_the_full_engine_does(monkeypatch):
    ghosts = _ghosts(monkeypatch)
    blocks = 30  # more than the 24 core groups: six blocks wait for a free group
    prog = _launch(_rows_kernel(blocks * ROWS).build(), blocks * ROWS, blocks)
    x = rand(blocks * ROWS, COLS)
    (replayed, (_, out_on)), (full, (_, out_off)) = _both(monkeypatch, prog, x, torch.zeros_like(x))
    assert sorted(ghosts) == list(range(1, blocks))  # the first run; the second replays none
    _same_reports(replayed, full)
    assert torch.equal(out_on, out_off) and torch.equal(out_on, x.exp())
    assert {t.block for t in replayed.tasks} == set(range(blocks))


def test_an_out_of_bounds_load_in_the_last_block_is_the_same_error_at_the_same_line(monkeypatch):
    ghosts = _ghosts(monkeypatch)
    kernel = _rows_kernel(3 * ROWS + 16).build()  # the fourth block's second chunk is past the end
    prog = _launch(kernel, 3 * ROWS + 16, 4)
    x = rand(3 * ROWS + 16, COLS)
    (on, _), (off, _) = _both(monkeypatch, prog, x, torch.zeros_like(x))
    assert 3 in ghosts  # the failing block was a replayed one
    assert isinstance(on, OutOfBoundsError) and isinstance(off, OutOfBoundsError)
    assert (on.message, on.span, on.hint) == (off.message, off.span, off.hint)
    assert "region [112:128] is outside dim 0 of size 112" in on.message


def test_blocks_writing_the_same_rows_are_the_same_race(monkeypatch):
    k = FunctionBuilder("rows", FunctionKind.AIV)
    a = k.param("a", tensor_t((ROWS, COLS)))
    out = k.param("out", tensor_t((ROWS, COLS)), Direction.Out)
    x = k.op("x", "tile.load", a, [0, 0], shape=(ROWS, COLS), target_memory=Mem.Vec)
    k.do("tile.store", k.op("y", "tile.exp", x), [0, 0], out)  # every block: the same rows
    prog = _launch(k.build(), ROWS, 3)
    (on, _), (off, _) = _both(monkeypatch, prog, rand(ROWS, COLS), torch.zeros(ROWS, COLS))
    assert isinstance(on, PyptoError) and type(on) is type(off)
    assert (on.message, on.span) == (off.message, off.span)


def _three_ways(monkeypatch, prog, *args):
    """:func:`_both`, with a replayed block of one core stepped at each of block 0's steps in
    between (it runs ahead where it may, see replay._may_run_ahead); and how often it ran ahead."""
    ran_ahead = []
    original = replay._may_run_ahead

    def counting(steps, k):
        may = original(steps, k)
        ran_ahead.append(may)
        return may

    monkeypatch.setattr(replay, "_may_run_ahead", counting)
    ahead, full = _both(monkeypatch, prog, *args)
    monkeypatch.setattr(replay, "_may_run_ahead", lambda steps, k: False)
    monkeypatch.setenv("PYPTO_SIM_REPLAY", "on")
    copies = [a.clone() for a in args]
    try:
        stepped = (run(prog, *copies), copies)
    except PyptoError as error:
        stepped = (error, copies)
    return [ahead, stepped, full], sum(ran_ahead)


def test_a_replayed_block_of_one_core_runs_ahead_and_reports_what_it_would_step_by_step(monkeypatch):
    blocks = 30  # more than the 24 core groups: six blocks wait for a free group
    prog = _launch(_rows_kernel(blocks * ROWS).build(), blocks * ROWS, blocks)
    x = rand(blocks * ROWS, COLS)
    outcomes, ran_ahead = _three_ways(monkeypatch, prog, x, torch.zeros_like(x))
    assert ran_ahead > 0
    (first, first_args), *rest = outcomes
    for other, other_args in rest:
        _same_reports(first, other)
        assert first.transfers == other.transfers and first.rings == other.rings
        assert all(torch.equal(m, t) for m, t in zip(first_args, other_args, strict=True))


def test_an_early_resolving_task_of_blocks_that_run_ahead_resolves_when_it_would_step_by_step(
    monkeypatch,
):
    """A block is past its last GM access (its task may resolve) before it ends: a block running
    ahead waits for its turn there, so its reader starts at the same cycle."""
    blocks = 30  # the last six start once block 0 has ended: they run ahead the furthest
    rows = blocks * ROWS
    k = FunctionBuilder("rows", FunctionKind.AIV)
    a = k.param("a", tensor_t((rows, COLS)))
    out = k.param("out", tensor_t((rows, COLS)), Direction.Out)
    base = k.op("base", "scalar.mul", k.op("block", "get_block_idx"), ROWS)
    kept = k.op("kept", "tile.load", a, [base, 0], shape=(16, COLS), target_memory=Mem.Vec)
    with k.loop("c", 0, 2) as c:
        row = k.scalar("scalar.add", base, k.scalar("scalar.mul", c, 16))
        x = k.op("x", "tile.load", a, [row, 0], shape=(16, COLS), target_memory=Mem.Vec)
        k.do("tile.store", k.op("y", "tile.exp", x), [row, 0], out)
    for i in range(40):  # on-chip work after the last store
        kept = k.op(f"tail{i}", "tile.exp", kept)
    producer = k.build()
    r = FunctionBuilder("back", FunctionKind.AIV)
    src = r.param("out", tensor_t((rows, COLS)))
    dst = r.param("out2", tensor_t((rows, COLS)), Direction.Out)
    row = r.op("row", "scalar.mul", r.op("block", "get_block_idx"), ROWS)
    r.do(
        "tile.store",
        r.op("y", "tile.load", src, [row, 0], shape=(ROWS, COLS), target_memory=Mem.Vec),
        [row, 0],
        dst,
    )
    b = FunctionBuilder("host", FunctionKind.Orchestration)
    a, out = b.param("a", tensor_t((rows, COLS))), b.param("out", tensor_t((rows, COLS)))
    out2 = b.param("out2", tensor_t((rows, COLS)), Direction.Out)
    b.call("rows", a, out, block_num=blocks, allow_early_resolve=True)
    b.call("back", out, out2, block_num=blocks)
    prog = program(b.build(), producer, r.build())
    x = rand(rows, COLS)
    outcomes, ran_ahead = _three_ways(monkeypatch, prog, x, torch.zeros_like(x), torch.zeros_like(x))
    assert ran_ahead > 0
    (first, first_args), *rest = outcomes
    assert not isinstance(first, PyptoError), first
    for other, other_args in rest:
        _same_reports(first, other)
        assert torch.equal(other_args[2], first_args[2])
    assert torch.equal(first_args[2], x.exp())
    reader = min(t.start_cycle for t in first.tasks if t.kernel == "back")
    assert reader < max(t.end_cycle for t in first.tasks if t.kernel == "rows")  # resolved early


def test_blocks_that_run_ahead_race_as_they_would_step_by_step(monkeypatch):
    """Every block stores the same rows twice: the first race in modeled time is told the same."""
    k = FunctionBuilder("rows", FunctionKind.AIV)
    a = k.param("a", tensor_t((ROWS, COLS)))
    out = k.param("out", tensor_t((ROWS, COLS)), Direction.Out)
    with k.loop("c", 0, 2):
        x = k.op("x", "tile.load", a, [0, 0], shape=(ROWS, COLS), target_memory=Mem.Vec)
        k.do("tile.store", k.op("y", "tile.exp", x), [0, 0], out)
    prog = _launch(k.build(), ROWS, 5)
    outcomes, ran_ahead = _three_ways(monkeypatch, prog, rand(ROWS, COLS), torch.zeros(ROWS, COLS))
    assert ran_ahead > 0
    (first, _), *rest = outcomes
    assert isinstance(first, PyptoError)
    for other, _ in rest:
        assert type(other) is type(first)
        assert (other.message, other.span, other.hint) == (first.message, first.span, first.hint)


def test_a_loop_bound_or_branch_on_the_block_index_keeps_the_full_engine(monkeypatch):
    assert uniform_control(_rows_kernel(4 * ROWS).build())

    kernel = _looping_kernel(4 * ROWS, None)  # a loop whose trip count is the block index
    assert not uniform_control(kernel)

    ghosts = _ghosts(monkeypatch)
    prog = _launch(kernel, 4 * ROWS, 4)
    x = rand(4 * ROWS, COLS)
    (on, (_, out_on)), (off, (_, out_off)) = _both(monkeypatch, prog, x, torch.zeros_like(x))
    assert ghosts == []
    _same_reports(on, off)
    assert torch.equal(out_on, out_off)


def test_uniform_control_reads_constants_extents_loop_variables_and_scalar_math():
    k = FunctionBuilder("k", FunctionKind.AIV)
    n = k.op("n", "get_block_num")
    with k.loop("i", 0, k.scalar("scalar.mul", n, 2)) as i, k.loop("j", 0, i):
        k.op("t", "scalar.add", i, 1)
    assert uniform_control(k.build())

    k = FunctionBuilder("k", FunctionKind.AIV)
    a = k.param("a", tensor_t((ROWS, COLS)))
    first = k.op("first", "scalar.read", a, [0, 0])  # data: not the same in every run
    with k.loop("i", 0, first):
        k.op("t", "scalar.add", 1, 1)
    assert not uniform_control(k.build())


def test_blocks_that_walk_alike_replay_the_first_that_walked_so(monkeypatch):
    """A loop whose trip count depends on the block (``block % 3``): the blocks fall in three
    kinds; the first of each kind runs on the full engine, the later ones replay it."""
    kernel = _looping_kernel(12 * ROWS, "scalar.mod", 3)
    assert not uniform_control(kernel)
    ghosts = _ghosts(monkeypatch)
    prog = _launch(kernel, 12 * ROWS, 12)
    x = rand(12 * ROWS, COLS)
    (on, (_, out_on)), (off, (_, out_off)) = _both(monkeypatch, prog, x, torch.zeros_like(x))
    assert sorted(ghosts) == list(range(3, 12))  # blocks 0, 1 and 2 walked first
    _same_reports(on, off)
    assert torch.equal(out_on, out_off) and torch.equal(out_on, x.exp())


def test_blocks_that_walk_alike_but_write_what_they_read_run_on_the_full_engine(monkeypatch):
    k = FunctionBuilder("rows", FunctionKind.AIV)
    a = k.param("a", tensor_t((4 * ROWS, COLS)), Direction.InOut)
    block = k.op("block", "get_block_idx")
    row = k.op("row", "scalar.mul", block, ROWS)
    with k.loop("extra", 0, k.op("kind", "scalar.mod", block, 2)):
        k.op("t", "scalar.add", 1, 2)
    x = k.op("x", "tile.load", a, [row, 0], shape=(ROWS, COLS), target_memory=Mem.Vec)
    k.do("tile.store", k.op("y", "tile.exp", x), [row, 0], a)  # walked twice, it would exp twice
    b = FunctionBuilder("host", FunctionKind.Orchestration)
    b.call("rows", b.param("a", tensor_t((4 * ROWS, COLS)), Direction.InOut), block_num=4)
    prog = program(b.build(), k.build())
    ghosts = _ghosts(monkeypatch)
    x = rand(4 * ROWS, COLS)
    (on, (out_on,)), (off, (out_off,)) = _both(monkeypatch, prog, x)
    assert ghosts == []
    _same_reports(on, off)
    assert torch.equal(out_on, x.exp()) and torch.equal(out_off, x.exp())


def test_blocks_that_never_walk_alike_stop_walking_first(monkeypatch):
    """Every block loops a different number of times: after 16 blocks whose walk matched no
    earlier one, the rest run on the full engine without walking first."""
    from pypto_sim_a2a3.fast.runner import FastRunner

    walked: list[int] = []
    original = FastRunner._replay_by_walk

    def counting(self, block):
        walked.append(block.block)
        return original(self, block)

    monkeypatch.setattr(FastRunner, "_replay_by_walk", counting)
    prog = _launch(_looping_kernel(30 * ROWS, None), 30 * ROWS, 30)
    x = rand(30 * ROWS, COLS)
    (on, (_, out_on)), (off, (_, out_off)) = _both(monkeypatch, prog, x, torch.zeros_like(x))
    assert walked == list(range(16))  # the second run, with replay off, walks none
    _same_reports(on, off)
    assert torch.equal(out_on, out_off)
