"""The chip hands each started block to its block runner (:mod:`pypto_sim_a2a3.engine.runner`): which
runner the options pick, and what a :class:`~pypto_sim_a2a3.engine.launch.LaunchObserver` of a
block's launch is told while the reference runner runs it."""

from __future__ import annotations

from collections import Counter

import torch
from sim_lowered import rand, run
from sim_mixed import scale_then_matmul

from pypto.ir import SplitMode
from pypto_sim_a2a3 import A2A3_TARGET
from pypto_sim_a2a3.checks.coherence import GM_DATA_OPS
from pypto_sim_a2a3.engine.chip import Chip
from pypto_sim_a2a3.engine.debugger import DebugSession
from pypto_sim_a2a3.engine.runner import ReferenceRunner, StartedBlock
from pypto_sim_a2a3.fast.runner import FastRunner
from pypto_sim_a2a3.options import SimOptions


def _chip(prog, **kwargs) -> Chip:
    return Chip(prog, A2A3_TARGET, "a2a3sim", **kwargs)


def test_the_options_pick_the_fast_runner_unless_every_block_must_walk():
    prog = scale_then_matmul(SplitMode.UP_DOWN)
    assert isinstance(_chip(prog, sim=SimOptions()).runner, FastRunner)
    assert type(_chip(prog, sim=SimOptions(replay=False)).runner) is ReferenceRunner
    assert type(_chip(prog, sim=SimOptions(), debugger=DebugSession(prog)).runner) is ReferenceRunner
    assert type(_chip(prog, sim=SimOptions(), comm=object()).runner) is ReferenceRunner  # a rank of a world


class _Watching:
    """A LaunchObserver keeping what it is told."""

    def __init__(self) -> None:
        self.told: Counter[str] = Counter()
        self.ops: list[str] = []
        self.gm: list[str] = []
        self.settled: set[str] = set()
        self.slices: list = []
        self.rings: list[tuple[str, str, int]] = []
        self.transfers: list = []

    def stepped(self, index, run):
        steps = 0
        while True:
            try:
                event = next(run)
            except StopIteration as stop:
                self.told[f"steps of core {index}"] = steps + 1
                return stop.value
            steps += 1
            yield event

    def spawned(self, index, process) -> None:
        self.told["spawned"] += 1

    def op(self, call) -> None:
        self.ops.append(call.op)

    def gm_access(self, role, call, args, at) -> None:
        self.gm.append(call.op)

    def settle(self, role) -> None:
        self.settled.add(role.name)

    def slice(self, piece) -> None:
        self.slices.append(piece)

    def ring(self, pipe, owner, slots):
        self.rings.append((pipe, owner, slots))
        return lambda delta, cycle: self.told.update(["ring changes"])

    def transfer(self, transfer) -> None:
        self.transfers.append(transfer)


class _Observing:
    """A BlockRunner that observes every block it runs on the reference runner."""

    def __init__(self, reference: ReferenceRunner) -> None:
        self.reference = reference
        self.watching: list[_Watching] = []

    def start(self, block: StartedBlock) -> None:
        watching = _Watching()
        self.watching.append(watching)
        block.launch.observe(watching)
        self.reference.start(block)

    def retire(self, task) -> None:
        return None

    def release(self) -> None:
        self.reference.release()


def test_an_observer_of_a_launch_is_told_what_its_cores_do_and_changes_nothing():
    prog = scale_then_matmul(SplitMode.UP_DOWN)
    args = [rand(64, 64, seed=3), rand(64, 64, seed=4), torch.zeros(64, 64)]
    plain = run(prog, *[a.clone() for a in args])
    chip = _chip(prog, sim=SimOptions(replay=False))
    observing = _Observing(chip.runner)  # type: ignore[arg-type]
    chip.runner = observing
    observed_args = [a.clone() for a in args]
    report = chip.report(chip.run(prog.entry_function, observed_args))
    chip.release()

    assert report.total_cycles == plain.total_cycles and report.timeline == plain.timeline
    assert torch.equal(observed_args[2], (2 * args[0]) @ args[1])
    (watching,) = observing.watching  # one task, one block
    assert watching.told["spawned"] == 3  # the AIC and both lanes
    assert all(watching.told[f"steps of core {i}"] > 1 for i in range(3))
    assert watching.ops.count("tile.tpush_to_aic") == 2 and watching.ops.count("tile.tpop_from_aiv") == 1
    gm_data = [op for op in watching.ops if op in GM_DATA_OPS]  # each op's place in modeled order is told
    assert gm_data and sorted(op for op in watching.gm if op in GM_DATA_OPS) == sorted(gm_data)
    assert watching.settled == {"AIC", "AIV0", "AIV1"}
    on_cores = [s for s in report.timeline if s.core.startswith("cg0.")]
    assert sorted(map(repr, watching.slices)) == sorted(map(repr, on_cores))
    assert len(watching.rings) == len(report.rings) and watching.told["ring changes"] > 0
    assert watching.transfers == report.transfers
