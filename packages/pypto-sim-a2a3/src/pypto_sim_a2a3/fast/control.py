"""A block's control trace: what decides its steps, found without walking its ops.

A block of a plan whose loops and branches depend on the block index, on a task's scalars or on
data takes the steps its *control* decides: how many times each loop runs, which arm each branch
takes, which slot of a slotted buffer each tile takes, the non-storage operands of its pipe ops.
Its GM offsets move only GM regions (their races and coherence are checked with the block's own
regions when it replays). :func:`control_key` walks, per core, only the statements of the
kernel's control slice (:func:`~pypto_sim_a2a3.engine.steering.control_of`): the scalar math, index
reads, GM reads and tile math the control needs, each loop (a loop whose body decides nothing
only counts its iterations and those of the loops it holds) and branch; it records each decision
in order. The program being fixed, two walks that record the same values took the same path: two
blocks of one plan with equal keys (their traces and :func:`~pypto_sim_a2a3.fast.replay.launch_key`)
that start on idle core groups take the same steps, shifted.

A trace walk that cannot follow the block (its control needs a value from a pipe or a GM write,
the walk meets an error, the run debugs) gives None: the block is then walked for its numbers
first, as before (the error met where the full walk meets it).
"""

from __future__ import annotations

import weakref
from collections.abc import Generator, Sequence
from typing import Any

import torch

from pypto.ir import Assign, Break, Call, Continue, Eval, For, Function, If, Return, Stmt, Var, While
from pypto.ir.nodes import nested_bodies, walk_expr, walk_stmts
from pypto.ir.walker import INDEX_OPS, Jump, KernelWalker, max_while_iterations
from pypto_sim_a2a3.engine.decode import Steps
from pypto_sim_a2a3.engine.interpreter import GM_READS, skipped, steered_value
from pypto_sim_a2a3.engine.launch import Placement, Site
from pypto_sim_a2a3.engine.steering import Control, control_of

Walk = Generator[Any, None, Any]


class _Untraced(Exception):
    """The trace walk cannot follow the block (the block walks for its numbers first instead)."""


def control_key(
    placements: Sequence[Placement], site: Site, steps: Steps, valid_shapes: bool = False
) -> tuple[Any, ...] | None:
    """Per core of a block (its ``placements`` on ``site``), the values its control takes, in
    order (see the module's docstring); None where a walk cannot follow the block.
    ``valid_shapes``: the valid shapes its pipe ops push and pop too (see
    :func:`~pypto_sim_a2a3.engine.steering.control_of`)."""
    if site.debugger is not None:
        return None
    traces = []
    for placement in placements:
        control = control_of(placement.kernel, valid_shapes)
        if not control.traceable:
            return None
        try:
            walk = ControlWalk(placement, site, steps, control)
            next(walk.run())
        except StopIteration:
            traces.append(tuple(walk.trace))
            continue
        except Exception:  # whatever it met, the block's numbers walk meets where the full walk does
            return None
        return None  # it waited: only a pipe op waits, and none is in a traceable slice
    return tuple(traces)


class ControlWalk(KernelWalker):
    """One core's walk of the statements of its kernel's control slice (see the module's docstring);
    ``trace`` the values its control took."""

    def __init__(self, placement: Placement, site: Site, steps: Steps, control: Control):
        super().__init__(placement.seat, placement.args, site.block, site.block_num)
        self.control = control
        self.steps = steps
        self.mirror = placement.role.mirror
        timing_only = site.timing_only
        self.unreal = None if timing_only is None else timing_only.unreal
        self.trace: list[Any] = []
        self.counted = _counted_loops(self.fn, control)

    def exec_stmt(self, stmt: Stmt) -> Walk:
        kind = type(stmt)
        if kind is Assign or kind is Eval:
            value = stmt.value  # type: ignore[attr-defined]
            control = self.control
            if type(value) is Call:
                recorded = control.recorded.get(id(value))
                if recorded is not None:
                    self.trace.append(tuple((yield from self.eval_all([value.args[i] for i in recorded]))))
                if id(value) in control.calls:
                    result = yield from self.eval_call(value)
                    if kind is Assign:
                        self.bind(stmt, result)  # type: ignore[arg-type]
            elif kind is Assign and stmt.target.name in control.names:  # type: ignore[attr-defined]
                self.bind(stmt, (yield from self.eval(value)))  # type: ignore[arg-type]
            if kind is Assign:
                self._slot(stmt.target)  # type: ignore[attr-defined]
            return None
        if kind is Return:
            return ()
        if kind is Break or kind is Continue:
            values = yield from self._needed(stmt.values, ())  # type: ignore[attr-defined]
            return Jump(stmt, values)  # type: ignore[arg-type]
        return (yield from super().exec_stmt(stmt))

    def _slot(self, var: Var) -> None:
        """A tile of a slotted buffer is bound: the slot it takes decides its bytes."""
        allocation = self.control.slotted.get(var.name)
        if allocation is not None:
            assert allocation.slot_var is not None
            self.trace.append(allocation.slot_offset(int(self.env[allocation.slot_var])))

    def bind(self, stmt: Assign, value: Any) -> None:
        self.env[stmt.target.name] = value.clone() if isinstance(value, torch.Tensor) else value

    def set_carried(self, var: Var, value: Any) -> None:
        if var.name in self.control.names:
            self.env[var.name] = value.clone() if isinstance(value, torch.Tensor) else value
        self._slot(var)

    def _needed(self, exprs: Sequence[Any], into: Sequence[Var]) -> Walk:
        """The values of ``exprs`` flowing into ``into`` (all, if ``into`` is empty) that the
        control needs; None for the others."""
        names = self.control.names
        values = []
        for index, expr in enumerate(exprs):
            wanted = not into or (index < len(into) and into[index].name in names)
            values.append((yield from self.eval(expr)) if wanted and _evaluable(expr, self.env) else None)
        return tuple(values)

    def carry(self, loop: For | While, exprs: Sequence[Any]) -> Walk:
        values = yield from self._needed(exprs, loop.iter_args)
        for var, value in zip(loop.iter_args, values, strict=True):
            self.set_carried(var, value)

    def bind_results(self, loop: For | While) -> None:
        for iter_arg, result in zip(loop.iter_args, loop.results, strict=True):
            if iter_arg.name in self.env:
                self.env[result.name] = self.env[iter_arg.name]

    def exec_for(self, loop: For) -> Walk:
        iterations = yield from self.loop_range(loop)
        self.trace.append(len(iterations))
        inner = self.counted.get(id(loop))
        if inner is not None:
            # A loop whose body decides nothing: its iterations, and those of the loops it holds
            # (their bounds are the same in each of its iterations).
            if iterations:
                for nested in inner:
                    self.trace.append(len((yield from self.loop_range(nested))))
            return None
        yield from self.carry(loop, loop.init_values)
        self.loop_depth += 1
        try:
            for i in iterations:
                self.bind_loop_var(loop, i)
                left = yield from self.iteration(loop)
                if left is not None:
                    return None if isinstance(left, Jump) else left
        finally:
            self.loop_depth -= 1
        self.bind_results(loop)
        return None

    def exec_while(self, loop: While) -> Walk:
        yield from self.carry(loop, loop.init_values)
        limit, runs = max_while_iterations(), 0
        while (yield from self.eval(loop.cond)):
            self.trace.append(True)
            runs += 1
            if runs > limit:
                raise _Untraced("an endless while loop")  # (the numbers walk raises it at its line)
            left = yield from self.iteration(loop)
            if left is not None:
                return None if isinstance(left, Jump) else left
        self.trace.append(False)
        self.bind_results(loop)
        return None

    def exec_if(self, stmt: If) -> Walk:
        arm = 0 if (yield from self.eval(stmt.cond)) else 1
        self.trace.append(arm)
        left = yield from self.exec_body(nested_bodies(stmt)[arm])
        if left is not None:
            return left
        yields = stmt.arm_yields(arm)
        if len(yields) != len(stmt.results):
            raise _Untraced("an arm yields no value for its results")
        values = yield from self._needed(yields, stmt.results)
        for result, value in zip(stmt.results, values, strict=True):
            self.set_carried(result, value)
        return None

    def apply(self, call: Call, args: tuple[Any, ...]) -> Walk:
        if call.op in INDEX_OPS:
            return self.index(call)
        step = self.steps.step(call)
        if step.work and self.mirror:
            return skipped(call, args)
        if step.launch is not None or step.semantics is None:
            raise _Untraced(call.op)
        if self.unreal is not None and call.op in GM_READS:
            self.unreal.check_read(call, args, steered_value(call))
        return step.semantics(call, args)
        yield  # a generator that never waits


def _evaluable(expr: Any, env: dict[str, Any]) -> bool:
    """Whether ``expr`` reads only values the walk holds (a tile the control does not need is not)."""
    return all(not isinstance(e, Var) or e.name in env for e in walk_expr(expr))


def _counted_loops(fn: Function, control: Control) -> dict[int, list[For]]:
    """The loops of ``fn`` (by ``id``) whose iterations decide nothing, each with the loops they
    hold in walk order: no branch, jump, while loop, slotted tile, recorded launch op or statement
    of the control slice inside, no carried value the control needs, and inner bounds that read
    nothing the loop assigns or iterates over. (A static fact of the kernel, found once.)"""
    per_control = _COUNTED.setdefault(fn, {})  # (its controls live as long as it does)
    found = per_control.get(id(control))
    if found is None:
        found = per_control[id(control)] = {}
        for stmt in walk_stmts(fn.body):
            if isinstance(stmt, For) and _decides_nothing(stmt, control):
                found[id(stmt)] = [s for s in walk_stmts(stmt.body) if isinstance(s, For)]
    return found


_COUNTED: weakref.WeakKeyDictionary[Function, dict[int, dict[int, list[For]]]] = weakref.WeakKeyDictionary()


def _decides_nothing(loop: For, control: Control) -> bool:
    names = control.names
    if any(v.name in names or v.name in control.slotted for v in (*loop.iter_args, *loop.results)):
        return False
    assigned = {loop.var.name}
    inner: list[For] = []
    for stmt in walk_stmts(loop.body):
        if isinstance(stmt, (If, While, Break, Continue, Return)):
            return False
        if isinstance(stmt, (Assign, Eval)):
            value = stmt.value
            if isinstance(value, Call) and (id(value) in control.calls or id(value) in control.recorded):
                return False
            if isinstance(stmt, Assign):
                if stmt.target.name in names or stmt.target.name in control.slotted:
                    return False
                assigned.add(stmt.target.name)
        if isinstance(stmt, For):
            if any(v.name in names or v.name in control.slotted for v in (*stmt.iter_args, *stmt.results)):
                return False
            assigned.add(stmt.var.name)
            assigned.update(v.name for v in (*stmt.iter_args, *stmt.results))
            inner.append(stmt)
    for stmt in inner:
        for bound in (stmt.start, stmt.stop, stmt.step):
            if any(isinstance(e, Var) and e.name in assigned for e in walk_expr(bound)):
                return False
    return True


__all__ = ["ControlWalk", "control_key"]
