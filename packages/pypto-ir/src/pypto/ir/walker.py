"""One walker of lowered programs, for every backend: a backend writes what ops do, not an interpreter.

A :class:`Walker` runs one function of a lowered program (contract 2 of docs/ir.md): it holds the
function's variables (its frame), executes ``Assign``, ``Eval``, ``For`` (with loop-carried
values), ``If`` and ``Return``, evaluates expressions, and hands every op to :meth:`Walker.apply`,
the hook where a backend gives the op its meaning. The walk is a generator, and so is ``apply``:
whatever a hook yields (a simulator's "spend 40 cycles" or "wait for this pipe") passes through
the walk to whoever drives it, so a scheduler can interleave the cores of a launch and model
time; a backend with nothing to wait for yields nothing. ``run()``'s generator returns the
values of the function's ``Return``.

:class:`HostWalker` runs the Orchestration function: ``call`` is a kernel launch, handed to the
:meth:`HostWalker.launch` hook with its :class:`~pypto.ir.launch.LaunchPlan` (which kernel runs on
which core), or the call of another Orchestration function (``@pl.jit.opaque``), walked on the
host in a frame of its own; host ops go to the backend's semantics table. :class:`KernelWalker`
runs a kernel on one seat of a launch and answers the lane and block indices itself::

    class MyCore(KernelWalker):
        def apply(self, call, args):
            if call.op in INDEX_OPS:
                return self.index(call)
            return MY_SEMANTICS[call.op](call, args)
            yield  # a generator that never waits
"""

from __future__ import annotations

import copy
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Generator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pypto.ir.errors import (
    ConfigError,
    DeadlockError,
    ExtentError,
    LoopLimitError,
    LoopStepError,
    OutOfBoundsError,
    SpecializationError,
    VerificationError,
    at_line,
)
from pypto.ir.extents import (
    ExtentBinding,
    argument_shape,
    describe_extent,
    evaluate,
    is_dynamic,
    is_symbolic,
    shape_fits,
)
from pypto.ir.launch import LaunchPlan, LoadedProgram, Seat
from pypto.ir.nodes import (
    Assign,
    Break,
    Call,
    Const,
    Continue,
    DynDim,
    Eval,
    Expr,
    For,
    Function,
    If,
    Return,
    Stmt,
    TupleExpr,
    Var,
    While,
    nested_bodies,
)
from pypto.ir.ops import OPS, OnHost, op, system, tensor
from pypto.ir.ops import tile as tile_ops
from pypto.ir.printer import format_expr
from pypto.ir.tasks import Predicate
from pypto.ir.types import TensorType, TileType

Steps = Generator[Any, None, Any]  # yields whatever the hooks yield; returns a value
OpImpl = Callable[[Call, Sequence[Any]], Any]  # an op's semantics: impl(call, args) -> value

# The indices a kernel reads of its seat: its AIV lane, its block of an spmd launch, the blocks.
INDEX_OPS = frozenset({tile_ops.get_subblock_idx, op.get_block_idx, op.get_block_num})
# Op names the walk compares with, resolved once.
_CALL, _CREATE, _LANE, _BLOCK = op.call, tensor.create, tile_ops.get_subblock_idx, op.get_block_idx
_JOIN = system.task_dummy
# Ops the walker's structure handles: a kernel launch, a dependency join (a task with no work).
STRUCTURAL_OPS = frozenset({op.call, _JOIN})
# Boundary ops the pass pipeline lowers into pipe pushes and pops: no backend receives them.
LOWERED_AWAY = frozenset({tile_ops.aiv_shard, tile_ops.aic_gather})
# The orchestration's own tensor ops: its allocations and the views (pl.slice) it makes of its
# tensors to pass to kernels.
HOST_TENSOR_OPS = frozenset({tensor.create} | {name for name, spec in OPS.items() if spec.has(OnHost)})


@dataclass(frozen=True)
class Jump:
    """A ``break`` / ``continue`` on its way out to its loop, with the values it gives the loop."""

    stmt: Break | Continue
    values: tuple[Any, ...]


def received_ops() -> frozenset[str]:
    """Every op a backend can receive in a lowered program: the tile, scalar, pipe, index and
    system ops of kernels, and the orchestration's ``tensor.create`` and views (``tensor.slice``;
    the other ``tensor.*`` ops become tile ops); not ``call``, which the walker handles."""
    levelled = {
        name for name in OPS if name.partition(".")[0] in ("tile", "scalar", "system", "prefetch", "debug")
    }
    unprefixed = {name for name in OPS if "." not in name}
    return frozenset(levelled | unprefixed | HOST_TENSOR_OPS) - STRUCTURAL_OPS - LOWERED_AWAY


def missing_semantics(implemented: Collection[str]) -> list[str]:
    """The ops a backend can receive but does not implement, sorted: ``missing_semantics(SEMANTICS)``."""
    return sorted(received_ops() - set(implemented))


# The most iterations one run of a kernel's while loop may take before the run stops as endless.
MAX_WHILE_ITERATIONS = 1_000_000
MAX_WHILE_ENV = "PYPTO_MAX_WHILE_ITERATIONS"


def max_while_iterations() -> int:
    """The iteration limit of a while loop: ``PYPTO_MAX_WHILE_ITERATIONS`` if set, else
    :data:`MAX_WHILE_ITERATIONS`."""
    given = os.environ.get(MAX_WHILE_ENV, "").strip()
    if not given:
        return MAX_WHILE_ITERATIONS
    if not given.isdigit() or int(given) == 0:
        raise ConfigError(
            f"{MAX_WHILE_ENV}={given!r} is not a number of iterations",
            hint=f"set it to a positive int, e.g. {MAX_WHILE_ENV}={MAX_WHILE_ITERATIONS * 10}, or unset it",
        )
    return int(given)


class Walker(ABC):
    """The variables of one running function and the walk over its body.

    Subclasses implement :meth:`apply` and may override :meth:`bind`, :meth:`set_carried`,
    :meth:`iteration_done` and :meth:`exec_for` (the host walks a ``pl.parallel`` loop its own way).
    """

    def __init__(self, fn: Function, args: Sequence[Any]):
        self.fn = fn
        self.env: dict[str, Any] = {p.var.name: value for p, value in zip(fn.params, args, strict=True)}
        self.extents = bind_extents(fn, args)
        self.loop_depth = 0  # how many loops of this function are running now

    def run(self) -> Generator[Any, None, tuple[Any, ...]]:
        """Execute the body; the generator's return value is what ``Return`` gave (``()`` if none)."""
        returned = None
        for index, stmt in enumerate(self.fn.body):
            returned = yield from self.exec_stmt(stmt)
            yield from self.top_level_done(index)
            if returned is not None:
                break
        if isinstance(returned, Jump):
            raise self.error(f"{type(returned.stmt).__name__.lower()} outside a loop", returned.stmt)
        return returned or ()

    # ------------------------------------------------------------ hooks

    @abstractmethod
    def apply(self, call: Call, args: tuple[Any, ...]) -> Steps:
        """Execute one op on its evaluated operands; the generator returns the op's value."""

    def bind(self, stmt: Assign, value: Any) -> None:
        """Bind an ``Assign``'s target to its value."""
        self.env[stmt.target.name] = value

    def bind_loop_var(self, loop: For, value: int) -> None:
        """Bind a ``For``'s variable to the iteration about to run (a host may note its
        ``pl.parallel`` iterations here)."""
        self.env[loop.var.name] = value

    def set_carried(self, var: Var, value: Any) -> None:
        """Bind a carried value: a loop's iter_arg to its init value or an iteration's yield, an
        if's result to the yield of the arm that ran."""
        self.env[var.name] = value

    def iteration_begins(self, loop: For | While) -> None:
        """An iteration of ``loop`` is about to run its body (e.g. a debugger's per-iteration state)."""
        return None

    def iteration_done(self, done: int, count: int) -> None:
        """Iteration ``done`` of ``count`` of an outermost loop has finished (e.g. for progress)."""
        return None

    def top_level_done(self, index: int) -> Generator[Any, None, None]:
        """Statement ``index`` of the function's body (with the bodies it holds) has finished (a
        backend may wait here, e.g. for the statement's transfers to complete)."""
        yield from ()

    def error(self, message: str, node: Expr | Stmt, hint: str | None = None) -> VerificationError:
        """A lowered program that breaks contract 2: a compiler bug or a hand-built program."""
        return VerificationError(f"in {self.fn.name}: {message}", node.span, hint)

    # ------------------------------------------------------------ statements

    def exec_body(self, body: Sequence[Stmt]) -> Generator[Any, None, tuple[Any, ...] | Jump | None]:
        """Execute ``body``; the return value is a ``Return``'s values, the :class:`Jump` of a
        ``break`` / ``continue`` that left it, or None if it ran to its end."""
        for stmt in body:
            returned = yield from self.exec_stmt(stmt)
            if returned is not None:
                return returned
        return None

    def exec_stmt(self, stmt: Stmt) -> Generator[Any, None, tuple[Any, ...] | Jump | None]:
        """Execute one statement (and the bodies it holds)."""
        if isinstance(stmt, Assign):
            value = yield from self.eval_statement_call(stmt.value)
            self.bind(stmt, value)
        elif isinstance(stmt, Eval):
            yield from self.eval_statement_call(stmt.value)
        elif isinstance(stmt, For):
            return (yield from self.exec_for(stmt))
        elif isinstance(stmt, While):
            return (yield from self.exec_while(stmt))
        elif isinstance(stmt, If):
            return (yield from self.exec_if(stmt))
        elif isinstance(stmt, Return):
            return (yield from self.eval_all(stmt.values))
        elif isinstance(stmt, (Break, Continue)):
            return Jump(stmt, (yield from self.eval_all(stmt.values)))
        else:
            kind = self.fn.kind.value
            raise self.error(f"{type(stmt).__name__} is not allowed in a lowered {kind} function", stmt)
        return None

    def exec_if(self, stmt: If) -> Generator[Any, None, tuple[Any, ...] | Jump | None]:
        """Run the arm the condition picks; unless it jumped or returned, bind the results to
        its yields."""
        arm = 0 if (yield from self.eval(stmt.cond)) else 1
        left = yield from self.exec_body(nested_bodies(stmt)[arm])
        if left is not None:
            return left
        yields = stmt.arm_yields(arm)
        if len(yields) != len(stmt.results):
            raise self.error("an if arm that reaches its end yields no value for its results", stmt)
        values = yield from self.eval_all(yields)
        for result, value in zip(stmt.results, values, strict=True):
            self.set_carried(result, value)
        return None

    def exec_for(self, loop: For) -> Generator[Any, None, tuple[Any, ...] | None]:
        """Run a loop: bind the iter_args to the init values, then per iteration the loop variable,
        the body and the yields; afterwards the results."""
        iterations = yield from self.loop_range(loop)
        yield from self.carry(loop, loop.init_values)
        self.loop_depth += 1
        try:
            for done, i in enumerate(iterations, 1):
                self.bind_loop_var(loop, i)
                left = yield from self.iteration(loop)
                if left is not None:
                    return None if isinstance(left, Jump) else left
                if self.loop_depth == 1:
                    self.iteration_done(done, len(iterations))
        finally:
            self.loop_depth -= 1
        self.bind_results(loop)
        return None

    def exec_while(self, loop: While) -> Generator[Any, None, tuple[Any, ...] | None]:
        """Run a while loop: bind the iter_args to the init values, then while the condition
        holds the body and the yields; afterwards the results."""
        yield from self.carry(loop, loop.init_values)
        self.loop_depth += 1
        limit = max_while_iterations()
        try:
            runs = 0
            while (yield from self.eval(loop.cond)):
                runs += 1
                if runs > limit:
                    raise LoopLimitError(
                        f"this while loop ran {limit:,} iterations and its condition still holds: it looks "
                        "endless",
                        loop.span,
                        "make the body change what the condition reads (or leave with break); a loop "
                        f"that really runs longer can raise the limit with {MAX_WHILE_ENV}=<iterations>",
                    )
                left = yield from self.iteration(loop)
                if left is not None:
                    return None if isinstance(left, Jump) else left
        finally:
            self.loop_depth -= 1
        self.bind_results(loop)
        return None

    def iteration(self, loop: For | While) -> Generator[Any, None, tuple[Any, ...] | Jump | None]:
        """One run of the body and the carry into the next iteration: None to go on, a
        ``Return``'s values, or the :class:`Jump` of a ``break`` (the results then bound)."""
        self.iteration_begins(loop)
        left = None
        for stmt in loop.body:  # (exec_body's loop, here: one generator frame less per op)
            left = yield from self.exec_stmt(stmt)
            if left is not None:
                break
        if isinstance(left, Jump):  # its values are the next iteration's, or the last ones
            for var, value in zip(loop.iter_args, left.values, strict=True):
                self.set_carried(var, value)
            if isinstance(left.stmt, Break):
                self.bind_results(loop)
                return left
            return None
        if left is not None:
            return left
        yield from self.carry(loop, loop.yields)
        return None

    def bind_results(self, loop: For | While) -> None:
        """The results are the iter_args' last values (the init values after no iteration)."""
        for iter_arg, result in zip(loop.iter_args, loop.results, strict=True):
            self.env[result.name] = self.env[iter_arg.name]

    def carry(self, loop: For | While, exprs: Sequence[Expr]) -> Generator[Any, None, None]:
        """Move ``exprs`` (init values or yields, all evaluated first) into the iter_args."""
        values = yield from self.eval_all(exprs)
        for var, value in zip(loop.iter_args, values, strict=True):
            self.set_carried(var, value)

    def loop_range(self, loop: For) -> Generator[Any, None, range]:
        """The loop's iterations; a run-time step of 0 is a LoopStepError."""
        start = yield from self.eval(loop.start)
        stop = yield from self.eval(loop.stop)
        step = yield from self.eval(loop.step)
        if step == 0:
            raise self._zero_step(loop)
        return range(int(start), int(stop), int(step))

    def _zero_step(self, loop: For) -> LoopStepError:
        """A run-time step of 0 (a constant 0 is a compile error): the user's value, not a compiler bug."""
        step = format_expr(loop.step)
        where = f" from {at_line(loop.step.span)}" if loop.step.span is not None else ""
        return LoopStepError(
            f"in {self.fn.name}: pl.{loop.kind.value} over {loop.var.name} would never end: its step, the "
            f"value of {step}{where}, is 0 at run time",
            loop.span,
            f"make the step non-zero: check where {step} comes from, or guard the loop with if {step} != 0:",
        )

    # ------------------------------------------------------------ expressions

    def eval_statement_call(self, expr: Expr) -> Steps:
        """The value of a statement's expression; only here may an op produce a tile."""
        if isinstance(expr, Call):
            return (yield from self.eval_call(expr))
        return (yield from self.eval(expr))

    def eval(self, expr: Expr) -> Steps:
        """The value of an expression."""
        if isinstance(expr, Var):
            if expr.name not in self.env:
                raise self.error(f"{expr.name} is used before it is defined", expr)
            return self.env[expr.name]
        if isinstance(expr, Const):
            return expr.value
        if isinstance(expr, DynDim):
            if expr not in self.extents:
                raise self.error(f"dynamic extent {expr.name} is no extent of {self.fn.name}'s tensors", expr)
            return self.extents[expr]
        if isinstance(expr, TupleExpr):
            return (yield from self.eval_all(expr.elements))
        if isinstance(expr, Call):
            if isinstance(expr.type, TileType):
                raise self.error(
                    f"{expr.op} is nested inside another expression, so its tile has no buffer", expr
                )
            return (yield from self.eval_call(expr))
        raise self.error(f"cannot evaluate {type(expr).__name__}", expr)

    def eval_all(self, exprs: Sequence[Expr]) -> Generator[Any, None, tuple[Any, ...]]:
        """The values of ``exprs``, in order."""
        values = []
        for e in exprs:
            values.append((yield from self.eval(e)))
        return tuple(values)

    def eval_call(self, call: Call) -> Steps:
        """Evaluate the operands, then :meth:`apply` the op."""
        args = yield from self.eval_all(call.args)
        return (yield from self.apply(call, args))


class HostWalker(Walker):
    """The Orchestration function: ``tensor.create`` and scalar math from ``semantics``, each
    ``call`` a kernel launch handed to :meth:`launch`; the call evaluates to the arguments the
    kernel returns. ``platform`` names the backend in errors."""

    platform = "this backend"

    def __init__(
        self, fn: Function, args: Sequence[Any], loaded: LoadedProgram, semantics: Mapping[str, OpImpl]
    ):
        super().__init__(fn, args)
        self.loaded = loaded
        self.semantics = semantics

    @abstractmethod
    def launch(self, plan: LaunchPlan, call: Call, args: tuple[Any, ...]) -> Steps:
        """Launch ``plan``'s kernel on ``args`` (run it, or submit it as a task)."""

    def join(self, call: Call) -> Steps:
        """``pl.system.task_dummy(deps=[...])``: a task with no work that completes once its
        ``deps`` have; the value is its task handle. A backend that runs every task to its end
        in order has nothing to join: this default gives no handle (it names no task)."""
        return None
        yield  # a generator that never waits

    def apply(self, call: Call, args: tuple[Any, ...]) -> Steps:
        if call.op == _CALL:
            control = self.loaded.control_function(call)
            if control is not None:
                return (yield from self.call_control(control, args))
            plan = self.loaded.plan(call)
            self.check_extents(plan.kernel, args, call)
            yield from self.launch(plan, call, args)
            return plan.result(args)
        if call.op == _JOIN:
            return (yield from self.join(call))
        if call.op in HOST_TENSOR_OPS:
            resolved = self.with_extents(call, args)
            if call.op != _CREATE:
                self.check_view(resolved, args)
            return self.semantics_of(call)(resolved, args)
        if call.op.startswith(("scalar.", "array.")):  # index math, and the pl.TASK_ID arrays
            return self.semantics_of(call)(call, args)
        raise self.error(
            f"{call.op} runs on a core but sits in the orchestration function",
            call,
            "run the pass pipeline: it outlines every scope into a kernel",
        )

    def check_extents(self, kernel: Function, args: tuple[Any, ...], call: Call) -> None:
        """The tensors of a launch fit the kernel's parameters and agree on its dynamic extents: an
        error at the call (where the tensors were picked, e.g. a view of a run-time shape), not at
        the kernel's parameters."""
        for param, value in zip(kernel.params, args, strict=True):
            t = param.var.type
            shape = argument_shape(value)
            if isinstance(t, TensorType) and shape is not None and not shape_fits(shape, t):
                annotated = ", ".join(describe_extent(d) for d in t.shape)
                raise SpecializationError(
                    f"{kernel.name}(): argument '{param.var.name}' is a tensor of shape {list(shape)} "
                    f"here, but the parameter is annotated [{annotated}]",
                    call.span or self.fn.span,
                    "pass a tensor (or a pl.slice view) of the annotated shape, or annotate the "
                    "parameter with pl.dynamic extents where its shape varies",
                )
        if not any(is_dynamic(p.var.type) for p in kernel.params):
            return
        try:
            bind_extents(kernel, args)
        except SpecializationError as err:
            raise SpecializationError(err.message, call.span or self.fn.span, err.hint) from None

    def check_view(self, view: Call, args: tuple[Any, ...]) -> None:
        """A view the orchestration makes (``pl.slice``) starts inside its tensor, and its valid
        shape inside its window; its window may run past the tensor's end, where a kernel then
        reaches nothing (its accesses there are the backend's OutOfBoundsError)."""
        shape, offsets = argument_shape(args[0]), [int(o) for o in args[1]]
        window = tuple(view.attrs["shape"])
        assert shape is not None
        for dim, (off, n, full) in enumerate(zip(offsets, window, shape, strict=True)):
            if off < 0 or off >= full:
                raise OutOfBoundsError(
                    f"pl.slice: the view [{off}:{off + n}] of dim {dim} starts outside the tensor's "
                    f"{full} elements there (offsets {offsets})",
                    view.span,
                    f"start the view inside the tensor (offset 0..{full - 1} in dim {dim}); it may run "
                    "past the end, where the kernels it is passed to then reach nothing",
                )
        if len(args) > 2:
            valid = [int(v) for v in args[2]]
            for dim, (v, n) in enumerate(zip(valid, window, strict=True)):
                if not 0 <= v <= n:
                    raise OutOfBoundsError(
                        f"pl.slice: valid_shape {valid} leaves the view's window {list(window)} in dim {dim}",
                        view.span,
                        "keep each valid extent between 0 and the view's extent, e.g. pl.min(n, rows)",
                    )

    def declared_tasks(self, call: Call) -> list[Any]:
        """The task handles a call's ``deps=`` names, in order: a task id's, and every one a
        ``pl.TASK_ID`` array holds (an element never written names no task and is skipped)."""
        found: list[Any] = []
        for name in call.attrs.get("deps", ()):
            if name not in self.env:
                raise self.error(f"deps= names {name}, which is not a task submitted earlier", call)
            value = self.env[name]
            for handle in value if isinstance(value, tuple) else (value,):
                if handle is not None and handle not in found:
                    found.append(handle)
        return found

    def predicate_site(self, call: Call) -> tuple[Predicate, Any, tuple[int, ...]] | None:
        """A call's ``predicate=``: the predicate, its tensor and its indices, read from the frame
        at submission (the element itself is read when the task is dispatched); None without one."""
        predicate = call.attrs.get("predicate")
        if predicate is None:
            return None
        for name in predicate.names():
            if name not in self.env:
                raise self.error(f"predicate= reads {name}, which is not defined here", call)
        indices = tuple(int(self.env[i]) if isinstance(i, str) else i for i in predicate.indices)
        return predicate, self.env[predicate.tensor], indices

    def with_extents(self, call: Call, args: Sequence[Any] = ()) -> Call:
        """``pl.create_tensor`` (or an orchestration ``pl.slice``) with the shape of this run: the
        extents the orchestration computed (its ``shape`` operand, whose values the dynamic extents
        of the type take from here on), or the function's dynamic extents. An extent below 1 is an
        ``ExtentError``."""
        shape = call.attrs.get("shape", ())
        given = _shape_operand(call, args)
        if given is None and not any(is_symbolic(d) for d in shape):
            return call
        if given is None:
            resolved = tuple(self._extent(d, call) for d in shape)
        else:
            resolved = tuple(int(n) for n in given)
        for axis, n in enumerate(resolved):
            if n < 1:
                raise self._bad_extent(call, axis, n)
        if given is not None:
            for dim, n in zip(shape, resolved, strict=True):
                if isinstance(dim, DynDim):
                    self.extents[dim] = n  # the extent the tensor's type names, from here on
        assert isinstance(call.type, TensorType)
        return replace(
            call, attrs={**call.attrs, "shape": resolved}, type=TensorType(resolved, call.type.dtype)
        )

    def _bad_extent(self, call: Call, axis: int, value: int) -> ExtentError:
        operand = _shape_operand_expr(call)
        written = (
            format_expr(operand.elements[axis]) if operand is not None else repr(call.attrs["shape"][axis])
        )
        what = "pl.create_tensor" if call.op == _CREATE else "pl.slice"
        return ExtentError(
            f"{what}: extent {written} of dim {axis} is {value} at run time, but a tensor extent is at "
            "least 1",
            call.span,
            f"check where {written} comes from, or guard the {what} with `if {written} > 0:`",
        )

    def _extent(self, extent: Any, at: Expr) -> int:
        value = evaluate(extent, self.extents)
        if value is None:
            raise self.error(f"extent {extent!r} names a dynamic extent no tensor of {self.fn.name} has", at)
        return value

    def call_control(self, fn: Function, args: tuple[Any, ...]) -> Steps:
        """Run another control function (``@pl.jit.opaque``) on the host, in a frame of its own:
        its launches go through :meth:`launch` like the caller's, so a backend orders them as if
        the callee's body stood at the call. The call evaluates to what the callee returns."""
        returned = yield from self.frame(fn, args).run()
        if not returned:
            return None
        return returned[0] if len(returned) == 1 else returned

    def frame(self, fn: Function, args: Sequence[Any]) -> HostWalker:
        """A walker of ``fn`` on ``args`` that shares everything else with this one (the backend,
        its task state); a backend whose host keeps per-frame state overrides this."""
        frame = copy.copy(self)
        frame.fn = fn
        frame.env = {p.var.name: value for p, value in zip(fn.params, args, strict=True)}
        frame.extents = bind_extents(fn, args)
        frame.loop_depth = 0
        return frame

    def semantics_of(self, call: Call) -> OpImpl:
        """The backend's semantics of ``call``'s op; a VerificationError naming it if there is none."""
        impl = self.semantics.get(call.op)
        if impl is None:
            raise self.error(f"{self.platform} has no semantics for op {call.op!r}", call)
        return impl


class KernelWalker(Walker):
    """A kernel on one seat of a launch (its core kind, AIV lane, mirroring); ``block`` and
    ``block_num`` are the launch's place in an spmd task."""

    def __init__(self, seat: Seat, args: Sequence[Any], block: int = 0, block_num: int = 1):
        super().__init__(seat.kernel, args)
        self.seat = seat
        self.block = block
        self.block_num = block_num

    def index(self, call: Call) -> int:
        """The value of one of :data:`INDEX_OPS`."""
        if call.op == _LANE:
            return self.seat.lane
        return self.block if call.op == _BLOCK else self.block_num


def _shape_operand_expr(call: Call) -> TupleExpr | None:
    """The ``shape`` operand of a host tensor op (the extents the orchestration computes), if given."""
    operands = OPS[call.op].operands
    index = next((i for i, o in enumerate(operands) if o.name == "shape"), None)
    if index is None or index >= len(call.args):
        return None
    found = call.args[index]
    return found if isinstance(found, TupleExpr) else None


def _shape_operand(call: Call, args: Sequence[Any]) -> tuple[Any, ...] | None:
    """The values of the ``shape`` operand of a host tensor op, if it has one."""
    operands = OPS[call.op].operands
    index = next((i for i, o in enumerate(operands) if o.name == "shape"), None)
    if index is None or index >= len(args):
        return None
    return tuple(args[index])


def bind_extents(fn: Function, args: Sequence[Any]) -> dict[DynDim, int]:
    """The values of ``fn``'s dynamic extents, read from the shapes of its tensor arguments (a
    call's tensors that share an extent but disagree on it are a ``SpecializationError``)."""
    binding = ExtentBinding()
    for param, value in zip(fn.params, args, strict=True):
        shape = argument_shape(value)
        if shape is not None and is_dynamic(param.var.type):
            try:
                binding.bind(param.var.name, param.var.type, tuple(shape), param.var.span or fn.span)
            except SpecializationError as err:
                raise err.with_span(param.var.span or fn.span) from None
    return binding.resolve()


def drive(walk: Steps) -> Any:
    """The value of a walk that never waits (a host with nothing to wait for): run it to its end."""
    try:
        next(walk)
    except StopIteration as done:
        return done.value
    raise VerificationError("a walk that cannot wait yielded: a pipe or barrier op ran outside a kernel")


def take_turns(name: str, walks: Sequence[Steps], progress: Callable[[], int]) -> list[Any]:
    """Step ``walks`` (the cores of launch ``name``) in turn until every one returns; their
    results, in order. A walk yields when it must wait for another; ``progress()`` counts what
    the walks did, so a whole round with no progress and no walk finished is a deadlock."""
    results: dict[int, Any] = {}
    while len(results) < len(walks):
        before = (len(results), progress())
        for index, walk in enumerate(walks):
            if index not in results:
                try:
                    next(walk)
                except StopIteration as done:
                    results[index] = done.value
        if (len(results), progress()) == before:
            raise DeadlockError(f"every running core of {name} waits for another core")
    return [results[index] for index in range(len(walks))]
