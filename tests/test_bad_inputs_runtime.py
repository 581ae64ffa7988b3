"""Bad inputs that only show when a kernel is called, compiled for its arguments and run on a2a3sim,
or in the ``pypto`` command and its settings: one row per bad input, run end to end.

The parser's own table (``test_bad_inputs_parser.py``) covers what parsing alone rejects. Here a
row is a small module: the kernel ``k`` and ``go()``, which calls it with torch tensors. The
module is written to a temporary file, imported and ``go()`` run (with a time limit: a hang fails
the row). The error must be of the row's class (never a ``VerificationError``, never a bare
Python or torch exception), name what is wrong, read ``file:line:col: error: message`` for the
line the row marks ``# <-``, show that line with the caret under exactly the row's text, end with
a non-empty ``hint:``, and be raised from that line (the last traceback frame is the user's).

Many rows also carry their fix (``FIXES``): the row rewritten as its hint says must then run clean,
so no hint suggests something that fails as well. Rows of settings the user's code does not spell
(``PYPTO_PLATFORM`` and the other variables) check that the message names the bad value and where
it came from, and that a hint exists; rows of the ``pypto`` command check its exit status, its
message and hint, and that it printed no traceback.
"""

from __future__ import annotations

import importlib.util
import signal
import subprocess
import sys
import textwrap
import traceback
import uuid
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from pypto.cli import cli
from pypto.ir import (
    DeadlockError,
    MemoryBudgetError,
    ParseError,
    PlatformError,
    PyptoError,
    RaceError,
    SpecializationError,
    TypeCheckError,
    UnsupportedDtypeError,
    VerificationError,
)
from pypto.language.errors import RunConfigError
from pypto.passes import CompileWarning
from pypto.runtime import reset_registry
from pypto.runtime.settings import ConfigError
from pypto_sim_a2a3 import (
    BarrierError,
    DivisionByZeroError,
    LoopStepError,
    OutOfBoundsError,
    PipeError,
    ScalarRangeError,
)

MARK = "# <-"
DEFAULT_PASSES = (
    "outline-scopes,tile-matmul,tensor-to-tile,infer-memory-space,vector-split,expand-mixed,stamp-tfree,"
    "allocate,task-deps"
)
TIME_LIMIT = 60  # seconds a row may take (compile and run) before it counts as a hang
HEADER = """\
import numpy as np
import torch

import pypto.language as pl
from pypto.runtime import RunConfig

T = pl.Tensor[[64, 64], pl.FP32]
H = pl.Tensor[[64, 64], pl.FP16]
I = pl.Tensor[[64, 64], pl.INT32]
I8 = pl.Tensor[[64, 64], pl.INT8]
R = pl.Tensor[[4], pl.INT32]
RF = pl.Tensor[[4], pl.FP32]
WS = pl.Tensor[[16], pl.INT32]


def f32(rows=64, cols=64):
    return torch.randn(rows, cols)


def f16(rows=64, cols=64):
    return torch.randn(rows, cols, dtype=torch.float16)


def i32(rows=64, cols=64):
    return torch.randint(-8, 8, (rows, cols), dtype=torch.int32)


def i8(rows=64, cols=64):
    return torch.randint(-8, 8, (rows, cols), dtype=torch.int8)


def zeros(rows=64, cols=64, dtype=torch.float32):
    return torch.zeros(rows, cols, dtype=dtype)


def ints(*values):
    return torch.tensor(values + (0,) * (4 - len(values)), dtype=torch.int32)


def floats(*values):
    return torch.tensor(values + (0.0,) * (4 - len(values)), dtype=torch.float32)


def workspace(value=0, size=16):
    return torch.full((size,), value, dtype=torch.int32)
"""


def _block(text: str, indent: int) -> str:
    return textwrap.indent(textwrap.dedent(text).strip("\n") + "\n", " " * indent)


def module(text: str) -> str:
    """A row's module text as written (after the header)."""
    return textwrap.dedent(text)


# ---------------------------------------------------------------- kernel templates

C2V_INIT = "dir_mask=1, slot_size=8192, slot_num=2"
PUSH = "pl.tpush_to_aiv(acc, split=pl.SplitMode.UP_DOWN)"
POP_STORE_FREE = """\
t = pl.tpop_from_aic(shape=[32, 64], dtype=pl.FP32, split=pl.SplitMode.UP_DOWN)
pl.store(t, [lane * 32, 0], out)
pl.tfree_to_aic(t)
"""


def pipes(
    cube: str = PUSH,
    lanes: str = POP_STORE_FREE,
    aic_init: str = f"pl.aic_initialize_pipe({C2V_INIT})",
    aiv_init: str = f"pl.aiv_initialize_pipe({C2V_INIT})",
) -> str:
    """The explicit cube->vector pipe by hand: the cube multiplies a @ b and runs ``cube``; each
    AIV lane runs ``lanes`` (by default it pops its half of the product and stores it)."""
    return (
        "@pl.jit\n"
        "def k(a: H, b: H, out: pl.Out[T]):\n"
        '    with pl.at(level=pl.Level.CORE_GROUP, name_hint="mm"):\n'
        f"{_block(aic_init, 8)}"
        "        a_l1 = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)\n"
        "        b_l1 = pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat)\n"
        "        acc = pl.matmul(pl.move(a_l1, target_memory=pl.Mem.Left), pl.move(b_l1, target_memory=pl.Mem.Right))\n"
        f"{_block(cube, 8)}"
        "        for lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):\n"
        f"{_block(aiv_init, 12)}"
        f"{_block(lanes, 12)}"
        "    return out\n\n\n"
        "def go():\n"
        "    k(f16(), f16(), zeros())\n"
    )


def streamed(lanes: str, pushes: int = 4, slot_num: int = 2) -> str:
    """The cube pushes ``pushes`` different [64, 64] row blocks of a; each lane runs ``lanes``."""
    init = f"dir_mask=1, slot_size=8192, slot_num={slot_num}"
    return (
        "@pl.jit\n"
        "def k(a: pl.Tensor[[256, 64], pl.FP32], out: pl.Out[pl.Tensor[[256, 64], pl.FP32]]):\n"
        '    with pl.at(level=pl.Level.CORE_GROUP, name_hint="stream"):\n'
        f"        pl.aic_initialize_pipe({init})\n"
        f"        for i in pl.range({pushes}):\n"
        "            block = pl.load(a, [i * 64, 0], [64, 64], target_memory=pl.Mem.Mat)\n"
        "            pl.tpush_to_aiv(block, split=pl.SplitMode.UP_DOWN)\n"
        "        for lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):\n"
        f"            pl.aiv_initialize_pipe({init})\n"
        f"{_block(lanes, 12)}"
        "    return out\n\n\n"
        "def go():\n"
        "    k(f32(256, 64), zeros(256, 64))\n"
    )


V2C_INIT = "dir_mask=2, slot_size=8192, slot_num=2"
POP_GATHERED = "g = pl.tpop_from_aiv(shape=[64, 64], dtype=pl.FP16, split=pl.SplitMode.UP_DOWN)"
CUBE_USES_G = f"""\
{POP_GATHERED}
b_l1 = pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
acc = pl.matmul(pl.move(g, target_memory=pl.Mem.Left), pl.move(b_l1, target_memory=pl.Mem.Right))
pl.tfree_to_aiv(g)
pl.store(acc, [0, 0], out)
"""
PUSH_SHARE = (
    "pl.tpush_to_aic(pl.cast(pl.load(x, [lane * 32, 0], [32, 64]), pl.FP16), split=pl.SplitMode.UP_DOWN)"
)


def gathered(cube: str = CUBE_USES_G, lanes: str = PUSH_SHARE) -> str:
    """The explicit vector->cube pipe: each lane pushes its FP16 half of x, the cube pops the whole
    tile and multiplies it by b (``cube``)."""
    return (
        "@pl.jit\n"
        "def k(x: T, b: H, out: pl.Out[T]):\n"
        '    with pl.at(level=pl.Level.CORE_GROUP, name_hint="gather"):\n'
        f"        pl.aic_initialize_pipe({V2C_INIT})\n"
        f"{_block(cube, 8)}"
        "        for lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):\n"
        f"            pl.aiv_initialize_pipe({V2C_INIT})\n"
        f"{_block(lanes, 12)}"
        "    return out\n\n\n"
        "def go():\n"
        "    k(f32(), f16(), zeros())\n"
    )


def split_at(options: str) -> str:
    """The ``pl.at(...)`` of :func:`split_scope`."""
    return f'pl.at(level=pl.Level.CORE_GROUP, optimizations=[{options}], name_hint="mixed")'


def split_scope(body: str, options: str = "pl.split(pl.SplitMode.UP_DOWN)", mark: bool = False) -> str:
    """A ``pl.split`` mixed scope over a [64, 64] FP16 a and b, FP32 x and out, a [1, 64] row v;
    ``mark``: the row marks the ``with pl.at(...)`` line."""
    return (
        "@pl.jit\n"
        "def k(a: H, b: H, x: T, v: pl.Tensor[[1, 64], pl.FP32], out: pl.Out[T]):\n"
        f"    with {split_at(options)}:{'  ' + MARK if mark else ''}\n"
        f"{_block(body, 8)}"
        "    return out\n\n\n"
        "def go():\n"
        "    k(f16(), f16(), f32(), f32(1, 64), zeros())\n"
    )


def regions(body: str) -> str:
    """A scope of explicit ``pl.split_aiv`` regions over the same parameters as :func:`split_scope`."""
    return (
        "@pl.jit\n"
        "def k(a: H, b: H, x: T, v: pl.Tensor[[1, 64], pl.FP32], out: pl.Out[T]):\n"
        '    with pl.at(level=pl.Level.CORE_GROUP, name_hint="regions"):\n'
        f"{_block(body, 8)}"
        "    return out\n\n\n"
        "def go():\n"
        "    k(f16(), f16(), f32(), f32(1, 64), zeros())\n"
    )


READ_LOAD = "pl.load(scratch, [lane * 32, 0], [32, 64])"
READ_SCRATCH = f"pl.store({READ_LOAD}, [lane * 32, 0], out)"
CUBE_STORES_SCRATCH = """\
a_l1 = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
b_l1 = pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
acc = pl.matmul(pl.move(a_l1, target_memory=pl.Mem.Left), pl.move(b_l1, target_memory=pl.Mem.Right))
"""


def gm(body: str, ws: str = "workspace()") -> str:
    """One launch of a cube and two lanes sharing the GM tensor ``scratch`` (and x, out, a soft-sync
    workspace ws); ``body`` is the scope's body."""
    return (
        "@pl.jit\n"
        "def k(a: T, b: T, x: T, ws: WS, out: pl.Out[T]):\n"
        "    scratch = pl.create_tensor([64, 64], pl.FP32)\n"
        '    with pl.at(level=pl.Level.CORE_GROUP, name_hint="gm"):\n'
        f"{_block(body, 8)}"
        "    return out\n\n\n"
        "def go():\n"
        f"    k(f32(), f32(), f32(), {ws}, zeros())\n"
    )


def cube_to_lanes(
    publish: str = "pl.system.cacheinvalid()",
    fence: str = "pl.system.fence()",
    cube_sync: str = "pl.system.syncall()",
    lane_sync: str = "pl.system.syncall()",
    invalidate: str = "pl.system.cacheinvalid()",
    read: str = READ_SCRATCH,
    ws: str = "workspace()",
) -> str:
    """The cube writes scratch, the lanes read it: publish -> fence -> syncall -> invalidate; a
    step given as "" is left out."""
    cube = CUBE_STORES_SCRATCH + "pl.store(acc, [0, 0], scratch)  # the cube's write\n"
    cube += "".join(f"{step}\n" for step in (publish, fence, cube_sync) if step)
    lanes = "".join(f"    {step}\n" for step in (lane_sync, invalidate, read) if step)
    return gm(cube + "for lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):\n" + lanes, ws)


def graph(
    body: str, signature: str = "x: T, y: T, out: pl.Out[T]", call: str = "k(f32(), f32(), zeros())"
) -> str:
    """An orchestration ``body`` (scopes, helper calls, loops), with the helper ``exp_into``."""
    return (
        "@pl.jit.incore\n"
        "def exp_into(src: T, dst: pl.Out[T]):\n"
        "    dst[:] = pl.exp(src)  # the helper's write\n"
        "    return dst\n\n\n"
        "@pl.jit\n"
        f"def k({signature}):\n"
        f"{_block(body, 4)}"
        "    return out\n\n\n"
        "def go():\n"
        f"    {call}\n"
    )


def run_time(body: str, values: str = "ints()", floats_: str = "floats()") -> str:
    """A scope whose ``body`` uses ``v``, the run-time value of r[0] (and r, rf, the tensors of
    each dtype): nothing about it is known when the kernel compiles."""
    return (
        "@pl.jit\n"
        "def k(x: T, xi: I, x8: I8, r: R, rf: RF, out: pl.Out[T], outi: pl.Out[I], out8: pl.Out[I8]):\n"
        '    with pl.at(level=pl.Level.CORE_GROUP, name_hint="run_time"):\n'
        "        v = pl.cast(pl.read(r, [0]), pl.INDEX)\n"
        f"{_block(body, 8)}"
        "    return out\n\n\n"
        "def go():\n"
        f"    k(f32(), i32(), i8(), {values}, {floats_}, zeros(), zeros(dtype=torch.int32), zeros(dtype=torch.int8))\n"
    )


DOUBLE = """\
@pl.jit
def k(x: T, n: pl.Scalar[pl.INT32], out: pl.Out[T]):  # <-
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="double"):
        out[:] = pl.mul(x, 2.0)
    return out


@pl.jit
def bare(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="bare"):
        out[:] = pl.mul(x, 2.0)
    return out


"""


def _pipeline(changed: str) -> str:
    """The default pipeline as a string, with one pass written as ``changed`` says (the pass it
    names, or the one it misspells by a letter): ``_pipeline("tile-matmul{k_block=32}")``."""
    name = changed.split("{")[0]
    passes = [changed if name in (p, p + p[-1]) else p for p in DEFAULT_PASSES.split(",")]
    return ",".join(passes)


def called(call: str, mark_def: bool = True) -> str:
    """The kernels ``k(x, n, out)`` and ``bare(x, out)``, called by ``go()`` as ``call``; the row
    marks the ``def k`` line unless ``mark_def`` is False (then ``call`` carries the mark)."""
    kernels = DOUBLE if mark_def else DOUBLE.replace("  # <-", "")
    return kernels + f"def go():\n{_block(call, 4)}"


@dataclass(frozen=True)
class Bad:
    """One bad input: its module, the error class, a part of the message, the underlined text of
    the marked line, and the environment variables and ``pyproject.toml`` it runs under."""

    id: str
    source: str
    error: type[PyptoError]
    message: str
    underlined: str
    env: dict[str, str] = field(default_factory=dict)
    pyproject: str | None = None


ROWS = [
    # ------------------------------------------------------------------ mixed kernels and pipes
    Bad(
        "ring-too-deep-for-vec",
        module("""\
            @pl.jit
            def k(
                a: pl.Tensor[[128, 256], pl.FP16],
                b: pl.Tensor[[256, 128], pl.FP16],
                bias: pl.Tensor[[128, 128], pl.FP32],
                out: pl.Out[pl.Tensor[[128, 128], pl.FP32]],
            ):
                with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN), pl.cross_core_slot(slot_num=4)]):  # <-
                    acc = pl.matmul(a, b, out_dtype=pl.FP32)
                    out[:] = pl.add(acc, bias)
                return out


            def go():
                k(f16(128, 256), f16(256, 128), f32(128, 128), zeros(128, 128))
            """),
        MemoryBudgetError,
        "Function 'k_incore_0_aiv': Vec buffer usage (294912 bytes) exceeds platform limit (188416 bytes)",
        "pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN), pl.cross_core_slot(slot_num=4)])",
    ),
    Bad(
        "explicit-ring-too-deep-for-vec",
        pipes(
            cube="pl.tpush_to_aiv(acc, split=pl.SplitMode.UP_DOWN)",
            aic_init="pl.aic_initialize_pipe(dir_mask=1, slot_size=65536, slot_num=4)",
            aiv_init="pl.aiv_initialize_pipe(dir_mask=1, slot_size=65536, slot_num=4)  # <-",
        ),
        MemoryBudgetError,
        "Function 'mm_aiv': Vec buffer usage (262144 bytes) exceeds platform limit (188416 bytes)",
        "pl.aiv_initialize_pipe(dir_mask=1, slot_size=65536, slot_num=4)",
    ),
    Bad(
        "cross-core-slot-beyond-the-hardware",
        split_scope(
            """\
            acc = pl.matmul(a, b, out_dtype=pl.FP32)
            out[:] = pl.add(acc, x)
            """,
            options="pl.split(pl.SplitMode.UP_DOWN), pl.cross_core_slot(slot_num=9)",
            mark=True,
        ),
        PlatformError,
        "pl.cross_core_slot(slot_num=9) asks for more ring slots than a2a3 pipes have (8 per direction)",
        split_at("pl.split(pl.SplitMode.UP_DOWN), pl.cross_core_slot(slot_num=9)"),
    ),
    Bad(
        "cross-core-slot-beyond-the-hardware-both-ways",
        split_scope(
            """\
            y = pl.cast(pl.exp(x), pl.FP16)
            acc = pl.matmul(y, b, out_dtype=pl.FP32)
            out[:] = pl.add(acc, x)
            """,
            options="pl.split(pl.SplitMode.UP_DOWN), pl.cross_core_slot(slot_num=5)",
            mark=True,
        ),
        PlatformError,
        "(4 per direction when both directions are used)",
        split_at("pl.split(pl.SplitMode.UP_DOWN), pl.cross_core_slot(slot_num=5)"),
    ),
    Bad(
        "cross-core-slot-on-a-hand-made-pipe",
        pipes().replace(
            '    with pl.at(level=pl.Level.CORE_GROUP, name_hint="mm"):',
            "    with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.cross_core_slot(slot_num=4)]):  # <-",
        ),
        ParseError,
        "pl.cross_core_slot(slot_num=4) sets the depth of the automatic pipe, but this scope sets up its pipe by "
        "hand (pl.aic_initialize_pipe at line",
        "pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.cross_core_slot(slot_num=4)])",
    ),
    Bad(
        "pipe-slot-num-beyond-the-hardware",
        pipes(
            aic_init="pl.aic_initialize_pipe(dir_mask=1, slot_size=8192, slot_num=9)  # <-",
            aiv_init="pl.aiv_initialize_pipe(dir_mask=1, slot_size=8192, slot_num=9)",
        ),
        PipeError,
        "aic_initialize_pipe: slot_num=9 is more than the 8 slots per direction of a2a3",
        "pl.aic_initialize_pipe(dir_mask=1, slot_size=8192, slot_num=9)",
    ),
    Bad(
        "pipe-slot-num-beyond-the-hardware-both-ways",
        pipes(
            aic_init="pl.aic_initialize_pipe(dir_mask=3, slot_size=8192, slot_num=5)  # <-",
            aiv_init="pl.aiv_initialize_pipe(dir_mask=3, slot_size=8192, slot_num=5)",
        ),
        PipeError,
        "slot_num=5 is more than the 4 slots per direction of a2a3 when both directions are used",
        "pl.aic_initialize_pipe(dir_mask=3, slot_size=8192, slot_num=5)",
    ),
    Bad(
        "pipe-slot-size-misaligned",
        pipes(
            aic_init="pl.aic_initialize_pipe(dir_mask=1, slot_size=8200, slot_num=2)  # <-",
            aiv_init="pl.aiv_initialize_pipe(dir_mask=1, slot_size=8200, slot_num=2)",
        ),
        PipeError,
        "pipe mm_c2v: slot_size=8200 is not a multiple of 32 bytes",
        "pl.aic_initialize_pipe(dir_mask=1, slot_size=8200, slot_num=2)",
    ),
    Bad(
        "tile-bigger-than-a-slot",
        pipes(
            cube="pl.tpush_to_aiv(acc, split=pl.SplitMode.UP_DOWN)  # <-",
            aic_init="pl.aic_initialize_pipe(dir_mask=1, slot_size=4096, slot_num=2)",
            aiv_init="pl.aiv_initialize_pipe(dir_mask=1, slot_size=4096, slot_num=2)",
        ),
        PipeError,
        "tpush_to_aiv puts a Tile[[32, 64], FP32, Vec] (8192 bytes) into pipe mm_c2v, whose slots hold 4096 bytes",
        "pl.tpush_to_aiv(acc, split=pl.SplitMode.UP_DOWN)",
    ),
    Bad(
        "unsplit-push-bigger-than-a-slot",
        pipes(cube="pl.tpush_to_aiv(acc, split=pl.SplitMode.NONE)  # <-"),
        PipeError,
        "tpush_to_aiv puts a Tile[[64, 64], FP32, Vec] (16384 bytes) into pipe mm_c2v, whose slots hold 8192",
        "pl.tpush_to_aiv(acc, split=pl.SplitMode.NONE)",
    ),
    Bad(
        "push-without-setup",
        pipes(aic_init="", cube="pl.tpush_to_aiv(acc, split=pl.SplitMode.UP_DOWN)  # <-"),
        ParseError,
        "pl.tpush_to_aiv uses the cube->vector pipe, which this kernel never sets up",
        "pl.tpush_to_aiv(acc, split=pl.SplitMode.UP_DOWN)",
    ),
    Bad(
        "pop-on-the-cube-side",
        pipes(
            cube="""\
            pl.tpush_to_aiv(acc, split=pl.SplitMode.UP_DOWN)
            t = pl.tpop_from_aic(shape=[32, 64], dtype=pl.FP32, split=pl.SplitMode.UP_DOWN)  # <-
            """
        ),
        ParseError,
        "vector op pl.tpop_from_aic sits outside every pl.split_aiv region of a scope that has them",
        "pl.tpop_from_aic(shape=[32, 64], dtype=pl.FP32, split=pl.SplitMode.UP_DOWN)",
    ),
    Bad(
        "cube-pop-in-a-lane-region",
        pipes(
            aic_init="pl.aic_initialize_pipe(dir_mask=3, slot_size=8192, slot_num=2)",
            aiv_init="pl.aiv_initialize_pipe(dir_mask=3, slot_size=8192, slot_num=2)",
            lanes="""\
            t = pl.tpop_from_aiv(shape=[32, 64], dtype=pl.FP32, split=pl.SplitMode.UP_DOWN)  # <-
            pl.store(t, [lane * 32, 0], out)
            """,
        ),
        ParseError,
        "cube op pl.tpop_from_aiv inside a pl.split_aiv region, whose body runs on the AIV lanes",
        "pl.tpop_from_aiv(shape=[32, 64], dtype=pl.FP32, split=pl.SplitMode.UP_DOWN)",
    ),
    Bad(
        "setup-differs-in-slot-size",
        pipes(aiv_init="pl.aiv_initialize_pipe(dir_mask=1, slot_size=16384, slot_num=2)  # <-"),
        PipeError,
        "pipe setup of Group mm differs between its sides: AIC at",
        "pl.aiv_initialize_pipe(dir_mask=1, slot_size=16384, slot_num=2)",
    ),
    Bad(
        "setup-differs-in-direction",
        pipes(aiv_init="pl.aiv_initialize_pipe(dir_mask=3, slot_size=8192, slot_num=2)  # <-"),
        PipeError,
        "sets dir_mask=1, slot_size=8192, slot_num=2, AIV0 at",
        "pl.aiv_initialize_pipe(dir_mask=3, slot_size=8192, slot_num=2)",
    ),
    Bad(
        "setup-differs-in-depth",
        pipes(aiv_init="pl.aiv_initialize_pipe(dir_mask=1, slot_size=8192, slot_num=4)  # <-"),
        PipeError,
        "sets dir_mask=1, slot_size=8192, slot_num=4",
        "pl.aiv_initialize_pipe(dir_mask=1, slot_size=8192, slot_num=4)",
    ),
    Bad(
        "pop-a-smaller-shape-than-pushed",
        pipes(
            lanes="""\
            t = pl.tpop_from_aic(shape=[16, 64], dtype=pl.FP32, split=pl.SplitMode.UP_DOWN)  # <-
            pl.store(t, [lane * 32, 0], out)
            pl.tfree_to_aic(t)
            """
        ),
        PipeError,
        "tpop_from_aic pops Tile[[16, 64], FP32, Vec] with split=UP_DOWN from pipe mm_c2v, but slot 0 holds "
        "Tile[[32, 64], FP32, Vec] (split=UP_DOWN)",
        "pl.tpop_from_aic(shape=[16, 64], dtype=pl.FP32, split=pl.SplitMode.UP_DOWN)",
    ),
    Bad(
        "pop-the-whole-tile-of-a-split-push",
        pipes(
            lanes="""\
            t = pl.tpop_from_aic(shape=[64, 64], dtype=pl.FP32, split=pl.SplitMode.UP_DOWN)  # <-
            pl.store(t, [0, 0], out)
            pl.tfree_to_aic(t)
            """
        ),
        PipeError,
        "tpop_from_aic pops Tile[[64, 64], FP32, Vec] with split=UP_DOWN",
        "pl.tpop_from_aic(shape=[64, 64], dtype=pl.FP32, split=pl.SplitMode.UP_DOWN)",
    ),
    Bad(
        "pop-another-dtype-than-pushed",
        pipes(
            lanes="""\
            t = pl.tpop_from_aic(shape=[32, 64], dtype=pl.FP16, split=pl.SplitMode.UP_DOWN)  # <-
            pl.store(pl.cast(t, pl.FP32), [lane * 32, 0], out)
            pl.tfree_to_aic(t)
            """
        ),
        PipeError,
        "tpop_from_aic pops Tile[[32, 64], FP16, Vec] with split=UP_DOWN from pipe mm_c2v",
        "pl.tpop_from_aic(shape=[32, 64], dtype=pl.FP16, split=pl.SplitMode.UP_DOWN)",
    ),
    Bad(
        "pop-another-split-than-pushed",
        pipes(
            lanes="""\
            t = pl.tpop_from_aic(shape=[32, 64], dtype=pl.FP32, split=pl.SplitMode.LEFT_RIGHT)  # <-
            pl.store(t, [lane * 32, 0], out)
            pl.tfree_to_aic(t)
            """
        ),
        PipeError,
        "with split=LEFT_RIGHT from pipe mm_c2v, but slot 0 holds Tile[[32, 64], FP32, Vec] (split=UP_DOWN)",
        "pl.tpop_from_aic(shape=[32, 64], dtype=pl.FP32, split=pl.SplitMode.LEFT_RIGHT)",
    ),
    Bad(
        "free-a-loaded-tile",
        pipes(
            lanes="""\
            t = pl.tpop_from_aic(shape=[32, 64], dtype=pl.FP32, split=pl.SplitMode.UP_DOWN)
            u = pl.load(out, [lane * 32, 0], [32, 64])
            pl.store(pl.add(t, u), [lane * 32, 0], out)
            pl.tfree_to_aic(t)
            pl.tfree_to_aic(u)  # <-
            """
        ),
        PipeError,
        "tfree_to_aic(u) on AIV0: u is not a popped tile that is still unfreed",
        "pl.tfree_to_aic(u)",
    ),
    Bad(
        "free-twice",
        pipes(
            lanes="""\
            t = pl.tpop_from_aic(shape=[32, 64], dtype=pl.FP32, split=pl.SplitMode.UP_DOWN)
            pl.store(t, [lane * 32, 0], out)
            pl.tfree_to_aic(t)
            pl.tfree_to_aic(t)  # <-
            """
        ),
        PipeError,
        "tfree_to_aic(t) on AIV0: t is not a popped tile that is still unfreed",
        "pl.tfree_to_aic(t)",
    ),
    Bad(
        "free-to-the-wrong-side",
        pipes(
            lanes="""\
            t = pl.tpop_from_aic(shape=[32, 64], dtype=pl.FP32, split=pl.SplitMode.UP_DOWN)
            pl.store(t, [lane * 32, 0], out)
            pl.tfree_to_aiv(t)  # <-
            """
        ),
        TypeCheckError,
        "pl.tfree_to_aiv: takes a tile in Mat, got Tile[[32, 64], FP32, Vec]",
        "pl.tfree_to_aiv(t)",
    ),
    Bad(
        "use-after-free",
        streamed(
            """\
            first = pl.tpop_from_aic(shape=[32, 64], dtype=pl.FP32, split=pl.SplitMode.UP_DOWN)
            pl.tfree_to_aic(first)
            slow = pl.exp(pl.exp(pl.exp(pl.exp(pl.load(out, [lane * 32, 0], [32, 64])))))
            pl.store(pl.add(first, pl.mul(slow, 0.0)), [lane * 32, 0], out)  # <-
            for j in pl.range(1, 4):
                t = pl.tpop_from_aic(shape=[32, 64], dtype=pl.FP32, split=pl.SplitMode.UP_DOWN)
                pl.store(t, [j * 64 + lane * 32, 0], out)
                pl.tfree_to_aic(t)
            """
        ),
        PipeError,
        "pl.add on AIV0 reads first after pl.tfree_to_aic(first) at",
        "pl.add(first, pl.mul(slow, 0.0))",
    ),
    Bad(
        "missing-tfree",
        streamed(
            """\
            for j in pl.range(4):
                t = pl.tpop_from_aic(shape=[32, 64], dtype=pl.FP32, split=pl.SplitMode.UP_DOWN)  # <-
                pl.store(t, [j * 64 + lane * 32, 0], out)
            """
        ),
        DeadlockError,
        "slot 0 popped by AIV0 at",
        "pl.tpop_from_aic(shape=[32, 64], dtype=pl.FP32, split=pl.SplitMode.UP_DOWN)",
    ),
    Bad(
        "pop-with-no-push",
        pipes(
            cube="pl.store(acc, [0, 0], out)",
            lanes="""\
            t = pl.tpop_from_aic(shape=[32, 64], dtype=pl.FP32, split=pl.SplitMode.UP_DOWN)  # <-
            pl.tfree_to_aic(t)
            """,
        ),
        DeadlockError,
        "(AIC finished after 0 push(es) and AIV0 popped 0: more pops than pushes)",
        "pl.tpop_from_aic(shape=[32, 64], dtype=pl.FP32, split=pl.SplitMode.UP_DOWN)",
    ),
    Bad(
        "more-pops-than-pushes",
        streamed(
            """\
            for j in pl.range(5):
                t = pl.tpop_from_aic(shape=[32, 64], dtype=pl.FP32, split=pl.SplitMode.UP_DOWN)  # <-
                pl.tfree_to_aic(t)
            """
        ),
        DeadlockError,
        "more pops than pushes",
        "pl.tpop_from_aic(shape=[32, 64], dtype=pl.FP32, split=pl.SplitMode.UP_DOWN)",
    ),
    Bad(
        "more-pushes-than-pops",
        pipes(
            cube="""\
            pl.tpush_to_aiv(acc, split=pl.SplitMode.UP_DOWN)
            pl.tpush_to_aiv(acc, split=pl.SplitMode.UP_DOWN)  # <-
            """
        ),
        DeadlockError,
        "pipe mm_c2v is not drained when the launch of mm ends",
        "pl.tpush_to_aiv(acc, split=pl.SplitMode.UP_DOWN)",
    ),
    Bad(
        "only-one-lane-pops",
        pipes(
            cube="pl.tpush_to_aiv(acc, split=pl.SplitMode.UP_DOWN)  # <-",
            lanes="""\
            if lane == 0:
                t = pl.tpop_from_aic(shape=[32, 64], dtype=pl.FP32, split=pl.SplitMode.UP_DOWN)
                pl.store(t, [0, 0], out)
                pl.tfree_to_aic(t)
            """,
        ),
        DeadlockError,
        "AIV1's ring (AIC pushed 1, 0 popped, 0 freed): slot 0 ready",
        "pl.tpush_to_aiv(acc, split=pl.SplitMode.UP_DOWN)",
    ),
    Bad(
        "gather-only-one-lane-pushes",
        gathered(lanes=f"if lane == 0:\n    {PUSH_SHARE}  # <-"),
        DeadlockError,
        "AIV1 finished after 0 push(es): one lane's share of a tile is missing",
        PUSH_SHARE,
    ),
    Bad(
        "gather-lanes-push-different-splits",
        gathered(
            lanes=f"""\
            if lane == 0:
                {PUSH_SHARE}
            if lane == 1:
                {PUSH_SHARE.replace("UP_DOWN", "LEFT_RIGHT")}  # <-
            """
        ),
        PipeError,
        "tpush_to_aic from AIV1 puts Tile[[32, 128], FP16, Mat] (split=LEFT_RIGHT) into slot 0 of pipe gather_v2c",
        PUSH_SHARE.replace("UP_DOWN", "LEFT_RIGHT"),
    ),
    Bad(
        "gather-popped-as-a-half",
        gathered(
            cube=CUBE_USES_G.replace(POP_GATHERED, POP_GATHERED.replace("[64, 64]", "[32, 64]") + "  # <-")
        ),
        PipeError,
        "tpop_from_aiv pops Tile[[32, 64], FP16, Mat] with split=UP_DOWN from pipe gather_v2c, but slot 0 holds "
        "Tile[[64, 64], FP16, Mat]",
        POP_GATHERED.replace("[64, 64]", "[32, 64]").removeprefix("g = "),
    ),
    Bad(
        "gather-read-after-its-free",
        gathered(
            cube=f"""\
            {POP_GATHERED}
            pl.tfree_to_aiv(g)
            b_l1 = pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
            acc = pl.matmul(pl.move(g, target_memory=pl.Mem.Left), pl.move(b_l1, target_memory=pl.Mem.Right))  # <-
            pl.store(acc, [0, 0], out)
            """
        ),
        PipeError,
        "pl.move on AIC reads g after pl.tfree_to_aiv(g) at",
        "pl.move(g, target_memory=pl.Mem.Left)",
    ),
    Bad(
        "gather-freed-twice",
        gathered(cube=CUBE_USES_G + "pl.tfree_to_aiv(g)  # <-\n"),
        PipeError,
        "tfree_to_aiv(g) on AIC: g is not a popped tile that is still unfreed",
        "pl.tfree_to_aiv(g)",
    ),
    Bad(
        "lane-1-computes-on-a-token",
        regions(
            """\
            a_l1 = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
            b_l1 = pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
            acc = pl.matmul(pl.move(a_l1, target_memory=pl.Mem.Left), pl.move(b_l1, target_memory=pl.Mem.Right))
            for lane in pl.split_aiv(2, mode=pl.SplitMode.NONE):
                s = pl.aiv_shard(acc)
                pl.store(pl.relu(s), [0, 0], out)  # <-
            """
        ),
        PipeError,
        "uses s, which holds no data: with split=NONE lane 1 pops a data-less token",
        "pl.relu(s)",
    ),
    Bad(
        "shard-rows-stored-as-columns",
        regions(
            """\
            a_l1 = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
            b_l1 = pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
            acc = pl.matmul(pl.move(a_l1, target_memory=pl.Mem.Left), pl.move(b_l1, target_memory=pl.Mem.Right))
            for lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
                s = pl.aiv_shard(acc)
                pl.store(s, [0, lane * 32], out)  # <-
            """
        ),
        OutOfBoundsError,
        "pl.store: region [32:96] is outside dim 1 of size 64 (offsets [0, 32])",
        "pl.store(s, [0, lane * 32], out)",
    ),
    Bad(
        "shard-halves-mixed-with-a-full-tile",
        regions(
            """\
            a_l1 = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
            b_l1 = pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
            acc = pl.matmul(pl.move(a_l1, target_memory=pl.Mem.Left), pl.move(b_l1, target_memory=pl.Mem.Right))
            for lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
                s = pl.aiv_shard(acc)
                pl.store(pl.add(s, pl.load(x, [0, 0], [64, 64])), [lane * 32, 0], out)  # <-
            """
        ),
        TypeCheckError,
        "pl.add: operand shape mismatch: Tile[[32, 64], FP32, Vec] vs Tile[[64, 64], FP32, Vec]",
        "pl.add(s, pl.load(x, [0, 0], [64, 64]))",
    ),
    Bad(
        "gather-used-on-the-lanes",
        regions(
            """\
            for lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
                t = pl.load(x, [lane * 32, 0], [32, 64])
                g = pl.aic_gather(t)
            for lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
                pl.store(pl.exp(g), [0, 0], out)  # <-
            """
        ),
        ParseError,
        "'g' is produced on the CUBE lane (a Mat tile) and pl.exp reads it on the VECTOR lane inside a "
        "pl.split_aiv region: the crossing is not named",
        "pl.exp(g)",
    ),
    Bad(
        "lanes-of-a-region-store-one-place",
        regions(
            """\
            for lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
                pl.store(pl.exp(pl.load(x, [lane * 32, 0], [32, 64])), [0, 0], out)  # <-
            """
        ),
        RaceError,
        "cg0.AIV1 writes out[0:32, 0:64] at",
        "pl.store(pl.exp(pl.load(x, [lane * 32, 0], [32, 64])), [0, 0], out)",
    ),
    Bad(
        "split-rejects-col-sum-across-rows",
        split_scope(
            """\
            acc = pl.matmul(a, b, out_dtype=pl.FP32)
            s = pl.col_sum(acc)  # <-
            out[0:1, :] = s
            """
        ),
        ParseError,
        "split rejected: the body mixes split and plain full-width vector ops (pl.col_sum at line",
        "pl.col_sum(acc)",
    ),
    Bad(
        "split-rejects-row-sum-across-columns",
        split_scope(
            """\
            acc = pl.matmul(a, b, out_dtype=pl.FP32)
            s = pl.row_sum(acc)  # <-
            out[:, 0:1] = s
            """,
            options="pl.split(pl.SplitMode.LEFT_RIGHT)",
        ),
        ParseError,
        "(pl.row_sum at line",
        "pl.row_sum(acc)",
    ),
    Bad(
        "split-rejects-a-view",
        split_scope(
            """\
            acc = pl.matmul(a, b, out_dtype=pl.FP32)
            out[0:32, :] = pl.slice(pl.add(acc, x), [32, 64], [0, 0])  # <-
            """
        ),
        ParseError,
        "(pl.slice at line",
        "pl.slice(pl.add(acc, x), [32, 64], [0, 0])",
    ),
    Bad(
        "split-of-one-row",
        split_scope(
            """\
            acc = pl.matmul(a[0:1, :], b, out_dtype=pl.FP32)  # <-
            out[0:1, :] = pl.add(acc, v)
            """
        ),
        ParseError,
        "cannot split tile 'acc' along dim 0 (rows): its extent 1 leaves nothing for AIV lane 1",
        "pl.matmul(a[0:1, :], b, out_dtype=pl.FP32)",
    ),
    # ------------------------------------------------------------------ GM ordering within a launch
    Bad(
        "read-after-write-not-published",
        cube_to_lanes(publish="", read=READ_SCRATCH + "  # <-"),
        RaceError,
        "nothing orders the two: cg0.AIC never published its write (pl.system.cacheinvalid after it)",
        READ_LOAD,
    ),
    Bad(
        "read-after-write-not-fenced",
        cube_to_lanes(fence="", read=READ_SCRATCH + "  # <-"),
        RaceError,
        "nothing orders the two: cg0.AIC did not pl.system.fence after publishing its write",
        READ_LOAD,
    ),
    Bad(
        "read-after-write-not-invalidated",
        cube_to_lanes(invalidate="", read=READ_SCRATCH + "  # <-"),
        RaceError,
        "cg0.AIV0 did not pl.system.cacheinvalid the data after the syncall, before its read",
        READ_LOAD,
    ),
    Bad(
        "read-after-write-with-no-barrier",
        cube_to_lanes(cube_sync="", lane_sync="").replace("# the cube's write", MARK),
        RaceError,
        "cg0.AIC writes scratch[0:32, 0:64] at",
        "pl.store(acc, [0, 0], scratch)",
    ),
    Bad(
        "read-after-write-between-lanes",
        gm("""\
            for lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
                pl.store(pl.load(x, [lane * 32, 0], [32, 64]), [lane * 32, 0], scratch)
                pl.system.syncall(core_type="aiv")
                other = pl.load(scratch, [32 - lane * 32, 0], [32, 64])  # <-
                pl.store(other, [lane * 32, 0], out)
            """),
        RaceError,
        "cg0.AIV0 reads scratch[32:64, 0:64] at",
        "pl.load(scratch, [32 - lane * 32, 0], [32, 64])",
    ),
    Bad(
        "read-after-write-lanes-to-cube",
        gm("""\
            for lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
                pl.store(pl.load(x, [lane * 32, 0], [32, 64]), [lane * 32, 0], scratch)
                pl.system.cacheinvalid()
                pl.system.fence()
                pl.system.syncall()
            pl.system.syncall()
            s_l1 = pl.load(scratch, [0, 0], [64, 64], target_memory=pl.Mem.Mat)  # <-
            b_l1 = pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
            acc = pl.matmul(pl.move(s_l1, target_memory=pl.Mem.Left), pl.move(b_l1, target_memory=pl.Mem.Right))
            pl.store(acc, [0, 0], out)
            """),
        RaceError,
        "cg0.AIC did not pl.system.cacheinvalid the data after the syncall, before its read",
        "pl.load(scratch, [0, 0], [64, 64], target_memory=pl.Mem.Mat)",
    ),
    Bad(
        "write-after-read-cube-over-the-lanes-input",
        gm(
            "for lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):\n"
            "    pl.store(pl.exp(pl.load(x, [lane * 32, 0], [32, 64])), [lane * 32, 0], out)\n"
            + CUBE_STORES_SCRATCH
            + "pl.store(acc, [0, 0], x)  # <-\n"
        ),
        RaceError,
        "cg0.AIC writes x[0:32, 0:64] at",
        "pl.store(acc, [0, 0], x)",
    ),
    Bad(
        "write-after-write-two-lanes",
        gm("""\
            for lane in pl.split_aiv(2, mode=pl.SplitMode.NONE):
                pl.store(pl.load(x, [0, 0], [64, 64]), [0, 0], out)  # <-
            """),
        RaceError,
        "cg0.AIV1 writes out[0:64, 0:64] at",
        "pl.store(pl.load(x, [0, 0], [64, 64]), [0, 0], out)",
    ),
    Bad(
        "write-after-write-cube-and-lane",
        gm(
            CUBE_STORES_SCRATCH
            + "pl.store(acc, [0, 0], out)  # <-\n"
            + "for lane in pl.split_aiv(2, mode=pl.SplitMode.NONE):\n"
            + "    pl.store(pl.relu(pl.load(x, [lane * 32, 0], [32, 64])), [lane * 32, 0], out)\n"
        ),
        RaceError,
        "cg0.AIC writes out[0:32, 0:64] at",
        "pl.store(acc, [0, 0], out)",
    ),
    Bad(
        "write-after-write-barrier-without-publish",
        gm("""\
            for lane in pl.split_aiv(2, mode=pl.SplitMode.NONE):
                t = pl.load(x, [0, 0], [64, 64])
                if lane == 0:
                    pl.store(t, [0, 0], out)
                pl.system.syncall(core_type="aiv")
                if lane == 1:
                    pl.store(pl.add(t, t), [0, 0], out)  # <-
            """),
        RaceError,
        "cg0.AIV0 never published its write (pl.system.cacheinvalid after it)",
        "pl.store(pl.add(t, t), [0, 0], out)",
    ),
    Bad(
        "atomic-add-over-a-plain-store",
        gm("""\
            for lane in pl.split_aiv(2, mode=pl.SplitMode.NONE):
                t = pl.load(x, [0, 0], [64, 64])
                if lane == 0:
                    pl.store(t, [0, 0], out)
                if lane == 1:
                    pl.assemble(out, t, [0, 0], atomic=pl.AtomicType.Add)  # <-
            """),
        RaceError,
        "cg0.AIV1 adds into out[0:64, 0:64] at",
        "pl.assemble(out, t, [0, 0], atomic=pl.AtomicType.Add)",
    ),
    Bad(
        "soft-sync-workspace-not-zeroed",
        cube_to_lanes(
            cube_sync='pl.system.syncall(mode="soft", gm_workspace=ws, used_cores=3)',
            lane_sync='pl.system.syncall(mode="soft", gm_workspace=ws, used_cores=3)  # <-',
            ws="workspace(1)",
        ),
        BarrierError,
        'pl.system.syncall(mode="soft") needs a zeroed INT32 gm_workspace, but ws holds 1 at flat index 0',
        'pl.system.syncall(mode="soft", gm_workspace=ws, used_cores=3)',
    ),
    Bad(
        "soft-sync-counts-more-cores-than-the-launch-has",
        cube_to_lanes(
            cube_sync='pl.system.syncall(mode="soft", gm_workspace=ws, used_cores=5)  # <-',
            lane_sync='pl.system.syncall(mode="soft", gm_workspace=ws, used_cores=5)',
        ),
        DeadlockError,
        "it needs 5 but only 3 core(s) of this launch take part",
        'pl.system.syncall(mode="soft", gm_workspace=ws, used_cores=5)',
    ),
    Bad(
        "soft-and-hard-sync-meet",
        cube_to_lanes(
            cube_sync="pl.system.syncall()  # <-",
            lane_sync='pl.system.syncall(mode="soft", gm_workspace=ws, used_cores=3)',
        ),
        BarrierError,
        'joins round 0 of the mix barrier with mode="hard", but AIV0 joined it at',
        "pl.system.syncall()",
    ),
    Bad(
        "hard-sync-one-lane-skips",
        gm("""\
            for lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
                pl.store(pl.load(x, [lane * 32, 0], [32, 64]), [lane * 32, 0], out)
                if lane == 0:
                    pl.system.syncall(core_type="aiv")  # <-
            """),
        DeadlockError,
        "1 of 2 core(s) arrived (AIV0); AIV1 finished without reaching it",
        'pl.system.syncall(core_type="aiv")',
    ),
    Bad(
        "hard-sync-the-cube-never-reaches",
        cube_to_lanes(cube_sync="", lane_sync="pl.system.syncall()  # <-"),
        DeadlockError,
        "AIC finished without reaching it",
        "pl.system.syncall()",
    ),
    Bad(
        "cube-sync-on-the-lanes",
        gm("""\
            for lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
                pl.store(pl.load(x, [lane * 32, 0], [32, 64]), [lane * 32, 0], out)
                pl.system.syncall(core_type="aic")  # <-
            """),
        BarrierError,
        'pl.system.syncall(core_type="aic") reached on AIV0, which that barrier does not count',
        'pl.system.syncall(core_type="aic")',
    ),
    Bad(
        "invalidate-a-region-outside-the-tensor",
        run_time(
            """\
            pl.system.cacheinvalid(x, [v, 0], [16, 64])  # <-
            pl.store(pl.load(x, [0, 0], [16, 64]), [0, 0], out)
            """,
            values="ints(56)",
        ),
        OutOfBoundsError,
        "pl.system.cacheinvalid: region [56:72] is outside dim 0 of size 64 (offsets [56, 0])",
        "pl.system.cacheinvalid(x, [v, 0], [16, 64])",
    ),
    # ------------------------------------------------------------------ the task graph
    Bad(
        "no-dep-args-removes-a-read-after-write",
        graph("""\
            scratch = pl.create_tensor([64, 64], pl.FP32)
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="produce"):
                scratch[:] = pl.exp(x)  # <-
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="consume", no_dep_args=[scratch]):
                out[:] = pl.add(scratch, x)
            """),
        RaceError,
        "tracking of scratch is off for task 2 (no_dep_args=, pl.no_dep, a manual_dep=True tensor or "
        "pl.manual_scope())",
        "scratch[:]",
    ),
    Bad(
        "no-dep-args-removes-a-write-after-read",
        graph("""\
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="reader"):
                out[:] = pl.exp(x)
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="writer", no_dep_args=[x]):
                x[:] = pl.mul(y, 2.0)  # <-
            """),
        RaceError,
        "task 2 (kernel writer at",
        "x[:]",
    ),
    Bad(
        "no-dep-args-over-overlapping-writes",
        graph("""\
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="top"):
                out[0:40, :] = pl.exp(x[0:40, :])
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="bottom", no_dep_args=[out]):
                out[32:64, :] = pl.exp(x[32:64, :])  # <-
            """),
        RaceError,
        "writes out[32:40, 0:64] at",
        "out[32:64, :]",
    ),
    Bad(
        "manual-dep-tensor-without-deps",
        graph("""\
            scratch = pl.create_tensor([64, 64], pl.FP32, manual_dep=True)
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="produce"):
                scratch[:] = pl.exp(x)  # <-
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="consume"):
                out[:] = pl.add(scratch, x)
            """),
        RaceError,
        "task 1 (kernel produce at",
        "scratch[:]",
    ),
    Bad(
        "manual-scope-without-deps",
        graph("""\
            scratch = pl.create_tensor([64, 64], pl.FP32)
            with pl.manual_scope():
                with pl.at(level=pl.Level.CORE_GROUP, name_hint="produce"):
                    scratch[:] = pl.exp(x)  # <-
                with pl.at(level=pl.Level.CORE_GROUP, name_hint="consume"):
                    out[:] = pl.add(scratch, x)
            """),
        RaceError,
        "but no dependency orders the two tasks",
        "scratch[:]",
    ),
    Bad(
        "manual-scope-around-a-helper",
        graph(
            """\
            scratch = pl.create_tensor([64, 64], pl.FP32)
            with pl.manual_scope():
                exp_into(x, scratch)
                with pl.at(level=pl.Level.CORE_GROUP, name_hint="consume"):
                    out[:] = pl.add(scratch, x)
            """
        ).replace("# the helper's write", MARK),
        RaceError,
        "task 1 (kernel exp_into at",
        "dst[:]",
    ),
    Bad(
        "parallel-iterations-write-one-region",
        graph("""\
            for i in pl.parallel(4):
                with pl.at(level=pl.Level.CORE_GROUP, name_hint="rows"):
                    out[0:16, :] = pl.exp(x[i * 16 : i * 16 + 16, :])  # <-
            """),
        RaceError,
        "they are iterations of one pl.parallel loop, which asserts they are independent",
        "out[0:16, :]",
    ),
    Bad(
        "parallel-iterations-accumulate",
        graph("""\
            acc = pl.create_tensor([64, 64], pl.FP32)
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="zero"):
                acc[:] = pl.mul(x, 0.0)
            for i in pl.parallel(3):
                with pl.at(level=pl.Level.CORE_GROUP, name_hint="step"):
                    acc[:] = pl.add(acc, x)  # <-
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="copy"):
                out[:] = pl.add(acc, x)
            """),
        RaceError,
        "they are iterations of one pl.parallel loop",
        "acc[:]",
    ),
    Bad(
        "spmd-blocks-write-one-region",
        graph("""\
            for i in pl.spmd(4):
                with pl.at(level=pl.Level.CORE_GROUP, name_hint="rows"):
                    out[0:16, :] = pl.exp(x[i * 16 : i * 16 + 16, :])  # <-
            """),
        RaceError,
        "blocks of one pl.spmd launch run unordered",
        "out[0:16, :]",
    ),
    Bad(
        "spmd-blocks-past-the-tensor",
        graph("""\
            for i in pl.spmd(8):
                with pl.at(level=pl.Level.CORE_GROUP, name_hint="rows"):
                    out[i * 16 : i * 16 + 16, :] = pl.exp(x[i * 16 : i * 16 + 16, :])  # <-
            """),
        OutOfBoundsError,
        "pl.load: region [64:80] is outside dim 0 of size 64 (offsets [64, 0])",
        "x[i * 16 : i * 16 + 16, :]",
    ),
    Bad(
        "spmd-of-a-zero-count",
        graph(
            """\
            for i in pl.spmd(n):  # <-
                with pl.at(level=pl.Level.CORE_GROUP, name_hint="rows"):
                    out[i * 16 : i * 16 + 16, :] = pl.exp(x[i * 16 : i * 16 + 16, :])
            """,
            signature="x: T, n: pl.Scalar[pl.INDEX], out: pl.Out[T]",
            call="k(f32(), 0, zeros())",
        ),
        ParseError,
        "pl.spmd() takes a positive int core count, got 0",
        "n",
    ),
    Bad(
        "spmd-index-outside-its-scopes",
        graph("""\
            for i in pl.spmd(4):
                j = i + 1  # <-
                with pl.at(level=pl.Level.CORE_GROUP, name_hint="rows"):
                    out[i * 16 : i * 16 + 16, :] = pl.exp(x[i * 16 : i * 16 + 16, :])
            """),
        ParseError,
        "'i' is the block index of pl.spmd: it exists inside the pl.at scopes of the loop",
        "i",
    ),
    Bad(
        "deps-of-a-tensor",
        graph("""\
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="a", deps=[y]):  # <-
                out[:] = pl.exp(x)
            """),
        ParseError,
        "deps= entries must be a TaskId variable (or a pl.TASK_ID array, or one of its elements), got "
        "Tensor[[64, 64], FP32]",
        "y",
    ),
    Bad(
        "deps-of-a-number",
        graph("""\
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="a", deps=[3]):  # <-
                out[:] = pl.exp(x)
            """),
        ParseError,
        "deps= entries must be a TaskId variable (or a pl.TASK_ID array, or one of its elements), got "
        "the int 3",
        "3",
    ),
    Bad(
        "deps-of-a-task-from-a-finished-loop",
        graph("""\
            for i in pl.range(2):
                with pl.at(level=pl.Level.CORE_GROUP, name_hint="a") as tid:
                    out[:] = pl.exp(x)
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="b", deps=[tid]):  # <-
                out[:] = pl.exp(y)
            """),
        ParseError,
        "'tid' is defined inside a loop (line",
        "tid",
    ),
    Bad(
        "task-id-as-a-tensor",
        graph("""\
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="a") as tid:
                out[:] = pl.exp(x)
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="b"):
                out[:] = pl.add(tid, x)  # <-
            """),
        TypeCheckError,
        "pl.add: a task id (pl.TASK_ID) names a task; it is no number or element to compute with",
        "pl.add(tid, x)",
    ),
    # ------------------------------------------------------------------ run-time values
    Bad(
        "load-at-a-run-time-offset-past-the-end",
        run_time("pl.store(pl.load(x, [v, 0], [16, 64]), [0, 0], out)  # <-", values="ints(56)"),
        OutOfBoundsError,
        "pl.load: region [56:72] is outside dim 0 of size 64 (offsets [56, 0])",
        "pl.load(x, [v, 0], [16, 64])",
    ),
    Bad(
        "load-at-a-negative-run-time-offset",
        run_time("pl.store(pl.load(x, [v, 0], [16, 64]), [0, 0], out)  # <-", values="ints(-8)"),
        OutOfBoundsError,
        "pl.load: region [-8:8] is outside dim 0 of size 64 (offsets [-8, 0])",
        "pl.load(x, [v, 0], [16, 64])",
    ),
    Bad(
        "store-at-a-run-time-offset-past-the-end",
        run_time("pl.store(pl.load(x, [0, 0], [16, 64]), [v, 0], out)  # <-", values="ints(60)"),
        OutOfBoundsError,
        "pl.store: region [60:76] is outside dim 0 of size 64 (offsets [60, 0])",
        "pl.store(pl.load(x, [0, 0], [16, 64]), [v, 0], out)",
    ),
    Bad(
        "subscript-at-a-run-time-offset-past-the-end",
        run_time("out[0:16, :] = x[v : v + 16, :]  # <-", values="ints(60)"),
        OutOfBoundsError,
        "region [60:76] is outside dim 0 of size 64 (offsets [60, 0])",
        "x[v : v + 16, :]",
    ),
    Bad(
        "run-time-offset-past-the-end-in-a-branch",
        run_time(
            """\
            if v > 3:
                pl.store(pl.load(x, [v, 0], [16, 64]), [0, 0], out)  # <-
            """,
            values="ints(60)",
        ),
        OutOfBoundsError,
        "pl.load: region [60:76] is outside dim 0 of size 64",
        "pl.load(x, [v, 0], [16, 64])",
    ),
    Bad(
        "run-time-loop-bound-past-the-end",
        run_time(
            """\
            for i in pl.range(v):
                pl.store(pl.load(x, [i, 0], [1, 64]), [i, 0], out)  # <-
            """,
            values="ints(65)",
        ),
        OutOfBoundsError,
        "pl.load: region [64:65] is outside dim 0 of size 64 (offsets [64, 0])",
        "pl.load(x, [i, 0], [1, 64])",
    ),
    Bad(
        "run-time-offset-of-a-huge-product",
        run_time(
            "pl.store(pl.load(x, [0, 0], [16, 64]), [v * 1000000000000, 0], out)  # <-", values="ints(5)"
        ),
        OutOfBoundsError,
        "pl.store: region [5000000000000:5000000000016] is outside dim 0 of size 64",
        "pl.store(pl.load(x, [0, 0], [16, 64]), [v * 1000000000000, 0], out)",
    ),
    Bad(
        "run-time-valid-shape-larger-than-the-tile",
        run_time(
            """\
            t = pl.load(x, [0, 0], [16, 64], valid_shape=[v, 64])  # <-
            pl.store(t, [0, 0], out)
            """,
            values="ints(32)",
        ),
        OutOfBoundsError,
        "pl.load: valid_shape [32, 64] leaves the tile's [16, 64] in dim 0",
        "pl.load(x, [0, 0], [16, 64], valid_shape=[v, 64])",
    ),
    Bad(
        "run-time-valid-shape-negative",
        run_time(
            """\
            t = pl.load(x, [0, 0], [16, 64], valid_shape=[v, 64])  # <-
            pl.store(t, [0, 0], out)
            """,
            values="ints(-1)",
        ),
        OutOfBoundsError,
        "pl.load: valid_shape [-1, 64] leaves the tile's [16, 64] in dim 0",
        "pl.load(x, [0, 0], [16, 64], valid_shape=[v, 64])",
    ),
    Bad(
        "partial-store-past-the-end",
        run_time(
            """\
            t = pl.load(x, [0, 0], [16, 64], valid_shape=[v, 64])
            pl.store(t, [56, 0], out)  # <-
            """,
            values="ints(16)",
        ),
        OutOfBoundsError,
        "pl.store: region [56:72] is outside dim 0 of size 64 (offsets [56, 0])",
        "pl.store(t, [56, 0], out)",
    ),
    Bad(
        "scalar-floor-division-by-a-run-time-zero",
        run_time(
            """\
            w = 64 // v  # <-
            pl.store(pl.load(x, [0, 0], [16, 64]), [w, 0], out)
            """
        ),
        DivisionByZeroError,
        "64 // 0: division by zero (v is 0 at run time)",
        "64 // v",
    ),
    Bad(
        "scalar-modulo-by-a-run-time-zero",
        run_time(
            """\
            w = 64 % v  # <-
            pl.store(pl.load(x, [0, 0], [16, 64]), [w, 0], out)
            """
        ),
        DivisionByZeroError,
        "64 % 0: division by zero (v is 0 at run time)",
        "64 % v",
    ),
    Bad(
        "integer-tile-divided-by-a-run-time-zero",
        run_time("pl.store(pl.div(pl.load(xi, [0, 0], [16, 64]), pl.read(r, [0])), [0, 0], outi)  # <-"),
        DivisionByZeroError,
        "pl.div: integer division by zero",
        "pl.div(pl.load(xi, [0, 0], [16, 64]), pl.read(r, [0]))",
    ),
    Bad(
        "integer-tile-divided-by-a-tile-of-zeros",
        run_time(
            """\
            t = pl.load(xi, [0, 0], [16, 64])
            pl.store(pl.div(t, pl.sub(t, t)), [0, 0], outi)  # <-
            """
        ),
        DivisionByZeroError,
        "pl.div: integer division by zero",
        "pl.div(t, pl.sub(t, t))",
    ),
    Bad(
        "run-time-loop-step-of-zero",
        run_time(
            """\
            for i in pl.range(0, 64, v):  # <-
                pl.store(pl.load(x, [i, 0], [1, 64]), [i, 0], out)
            """
        ),
        LoopStepError,
        "pl.range over i would never end: its step, the value of v from",
        "for i in pl.range(0, 64, v)",
    ),
    Bad(
        "run-time-scalar-beyond-an-int8-tile",
        run_time(
            "pl.store(pl.add(pl.load(x8, [0, 0], [16, 64]), pl.read(r, [0])), [0, 0], out8)  # <-",
            values="ints(300)",
        ),
        ScalarRangeError,
        "pl.add: the scalar 300 does not fit torch.int8 elements, whose range is [-128, 127]",
        "pl.add(pl.load(x8, [0, 0], [16, 64]), pl.read(r, [0]))",
    ),
    Bad(
        "run-time-scalar-below-an-int8-tile",
        run_time(
            "pl.store(pl.mul(pl.load(x8, [0, 0], [16, 64]), pl.read(r, [0])), [0, 0], out8)  # <-",
            values="ints(-129)",
        ),
        ScalarRangeError,
        "pl.mul: the scalar -129 does not fit torch.int8 elements",
        "pl.mul(pl.load(x8, [0, 0], [16, 64]), pl.read(r, [0]))",
    ),
    Bad(
        "run-time-fill-value-beyond-int8",
        run_time(
            "pl.store(pl.full([16, 64], pl.INT8, pl.read(r, [0])), [0, 0], out8)  # <-", values="ints(1000)"
        ),
        ScalarRangeError,
        "pl.full: the scalar 1000 does not fit torch.int8 elements",
        "pl.full([16, 64], pl.INT8, pl.read(r, [0]))",
    ),
    Bad(
        "read-past-the-end-of-a-tensor",
        run_time(
            """\
            w = pl.read(r, [v])  # <-
            pl.store(pl.load(x, [pl.cast(w, pl.INDEX), 0], [16, 64]), [0, 0], out)
            """,
            values="ints(7)",
        ),
        OutOfBoundsError,
        "pl.read: region [7:8] is outside dim 0 of size 4 (offsets [7])",
        "pl.read(r, [v])",
    ),
    Bad(
        "read-at-a-negative-index",
        run_time(
            """\
            w = pl.read(r, [v])  # <-
            pl.store(pl.load(x, [pl.cast(w, pl.INDEX), 0], [16, 64]), [0, 0], out)
            """,
            values="ints(-1)",
        ),
        OutOfBoundsError,
        "pl.read: region [-1:0] is outside dim 0 of size 4 (offsets [-1])",
        "pl.read(r, [v])",
    ),
    Bad(
        "read-of-a-matrix-past-its-rows",
        run_time(
            """\
            w = pl.read(x, [v, 0])  # <-
            pl.store(pl.mul(pl.load(x, [0, 0], [16, 64]), w), [0, 0], out)
            """,
            values="ints(64)",
        ),
        OutOfBoundsError,
        "pl.read: region [64:65] is outside dim 0 of size 64 (offsets [64, 0])",
        "pl.read(x, [v, 0])",
    ),
    Bad(
        "nan-used-as-an-offset",
        run_time(
            """\
            w = pl.cast(pl.read(rf, [0]), pl.INDEX)  # <-
            pl.store(pl.load(x, [w, 0], [16, 64]), [0, 0], out)
            """,
            floats_="floats(float('nan'))",
        ),
        ScalarRangeError,
        "pl.cast: nan has no pl.INDEX value",
        "pl.cast(pl.read(rf, [0]), pl.INDEX)",
    ),
    # ------------------------------------------------------------------ torch tensors and call arguments
    Bad(
        "meta-tensor-for-an-input",
        called('k(torch.zeros(64, 64, device="meta"), 1, zeros())'),
        SpecializationError,
        "argument 'x' is a meta tensor, which holds no data to run on",
        "x: T",
    ),
    Bad(
        "meta-tensor-for-an-output",
        called('k(f32(), 1, torch.zeros(64, 64, device="meta"))'),
        SpecializationError,
        "argument 'out' is a meta tensor, which holds no data to run on",
        "out: pl.Out[T]",
    ),
    Bad(
        "expanded-output",
        called("k(f32(), 1, torch.zeros(1, 64).expand(64, 64))"),
        SpecializationError,
        "argument 'out' is not contiguous (strides [0, 1]) (a stride-0 expand()",
        "out: pl.Out[T]",
    ),
    Bad(
        "transposed-output",
        called("k(f32(), 1, zeros().t())"),
        SpecializationError,
        "argument 'out' is not contiguous (strides [1, 64])",
        "out: pl.Out[T]",
    ),
    Bad(
        "column-slice-as-output",
        called("k(f32(), 1, torch.zeros(64, 128)[:, :64])"),
        SpecializationError,
        "argument 'out' is not contiguous (strides [128, 1])",
        "out: pl.Out[T]",
    ),
    Bad(
        "output-that-requires-grad",
        called("k(f32(), 1, torch.zeros(64, 64, requires_grad=True))"),
        SpecializationError,
        "argument 'out' requires grad, but the kernel writes it in place",
        "out: pl.Out[T]",
    ),
    Bad(
        "parameter-as-output",
        called("k(f32(), 1, torch.nn.Parameter(zeros()))"),
        SpecializationError,
        "argument 'out' requires grad",
        "out: pl.Out[T]",
    ),
    Bad(
        "input-of-the-wrong-dtype",
        called("k(f16(), 1, zeros())"),
        SpecializationError,
        "argument 'x' has dtype torch.float16, but parameter 'x' is annotated pl.Tensor[[64, 64], pl.FP32]",
        "x: T",
    ),
    Bad(
        "output-of-the-wrong-dtype",
        called("k(f32(), 1, zeros(dtype=torch.int32))"),
        SpecializationError,
        "argument 'out' has dtype torch.int32, but parameter 'out' is annotated pl.Out[pl.Tensor[[64, 64], pl.FP32]]",
        "out: pl.Out[T]",
    ),
    Bad(
        "input-of-the-wrong-shape",
        called("k(f32(32, 64), 1, zeros())"),
        SpecializationError,
        "argument 'x' has shape [32, 64], but parameter 'x' is annotated pl.Tensor[[64, 64], pl.FP32]",
        "x: T",
    ),
    Bad(
        "input-of-the-wrong-rank",
        called("k(torch.randn(64, 64, 1), 1, zeros())"),
        SpecializationError,
        "argument 'x' has shape [64, 64, 1]",
        "x: T",
    ),
    Bad(
        "bare-output-smaller-than-the-written-value",
        called("bare(f32(), zeros(32, 64))", mark_def=False).replace(
            '    with pl.at(level=pl.Level.CORE_GROUP, name_hint="bare"):\n        out[:] = pl.mul(x, 2.0)',
            '    with pl.at(level=pl.Level.CORE_GROUP, name_hint="bare"):\n        out[:] = pl.mul(x, 2.0)  # <-',
        ),
        TypeCheckError,
        "out[:] = ...: the region [0:32] of dim 0 holds 32 elements but the value has 64",
        "out[:]",
    ),
    Bad(
        "bare-tensors-with-rows-too-wide-for-vec",
        called("bare(torch.ones(1, 100000), torch.zeros(1, 100000))", mark_def=False).replace(
            'with pl.at(level=pl.Level.CORE_GROUP, name_hint="bare"):',
            'with pl.at(level=pl.Level.CORE_GROUP, name_hint="bare"):  # <-',
        ),
        MemoryBudgetError,
        "Vec buffer usage (400000 bytes) exceeds platform limit (188416 bytes)",
        'pl.at(level=pl.Level.CORE_GROUP, name_hint="bare")',
    ),
    Bad(
        "float64-input",
        called("k(torch.randn(64, 64, dtype=torch.float64), 1, zeros())"),
        UnsupportedDtypeError,
        "argument 'x' has dtype torch.float64, which PyPTO does not support",
        "x: T",
    ),
    Bad(
        "sparse-input",
        called("k(f32().to_sparse(), 1, zeros())"),
        SpecializationError,
        "argument 'x' has layout torch.sparse_coo; kernels take dense tensors",
        "x: T",
    ),
    Bad(
        "numpy-array-for-a-tensor",
        called("k(np.zeros((64, 64), dtype=np.float32), 1, zeros())"),
        SpecializationError,
        "argument 'x' must be a torch.Tensor, got a numpy.ndarray (a numpy array: convert it with torch.from_numpy(x))",
        "x: T",
    ),
    Bad(
        "number-for-a-tensor",
        called("k(1.0, 1, zeros())"),
        SpecializationError,
        "argument 'x' must be a torch.Tensor, got the float 1.0",
        "x: T",
    ),
    Bad(
        "nested-list-for-a-tensor",
        called("k([[1.0] * 64] * 64, 1, zeros())"),
        SpecializationError,
        "argument 'x' must be a torch.Tensor, got a list",
        "x: T",
    ),
    Bad(
        "tensor-for-a-scalar",
        called("k(f32(), torch.tensor(3), zeros())"),
        SpecializationError,
        "argument 'n' must be a Python number for pl.Scalar[pl.INT32], got a torch.Tensor (pass tensor.item()",
        "n: pl.Scalar[pl.INT32]",
    ),
    Bad(
        "numpy-scalar-for-a-scalar",
        called("k(f32(), np.int32(3), zeros())"),
        SpecializationError,
        "argument 'n' must be a Python number for pl.Scalar[pl.INT32], got a numpy.int32",
        "n: pl.Scalar[pl.INT32]",
    ),
    Bad(
        "fraction-for-an-integer-scalar",
        called("k(f32(), 2.5, zeros())"),
        SpecializationError,
        "argument 'n' must be an integer for pl.INT32, got 2.5",
        "n: pl.Scalar[pl.INT32]",
    ),
    Bad(
        "scalar-beyond-its-dtype",
        called("k(f32(), 2**40, zeros())"),
        SpecializationError,
        "argument 'n' is 1099511627776, outside the range",
        "n: pl.Scalar[pl.INT32]",
    ),
    Bad(
        "zero-dimensional-tensor",
        called("k(torch.tensor(1.0), 1, zeros())"),
        SpecializationError,
        "argument 'x' is a 0-dimensional tensor",
        "x: T",
    ),
    Bad(
        "empty-tensor",
        called("bare(torch.zeros(0, 64), torch.zeros(0, 64))", mark_def=False).replace(
            "def bare(x: pl.Tensor, out: pl.Out[pl.Tensor]):",
            "def bare(x: pl.Tensor, out: pl.Out[pl.Tensor]):  # <-",
        ),
        SpecializationError,
        "argument 'x' is an empty tensor of shape [0, 64]",
        "x: pl.Tensor",
    ),
    Bad(
        "missing-argument",
        called("k(f32(), 1)"),
        SpecializationError,
        "k(): missing a required argument: 'out'",
        "out: pl.Out[T]",
    ),
    Bad(
        "unknown-keyword-argument",
        called("k(f32(), 1, zeros(), y=3)  # <-", mark_def=False),
        SpecializationError,
        "k(): got an unexpected keyword argument 'y'",
        "k(f32(), 1, zeros(), y=3)",
    ),
    # ------------------------------------------------------------------ RunConfig and [tool.pypto]
    Bad(
        "config-a-platform-name",
        called('k(f32(), 1, zeros(), config="a2a3sim")  # <-', mark_def=False),
        RunConfigError,
        "config= takes a RunConfig, got str 'a2a3sim'",
        'k(f32(), 1, zeros(), config="a2a3sim")',
    ),
    Bad(
        "config-a-dict",
        called('k(f32(), 1, zeros(), config={"platform": "a2a3sim"})  # <-', mark_def=False),
        RunConfigError,
        "config= takes a RunConfig, got dict {'platform': 'a2a3sim'}",
        'k(f32(), 1, zeros(), config={"platform": "a2a3sim"})',
    ),
    Bad(
        "run-config-of-an-unknown-platform",
        called('k(f32(), 1, zeros(), config=RunConfig(platform="nosuch"))  # <-', mark_def=False),
        PlatformError,
        "unknown platform 'nosuch' (from RunConfig(platform=...)); registered platforms: a2a3, a2a3sim",
        'RunConfig(platform="nosuch")',
    ),
    Bad(
        "run-config-platform-not-a-name",
        called("k(f32(), 1, zeros(), config=RunConfig(platform=3))  # <-", mark_def=False),
        ConfigError,
        "RunConfig.platform must be a platform name, got 3",
        "RunConfig(platform=3)",
    ),
    Bad(
        "run-config-profile-dir-in-a-file",
        called("k(f32(), 1, zeros(), config=RunConfig(profile_dir=__file__))  # <-", mark_def=False),
        ConfigError,
        "(from RunConfig(profile_dir=...)): ",
        "RunConfig(profile_dir=__file__)",
    ),
    Bad(
        "run-config-dump-passes-into-a-file",
        called("k(f32(), 1, zeros(), config=RunConfig(dump_passes=__file__))  # <-", mark_def=False),
        ConfigError,
        "cannot write pass dumps to",
        "RunConfig(dump_passes=__file__)",
    ),
    Bad(
        "run-config-tolerance-a-string",
        called('k(f32(), 1, zeros(), config=RunConfig(rtol="1e-3"))  # <-', mark_def=False),
        ConfigError,
        "RunConfig.rtol takes a number, got str '1e-3'",
        'RunConfig(rtol="1e-3")',
    ),
    Bad(
        "run-config-options-not-a-dict",
        called('k(f32(), 1, zeros(), config=RunConfig(options=["verify"]))  # <-', mark_def=False),
        ConfigError,
        "RunConfig.options takes a dict of option names to values, got list ['verify']",
        'RunConfig(options=["verify"])',
    ),
    Bad(
        "run-config-unknown-pass",
        called('k(f32(), 1, zeros(), config=RunConfig(pipeline=["OutlineScope"]))  # <-', mark_def=False),
        ConfigError,
        "RunConfig.pipeline names unknown pass(es) 'OutlineScope'; passes: OutlineScopes",
        'RunConfig(pipeline=["OutlineScope"])',
    ),
    Bad(
        "run-config-pipeline-not-a-string",
        called('k(f32(), 1, zeros(), config=RunConfig(pipeline=("OutlineScopes", 3)))  # <-', mark_def=False),
        ConfigError,
        "RunConfig.pipeline takes a pipeline string or a list of pass names, got tuple ('OutlineScopes', 3)",
        'RunConfig(pipeline=("OutlineScopes", 3))',
    ),
    Bad(
        "run-config-pipeline-string-unknown-pass",
        called(
            f'k(f32(), 1, zeros(), config=RunConfig(pipeline="{_pipeline("tile-matmull")}"))  # <-',
            mark_def=False,
        ),
        ConfigError,
        "RunConfig.pipeline: unknown pass 'tile-matmull'; known passes: OutlineScopes (outline-scopes), ",
        "tile-matmull",
    ),
    Bad(
        "run-config-pipeline-string-unknown-option",
        called(
            f'k(f32(), 1, zeros(), config=RunConfig(pipeline="{_pipeline("tile-matmul{k_blok=32}")}"))  # <-',
            mark_def=False,
        ),
        ConfigError,
        "RunConfig.pipeline: pass 'tile-matmul' has no option 'k_blok'; its options: k_block: int | None = none, columns: int | None = none",
        "k_blok",
    ),
    Bad(
        "run-config-pipeline-string-bad-value",
        called(
            f'k(f32(), 1, zeros(), config=RunConfig(pipeline="{_pipeline("tile-matmul{k_block=big}")}"))  # <-',
            mark_def=False,
        ),
        ConfigError,
        "RunConfig.pipeline: option k_block of 'tile-matmul' takes an integer >= 1 (or none), got 'big'",
        "big",
    ),
    Bad(
        "run-config-pipeline-string-unbalanced-brace",
        called(
            f'k(f32(), 1, zeros(), config=RunConfig(pipeline="{_pipeline("task-deps{")}"))  # <-',
            mark_def=False,
        ),
        ConfigError,
        "RunConfig.pipeline: unbalanced '{': the options of 'task-deps' are never closed",
        "{",
    ),
    Bad(
        "run-config-pipeline-string-on-a-later-line",
        called(
            f'k(\n    f32(), 1, zeros(),\n    config=RunConfig(\n        platform="a2a3sim", pipeline="{_pipeline("allocate")},frobnicate"  # <-\n    ),\n)',
            mark_def=False,
        ),
        ConfigError,
        "RunConfig.pipeline: unknown pass 'frobnicate'",
        "frobnicate",
    ),
    Bad(
        "run-config-pipeline-string-that-stops-early",
        called('k(f32(), 1, zeros(), config=RunConfig(pipeline="outline-scopes"))', mark_def=False).replace(
            'with pl.at(level=pl.Level.CORE_GROUP, name_hint="double"):',
            'with pl.at(level=pl.Level.CORE_GROUP, name_hint="double"):  # <-',
        ),
        ConfigError,
        "a2a3sim cannot run what RunConfig(pipeline='outline-scopes') left of the program",
        'pl.at(level=pl.Level.CORE_GROUP, name_hint="double")',
    ),
    Bad(
        "run-config-pipeline-that-stops-early",
        called('k(f32(), 1, zeros(), config=RunConfig(pipeline=["OutlineScopes"]))', mark_def=False).replace(
            'with pl.at(level=pl.Level.CORE_GROUP, name_hint="double"):',
            'with pl.at(level=pl.Level.CORE_GROUP, name_hint="double"):  # <-',
        ),
        ConfigError,
        "a2a3sim cannot run what RunConfig(pipeline=['OutlineScopes']) left of the program",
        'pl.at(level=pl.Level.CORE_GROUP, name_hint="double")',
    ),
    Bad(
        "unknown-platform-in-pyproject",
        called("k(f32(), 1, zeros())", mark_def=False),
        PlatformError,
        "unknown platform 'nosuch' (from [tool.pypto] platform in",
        '"nosuch"',
        pyproject="""\
            [tool.pypto]
            platform = "nosuch"  # <-
            """,
    ),
    Bad(
        "unknown-setting-in-pyproject",
        called("k(f32(), 1, zeros())", mark_def=False),
        ConfigError,
        "unknown setting 'platfrom' in [tool.pypto]",
        "platfrom",
        pyproject="""\
            [project]
            name = "mine"

            [tool.pypto]
            platfrom = "a2a3sim"  # <-
            """,
    ),
    Bad(
        "setting-of-the-wrong-type-in-pyproject",
        called("k(f32(), 1, zeros())", mark_def=False),
        ConfigError,
        "[tool.pypto] cache must be a bool, got 'yes'",
        '"yes"',
        pyproject="""\
            [tool.pypto]
            cache = "yes"  # <-
            """,
    ),
    Bad(
        "empty-platform-in-pyproject",
        called("k(f32(), 1, zeros())", mark_def=False),
        ConfigError,
        "[tool.pypto] platform is empty",
        '""',
        pyproject="""\
            [tool.pypto]
            platform = ""  # <-
            """,
    ),
    Bad(
        "toml-syntax-error-in-pyproject",
        called("k(f32(), 1, zeros())", mark_def=False),
        ConfigError,
        "is not valid TOML: Invalid value",
        "a",
        pyproject="""\
            [tool.pypto]
            platform = a2a3sim  # <-
            """,
    ),
    Bad(
        "tool-pypto-not-a-table-in-pyproject",
        called("k(f32(), 1, zeros())", mark_def=False),
        ConfigError,
        "[tool.pypto] must be a table of settings, got 3",
        "3",
        pyproject="""\
            [tool]
            pypto = 3  # <-
            """,
    ),
    Bad(
        "profile-dir-in-pyproject-names-a-file",
        called("k(f32(), 1, zeros(), config=RunConfig(enable_profiling=True))", mark_def=False),
        ConfigError,
        "(from [tool.pypto] profile-dir in",
        '"pyproject.toml"',
        pyproject="""\
            [tool.pypto]
            profile-dir = "pyproject.toml"  # <-
            """,
    ),
]


# Rows rewritten as their hint says, (old, new) in the module or the pyproject.toml: each must then
# run clean. A hint that suggests something that also fails is a bug too.
FIXES: dict[str, tuple[tuple[str, str], ...]] = {
    "ring-too-deep-for-vec": (("cross_core_slot(slot_num=4)", "cross_core_slot(slot_num=2)"),),
    "explicit-ring-too-deep-for-vec": (("slot_num=4)", "slot_num=2)"),),
    "cross-core-slot-on-a-hand-made-pipe": (
        ("optimizations=[pl.cross_core_slot(slot_num=4)]", 'name_hint="mm"'),
        (C2V_INIT, "dir_mask=1, slot_size=8192, slot_num=4"),
    ),
    "cross-core-slot-beyond-the-hardware": (("slot_num=9", "slot_num=8"),),
    "cross-core-slot-beyond-the-hardware-both-ways": (("slot_num=5", "slot_num=4"),),
    "pipe-slot-num-beyond-the-hardware": (("slot_num=9", "slot_num=8"),),
    "pipe-slot-num-beyond-the-hardware-both-ways": (("slot_num=5", "slot_num=4"),),
    "pipe-slot-size-misaligned": (("slot_size=8200", "slot_size=8224"),),
    "tile-bigger-than-a-slot": (("slot_size=4096", "slot_size=8192"),),
    "push-without-setup": (
        ("    a_l1 = pl.load(a,", f"    pl.aic_initialize_pipe({C2V_INIT})\n        a_l1 = pl.load(a,"),
    ),
    "setup-differs-in-slot-size": (("slot_size=16384", "slot_size=8192"),),
    "setup-differs-in-direction": (("dir_mask=3", "dir_mask=1"),),
    "setup-differs-in-depth": (("slot_num=4", "slot_num=2"),),
    "pop-a-smaller-shape-than-pushed": (("shape=[16, 64]", "shape=[32, 64]"),),
    "pop-another-dtype-than-pushed": (("dtype=pl.FP16", "dtype=pl.FP32"), ("pl.cast(t, pl.FP32)", "t")),
    "pop-another-split-than-pushed": (("split=pl.SplitMode.LEFT_RIGHT", "split=pl.SplitMode.UP_DOWN"),),
    "free-twice": (("pl.tfree_to_aic(t)\n            pl.tfree_to_aic(t)", "pl.tfree_to_aic(t)"),),
    "free-a-loaded-tile": (("            pl.tfree_to_aic(u)  # <-\n", ""),),
    "use-after-free": (
        ("            pl.tfree_to_aic(first)\n", ""),
        ("[lane * 32, 0], out)  # <-", "[lane * 32, 0], out)\n            pl.tfree_to_aic(first)"),
    ),
    "missing-tfree": (
        (
            "pl.store(t, [j * 64 + lane * 32, 0], out)",
            "pl.store(t, [j * 64 + lane * 32, 0], out)\n                pl.tfree_to_aic(t)",
        ),
    ),
    "more-pops-than-pushes": (("pl.range(5)", "pl.range(4)"),),
    "gather-lanes-push-different-splits": (("split=pl.SplitMode.LEFT_RIGHT", "split=pl.SplitMode.UP_DOWN"),),
    "gather-read-after-its-free": (
        ("        pl.tfree_to_aiv(g)\n", ""),
        ("pl.store(acc, [0, 0], out)", "pl.tfree_to_aiv(g)\n        pl.store(acc, [0, 0], out)"),
    ),
    "lanes-of-a-region-store-one-place": (("[32, 64])), [0, 0], out)", "[32, 64])), [lane * 32, 0], out)"),),
    "split-rejects-col-sum-across-rows": (("pl.SplitMode.UP_DOWN", "pl.SplitMode.LEFT_RIGHT"),),
    "split-rejects-row-sum-across-columns": (("pl.SplitMode.LEFT_RIGHT", "pl.SplitMode.UP_DOWN"),),
    "split-rejects-a-view": (("pl.split(pl.SplitMode.UP_DOWN)", "pl.split(pl.SplitMode.NONE)"),),
    "split-of-one-row": (("pl.SplitMode.UP_DOWN", "pl.SplitMode.LEFT_RIGHT"),),
    "read-after-write-not-published": (
        ("    pl.system.fence()", "    pl.system.cacheinvalid()\n        pl.system.fence()"),
    ),
    "read-after-write-not-fenced": (
        (
            "        pl.system.syncall()\n        for",
            "        pl.system.fence()\n        pl.system.syncall()\n        for",
        ),
    ),
    "read-after-write-not-invalidated": (
        (
            "            pl.system.syncall()\n",
            "            pl.system.syncall()\n            pl.system.cacheinvalid()\n",
        ),
    ),
    "read-after-write-lanes-to-cube": (
        (
            "        pl.system.syncall()\n        s_l1",
            "        pl.system.syncall()\n        pl.system.cacheinvalid()\n        s_l1",
        ),
    ),
    "write-after-write-two-lanes": (
        ("pl.SplitMode.NONE", "pl.SplitMode.UP_DOWN"),
        (
            "pl.store(pl.load(x, [0, 0], [64, 64]), [0, 0], out)",
            "pl.store(pl.load(x, [lane * 32, 0], [32, 64]), [lane * 32, 0], out)",
        ),
    ),
    "write-after-write-barrier-without-publish": (
        (
            "pl.store(t, [0, 0], out)\n",
            "pl.store(t, [0, 0], out)\n                pl.system.cacheinvalid()\n                pl.system.fence()\n",
        ),
    ),
    "soft-sync-workspace-not-zeroed": (("workspace(1)", "workspace(0)"),),
    "soft-sync-counts-more-cores-than-the-launch-has": (("used_cores=5", "used_cores=3"),),
    "soft-and-hard-sync-meet": (
        ('pl.system.syncall(mode="soft", gm_workspace=ws, used_cores=3)', "pl.system.syncall()"),
    ),
    "hard-sync-one-lane-skips": (
        (
            'if lane == 0:\n                pl.system.syncall(core_type="aiv")',
            'pl.system.syncall(core_type="aiv")',
        ),
    ),
    "cube-sync-on-the-lanes": (('core_type="aic"', 'core_type="aiv"'),),
    "invalidate-a-region-outside-the-tensor": (("ints(56)", "ints(48)"),),
    "no-dep-args-removes-a-read-after-write": ((", no_dep_args=[scratch]", ""),),
    "no-dep-args-removes-a-write-after-read": ((", no_dep_args=[x]", ""),),
    "no-dep-args-over-overlapping-writes": (
        ("out[0:40, :] = pl.exp(x[0:40, :])", "out[0:32, :] = pl.exp(x[0:32, :])"),
    ),
    "manual-dep-tensor-without-deps": (
        ('name_hint="produce"):', 'name_hint="produce") as produced:'),
        ('name_hint="consume"):', 'name_hint="consume", deps=[produced]):'),
    ),
    "manual-scope-without-deps": (
        ('name_hint="produce"):', 'name_hint="produce") as produced:'),
        ('name_hint="consume"):', 'name_hint="consume", deps=[produced]):'),
    ),
    "parallel-iterations-write-one-region": (("out[0:16, :] =", "out[i * 16 : i * 16 + 16, :] ="),),
    "parallel-iterations-accumulate": (("pl.parallel(3)", "pl.range(3)"),),
    "spmd-blocks-write-one-region": (("out[0:16, :] =", "out[i * 16 : i * 16 + 16, :] ="),),
    "spmd-blocks-past-the-tensor": (("pl.spmd(8)", "pl.spmd(4)"),),
    "spmd-of-a-zero-count": (("k(f32(), 0, zeros())", "k(f32(), 4, zeros())"),),
    "load-at-a-run-time-offset-past-the-end": (("ints(56)", "ints(48)"),),
    "run-time-valid-shape-larger-than-the-tile": (("ints(32)", "ints(16)"),),
    "scalar-floor-division-by-a-run-time-zero": (
        ("    k(f32(), i32()", "    k(f32(), i32()"),
        ("ints()", "ints(2)"),
    ),
    "run-time-loop-step-of-zero": (("ints()", "ints(1)"),),
    "run-time-scalar-beyond-an-int8-tile": (("ints(300)", "ints(100)"),),
    "read-past-the-end-of-a-tensor": (("ints(7)", "ints(3)"),),
    "unknown-keyword-argument": ((", y=3)", ")"),),
    "config-a-platform-name": (('config="a2a3sim"', 'config=RunConfig(platform="a2a3sim")'),),
    "run-config-of-an-unknown-platform": (('platform="nosuch"', 'platform="a2a3sim"'),),
    "run-config-tolerance-a-string": (('rtol="1e-3"', "rtol=1e-3"),),
    "run-config-options-not-a-dict": (('options=["verify"]', 'options={"verify": True}'),),
    "run-config-unknown-pass": (('RunConfig(pipeline=["OutlineScope"])', "RunConfig(pipeline=None)"),),
    "run-config-pipeline-that-stops-early": (
        ('RunConfig(pipeline=["OutlineScopes"])', "RunConfig(pipeline=None)"),
    ),
    "run-config-pipeline-string-unknown-pass": (("tile-matmull", "tile-matmul"),),
    "run-config-pipeline-string-unknown-option": (("k_blok", "k_block"),),
    "run-config-pipeline-string-bad-value": (("k_block=big", "k_block=32"),),
    "run-config-pipeline-string-unbalanced-brace": (("task-deps{", "task-deps"),),
    "run-config-pipeline-string-on-a-later-line": ((",frobnicate", ""),),
    "run-config-pipeline-string-that-stops-early": (('pipeline="outline-scopes"', "pipeline=None"),),
    "unknown-platform-in-pyproject": (('"nosuch"', '"a2a3sim"'),),
    "unknown-setting-in-pyproject": (("platfrom", "platform"),),
    "setting-of-the-wrong-type-in-pyproject": (('cache = "yes"', "cache = true"),),
    "empty-platform-in-pyproject": (('platform = ""', 'platform = "a2a3sim"'),),
    "toml-syntax-error-in-pyproject": (("platform = a2a3sim", 'platform = "a2a3sim"'),),
    "profile-dir-in-pyproject-names-a-file": (('"pyproject.toml"', '"prof"'),),
}


def fixed(row: Bad) -> Bad:
    """``row`` with its fix applied to its module and pyproject.toml (each old text must occur)."""
    source, config = row.source, row.pyproject
    for old, new in FIXES[row.id]:
        assert old in source or (config is not None and old in config), f"{row.id}: {old!r} not found"
        source = source.replace(old, new)
        config = config.replace(old, new) if config is not None else None
    return replace(row, source=source, pyproject=config)


def _marked(text: str) -> list[int]:
    return [n for n, line in enumerate(text.splitlines(), 1) if line.rstrip().endswith(MARK)]


def _write(tmp_path: Path, row: Bad) -> tuple[Path, Path, int]:
    """The module file of one row, the file the error must point at (the module, or the row's
    pyproject.toml when that carries the marker) and the 1-based line that carries the marker."""
    text = HEADER + "\n\n" + row.source
    path = tmp_path / f"bad_input_{uuid.uuid4().hex}.py"
    path.write_text(text)
    marks = [(path, line) for line in _marked(text)]
    if row.pyproject is not None:
        config = tmp_path / "pyproject.toml"
        config.write_text(textwrap.dedent(row.pyproject))
        marks += [(config, line) for line in _marked(config.read_text())]
    assert len(marks) == 1, f"a row marks exactly one line, this one marks {marks}"
    return path, *marks[0]


class Hang(Exception):
    """The row ran past its time limit."""


@pytest.fixture
def time_limit() -> Iterator[None]:
    def expire(signum, frame):
        raise Hang(f"the row ran for more than {TIME_LIMIT} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(TIME_LIMIT)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture
def isolated(tmp_path, monkeypatch) -> Iterator[Path]:
    """A working directory of its own (no pyproject.toml above it that says anything), no PYPTO_*
    setting from outside, no disk cache, and a registry loaded afresh."""
    monkeypatch.chdir(tmp_path)
    for name in ("PYPTO_PLATFORM", "PYPTO_PROFILE", "PYPTO_LOAD_PLUGINS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PYPTO_CACHE", "off")
    reset_registry()
    yield tmp_path
    reset_registry()


def _run(path: Path) -> None:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CompileWarning)  # a missing tfree is warned, then run
        module.go()


def _failure(row: Bad, tmp_path: Path, monkeypatch) -> tuple[PyptoError, Path, int, traceback.StackSummary]:
    for name, value in row.env.items():
        monkeypatch.setenv(name, value)
    path, marked_file, line = _write(tmp_path, row)
    try:
        _run(path)
    except PyptoError as err:
        return err, marked_file, line, traceback.extract_tb(err.__traceback__)
    pytest.fail(f"{row.id}: no error")


@pytest.mark.parametrize("row", ROWS, ids=[row.id for row in ROWS])
def test_a_bad_input_is_an_error_at_its_line_with_a_caret_and_a_hint(row, isolated, time_limit, monkeypatch):
    err, path, line, frames = _failure(row, isolated, monkeypatch)
    assert type(err) is row.error, f"{type(err).__name__}: {err}"
    assert not isinstance(err, VerificationError)
    assert row.message in err.message, str(err)
    assert err.span is not None and err.span.file == str(path) and err.span.line == line, str(err)
    source_line = path.read_text().splitlines()[line - 1]
    assert source_line[err.span.col :].startswith(row.underlined), str(err)

    rendered = str(err)
    head = f"{path}:{line}:{err.span.col + 1}: error: {err.message}\n"
    assert rendered.startswith(head), rendered
    shown, carets, *rest = rendered.removeprefix(head).splitlines()
    assert shown == f"{line:>5} | {source_line}"
    start = carets.index("^")
    assert carets[start:] == "^" * len(row.underlined), rendered
    assert shown[start : start + len(row.underlined)] == row.underlined
    assert err.hint and err.hint.strip() and rest == [f"hint: {err.hint}"], rendered
    assert frames[-1].filename == str(path) and frames[-1].lineno == line  # raised at the user's line


FIXED = [row for row in ROWS if row.id in FIXES]


@pytest.mark.parametrize("row", FIXED, ids=[row.id for row in FIXED])
def test_the_input_rewritten_as_the_hint_says_runs(row, isolated, time_limit, monkeypatch):
    row = fixed(row)
    for name, value in row.env.items():
        monkeypatch.setenv(name, value)
    path = isolated / f"fixed_{uuid.uuid4().hex}.py"
    path.write_text(HEADER + "\n\n" + row.source.replace(MARK, ""))
    if row.pyproject is not None:
        (isolated / "pyproject.toml").write_text(textwrap.dedent(row.pyproject).replace(MARK, ""))
    _run(path)


def test_the_kernel_table_covers_many_distinct_errors():
    assert len(ROWS) >= 90
    assert len({row.id for row in ROWS}) == len(ROWS)
    assert len({row.message for row in ROWS}) >= 80


# ---------------------------------------------------------------- settings no line of code spells


@dataclass(frozen=True)
class BadSetting:
    """A kernel called as it should be, under a bad setting: the error names the value and where
    it came from (``named``), and has a hint."""

    id: str
    env: dict[str, str]
    error: type[PyptoError]
    named: tuple[str, ...]


A_FILE = "afile"  # a file in the row's working directory, where a directory should be
SETTINGS = [
    BadSetting(
        "pypto-platform-unknown",
        {"PYPTO_PLATFORM": "nosuch"},
        PlatformError,
        ("unknown platform 'nosuch' (from PYPTO_PLATFORM)", "registered platforms: a2a3, a2a3sim"),
    ),
    BadSetting(
        "pypto-cache-neither-on-nor-off",
        {"PYPTO_CACHE": "maybe"},
        ConfigError,
        ("PYPTO_CACHE='maybe' is neither on nor off", "PYPTO_CACHE=on or PYPTO_CACHE=off"),
    ),
    BadSetting(
        "pypto-profile-into-a-file",
        {"PYPTO_PROFILE": A_FILE},
        ConfigError,
        (f"cannot write profiles to {A_FILE}/k (from PYPTO_PROFILE): {A_FILE} is a file, not a directory",),
    ),
    BadSetting(
        "pypto-profile-into-proc",
        {"PYPTO_PROFILE": "/proc/pypto-profiles"},
        ConfigError,
        (
            "cannot write profiles to /proc/pypto-profiles/k (from PYPTO_PROFILE): cannot create a directory in /proc",
        ),
    ),
    BadSetting(
        "pypto-load-plugins-hides-the-simulator",
        {"PYPTO_LOAD_PLUGINS": "nosuch"},
        PlatformError,
        ("unknown platform 'a2a3sim' (from the built-in default)", "registered platforms: (none)"),
    ),
]


@pytest.mark.parametrize("row", SETTINGS, ids=[row.id for row in SETTINGS])
def test_a_bad_setting_names_its_value_and_where_it_came_from_with_a_hint(
    row, isolated, time_limit, monkeypatch
):
    (isolated / A_FILE).write_text("not a directory")
    for name, value in row.env.items():
        monkeypatch.setenv(name, value)
    reset_registry()
    path = isolated / "kernel.py"
    path.write_text(HEADER + "\n\n" + called("k(f32(), 1, zeros())", mark_def=False))
    with warnings.catch_warnings(), pytest.raises(PyptoError) as info:
        warnings.simplefilter("ignore")  # PYPTO_LOAD_PLUGINS=nosuch also warns
        _run(path)
    err = info.value
    assert type(err) is row.error and not isinstance(err, VerificationError)
    for part in row.named:
        assert part in str(err), str(err)
    assert row.named[0] in err.message
    assert err.span is None  # no line of the user's spells it: the message names it
    assert err.hint and str(err) == f"{err.message}\nhint: {err.hint}"


# ---------------------------------------------------------------- the pypto command


SCRIPT = """\
import torch

import pypto.language as pl


@pl.jit
def double(x: pl.Tensor, n: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="double"):
        out[:] = pl.mul(x, 2.0)
    return out


def plain(x):
    return x


NOT_A_KERNEL = 3

if __name__ == "__main__":
    double(torch.randn(64, 64), 1, torch.zeros(64, 64))
    print("OK")
"""
BAD_CALL = """\
import torch

import pypto.language as pl


@pl.jit
def fixed(x: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="fixed"):
        out[:] = pl.mul(x, 2.0)
    return out


fixed(torch.randn(32, 64), torch.zeros(64, 64))
"""
TYPE_ERROR = """\
import pypto.language as pl


@pl.jit
def mismatched(a: pl.Tensor[[64, 64], pl.FP32], b: pl.Tensor[[32, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="mismatched"):
        out[:] = pl.add(a, b)
    return out
"""
DEADLOCK = """\
import torch

import pypto.language as pl


@pl.jit
def stuck(a: pl.Tensor[[64, 64], pl.FP16], b: pl.Tensor[[64, 64], pl.FP16], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="stuck"):
        pl.aic_initialize_pipe(dir_mask=1, slot_size=8192, slot_num=2)
        a_l1 = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
        b_l1 = pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
        acc = pl.matmul(pl.move(a_l1, target_memory=pl.Mem.Left), pl.move(b_l1, target_memory=pl.Mem.Right))
        pl.store(acc, [0, 0], out)
        for lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
            pl.aiv_initialize_pipe(dir_mask=1, slot_size=8192, slot_num=2)
            t = pl.tpop_from_aic(shape=[32, 64], dtype=pl.FP32, split=pl.SplitMode.UP_DOWN)
            pl.tfree_to_aic(t)
    return out


stuck(torch.randn(64, 64, dtype=torch.float16), torch.randn(64, 64, dtype=torch.float16), torch.zeros(64, 64))
"""
RAISES = """\
def f():
    raise ValueError("the script's own error")


f()
"""
ARGS = ["--arg", "x=fp32[64,64]", "--arg", "out=fp32[64,64]", "--arg", "n=1"]
USAGE = "Try 'pypto"  # Click's own usage errors end with where to read more: their hint


@dataclass(frozen=True)
class BadCommand:
    """One bad ``pypto`` command line (in a directory holding the scripts ``kernels.py``,
    ``bad_call.py``, ``type_error.py``, ``deadlock.py``, ``raises.py``, a file ``afile`` and the
    row's ``pyproject.toml``): its exit status, the parts its message must show (the bad value and
    where it came from) and a part of its hint."""

    id: str
    argv: list[str]
    exit_code: int
    shows: tuple[str, ...]
    hint: str
    env: dict[str, str] = field(default_factory=dict)
    pyproject: str | None = None
    traceback: bool = False  # the user's own script raised: its traceback is shown, from its frames


def compile_(*args: str, kernel: str = "double") -> list[str]:
    return ["compile", f"kernels.py::{kernel}", *args]


COMMANDS = [
    BadCommand(
        "arg-not-a-pair", compile_("--arg", "x"), 2, ("--arg x: 'x' is not NAME=VALUE",), "NAME=VALUE"
    ),
    BadCommand(
        "arg-unknown-dtype",
        compile_("--arg", "x=fp99[64,64]"),
        2,
        ("--arg x=fp99[64,64]: unknown dtype 'fp99'; dtypes: fp16, bf16, fp32",),
        "DTYPE[D0,D1,...]",
    ),
    BadCommand(
        "arg-index-dtype",
        compile_("--arg", "x=index[64,64]"),
        2,
        ("--arg x=index[64,64]: unknown dtype 'index'; dtypes: fp16, bf16, fp32",),
        "DTYPE[D0,D1,...]",
    ),
    BadCommand(
        "arg-empty-dimension",
        compile_("--arg", "x=fp32[64,,64]"),
        2,
        ("--arg x=fp32[64,,64]: dimension 2 of [64,,64] is empty",),
        "a positive integer per dimension",
    ),
    BadCommand(
        "arg-zero-dimension",
        compile_("--arg", "x=fp32[64,0]"),
        2,
        ("--arg x=fp32[64,0]: dimension 2 of [64,0] is 0",),
        "a positive integer per dimension",
    ),
    BadCommand(
        "arg-negative-dimension",
        compile_("--arg", "x=fp32[64,-1]"),
        2,
        ("--arg x=fp32[64,-1]: dimension 2 of [64,-1] is '-1', not a positive integer",),
        "DTYPE[D0,D1,...]",
    ),
    BadCommand(
        "arg-no-dimension",
        compile_("--arg", "x=fp32[]"),
        2,
        ("--arg x=fp32[]: a tensor needs at least one dimension",),
        "DTYPE[D0,D1,...]",
    ),
    BadCommand(
        "arg-unclosed-bracket",
        compile_("--arg", "x=fp32[64,64"),
        2,
        ("--arg x=fp32[64,64: 'fp32[64,64' is not a tensor",),
        "DTYPE[D0,D1,...]",
    ),
    BadCommand(
        "arg-given-twice",
        compile_("--arg", "x=fp32[64,64]", "--arg", "x=fp16[64,64]"),
        2,
        ("--arg x=fp16[64,64]: x is given twice",),
        "one --arg per parameter",
    ),
    BadCommand(
        "arg-unknown-parameter",
        compile_("--arg", "y=fp32[64,64]"),
        2,
        ("--arg: double has no parameter 'y'; its parameters: x, n, out",),
        "--arg x=",
    ),
    BadCommand(
        "arg-neither-tensor-nor-number",
        compile_("--arg", "x=fp32[64,64]", "--arg", "out=fp32[64,64]", "--arg", "n=abc"),
        2,
        ("--arg n=abc: 'abc' is neither a tensor like fp16[128,256] nor a number",),
        "4, 0.5, true or false",
    ),
    BadCommand(
        "arg-number-for-a-tensor",
        compile_("--arg", "x=3", "--arg", "out=fp32[64,64]", "--arg", "n=1"),
        2,
        ("--arg x: parameter 'x' of double is a tensor (pl.Tensor), but the value is the number 3",),
        "--arg x=fp16[128,256]",
    ),
    BadCommand(
        "arg-tensor-for-a-scalar",
        compile_("--arg", "x=fp32[64,64]", "--arg", "out=fp32[64,64]", "--arg", "n=fp32[4]"),
        2,
        ("--arg n: parameter 'n' of double is a scalar (pl.Scalar[pl.INT32]), but the value is a tensor",),
        "--arg n=4",
    ),
    BadCommand(
        "arg-fraction-for-an-int",
        compile_("--arg", "x=fp32[64,64]", "--arg", "out=fp32[64,64]", "--arg", "n=1.5"),
        1,
        ("kernels.py:7:", "argument 'n' must be an integer for pl.INT32, got 1.5", "^^^^"),
        "pass an int",
    ),
    BadCommand(
        "arg-beyond-the-scalar-dtype",
        compile_("--arg", "x=fp32[64,64]", "--arg", "out=fp32[64,64]", "--arg", "n=99999999999"),
        1,
        (
            "kernels.py:7:",
            "argument 'n' is 99999999999, outside the range [-2147483648, 2147483647] of pl.INT32",
        ),
        "a wider dtype",
    ),
    BadCommand(
        "arg-missing-for-a-bare-tensor",
        compile_(),
        2,
        ("parameter 'x' of double is annotated pl.Tensor, which fixes no value to compile for",),
        "--arg x=fp16[128,256]",
    ),
    BadCommand(
        "arg-missing-for-a-scalar",
        compile_("--arg", "x=fp32[64,64]", "--arg", "out=fp32[64,64]"),
        2,
        ("parameter 'n' of double is annotated pl.Scalar[pl.INT32], which fixes no value to compile for",),
        "--arg n=4",
    ),
    BadCommand(
        "arg-dtype-the-kernel-cannot-write",
        compile_("--arg", "x=fp32[64,64]", "--arg", "out=fp16[64,64]", "--arg", "n=1"),
        1,
        (
            "kernels.py:9:",
            "pl.assemble: dtype mismatch: writing Tensor[[64, 64], FP32] into Tensor[[64, 64], FP16]",
        ),
        "pl.cast",
    ),
    BadCommand(
        "compile-unknown-kernel",
        compile_(*ARGS, kernel="nosuch"),
        2,
        ("SCRIPT::KERNEL: kernels.py has no @pl.jit kernel named 'nosuch' (kernels: double)",),
        "kernels.py::double",
    ),
    BadCommand(
        "compile-a-plain-function",
        compile_(*ARGS, kernel="plain"),
        2,
        ("kernels.py has no @pl.jit kernel named 'plain'",),
        "kernels.py::double",
    ),
    BadCommand(
        "compile-a-constant",
        compile_(*ARGS, kernel="NOT_A_KERNEL"),
        2,
        ("kernels.py has no @pl.jit kernel named 'NOT_A_KERNEL'",),
        "kernels.py::double",
    ),
    BadCommand(
        "compile-without-a-kernel-name",
        ["compile", "kernels.py", *ARGS],
        2,
        ("SCRIPT::KERNEL: 'kernels.py' is not SCRIPT::KERNEL",),
        "::hello_add",
    ),
    BadCommand(
        "compile-a-missing-script",
        ["compile", "nosuch.py::double", *ARGS],
        2,
        ("SCRIPT::KERNEL: script 'nosuch.py' does not exist",),
        "the path of a Python file",
    ),
    BadCommand(
        "compile-unknown-platform",
        compile_(*ARGS, "-p", "nosuch"),
        1,
        ("unknown platform 'nosuch' (from -p/--platform); registered platforms: a2a3, a2a3sim",),
        "change -p/--platform to one of those",
    ),
    BadCommand(
        "compile-unknown-emit",
        compile_(*ARGS, "--emit", "nosuch"),
        2,
        ("Invalid value for '--emit': 'nosuch' is not one of 'ir', 'memory-map', 'report'",),
        USAGE,
    ),
    BadCommand(
        "compile-dumps-under-a-file",
        compile_(*ARGS, "--dump-passes", f"{A_FILE}/dumps"),
        1,
        (
            f"cannot write pass dumps to {A_FILE}/dumps (from --dump-passes): {A_FILE} is a file, not a directory",
        ),
        "point --dump-passes at a directory",
    ),
    BadCommand(
        "compile-dumps-into-proc",
        compile_(*ARGS, "--dump-passes", "/proc/pypto-dumps"),
        1,
        (
            "cannot write pass dumps to /proc/pypto-dumps (from --dump-passes): cannot create a directory in /proc",
        ),
        "point --dump-passes at a directory",
    ),
    BadCommand(
        "compile-a-kernel-with-a-type-error",
        ["compile", "type_error.py::mismatched"],
        1,
        (
            "type_error.py:7:18: error: pl.add: operand shape mismatch",
            "    7 |         out[:] = pl.add(a, b)",
            "^^^",
        ),
        "the same shape",
    ),
    BadCommand(
        "run-a-kernel-that-deadlocks",
        ["run", "deadlock.py"],
        1,
        ("deadlock.py:16:17: error: every live core is blocked:", "more pops than pushes", "^^^^"),
        "every tpop needs a matching tpush",
    ),
    BadCommand(
        "compile-a-script-that-raises",
        ["compile", "raises.py::f"],
        1,
        ('raises.py", line 5, in <module>', "ValueError: the script's own error"),
        "",
        traceback=True,
    ),
    BadCommand(
        "run-a-missing-script",
        ["run", "nosuch.py"],
        2,
        ("Invalid value for 'SCRIPT': File 'nosuch.py' does not exist",),
        USAGE,
    ),
    BadCommand("run-without-a-script", ["run"], 2, ("Missing argument 'SCRIPT'",), USAGE),
    BadCommand(
        "run-unknown-platform",
        ["run", "-p", "nosuch", "kernels.py"],
        1,
        ("unknown platform 'nosuch' (from -p/--platform)",),
        "change -p/--platform to one of those",
    ),
    BadCommand(
        "run-profile-under-a-file",
        ["run", "--profile", f"{A_FILE}/prof", "kernels.py"],
        1,
        (f"cannot write profiles to {A_FILE}/prof (from --profile): {A_FILE} is a file, not a directory",),
        "point --profile at a directory",
    ),
    BadCommand(
        "run-profile-into-proc",
        ["run", "--profile", "/proc/pypto-prof", "kernels.py"],
        1,
        ("cannot write profiles to /proc/pypto-prof (from --profile): cannot create a directory in /proc",),
        "point --profile at a directory",
    ),
    BadCommand(
        "profile-output-a-file",
        ["profile", "-o", A_FILE, "kernels.py"],
        1,
        (f"cannot write profiles to {A_FILE} (from -o/--output): it is a file, not a directory",),
        "point -o/--output at a directory",
    ),
    BadCommand(
        "run-a-kernel-called-wrongly",
        ["run", "bad_call.py"],
        1,
        ("bad_call.py:7:", "argument 'x' has shape [32, 64], but parameter 'x' is annotated", "^^^^"),
        "pass a tensor that matches the annotation",
    ),
    BadCommand(
        "run-a-script-that-raises",
        ["run", "raises.py"],
        1,
        ('raises.py", line 2, in f', "ValueError: the script's own error"),
        "",
        traceback=True,
    ),
    BadCommand(
        "run-pypto-cache-maybe",
        ["run", "kernels.py"],
        1,
        ("PYPTO_CACHE='maybe' is neither on nor off",),
        "PYPTO_CACHE=on or PYPTO_CACHE=off",
        env={"PYPTO_CACHE": "maybe"},
    ),
    BadCommand(
        "run-pypto-platform-unknown",
        ["run", "kernels.py"],
        1,
        ("unknown platform 'nosuch' (from PYPTO_PLATFORM)",),
        "change PYPTO_PLATFORM to one of those",
        env={"PYPTO_PLATFORM": "nosuch"},
    ),
    BadCommand(
        "run-pypto-profile-into-a-file",
        ["run", "kernels.py"],
        1,
        (
            f"cannot write profiles to {A_FILE}/double (from PYPTO_PROFILE): {A_FILE} is a file, not a directory",
        ),
        "point PYPTO_PROFILE at a directory",
        env={"PYPTO_PROFILE": A_FILE},
    ),
    BadCommand(
        "profile-pypto-profile-a-file",
        ["profile", "kernels.py"],
        1,
        (f"cannot write profiles to {A_FILE} (from PYPTO_PROFILE): it is a file, not a directory",),
        "point PYPTO_PROFILE at a directory",
        env={"PYPTO_PROFILE": A_FILE},
    ),
    BadCommand(
        "run-pypto-load-plugins-hides-the-simulator",
        ["run", "kernels.py"],
        1,
        ("unknown platform 'a2a3sim' (from the built-in default)",),
        "PYPTO_LOAD_PLUGINS is set: it may be what hides it",
        env={"PYPTO_LOAD_PLUGINS": "nosuch"},
    ),
    BadCommand(
        "cache-info-pypto-cache-maybe",
        ["cache", "info"],
        1,
        ("PYPTO_CACHE='maybe' is neither on nor off",),
        "PYPTO_CACHE=on or PYPTO_CACHE=off",
        env={"PYPTO_CACHE": "maybe"},
    ),
    BadCommand(
        "pyproject-unknown-setting",
        ["run", "kernels.py"],
        1,
        ("pyproject.toml:2:1: error: unknown setting 'platfrom' in [tool.pypto]", "    2 | platfrom = "),
        "known settings: platform, profile-dir, cache-dir, cache",
        pyproject='[tool.pypto]\nplatfrom = "a2a3sim"\n',
    ),
    BadCommand(
        "pyproject-wrong-type",
        ["run", "kernels.py"],
        1,
        ("pyproject.toml:2:9: error: [tool.pypto] cache must be a bool, got 'yes'",),
        "write cache = true",
        pyproject='[tool.pypto]\ncache = "yes"\n',
    ),
    BadCommand(
        "pyproject-bad-toml",
        ["run", "kernels.py"],
        1,
        (
            "pyproject.toml:2:20: error: ",
            "is not valid TOML: Illegal character '\\n'",
            '    2 | platform = "a2a3sim',
        ),
        "fix the TOML syntax there",
        pyproject='[tool.pypto]\nplatform = "a2a3sim\n',
    ),
    BadCommand(
        "pyproject-not-a-table",
        ["run", "kernels.py"],
        1,
        ("pyproject.toml:2:9: error: [tool.pypto] must be a table of settings, got 3",),
        "[tool.pypto] on its own line",
        pyproject="[tool]\npypto = 3\n",
    ),
    BadCommand(
        "pyproject-unknown-platform",
        ["run", "kernels.py"],
        1,
        ("pyproject.toml:2:12: error: unknown platform 'nosuch' (from [tool.pypto] platform in",),
        "change [tool.pypto] platform in",
        pyproject='[tool.pypto]\nplatform = "nosuch"\n',
    ),
    BadCommand(
        "pyproject-profile-dir-a-file",
        ["profile", "kernels.py"],
        1,
        ("pyproject.toml:2:15: error: cannot write profiles to", "(from [tool.pypto] profile-dir in"),
        "at a directory that can be created and written",
        pyproject=f'[tool.pypto]\nprofile-dir = "{A_FILE}"\n',
    ),
    BadCommand(
        "compile-passes-unknown-option",
        compile_(*ARGS, "--passes", "outline-scopes,tile-matmul{k_blok=32}"),
        2,
        (
            "--passes:1:28: error: pass 'tile-matmul' has no option 'k_blok'; its options: k_block: int | None = none, columns: int | None = none",
            "    1 | outline-scopes,tile-matmul{k_blok=32}\n      |                            ^^^^^^\n",
        ),
        "did you mean k_block=?",
    ),
    BadCommand(
        "compile-passes-unknown-pass",
        compile_(*ARGS, "--passes", "outline-scopes,alocate"),
        2,
        ("--passes:1:16: error: unknown pass 'alocate'; known passes: OutlineScopes (outline-scopes), ",),
        "did you mean allocate?",
    ),
    BadCommand(
        "compile-passes-unbalanced-brace",
        compile_(*ARGS, "--passes", "outline-scopes}"),
        2,
        ("--passes:1:15: error: unbalanced '}': no '{' opens it",),
        "remove it",
    ),
    BadCommand("unknown-command", ["nosuch"], 2, ("No such command 'nosuch'",), USAGE),
    BadCommand("passes-unknown-option", ["passes", "--nosuch"], 2, ("No such option '--nosuch'",), USAGE),
    BadCommand("platforms-unknown-option", ["platforms", "--yaml"], 2, ("No such option '--yaml'",), USAGE),
]


@pytest.fixture
def project(isolated: Path, monkeypatch) -> Path:
    """The working directory of a command row: the scripts, a file where a directory should be,
    the disk cache in it."""
    (isolated / "kernels.py").write_text(SCRIPT)
    (isolated / "bad_call.py").write_text(BAD_CALL)
    (isolated / "raises.py").write_text(RAISES)
    (isolated / "type_error.py").write_text(TYPE_ERROR)
    (isolated / "deadlock.py").write_text(DEADLOCK)
    (isolated / A_FILE).write_text("not a directory")
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(isolated / "cache"))
    monkeypatch.delenv("PYPTO_CACHE")
    return isolated


@pytest.mark.parametrize("row", COMMANDS, ids=[row.id for row in COMMANDS])
def test_a_bad_command_line_is_an_error_naming_what_is_wrong_with_a_hint(row, project, time_limit):
    if row.pyproject is not None:
        (project / "pyproject.toml").write_text(row.pyproject)
    result = CliRunner().invoke(cli, row.argv, env=row.env)
    output = result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), output
    assert result.exit_code == row.exit_code, output
    for part in row.shows:
        assert part in output, output
    if row.traceback:  # python's own form, from the script's frames on: none of pypto's or Click's
        assert output.startswith("Traceback (most recent call last):\n") and "pypto" not in output, output
        return
    assert "Traceback" not in output, output
    assert "Error: " in output
    if row.hint == USAGE:  # Click's usage error: the usage line and where to read more
        assert output.startswith("Usage: pypto") and USAGE in output, output
        return
    hints = [line.removeprefix("hint: ") for line in output.splitlines() if line.startswith("hint: ")]
    assert len(hints) == 1 and row.hint in hints[0], output


def test_the_command_line_of_python_dash_m_pypto_shows_a_bad_value_without_a_traceback(project):
    """The real console script, not Click's runner: an unwritable --dump-passes directory."""
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pypto",
            "compile",
            "kernels.py::double",
            *ARGS,
            "--dump-passes",
            "/proc/pypto-dumps",
        ],
        capture_output=True,
        text=True,
        cwd=project,
        timeout=TIME_LIMIT * 2,
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr + result.stdout
    assert "Error: cannot write pass dumps to /proc/pypto-dumps (from --dump-passes)" in result.stderr
    assert "hint: point --dump-passes at a directory" in result.stderr


def test_the_tables_cover_many_distinct_bad_inputs():
    rows = [*ROWS, *SETTINGS, *COMMANDS]
    assert len(rows) >= 120
    assert len({row.id for row in rows}) == len(rows)
