"""Hand-written pipes of AIC / AIV kernels: reserved buffers, pipe ids, and what both sides agree on.

A consumer kernel reserves its ring with ``pl.reserve_buffer(name=, size=, base=)`` (in Vec on an
AIV kernel, Mat on an AIC kernel); the producer names it with ``pl.import_peer_buffer(name=)``;
``*_initialize_pipe(c2v_consumer_buf=, v2c_consumer_buf=, id=, local_slot_num=)`` ties a pipe to
it. :func:`resolve_pipes` checks a program's hand-written kernels and settles what the user left
implicit: a buffer without ``base=`` gets the offset above the kernel's other buffers, and a
setup without ``slot_num=`` the ring depth its buffer holds (``local_slot_num``, else
``size // slot_size``). :func:`kernel_rings` gives the reservations the allocator places tiles
above.

Errors are :class:`~pypto.ir.PipeSetupError` at the user's line: a push, pop or free on a pipe id
its kernel never initializes, the two sides of a Group giving one pipe different slot sizes, a
buffer smaller than ``slot_num x slot_size``, an import that no peer reserves.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from pypto.ir import (
    Call,
    Eval,
    Function,
    FunctionKind,
    MemorySpace,
    PipeSetupError,
    Program,
    Reservation,
    SourceSpan,
    Stmt,
    Target,
)
from pypto.ir.memory import plain_ring_name
from pypto.ir.nodes import walk_stmts
from pypto.ir.ops import PipeDirection, PipeEnd, get_op, op, short_name, trait_of
from pypto.ir.ops import system as system_ops
from pypto.ir.ops import tile as tile_ops
from pypto.ir.rewrite import map_effect_calls

RING_REASON = "cross-core pipe ring"
KERNELS = (FunctionKind.AIC, FunctionKind.AIV)
# The kind of kernel that consumes each direction, and where its ring lives.
CONSUMER = {PipeDirection.C2V: FunctionKind.AIV, PipeDirection.V2C: FunctionKind.AIC}
RING_SPACE = {PipeDirection.C2V: MemorySpace.Vec, PipeDirection.V2C: MemorySpace.Mat}
INIT_OPS = (system_ops.aic_initialize_pipe, system_ops.aiv_initialize_pipe)


def buffer_attr(direction: PipeDirection) -> str:
    """The init keyword naming ``direction``'s ring buffer: ``c2v_consumer_buf``."""
    return f"{direction.value}_consumer_buf"


def directions(call: Call) -> list[PipeDirection]:
    """The directions an init's ``dir_mask`` enables."""
    return [d for d in PipeDirection if call.attrs["dir_mask"] & d.mask_bit]


def pipe_id(call: Call) -> int:
    """The pipe a setup, push, pop or free names (``id=``, 0 when left out)."""
    return call.attrs.get("id") or 0


@dataclass(frozen=True)
class Buffer:
    """A ``pl.reserve_buffer`` of a kernel, placed."""

    name: str
    space: MemorySpace
    base: int
    size: int
    span: SourceSpan | None


def _calls(body: tuple[Stmt, ...], *ops: str) -> Iterator[Call]:
    for stmt in walk_stmts(body):
        if isinstance(stmt, Eval) and isinstance(stmt.value, Call) and stmt.value.op in ops:
            yield stmt.value


def _place_buffers(fn: Function, target: Target) -> dict[str, Buffer]:
    """The kernel's reserved buffers: fixed ``base`` kept, the others packed above them."""
    space = MemorySpace.Vec if fn.kind is FunctionKind.AIV else MemorySpace.Mat
    align = target.spec(space).alignment
    calls = list(_calls(fn.body, system_ops.reserve_buffer))
    placed: dict[str, Buffer] = {}
    for call in calls:
        name = call.attrs["name"]
        if name in placed:
            raise PipeSetupError(
                f"reserve_buffer: kernel {fn.name} reserves a buffer named {name!r} twice "
                f"(first at {_line(placed[name].span)})",
                call.span,
                "give each buffer of a kernel its own name",
            )
        if call.attrs.get("base") is not None:
            placed[name] = Buffer(name, space, call.attrs["base"], call.attrs["size"], call.span)
    top = max((b.base + b.size for b in placed.values()), default=0)
    for call in calls:
        name = call.attrs["name"]
        if name not in placed:
            base = -(-top // align) * align
            placed[name] = Buffer(name, space, base, call.attrs["size"], call.span)
            top = base + call.attrs["size"]
    _check_disjoint(fn, list(placed.values()))
    return placed


def _check_disjoint(fn: Function, buffers: list[Buffer]) -> None:
    ordered = sorted(buffers, key=lambda b: b.base)
    for low, high in itertools.pairwise(ordered):
        if high.base < low.base + low.size:
            raise PipeSetupError(
                f"reserve_buffer: {high.name!r} at base={high.base} overlaps {low.name!r} "
                f"({low.base}..{low.base + low.size}) in kernel {fn.name}",
                high.span,
                f"place it at base={low.base + low.size} or above, or leave base out to pack it",
            )


def _line(span: SourceSpan | None) -> str:
    return f"{span.file}:{span.line}" if span is not None else "an unknown line"


@dataclass
class _Kernel:
    fn: Function
    buffers: dict[str, Buffer]
    imports: dict[str, Call]


def resolve_pipes(program: Program, target: Target) -> Program:
    """Check every hand-written AIC / AIV kernel's pipes and settle buffer bases and ring depths."""
    kernels = {
        fn.name: _Kernel(
            fn,
            _place_buffers(fn, target),
            {c.attrs["name"]: c for c in _calls(fn.body, system_ops.import_peer_buffer)},
        )
        for fn in program.functions.values()
        if fn.kind in KERNELS
    }
    if not kernels:
        return program
    peers = _peers(program)
    funcs = []
    for fn in program.functions.values():
        kernel = kernels.get(fn.name)
        if kernel is not None:
            peer_kernels = [kernels[p] for p in peers.get(fn.name, ()) if p in kernels]
            fn = _resolve_kernel(kernel, peer_kernels, target.default_slot_num)
        funcs.append(fn)
    resolved = program.with_functions(tuple(funcs))
    _check_groups(resolved)
    return resolved


def _peers(program: Program) -> dict[str, set[str]]:
    """For each kernel, the kernels a Group launches beside it."""
    peers: dict[str, set[str]] = {}
    for fn in program.functions.values():
        if fn.kind is FunctionKind.Group:
            callees = [c.attrs["callee"] for c in _calls(fn.body, op.call)]
            for name in callees:
                peers.setdefault(name, set()).update(c for c in callees if c != name)
    return peers


def _resolve_kernel(kernel: _Kernel, peers: list[_Kernel], default_depth: int) -> Function:
    fn = kernel.fn
    for name, call in kernel.imports.items():
        _peer_buffer(kernel, peers, name, call)
    initialized: set[tuple[PipeDirection, int]] = set()
    for call in _calls(fn.body, *INIT_OPS):
        for direction in directions(call):
            initialized.add((direction, pipe_id(call)))
    for call in _calls(fn.body, *_PIPE_ENDS):
        _check_initialized(fn, call, initialized)
    body = map_effect_calls(fn.body, lambda call: _settle(kernel, peers, call, default_depth))
    return replace(fn, body=body)


_PIPE_ENDS = (
    tile_ops.tpush_to_aiv,
    tile_ops.tpush_to_aic,
    tile_ops.tpop_from_aic,
    tile_ops.tpop_from_aiv,
    system_ops.tfree_to_aic,
    system_ops.tfree_to_aiv,
)


def _check_initialized(fn: Function, call: Call, initialized: set[tuple[PipeDirection, int]]) -> None:
    end = trait_of(call, PipeEnd)
    assert end is not None and end.direction is not None
    pipe = pipe_id(call)
    if (end.direction, pipe) in initialized:
        return
    ids = sorted(i for d, i in initialized if d is end.direction)
    have = f"it initializes id {', '.join(map(str, ids))}" if ids else "it initializes none"
    init = "aic_initialize_pipe" if fn.kind is FunctionKind.AIC else "aiv_initialize_pipe"
    raise PipeSetupError(
        f"{short_name(call.op)}"
        f"(id={pipe}) in kernel {fn.name} uses {end.direction.value} pipe {pipe}, which the "
        f"kernel never initializes ({have} of that direction)",
        call.span,
        f"call pl.{init}(dir_mask=..., slot_size=..., id={pipe}) with a dir_mask that includes "
        f"{end.direction.mask_bit} before the first {short_name(call.op)}",
    )


def _peer_buffer(kernel: _Kernel, peers: list[_Kernel], name: str, call: Call) -> Buffer:
    """The buffer a peer reserves under ``name`` (the one ``peer_func=`` names, if given)."""
    wanted = call.attrs.get("peer_func")
    for peer in peers:
        if (wanted is None or peer.fn.name == wanted) and name in peer.buffers:
            return peer.buffers[name]
    where = f"kernel {wanted}" if wanted else "no kernel launched beside it in a Group"
    reserved = sorted(n for p in peers for n in p.buffers)
    known = f" (its peers reserve {', '.join(map(repr, reserved))})" if reserved else ""
    raise PipeSetupError(
        f"import_peer_buffer(name={name!r}) in kernel {kernel.fn.name}: {where} reserves a buffer "
        f"of that name{known}",
        call.span,
        f'reserve it in the consumer kernel with pl.reserve_buffer(name="{name}", size=...), '
        "and launch both kernels from one Group function",
    )


def _settle(kernel: _Kernel, peers: list[_Kernel], call: Call, default_depth: int) -> Call:
    """A reserve_buffer with its base, an init with its ring depth; other calls unchanged. A
    setup that names neither a depth nor a buffer gets ``default_depth`` slots in the consumer's
    memory (the target's, as the automatic pipe: on A2/A3 the deeper ring PTOAS keeps lives in
    global memory, and the consumer holds this many slots of it)."""
    if call.op == system_ops.reserve_buffer:
        return _with_attrs(call, base=kernel.buffers[call.attrs["name"]].base)
    if call.op not in INIT_OPS:
        return call
    depth = call.attrs.get("local_slot_num") or call.attrs.get("slot_num")
    slot_size = call.attrs["slot_size"]
    for direction in directions(call):
        buffer = _ring_buffer(kernel, peers, call, direction)
        if buffer is None:
            continue
        holds = buffer.size // slot_size
        if depth is None:
            depth = holds
        if depth < 1 or depth > holds:
            raise PipeSetupError(
                f"{short_name(call.op)}"
                f": the {direction.value} ring of {depth or 1} x {slot_size} bytes does not fit "
                f"buffer {buffer.name!r} of {buffer.size} bytes (reserved at {_line(buffer.span)})",
                call.span,
                f"reserve size >= slot_num * slot_size = {(depth or 1) * slot_size} bytes, or lower "
                f"slot_num / local_slot_num to {max(holds, 1)}"
                if holds
                else f"reserve at least slot_size = {slot_size} bytes",
            )
    if depth is None:
        depth = default_depth
    return _with_attrs(call, slot_num=depth) if call.attrs.get("slot_num") != depth else call


def _ring_buffer(
    kernel: _Kernel, peers: list[_Kernel], call: Call, direction: PipeDirection
) -> Buffer | None:
    """The buffer ``call`` names for ``direction``'s ring: reserved here if this kernel consumes
    that direction, imported from the peer if it produces into it."""
    name = call.attrs.get(buffer_attr(direction))
    if name is None:
        return None
    consumes = CONSUMER[direction] is kernel.fn.kind
    if consumes:
        if name not in kernel.buffers:
            raise PipeSetupError(
                f"{short_name(call.op)}"
                f": {buffer_attr(direction)}={name!r} names no buffer kernel {kernel.fn.name} "
                f"reserves; the {direction.value} ring lives in this kernel's {RING_SPACE[direction].name}",
                call.span,
                f'reserve it first: {name} = pl.reserve_buffer(name="{name}", size=slot_num * slot_size)',
            )
        return kernel.buffers[name]
    imported = kernel.imports.get(name)
    if imported is None:
        raise PipeSetupError(
            f"{short_name(call.op)}: {buffer_attr(direction)}={name!r} is the peer's buffer, which kernel "
            f"{kernel.fn.name} does not import",
            call.span,
            f'import it first: {name} = pl.import_peer_buffer(name="{name}")',
        )
    return _peer_buffer(kernel, peers, name, imported)


def _with_attrs(call: Call, **attrs: Any) -> Call:
    """``call`` with ``attrs`` set, in the op's attribute order (as the user would write them)."""
    merged = {**call.attrs, **attrs}
    order = [a.name for a in get_op(call.op).attrs]
    return replace(call, attrs={k: merged[k] for k in sorted(merged, key=order.index)})


def _check_groups(program: Program) -> None:
    """Both sides of each pipe of a Group give it the same slot size."""
    for group in (fn for fn in program.functions.values() if fn.kind is FunctionKind.Group):
        seen: dict[tuple[PipeDirection, int], tuple[Call, str]] = {}
        for callee in (c.attrs["callee"] for c in _calls(group.body, op.call)):
            kernel = program.functions.get(callee)
            if kernel is None or kernel.kind not in KERNELS:
                continue
            for call in _calls(kernel.body, *INIT_OPS):
                for direction in directions(call):
                    key = (direction, pipe_id(call))
                    first = seen.setdefault(key, (call, kernel.name))
                    other, name = first
                    if name != kernel.name and other.attrs["slot_size"] != call.attrs["slot_size"]:
                        raise PipeSetupError(
                            f"{direction.value} pipe {key[1]} of Group {group.name}: {kernel.name} sets "
                            f"slot_size={call.attrs['slot_size']}, but {name} sets "
                            f"slot_size={other.attrs['slot_size']} at {_line(other.span)}",
                            call.span,
                            "give both sides of a pipe the same slot_size (the bytes of the largest tile "
                            "that crosses)",
                        )


def kernel_rings(fn: Function) -> tuple[Reservation, ...]:
    """The rings a hand-written kernel (after :func:`resolve_pipes`) consumes, as reservations:
    each reserved buffer at its base, and a plain ring (packed above them) for each consumed
    pipe whose setup names no buffer."""
    consumed = [d for d, kind in CONSUMER.items() if kind is fn.kind]
    space = MemorySpace.Vec if fn.kind is FunctionKind.AIV else MemorySpace.Mat
    setups = list(_calls(fn.body, *INIT_OPS))
    rings: list[Reservation] = []
    for buf in _calls(fn.body, system_ops.reserve_buffer):
        name = buf.attrs["name"]
        user = next((c for c in setups if name in (c.attrs.get(buffer_attr(d)) for d in consumed)), None)
        slot_size = user.attrs["slot_size"] if user is not None else None
        span = user.span if user is not None else buf.span
        size, base = buf.attrs["size"], buf.attrs["base"]
        rings.append(Reservation(space, size, RING_REASON, False, slot_size, span, base, name))
    for call in setups:
        slot_size, depth = call.attrs["slot_size"], call.attrs["slot_num"]
        for direction in (d for d in directions(call) if d in consumed):
            if call.attrs.get(buffer_attr(direction)) is None:
                plain = plain_ring_name(direction.value, pipe_id(call))
                size = depth * slot_size
                base = call.attrs.get(f"{direction.value}_consumer_base")
                rings.append(Reservation(space, size, RING_REASON, False, slot_size, call.span, base, plain))
    return tuple(rings)
