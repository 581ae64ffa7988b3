"""Bad kernels, one per row: each is an error at the user's own line, with a caret and a hint.

A row is the source of a small kernel module, the line expected to fail marked ``# <-``. The
source is written to a temporary file and imported (the parser reads source, never runs it), the
kernel ``k`` is parsed, and the rendered error must read ``file:line:col: error: message`` for the
marked line of that file, show that source line, put the caret under exactly the expected text,
and end with a non-empty ``hint:`` line.

The rows cover the parser (annotations, scopes and ``pl.at`` options, loops and loop-carried
values, ifs, returns, region writes and reads, subscripts, calls of non-kernels, ``pl.split_aiv``
regions, cross-core and system ops, scalar arithmetic) and the op table's type rules (shape,
dtype and memory-space mismatches of each op family).
"""

from __future__ import annotations

import importlib.util
import textwrap
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from pypto.ir import ParseError, PyptoError, TypeCheckError
from pypto.language import ScopeOptionError

MARK = "# <-"
HEADER = """\
import pypto.language as pl

T = pl.Tensor[[64, 64], pl.FP32]
H = pl.Tensor[[64, 64], pl.FP16]
I = pl.Tensor[[64, 64], pl.INT32]
V = pl.Tensor[[64], pl.FP32]
W = pl.Tensor[[16], pl.INT32]
N = pl.Scalar[pl.INDEX]
F = pl.Scalar[pl.FP32]


@pl.jit.incore
def helper(x: T, y: pl.Out[T]):
    with_y = y
    return with_y


@pl.jit.incore
def scaled(x: T, k: N, y: pl.Out[T]):
    return y
"""
SIGNATURE = "def k(a: T, b: T, h: H, i32: I, v: V, ws: W, n: N, s: F, out: pl.Out[T]):"
# Tiles every scope row may use: x (Vec FP32), xi (Vec INT32), m (Mat FP32).
SCOPE_TILES = """\
x = pl.load(a, [0, 0], [64, 64])
xi = pl.load(i32, [0, 0], [64, 64])
m = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
"""


def scope(body: str) -> str:
    """A kernel whose one core-group scope loads the tiles x, xi, m and then runs ``body``."""
    inner = textwrap.indent(SCOPE_TILES + textwrap.dedent(body), " " * 8)
    return f"@pl.jit\n{SIGNATURE}\n    with pl.at(level=pl.Level.CORE_GROUP):\n{inner}    return out\n"


def region(body: str, mode: str = "UP_DOWN", before: str = "") -> str:
    """A kernel whose core-group scope loads the tiles x, xi, m (then runs ``before``) and runs
    ``body`` inside a ``pl.split_aiv`` region of ``mode`` (its lane is ``lane``)."""
    tiles = textwrap.indent(SCOPE_TILES + before, " " * 8)
    inner = textwrap.indent(textwrap.dedent(body), " " * 12)
    return (
        f"@pl.jit\n{SIGNATURE}\n    with pl.at(level=pl.Level.CORE_GROUP):\n{tiles}"
        f"        for lane in pl.split_aiv(2, mode=pl.SplitMode.{mode}):\n{inner}    return out\n"
    )


def entry(body: str) -> str:
    """A kernel whose @pl.jit body (outside any scope) is ``body``."""
    return f"@pl.jit\n{SIGNATURE}\n{textwrap.indent(textwrap.dedent(body), ' ' * 4)}    return out\n"


def module(text: str) -> str:
    """Module text that defines the kernel ``k`` itself."""
    return textwrap.dedent(text)


@dataclass(frozen=True)
class Bad:
    """One bad kernel: its source, the error class, a part of the message, the underlined text,
    and ``fix``: the marked line rewritten as the hint says, which must then parse."""

    id: str
    source: str
    error: type[PyptoError]
    message: str
    underlined: str
    fix: str | None = None

    def fixed_source(self) -> str:
        lines = self.source.splitlines()
        (index,) = [i for i, line in enumerate(lines) if line.rstrip().endswith(MARK)]
        indent = lines[index][: len(lines[index]) - len(lines[index].lstrip())]
        lines[index] = indent + self.fix  # type: ignore[operator]
        return "\n".join(lines) + "\n"


ROWS = [
    # ---------------------------------------------------------------- annotations and signatures
    Bad(
        "missing-annotation",
        module("""\
            @pl.jit
            def k(a, out: pl.Out[T]):  # <-
                return out
            """),
        ParseError,
        "Parameter 'a' missing type annotation",
        "a",
        fix="def k(a: pl.Tensor[[128, 128], pl.FP32], out: pl.Out[T]):",
    ),
    Bad(
        "star-args",
        module("""\
            @pl.jit
            def k(*xs: T):  # <-
                return
            """),
        ParseError,
        "*args, **kwargs and positional-only parameters are not supported",
        "xs: T",
        fix="def k(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):",
    ),
    Bad(
        "tile-parameter",
        module("""\
            @pl.jit
            def k(t: pl.Tile[[64, 64], pl.FP32], out: pl.Out[T]):  # <-
                return out
            """),
        ParseError,
        "is annotated as a tile; kernel parameters are tensors or scalars",
        "pl.Tile[[64, 64], pl.FP32]",
        fix="def k(t: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[T]):",
    ),
    Bad(
        "dtype-string",
        module("""\
            @pl.jit
            def k(a: pl.Tensor[[64, 64], "fp32"], out: pl.Out[T]):  # <-
                return out
            """),
        ParseError,
        "pl.Tensor dtype must be a pl dtype such as pl.FP32, got 'fp32'",
        'pl.Tensor[[64, 64], "fp32"]',
        fix="def k(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[T]):",
    ),
    Bad(
        "shape-not-a-list",
        module("""\
            @pl.jit
            def k(a: pl.Tensor[64, pl.FP32], out: pl.Out[T]):  # <-
                return out
            """),
        ParseError,
        "pl.Tensor shape must be a non-empty list of ints, got 64",
        "pl.Tensor[64, pl.FP32]",
        fix="def k(a: pl.Tensor[[128, 128], pl.FP32], out: pl.Out[T]):",
    ),
    Bad(
        "out-of-a-number",
        module("""\
            @pl.jit
            def k(a: T, out: pl.Out[3]):  # <-
                return out
            """),
        ParseError,
        "pl.Out[...] wraps a tensor annotation, got 3",
        "pl.Out[3]",
        fix="def k(a: T, out: pl.Out[pl.Tensor[[128, 128], pl.FP32]]):",
    ),
    Bad(
        "unsupported-annotation",
        module("""\
            @pl.jit
            def k(a: list, out: pl.Out[T]):  # <-
                return out
            """),
        ParseError,
        "unsupported annotation 'list'",
        "list",
        fix="def k(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[T]):",
    ),
    Bad(
        "annotated-assignment-mismatch",
        scope("t: pl.Tile[[32, 64], pl.FP32] = pl.load(a, [0, 0], [64, 64])  # <-\n"),
        TypeCheckError,
        "'t' is annotated pl.Tile[[32, 64], pl.FP32] but the value is Tile[[64, 64], FP32, Vec]",
        "t: pl.Tile[[32, 64], pl.FP32] = pl.load(a, [0, 0], [64, 64])",
        fix="t: pl.Tile[[64, 64], pl.FP32, pl.Mem.Vec] = pl.load(a, [0, 0], [64, 64])",
    ),
    Bad(
        "annotated-assignment-without-value",
        scope("t: pl.Tile[[64, 64], pl.FP32]  # <-\n"),
        ParseError,
        "an annotated assignment needs a plain name and a value",
        "t: pl.Tile[[64, 64], pl.FP32]",
        fix="t: pl.Tile[[64, 64], pl.FP32] = pl.load(a, [0, 0], [64, 64])",
    ),
    Bad(
        "tile-memory-string",
        scope('t: pl.Tile[[64, 64], pl.FP32, "Vec"] = x  # <-\n'),
        ParseError,
        "pl.Tile memory space must be a pl.Mem member, got 'Vec'",
        'pl.Tile[[64, 64], pl.FP32, "Vec"]',
        fix="t: pl.Tile[[64, 64], pl.FP32, pl.Mem.Vec] = x",
    ),
    # ---------------------------------------------------------------- scopes and pl.at options
    Bad(
        "at-positional",
        entry("""\
            with pl.at(pl.Level.CORE_GROUP):  # <-
                out[:] = a
            """),
        ParseError,
        "pl.at() takes keyword arguments",
        "pl.Level.CORE_GROUP",
        fix="with pl.at(level=pl.Level.CORE_GROUP):",
    ),
    Bad(
        "at-level-string",
        entry("""\
            with pl.at(level="CORE_GROUP"):  # <-
                out[:] = a
            """),
        ParseError,
        "level= takes a pl.Level member, got the str 'CORE_GROUP'",
        '"CORE_GROUP"',
        fix="with pl.at(level=pl.Level.CORE_GROUP):",
    ),
    Bad(
        "at-name-hint",
        entry("""\
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="my kernel"):  # <-
                out[:] = a
            """),
        ParseError,
        "name_hint= must be an identifier string, got 'my kernel'",
        '"my kernel"',
        fix='with pl.at(level=pl.Level.CORE_GROUP, name_hint="attention_1"):',
    ),
    Bad(
        "at-unknown-keyword",
        entry("""\
            with pl.at(level=pl.Level.CORE_GROUP, name="attn"):  # <-
                out[:] = a
            """),
        ParseError,
        "pl.at() got an unexpected keyword argument 'name'",
        '"attn"',
        fix='with pl.at(level=pl.Level.CORE_GROUP, name_hint="attn"):',
    ),
    Bad(
        "at-early-resolve",
        entry("""\
            with pl.at(level=pl.Level.CORE_GROUP, allow_early_resolve="yes"):  # <-
                out[:] = a
            """),
        ParseError,
        "allow_early_resolve= takes True or False, got the str 'yes'",
        '"yes"',
        fix="with pl.at(level=pl.Level.CORE_GROUP, allow_early_resolve=True):",
    ),
    Bad(
        "optimizations-not-a-list",
        entry("""\
            with pl.at(level=pl.Level.CORE_GROUP, optimizations=pl.split(pl.SplitMode.UP_DOWN)):  # <-
                out[:] = a
            """),
        ParseError,
        "optimizations= must be a literal list",
        "pl.split(pl.SplitMode.UP_DOWN)",
        fix="with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN), pl.cross_core_slot(slot_num=2)]):",
    ),
    Bad(
        "optimizations-entry",
        entry("""\
            with pl.at(level=pl.Level.CORE_GROUP, optimizations=[2]):  # <-
                out[:] = a
            """),
        ParseError,
        "optimizations= holds pl.split(...) and pl.cross_core_slot(...), got the int 2",
        "2",
        fix="with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN), pl.cross_core_slot(slot_num=2)]):",
    ),
    Bad(
        "optimizations-twice",
        entry("""\
            with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.NONE), pl.split(pl.SplitMode.UP_DOWN)]):  # <-
                out[:] = a
            """),
        ParseError,
        "pl.split(pl.SplitMode.UP_DOWN) is given twice in optimizations=",
        "pl.split(pl.SplitMode.UP_DOWN)",
        fix="with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):",
    ),
    Bad(
        "split-string-mode",
        entry("""\
            with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split("UP_DOWN")]):  # <-
                out[:] = a
            """),
        ScopeOptionError,
        "pl.split() takes a pl.SplitMode, got 'UP_DOWN'",
        'pl.split("UP_DOWN")',
        fix="with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):",
    ),
    Bad(
        "cross-core-slot-zero",
        entry("""\
            with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.cross_core_slot(slot_num=0)]):  # <-
                out[:] = a
            """),
        ScopeOptionError,
        "slot_num must be a positive int",
        "pl.cross_core_slot(slot_num=0)",
        fix="with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.cross_core_slot(slot_num=1)]):",
    ),
    Bad(
        "cross-core-slot-positional",
        entry("""\
            with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.cross_core_slot(2)]):  # <-
                out[:] = a
            """),
        ParseError,
        "cross_core_slot() failed at compile time",
        "pl.cross_core_slot(2)",
        fix="with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.cross_core_slot(slot_num=2)]):",
    ),
    Bad(
        "nested-scopes",
        scope("""\
            with pl.at(level=pl.Level.CORE_GROUP):  # <-
                out[:] = x
            """),
        ParseError,
        "pl.at scopes do not nest",
        "pl.at(level=pl.Level.CORE_GROUP)",
    ),
    Bad(
        "scope-in-incore",
        module("""\
            @pl.jit.incore
            def k(a: T, out: pl.Out[T]):
                with pl.at(level=pl.Level.CORE_GROUP):  # <-
                    pl.store(pl.load(a, [0, 0], [64, 64]), [0, 0], out)
                return out
            """),
        ParseError,
        "an @pl.jit.incore body already runs on one core group",
        "pl.at(level=pl.Level.CORE_GROUP)",
    ),
    Bad(
        "two-contexts",
        entry("""\
            with pl.at(level=pl.Level.CORE_GROUP), pl.at(level=pl.Level.CORE_GROUP):  # <-
                out[:] = a
            """),
        ParseError,
        "one pl.at(...) per with statement",
        "pl.at(level=pl.Level.CORE_GROUP)",
    ),
    Bad(
        "other-context-manager",
        entry("""\
            with open("log.txt"):  # <-
                out[:] = a
            """),
        ParseError,
        "a with statement in a kernel opens a scope",
        'open("log.txt")',
        fix="with pl.at(level=pl.Level.CORE_GROUP):",
    ),
    Bad(
        "task-id-tuple",
        entry("""\
            with pl.at(level=pl.Level.CORE_GROUP) as (t0, t1):  # <-
                out[:] = a
            """),
        ParseError,
        "`pl.at(...) as tid` binds one name to the task id",
        "(t0, t1)",
        fix="with pl.at(level=pl.Level.CORE_GROUP) as tid:",
    ),
    Bad(
        "deps-not-a-list",
        entry("""\
            with pl.at(level=pl.Level.CORE_GROUP) as t0:
                out[:] = a
            with pl.at(level=pl.Level.CORE_GROUP, deps=t0):  # <-
                out[:] = b
            """),
        ParseError,
        "deps= must be a literal list",
        "t0",
        fix="with pl.at(level=pl.Level.CORE_GROUP, deps=[t0]):",
    ),
    Bad(
        "deps-of-a-tensor",
        entry("""\
            with pl.at(level=pl.Level.CORE_GROUP, deps=[a]):  # <-
                out[:] = b
            """),
        ParseError,
        "deps= entries must be a TaskId variable (or a pl.TASK_ID array, or one of its elements), got "
        "Tensor[[64, 64], FP32]",
        "a",
    ),
    Bad(
        "no-dep-args-of-a-number",
        entry("""\
            with pl.at(level=pl.Level.CORE_GROUP, no_dep_args=[3]):  # <-
                out[:] = b
            """),
        ParseError,
        "no_dep_args= takes tensors the task uses, got the int 3",
        "3",
        fix="with pl.at(level=pl.Level.CORE_GROUP, no_dep_args=[b]):",
    ),
    Bad(
        "manual-scope-arguments",
        entry("""\
            with pl.manual_scope(True):  # <-
                helper(a, out)
            """),
        ParseError,
        "pl.manual_scope() takes no arguments",
        "pl.manual_scope(True)",
        fix="with pl.manual_scope():",
    ),
    Bad(
        "manual-scope-binds",
        entry("""\
            with pl.manual_scope() as tasks:  # <-
                helper(a, out)
            """),
        ParseError,
        "pl.manual_scope() binds nothing",
        "tasks",
        fix="with pl.manual_scope():",
    ),
    Bad(
        "manual-scope-in-a-scope",
        scope("""\
            with pl.manual_scope():  # <-
                out[:] = x
            """),
        ParseError,
        "pl.manual_scope() is a runtime scope of the orchestration: it cannot stand in kernel code",
        "pl.manual_scope()",
    ),
    Bad(
        "spmd-in-a-scope",
        scope("""\
            for i in pl.spmd(4):  # <-
                out[:] = x
            """),
        ParseError,
        "pl.spmd launches kernels: write it in the @pl.jit body",
        "pl.spmd(4)",
    ),
    Bad(
        "spmd-nested",
        entry("""\
            for i in pl.spmd(4):
                for j in pl.spmd(2):  # <-
                    helper(a, out)
            """),
        ParseError,
        "pl.spmd blocks do not nest",
        "pl.spmd(2)",
    ),
    Bad(
        "spmd-two-names",
        entry("""\
            for i, j in pl.spmd(4):  # <-
                helper(a, out)
            """),
        ParseError,
        "the target of pl.spmd(...) must be one name",
        "i, j",
        fix="for i in pl.spmd(4):",
    ),
    Bad(
        "spmd-arguments",
        entry("""\
            for i in pl.spmd(4, 2):  # <-
                helper(a, out)
            """),
        ParseError,
        "pl.spmd() takes one argument: pl.spmd(core_num)",
        "pl.spmd(4, 2)",
        fix="for i in pl.spmd(4):",
    ),
    Bad(
        "spmd-zero",
        entry("""\
            for i in pl.spmd(0):  # <-
                helper(a, out)
            """),
        ParseError,
        "pl.spmd() takes a positive int core count, got 0",
        "0",
        fix="for i in pl.spmd(4):",
    ),
    Bad(
        "spmd-kernel-same-work",
        entry("""\
            for i in pl.spmd(4):  # <-
                out[0:16, :] = pl.exp(a[0:16, :])
            """),
        ParseError,
        "pl.spmd(4) launches its body on 4 blocks, but it never reads the block index",
        "pl.spmd(4)",
    ),
    Bad(
        "spmd-scope-same-work",
        entry("""\
            with pl.spmd(4):
                with pl.at(level=pl.Level.CORE_GROUP):  # <-
                    out[0:16, :] = pl.exp(a[0:16, :])
            """),
        ParseError,
        "pl.spmd(4) launches the pl.at scope at this line on 4 blocks, but it never reads the block index",
        "pl.at(level=pl.Level.CORE_GROUP)",
    ),
    Bad(
        "spmd-unknown-option",
        entry("""\
            for i in pl.spmd(4, sync=True):  # <-
                helper(a, out)
            """),
        ParseError,
        "pl.spmd() got an unexpected keyword argument 'sync'",
        "True",
        fix="for i in pl.spmd(4, sync_start=True):",
    ),
    Bad(
        "spmd-kernel-option-on-a-dispatch",
        entry("""\
            for i in pl.spmd(4, name_hint="rows"):  # <-
                helper(a, out)
            """),
        ParseError,
        "pl.spmd(name_hint=...) describes the kernel a pl.spmd body of ops becomes",
        '"rows"',
        fix="for i in pl.spmd(4):",
    ),
    Bad(
        "spmd-float-predicate",
        entry("""\
            for i in pl.spmd(4, predicate=s):  # <-
                helper(a, out)
            """),
        ParseError,
        "predicate= takes one comparison, got `s`",
        "s",
        fix="for i in pl.spmd(4, predicate=(ws[0] > 0)):",
    ),
    Bad(
        "spmd-sync-start-not-a-flag",
        entry("""\
            for i in pl.spmd(4, sync_start=1):  # <-
                helper(a, out)
            """),
        ParseError,
        "sync_start= takes True or False, got",
        "1",
        fix="for i in pl.spmd(4, sync_start=True):",
    ),
    Bad(
        "block-index-outside-scope",
        entry("""\
            for i in pl.spmd(4):
                j = i + 1  # <-
                helper(a, out)
            """),
        ParseError,
        "'i' is the block index of pl.spmd",
        "i",
        fix="helper(a, out)",
    ),
    Bad(
        "op-outside-scope",
        entry("c = pl.add(a, b)  # <-\n"),
        ParseError,
        "pl.add outside a pl.at scope",
        "pl.add(a, b)",
        fix="helper(a, out)",
    ),
    Bad(
        "create-tensor-in-a-kernel",
        module(f"""\
            @pl.jit.incore
            def kernel(a: T, out: pl.Out[T]):
                t = pl.create_tensor([64, 64], pl.FP32)  # <-
                return out

            @pl.jit
            {SIGNATURE}
                return kernel(a, out)
            """),
        ParseError,
        "allocates a global-memory tensor",
        "pl.create_tensor([64, 64], pl.FP32)",
    ),
    # ---------------------------------------------------------------- loops and carried values
    Bad(
        "python-range",
        scope("""\
            for i in range(4):  # <-
                out[:] = x
            """),
        ParseError,
        "Python range() cannot drive a kernel loop",
        "range(4)",
        fix="for i in pl.range(4):",
    ),
    Bad(
        "loop-over-a-tuple",
        scope("""\
            for d in a.shape:  # <-
                out[:] = x
            """),
        ParseError,
        "a kernel loop iterates over pl.range(...), pl.parallel(...) or pl.unroll(...)",
        "a.shape",
        fix="for d in pl.range(4):",
    ),
    Bad(
        "for-else",
        scope("""\
            for i in pl.range(4):
                out[:] = x
            else:
                out[:] = pl.exp(x)  # <-
            """),
        ParseError,
        "for ... else is not supported in a kernel",
        "out[:] = pl.exp(x)",
    ),
    Bad(
        "range-step-keyword",
        scope("""\
            for i in pl.range(0, 64, step=32):  # <-
                out[i:i + 32, :] = x[0:32, :]
            """),
        ParseError,
        "pl.range() takes no keyword argument step=",
        "32",
        fix="for i in pl.range(0, 64, 32):",
    ),
    Bad(
        "range-four-arguments",
        scope("""\
            for i in pl.range(0, 64, 32, 1):  # <-
                out[:] = x
            """),
        ParseError,
        "pl.range() takes (stop), (start, stop) or (start, stop, step); got 4 arguments",
        "pl.range(0, 64, 32, 1)",
        fix="for i in pl.range(0, 64, 32):",
    ),
    Bad(
        "range-step-zero",
        scope("""\
            for i in pl.range(0, 64, 0):  # <-
                out[:] = x
            """),
        ParseError,
        "pl.range() step must not be zero",
        "0",
        fix="for i in pl.range(0, 64, 1):",
    ),
    Bad(
        "range-float-bound",
        scope("""\
            for i in pl.range(s):  # <-
                out[:] = x
            """),
        ParseError,
        "pl.range() bounds must be integers, got Scalar[FP32]",
        "s",
        fix="for i in pl.range(pl.cast(s, pl.INDEX)):",
    ),
    Bad(
        "two-loop-indices",
        scope("""\
            for i, j in pl.range(4):  # <-
                out[:] = x
            """),
        ParseError,
        "loop-carried values are written",
        "i, j",
        fix="for i in pl.range(4):",
    ),
    Bad(
        "init-values-count",
        scope("""\
            for i, (acc, extra) in pl.range(4, init_values=(x,)):  # <-
                acc = pl.add(acc, x)
            """),
        ParseError,
        "2 carried names but 1 init_values",
        "(x,)",
        fix="for i, (acc, extra) in pl.range(4, init_values=(x, x)):",
    ),
    Bad(
        "init-value-not-carryable",
        scope("""\
            for i, (flag,) in pl.range(4, init_values=("on",)):  # <-
                flag = 1
            """),
        ParseError,
        "the loop-carried value 'flag' is the str 'on'",
        '"on"',
        fix="for i, (flag,) in pl.range(4, init_values=(0,)):",
    ),
    Bad(
        "carried-type-changes",
        scope("""\
            acc = x
            for i in pl.range(4):
                acc = pl.row_sum(acc, x)  # <-
            """),
        ParseError,
        "the loop-carried value 'acc' enters the loop as Tile[[64, 64], FP32, Vec]",
        "acc",
        fix="acc_next = pl.row_sum(acc, x)",
    ),
    Bad(
        "name-after-its-loop",
        scope("""\
            for i in pl.parallel(4):
                y = pl.exp(x)
            out[:] = y  # <-
            """),
        ParseError,
        "'y' is defined inside a loop",
        "y",
        fix="out[:] = pl.exp(x)",
    ),
    Bad(
        "yield-without-values",
        scope("""\
            for i, (acc,) in pl.range(4, init_values=(x,)):
                acc = pl.yield_()  # <-
            """),
        ParseError,
        "pl.yield_ takes the carried values",
        "pl.yield_()",
        fix="acc = pl.yield_(acc)",
    ),
    Bad(
        "statement-builtin-as-value",
        scope("r = pl.range(4)  # <-\n"),
        ParseError,
        "pl.range(...) cannot be used here",
        "pl.range(4)",
        fix="r = 4",
    ),
    # ---------------------------------------------------------------- ifs and conditions
    Bad(
        "float-condition",
        scope("""\
            if s:  # <-
                out[:] = x
            """),
        ParseError,
        "an if condition must be a boolean or integer scalar, got Scalar[FP32]",
        "s",
        fix="if s > 0:",
    ),
    Bad(
        "if-arms-give-two-types",
        scope("""\
            y = x
            if n > 0:
                y = pl.exp(x)
            else:
                y = n  # <-
            pl.store(y, [0, 0], out)
            """),
        ParseError,
        "at the end of one arm of the if and",
        "y",
        fix="y_else = n",
    ),
    Bad(
        "name-bound-in-one-arm-only",
        scope("""\
            if n > 0:
                z = pl.exp(x)
            pl.store(z, [0, 0], out)  # <-
            """),
        ParseError,
        "'z' is defined inside an if arm",
        "z",
        fix="pl.store(x, [0, 0], out)",
    ),
    Bad(
        "while-without-init-values",
        scope("""\
            for (i,) in pl.while_():  # <-
                pl.cond(i < n)
                i = i + 1
            """),
        ParseError,
        "pl.while_() needs init_values=(...)",
        "pl.while_()",
        fix="for (i,) in pl.while_(init_values=(0,)):",
    ),
    Bad(
        "while-without-cond",
        scope("""\
            for (i,) in pl.while_(init_values=(0,)):
                i = i + 1  # <-
            """),
        ParseError,
        "a pl.while_ loop body starts with its condition, pl.cond(...)",
        "i = i + 1",
        fix="pl.cond(i < n)",
    ),
    Bad(
        "while-target-is-a-name",
        scope("""\
            for i in pl.while_(init_values=(0,)):  # <-
                pl.cond(i < n)
            """),
        ParseError,
        "the target of pl.while_(...) is the tuple of its carried names",
        "i",
        fix="for (i,) in pl.while_(init_values=(0,)):",
    ),
    Bad(
        "cond-not-first",
        scope("""\
            for (i,) in pl.while_(init_values=(0,)):
                pl.cond(i < n)
                pl.cond(i < 2)  # <-
                i = i + 1
            """),
        ParseError,
        "pl.cond(...) cannot be used here",
        "pl.cond(i < 2)",
        fix="i = i + 0",
    ),
    Bad(
        "break-in-a-parallel-loop",
        scope("""\
            for i in pl.parallel(4):
                if i > n:
                    break  # <-
            """),
        ParseError,
        "`break` works in pl.range and pl.while_ loops",
        "break",
        fix="pass",
    ),
    Bad(
        "continue-leaving-a-scope",
        entry("""\
            for i in pl.range(4):
                with pl.at(level=pl.Level.CORE_GROUP):
                    if i > n:
                        continue  # <-
                    out[:] = pl.exp(pl.load(a, [0, 0], [64, 64]))
            """),
        ParseError,
        "`continue` cannot leave a pl.at scope",
        "continue",
        fix="pass",
    ),
    Bad(
        "chained-run-time-comparison",
        scope("""\
            if 0 < n < 4:  # <-
                out[:] = x
            """),
        ParseError,
        "only a single <, <=, >, >=, == or != compares run-time scalars",
        "0 < n < 4",
        fix="if 0 < n:",
    ),
    Bad(
        "is-on-a-run-time-scalar",
        scope("""\
            if n is None:  # <-
                out[:] = x
            """),
        ParseError,
        "only a single <, <=, >, >=, == or != compares run-time scalars",
        "n is None",
        fix="if n == 0:",
    ),
    Bad(
        "and-of-run-time-conditions",
        scope("""\
            if n > 0 and n < 4:  # <-
                out[:] = x
            """),
        ParseError,
        "an operand of and/or before the last must be known at compile time, got Scalar[BOOL]",
        "n > 0",
        fix="if n > 0:",
    ),
    Bad(
        "run-time-conditional-expression",
        scope("y = x if n > 0 else x  # <-\n"),
        ParseError,
        "the condition of `x if cond else y` must be known at compile time",
        "n > 0",
    ),
    Bad(
        "compile-time-assert",
        scope("assert a.shape[0] == 128, 'needs 128 rows'  # <-\n"),
        ParseError,
        "assertion failed at compile time: needs 128 rows",
        "assert a.shape[0] == 128, 'needs 128 rows'",
        fix="assert a.shape[0] == 64, 'needs 64 rows'",
    ),
    Bad(
        "compare-shape-with-number",
        scope("""\
            if a.shape < 3:  # <-
                out[:] = x
            """),
        ParseError,
        "cannot compare at compile time",
        "a.shape < 3",
        fix="if a.shape[0] < 128:",
    ),
    # ---------------------------------------------------------------- returns
    Bad(
        "return-in-a-scope",
        module(f"""\
            @pl.jit
            {SIGNATURE}
                with pl.at(level=pl.Level.CORE_GROUP):
                    out[:] = a
                    return out  # <-
            """),
        ParseError,
        "`return` must be the last statement, outside loops and scopes",
        "return out",
    ),
    Bad(
        "return-a-scalar",
        module(f"""\
            @pl.jit
            {SIGNATURE}
                return n  # <-
            """),
        ParseError,
        "a kernel returns tensors, got Scalar[INDEX]",
        "n",
        fix="return out",
    ),
    Bad(
        "incore-returns-an-input",
        module("""\
            @pl.jit.incore
            def k(a: T, out: pl.Out[T]):
                pl.store(pl.load(a, [0, 0], [64, 64]), [0, 0], out)
                return a  # <-
            """),
        ParseError,
        "returns the pl.Out / pl.InOut tensors it writes; 'a' is not one",
        "a",
        fix="return out",
    ),
    Bad(
        "code-after-return",
        module(f"""\
            @pl.jit
            {SIGNATURE}
                return out
                helper(a, out)  # <-
            """),
        ParseError,
        "code after `return` is not supported",
        "helper(a, out)",
    ),
    # ---------------------------------------------------------------- region writes and reads
    Bad(
        "write-into-a-tile",
        scope("x[0:32, :] = x[32:64, :]  # <-\n"),
        ParseError,
        "only tensors take region writes (out[...] = ...), got Tile[[64, 64], FP32, Vec]",
        "x[0:32, :]",
        fix="x = pl.assemble(x, x[32:64, :], [0, 0])",
    ),
    Bad(
        "write-too-many-subscripts",
        scope("out[0:64, 0:64, 0:1] = x  # <-\n"),
        ParseError,
        "3 subscripts for a tensor of rank 2",
        "out[0:64, 0:64, 0:1]",
        fix="out[0:64, 0:64] = x",
    ),
    Bad(
        "write-with-an-index",
        scope("out[0, :] = x[0:1, :]  # <-\n"),
        ParseError,
        "write a region with slices",
        "0",
        fix="out[0:1, :] = x[0:1, :]",
    ),
    Bad(
        "write-region-size",
        scope("out[0:32, :] = x  # <-\n"),
        TypeCheckError,
        "the region [0:32] of dim 0 holds 32 elements but the value has 64",
        "out[0:32, :]",
        fix="out[0:64, :] = x",
    ),
    Bad(
        "write-omitted-dim-size",
        scope("out[0:64] = x[:, 0:32]  # <-\n"),
        TypeCheckError,
        "the region [0:64] of dim 1 holds 64 elements but the value has 32",
        "out[0:64]",
        fix="out[0:64, 0:32] = x[:, 0:32]",
    ),
    Bad(
        "write-a-number",
        scope("out[:] = 0.0  # <-\n"),
        ParseError,
        "the written value must be a tensor or a tile, got the float 0.0",
        "out[:]",
        fix="out[:] = pl.full([64, 64], pl.FP32, 0.0)",
    ),
    Bad(
        "write-rank-mismatch",
        scope("out[:] = v  # <-\n"),
        TypeCheckError,
        "rank mismatch: Tensor[[64], FP32] into Tensor[[64, 64], FP32]",
        "out[:]",
        fix="out[0:1, :] = pl.reshape(v, [1, 64])",
    ),
    Bad(
        "read-with-an-index",
        scope("y = x[n, :]  # <-\n"),
        ParseError,
        "read a region with slices",
        "n",
        fix="y = x[n:n + 1, :]",
    ),
    Bad(
        "read-with-a-step",
        scope("y = x[0:64:2, :]  # <-\n"),
        ParseError,
        "read a region with slices",
        "0:64:2",
        fix="y = x[0:64, :]",
    ),
    Bad(
        "read-too-many-subscripts",
        scope("y = x[:, :, :]  # <-\n"),
        ParseError,
        "3 subscripts for a value of rank 2",
        "x[:, :, :]",
        fix="y = x[0:64, 0:64]",
    ),
    Bad(
        "read-empty-slice",
        scope("y = x[8:8, :]  # <-\n"),
        ParseError,
        "a slice must hold at least one element, got 8:8",
        "8:8",
        fix="y = x[8:16, :]",
    ),
    Bad(
        "read-run-time-end",
        scope("y = x[0:n, :]  # <-\n"),
        ParseError,
        "the end of a slice must be known at compile time, got Scalar[INDEX]",
        "n",
        fix="y = pl.load(a, [0, 0], [64, 64], valid_shape=[n, 64])",
    ),
    Bad(
        "read-run-time-start",
        scope("y = x[n:64, :]  # <-\n"),
        ParseError,
        "a slice with a run-time start needs a constant extent, got n:64",
        "n:64",
        fix="y = x[n:n + 64, :]",
    ),
    Bad(
        "read-region-out-of-bounds",
        scope("y = x[32:96, :]  # <-\n"),
        TypeCheckError,
        "region [32:96] is outside dim 0 of size 64",
        "x[32:96, :]",
        fix="y = x[0:64, :]",
    ),
    Bad(
        "subscript-a-scalar",
        scope("y = n[0]  # <-\n"),
        ParseError,
        "cannot subscript Scalar[INDEX]",
        "n[0]",
        fix="y = n",
    ),
    Bad(
        "augmented-region-write",
        scope("out[0:64, :] += x  # <-\n"),
        ParseError,
        "augmented assignment works on names only",
        "out[0:64, :] += x",
        fix="pl.assemble(out, x, [0, 0], atomic=pl.AtomicType.Add)",
    ),
    Bad(
        "chained-assignment",
        scope("y = z = pl.exp(x)  # <-\n"),
        ParseError,
        "chained assignment (a = b = ...) is not supported",
        "y = z = pl.exp(x)",
        fix="z = pl.exp(x)",
    ),
    Bad(
        "unpack-one-value",
        scope("y, z = pl.exp(x)  # <-\n"),
        ParseError,
        "cannot unpack Tile[[64, 64], FP32, Vec]",
        "y, z",
        fix="y = pl.exp(x)",
    ),
    Bad(
        "unpack-count",
        scope("r, c, d = a.shape  # <-\n"),
        ParseError,
        "cannot unpack 2 values into 3 names",
        "r, c, d",
        fix="r, c = a.shape",
    ),
    Bad(
        "assign-to-an-attribute",
        scope("x.data = pl.exp(x)  # <-\n"),
        ParseError,
        "cannot assign to an attribute (x.attr = ...) in a kernel",
        "x.data",
        fix="data = pl.exp(x)",
    ),
    # ---------------------------------------------------------------- subscripts of Python values
    Bad(
        "tuple-indexed-at-run-time",
        scope("""\
            for i in pl.range(2):
                off = (0, 32)[i]  # <-
            """),
        ParseError,
        "is a Python tuple, read at compile time, but the index i is a run-time value",
        "(0, 32)[i]",
        fix="off = i * 32",
    ),
    Bad(
        "tuple-index-out-of-range",
        scope("r = a.shape[2]  # <-\n"),
        ParseError,
        "cannot index the list [64, 64] with 2",
        "a.shape[2]",
        fix="r = a.shape[1]",
    ),
    Bad(
        "subscript-a-module",
        scope("y = pl[0]  # <-\n"),
        ParseError,
        "cannot subscript a Python module object",
        "pl[0]",
    ),
    Bad(
        "unknown-attribute",
        scope("y = pl.expp(x)  # <-\n"),
        ParseError,
        "has no attribute 'expp'",
        "pl.expp",
        fix="y = pl.exp(x)",
    ),
    Bad(
        "tile-attribute",
        scope("y = x.T  # <-\n"),
        ParseError,
        "'.T' is not available on Tile[[64, 64], FP32, Vec]",
        "x.T",
        fix="y = x.shape",
    ),
    # ---------------------------------------------------------------- calls
    Bad(
        "call-a-python-function",
        scope("print(x)  # <-\n"),
        ParseError,
        "cannot call print inside a kernel",
        "print(x)",
    ),
    Bad(
        "call-a-tile",
        scope("y = x()  # <-\n"),
        ParseError,
        "cannot call Tile[[64, 64], FP32, Vec]",
        "x()",
        fix="y = pl.exp(x)",
    ),
    Bad(
        "double-star-kwargs",
        scope("y = pl.exp(**{'x': x})  # <-\n"),
        ParseError,
        "**kwargs in a call",
        "{'x': x}",
        fix="y = pl.exp(x=x)",
    ),
    Bad(
        "min-of-a-run-time-scalar",
        scope("r = min(n, 4)  # <-\n"),
        ParseError,
        "min() runs at compile time and needs constant arguments",
        "min(n, 4)",
        fix="r = pl.minimum(n, 4)",
    ),
    Bad(
        "len-of-a-number",
        scope("r = len(4)  # <-\n"),
        ParseError,
        "len() failed at compile time",
        "len(4)",
        fix="r = len(a.shape)",
    ),
    Bad(
        "call-the-entry",
        module("""\
            @pl.jit
            def other(a: T, out: pl.Out[T]):
                return out


            @pl.jit
            def k(a: T, out: pl.Out[T]):
                other(a, out)  # <-
                return out
            """),
        ParseError,
        "other() is a @pl.jit entry and cannot be called from a kernel",
        "other(a, out)",
    ),
    Bad(
        "incore-call-in-a-scope",
        scope("helper(a, out)  # <-\n"),
        ParseError,
        "helper() is an @pl.jit.incore kernel: call it from the @pl.jit body",
        "helper(a, out)",
        fix="out[:] = x",
    ),
    Bad(
        "incore-call-arity",
        entry("helper(a)  # <-\n"),
        ParseError,
        "helper(): missing a required argument: 'y'",
        "helper(a)",
        fix="helper(a, out)",
    ),
    Bad(
        "incore-call-shape",
        entry("helper(v, out)  # <-\n"),
        TypeCheckError,
        "argument 'x' of helper() is Tensor[[64], FP32] but the parameter is annotated pl.Tensor[[64, 64], pl.FP32]",
        "helper(v, out)",
    ),
    Bad(
        "incore-call-tensor-for-scalar",
        entry("scaled(a, b, out)  # <-\n"),
        TypeCheckError,
        "argument 'k' of scaled() must be a pl.INDEX scalar, got Tensor[[64, 64], FP32]",
        "scaled(a, b, out)",
        fix="scaled(a, 4, out)",
    ),
    Bad(
        "incore-call-scalar-for-tensor",
        entry("helper(n, out)  # <-\n"),
        TypeCheckError,
        "argument 'x' of helper() must be a tensor, got Scalar[INDEX]",
        "helper(n, out)",
        fix="helper(a, out)",
    ),
    Bad(
        "inline-recursion",
        module("""\
            @pl.jit.inline
            def again(x):
                return again(x)  # <-


            @pl.jit
            def k(a: T, out: pl.Out[T]):
                with pl.at(level=pl.Level.CORE_GROUP):
                    out[:] = again(a)
                return out
            """),
        ParseError,
        "@pl.jit.inline again() calls itself",
        "again(x)",
    ),
    Bad(
        "op-unknown-keyword",
        scope("y = pl.load(a, [0, 0], [64, 64], memory=pl.Mem.Vec)  # <-\n"),
        ParseError,
        "pl.load(): got an unexpected keyword argument 'memory'",
        "pl.load(a, [0, 0], [64, 64], memory=pl.Mem.Vec)",
        fix="y = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Vec)",
    ),
    # ---------------------------------------------------------------- pl.split_aiv regions
    Bad(
        "region-outside-a-scope",
        entry("""\
            for lane in pl.split_aiv(2):  # <-
                helper(a, out)
            """),
        ParseError,
        "pl.split_aiv(...) outside a pl.at(level=pl.Level.CORE_GROUP) scope",
        "pl.split_aiv(2)",
    ),
    Bad(
        "region-lane-count",
        module(f"""\
            @pl.jit
            {SIGNATURE}
                with pl.at(level=pl.Level.CORE_GROUP):
                    for lane in pl.split_aiv(4):  # <-
                        pl.store(pl.load(a, [0, 0], [64, 64]), [0, 0], out)
                return out
            """),
        ParseError,
        "pl.split_aiv(4) requires n == 2",
        "4",
        fix="for lane in pl.split_aiv(2):",
    ),
    Bad(
        "region-mode-string",
        module(f"""\
            @pl.jit
            {SIGNATURE}
                with pl.at(level=pl.Level.CORE_GROUP):
                    for lane in pl.split_aiv(2, mode="UP_DOWN"):  # <-
                        pl.store(pl.load(a, [0, 0], [64, 64]), [0, 0], out)
                return out
            """),
        ParseError,
        "pl.split_aiv() mode= takes a pl.SplitMode, got the str 'UP_DOWN'",
        '"UP_DOWN"',
        fix="for lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):",
    ),
    Bad(
        "region-arguments",
        module(f"""\
            @pl.jit
            {SIGNATURE}
                with pl.at(level=pl.Level.CORE_GROUP):
                    for lane in pl.split_aiv(2, pl.SplitMode.NONE, 3):  # <-
                        pl.store(pl.load(a, [0, 0], [64, 64]), [0, 0], out)
                return out
            """),
        ParseError,
        "pl.split_aiv(): too many positional arguments",
        "pl.split_aiv(2, pl.SplitMode.NONE, 3)",
        fix="for lane in pl.split_aiv(2, mode=pl.SplitMode.NONE):",
    ),
    Bad(
        "regions-nested",
        module(f"""\
            @pl.jit
            {SIGNATURE}
                with pl.at(level=pl.Level.CORE_GROUP):
                    for lane in pl.split_aiv(2):
                        for inner in pl.split_aiv(2):  # <-
                            pl.store(pl.load(a, [0, 0], [64, 64]), [0, 0], out)
                return out
            """),
        ParseError,
        "pl.split_aiv regions do not nest",
        "pl.split_aiv(2)",
    ),
    Bad(
        "region-two-names",
        module(f"""\
            @pl.jit
            {SIGNATURE}
                with pl.at(level=pl.Level.CORE_GROUP):
                    for lane, other in pl.split_aiv(2):  # <-
                        pl.store(pl.load(a, [0, 0], [64, 64]), [0, 0], out)
                return out
            """),
        ParseError,
        "the target of pl.split_aiv(...) must be one name",
        "lane, other",
        fix="for lane in pl.split_aiv(2):",
    ),
    Bad(
        "cube-op-in-a-region",
        module(f"""\
            @pl.jit
            {SIGNATURE}
                with pl.at(level=pl.Level.CORE_GROUP):
                    left = pl.move(pl.load(h, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
                    right = pl.move(pl.load(h, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
                    for lane in pl.split_aiv(2):
                        acc = pl.matmul(left, right)  # <-
                return out
            """),
        ParseError,
        "cube op pl.matmul inside a pl.split_aiv region, whose body runs on the AIV lanes",
        "pl.matmul(left, right)",
    ),
    Bad(
        "vector-op-outside-the-regions",
        module(f"""\
            @pl.jit
            {SIGNATURE}
                with pl.at(level=pl.Level.CORE_GROUP):
                    y = pl.exp(pl.load(a, [0, 0], [64, 64]))  # <-
                    for lane in pl.split_aiv(2):
                        pl.store(pl.load(a, [0, 0], [64, 64]), [0, 0], out)
                return out
            """),
        ParseError,
        "vector op pl.exp sits outside every pl.split_aiv region of a scope that has them",
        "pl.exp(pl.load(a, [0, 0], [64, 64]))",
    ),
    Bad(
        "split-and-regions",
        module(f"""\
            @pl.jit
            {SIGNATURE}
                with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
                    for lane in pl.split_aiv(2):  # <-
                        pl.store(pl.load(a, [0, 0], [64, 64]), [0, 0], out)
                return out
            """),
        ParseError,
        "pl.split and pl.split_aiv regions are mutually exclusive in one scope",
        "pl.split_aiv(2)",
    ),
    Bad(
        "shard-outside-every-region",
        scope("part = pl.aiv_shard(m)  # <-\n"),
        ParseError,
        "pl.aiv_shard: outside every pl.split_aiv region: it names a tile crossing a region's edge",
        "pl.aiv_shard(m)",
    ),
    # ---------------------------------------------------------------- cross-core ops
    Bad(
        "push-a-vec-tile-to-the-vector-side",
        scope("pl.tpush_to_aiv(x)  # <-\n"),
        TypeCheckError,
        "pl.tpush_to_aiv: takes a tile in Acc or Mat, got Tile[[64, 64], FP32, Vec]",
        "pl.tpush_to_aiv(x)",
        fix="pl.tpush_to_aiv(m)",
    ),
    Bad(
        "push-a-tensor",
        scope("pl.tpush_to_aic(a)  # <-\n"),
        ParseError,
        "pl.tpush_to_aic: the pushed value must be a tile, got Tensor[[64, 64], FP32]",
        "pl.tpush_to_aic(a)",
        fix="pl.tpush_to_aic(x)",
    ),
    Bad(
        "pop-dtype-string",
        scope('y = pl.tpop_from_aic(shape=[64, 64], dtype="fp32")  # <-\n'),
        ParseError,
        "pl.tpop_from_aic: dtype must be a pl.DataType, got the str 'fp32'",
        'pl.tpop_from_aic(shape=[64, 64], dtype="fp32")',
        fix="y = pl.tpop_from_aic(shape=[64, 64], dtype=pl.FP32)",
    ),
    Bad(
        "pop-split-string",
        scope('y = pl.tpop_from_aic(shape=[64, 64], dtype=pl.FP32, split="UP_DOWN")  # <-\n'),
        ParseError,
        "split= takes a pl.SplitMode, got the str 'UP_DOWN'",
        'pl.tpop_from_aic(shape=[64, 64], dtype=pl.FP32, split="UP_DOWN")',
        fix="y = pl.tpop_from_aic(shape=[64, 64], dtype=pl.FP32, split=pl.SplitMode.UP_DOWN)",
    ),
    Bad(
        "free-a-mat-tile-to-the-cube",
        scope("pl.tfree_to_aic(m)  # <-\n"),
        TypeCheckError,
        "pl.tfree_to_aic: takes a tile in Vec, got Tile[[64, 64], FP32, Mat]",
        "pl.tfree_to_aic(m)",
        fix="pl.tfree_to_aic(pl.tpop_from_aic(shape=[64, 64], dtype=pl.FP32))",
    ),
    Bad(
        "pipe-direction",
        scope("pl.aic_initialize_pipe(dir_mask=4, slot_size=16384, slot_num=2)  # <-\n"),
        TypeCheckError,
        "dir_mask must be 1 (cube->vector), 2 (vector->cube) or 3 (both), got 4",
        "pl.aic_initialize_pipe(dir_mask=4, slot_size=16384, slot_num=2)",
        fix="pl.aic_initialize_pipe(dir_mask=3, slot_size=16384, slot_num=2)",
    ),
    Bad(
        "pipe-slot-num",
        scope("pl.aiv_initialize_pipe(dir_mask=1, slot_size=16384, slot_num=0)  # <-\n"),
        TypeCheckError,
        "slot_num must be a positive int, got 0",
        "pl.aiv_initialize_pipe(dir_mask=1, slot_size=16384, slot_num=0)",
        fix="pl.aiv_initialize_pipe(dir_mask=1, slot_size=16384, slot_num=2)",
    ),
    Bad(
        "pipe-run-time-size",
        scope("pl.aiv_initialize_pipe(dir_mask=1, slot_size=n, slot_num=2)  # <-\n"),
        ParseError,
        "slot_size= must be known at compile time, got Scalar[INDEX]",
        "pl.aiv_initialize_pipe(dir_mask=1, slot_size=n, slot_num=2)",
        fix="pl.aiv_initialize_pipe(dir_mask=1, slot_size=16384, slot_num=2)",
    ),
    Bad(
        "shard-a-vec-tile",
        region("y = pl.aiv_shard(x)  # <-\n"),
        TypeCheckError,
        "pl.aiv_shard: takes a tile in Acc or Mat, got Tile[[64, 64], FP32, Vec]",
        "pl.aiv_shard(x)",
        fix="y = pl.aiv_shard(m)",
    ),
    Bad(
        "shard-one-row",
        region("y = pl.aiv_shard(row)  # <-\n", before="row = m[0:1, :]\n"),
        TypeCheckError,
        "cannot halve Tile[[1, 64], FP32, Mat] along dim 0",
        "pl.aiv_shard(row)",
        fix="y = pl.aiv_shard(m)",
    ),
    Bad(
        "gather-a-mat-tile",
        region("y = pl.aic_gather(m)  # <-\n"),
        TypeCheckError,
        "pl.aic_gather: takes a tile in Vec, got Tile[[64, 64], FP32, Mat]",
        "pl.aic_gather(m)",
        fix="y = pl.aic_gather(x)",
    ),
    # ---------------------------------------------------------------- system ops
    Bad(
        "syncall-mode",
        scope('pl.system.syncall(mode="medium")  # <-\n'),
        TypeCheckError,
        'mode must be "hard" or "soft", got \'medium\'',
        'pl.system.syncall(mode="medium")',
        fix='pl.system.syncall(mode="hard")',
    ),
    Bad(
        "syncall-core-type",
        scope('pl.system.syncall(core_type="all")  # <-\n'),
        ParseError,
        'core_type must be "aic", "aiv" or "mix"',
        'pl.system.syncall(core_type="all")',
        fix="pl.system.syncall()",
    ),
    Bad(
        "syncall-soft-without-workspace",
        scope('pl.system.syncall(mode="soft", used_cores=2)  # <-\n'),
        TypeCheckError,
        'mode="soft" needs gm_workspace=',
        'pl.system.syncall(mode="soft", used_cores=2)',
        fix='pl.system.syncall(mode="soft", gm_workspace=ws, used_cores=2)',
    ),
    Bad(
        "syncall-float-workspace",
        scope('pl.system.syncall(mode="soft", gm_workspace=a, used_cores=2)  # <-\n'),
        TypeCheckError,
        "gm_workspace must be an INT32 tensor of at least 16 elements, got Tensor[[64, 64], FP32]",
        'pl.system.syncall(mode="soft", gm_workspace=a, used_cores=2)',
        fix='pl.system.syncall(mode="soft", gm_workspace=ws, used_cores=2)',
    ),
    Bad(
        "syncall-no-cores",
        scope('pl.system.syncall(mode="soft", gm_workspace=ws)  # <-\n'),
        TypeCheckError,
        'mode="soft" needs used_cores= a positive int, got None',
        'pl.system.syncall(mode="soft", gm_workspace=ws)',
        fix='pl.system.syncall(mode="soft", gm_workspace=ws, used_cores=2)',
    ),
    Bad(
        "cacheinvalid-partial-region",
        scope("pl.system.cacheinvalid(a, [0, 0])  # <-\n"),
        ParseError,
        "the region form takes a tensor, its offsets and the region's shape",
        "pl.system.cacheinvalid(a, [0, 0])",
        fix="pl.system.cacheinvalid(a, [0, 0], [1, 64])",
    ),
    Bad(
        "cacheinvalid-rank",
        scope("pl.system.cacheinvalid(a, [0], [64])  # <-\n"),
        ParseError,
        "offsets and shape must each hold 2 entries",
        "pl.system.cacheinvalid(a, [0], [64])",
        fix="pl.system.cacheinvalid(a, [0, 0], [64, 64])",
    ),
    Bad(
        "cacheinvalid-out-of-bounds",
        scope("pl.system.cacheinvalid(a, [32, 0], [64, 64])  # <-\n"),
        TypeCheckError,
        "region [32:96] is outside dim 0 of size 64",
        "pl.system.cacheinvalid(a, [32, 0], [64, 64])",
        fix="pl.system.cacheinvalid(a, [0, 0], [64, 64])",
    ),
    # ---------------------------------------------------------------- scalar arithmetic
    Bad(
        "divide-by-zero-at-compile-time",
        scope("r = a.shape[0] // 0  # <-\n"),
        ParseError,
        "cannot fold 64 and 0",
        "a.shape[0] // 0",
        fix="r = a.shape[0] // 2",
    ),
    Bad(
        "floordiv-of-a-tile",
        scope("y = x // 2  # <-\n"),
        ParseError,
        "pl.floordiv: mixes a scalar and Tile[[64, 64], FP32, Vec]",
        "x // 2",
        fix="y = n // 2",
    ),
    Bad(
        "compare-tiles",
        scope("""\
            if x < x:  # <-
                out[:] = x
            """),
        ParseError,
        "got Tile[[64, 64], BOOL, Vec]: a comparison of tiles or tensors is an elementwise mask",
        "x < x",
        fix="if pl.read(a, [0, 0]) < s:",
    ),
    Bad(
        "exp-of-a-run-time-scalar",
        scope("r = pl.exp(s)  # <-\n"),
        ParseError,
        "pl.exp: is not supported on a run-time scalar (Scalar[FP32])",
        "pl.exp(s)",
        fix="r = pl.exp(pl.full([1, 16], pl.FP32, s))",
    ),
    Bad(
        "log-of-zero",
        scope("r = pl.log(0)  # <-\n"),
        ParseError,
        "pl.log: cannot fold 0: math domain error",
        "pl.log(0)",
        fix="r = pl.log(1)",
    ),
    Bad(
        "invert-a-float",
        scope("r = ~1.5  # <-\n"),
        ParseError,
        "cannot fold ~1.5",
        "~1.5",
        fix="r = ~1",
    ),
    Bad(
        "not-of-a-run-time-scalar",
        scope("""\
            if not n:  # <-
                out[:] = x
            """),
        ParseError,
        "operator not on Scalar[INDEX] is not supported",
        "not n",
        fix="if n == 0:",
    ),
    Bad(
        "power-of-a-tile",
        scope("y = x ** 2  # <-\n"),
        ParseError,
        "operator ** is not supported",
        "x ** 2",
        fix="y = pl.mul(x, x)",
    ),
    Bad(
        "offset-of-a-float-scalar",
        scope("y = pl.load(a, [s, 0], [64, 64])  # <-\n"),
        ParseError,
        "offsets must hold integers, got Scalar[FP32]",
        "pl.load(a, [s, 0], [64, 64])",
        fix="y = pl.load(a, [pl.cast(s, pl.INDEX), 0], [64, 64])",
    ),
    Bad(
        "offset-of-a-fraction",
        scope("y = pl.load(a, [0.5, 0], [64, 64])  # <-\n"),
        ParseError,
        "offsets must hold integers, got the float 0.5",
        "pl.load(a, [0.5, 0], [64, 64])",
        fix="y = pl.load(a, [0, 0], [64, 64])",
    ),
    # ---------------------------------------------------------------- op table: elementwise
    Bad(
        "add-shape",
        scope("y = pl.add(x, x[0:32, :])  # <-\n"),
        TypeCheckError,
        "pl.add: operand shape mismatch",
        "pl.add(x, x[0:32, :])",
        fix="y = pl.add(x[0:32, :], x[0:32, :])",
    ),
    Bad(
        "add-dtype",
        scope("y = pl.add(x, xi)  # <-\n"),
        TypeCheckError,
        "pl.add: operand dtype mismatch",
        "pl.add(x, xi)",
        fix="y = pl.add(x, pl.cast(xi, pl.FP32))",
    ),
    Bad(
        "add-tensor-and-tile",
        scope("y = a + x  # <-\n"),
        TypeCheckError,
        "pl.add: operands mix a tensor and a tile",
        "a + x",
        fix="y = pl.load(a, [0, 0], [64, 64]) + x",
    ),
    Bad(
        "add-in-mat",
        scope("y = pl.add(m, m)  # <-\n"),
        TypeCheckError,
        "pl.add: vector op needs its tiles in Vec, got Tile[[64, 64], FP32, Mat]",
        "pl.add(m, m)",
        fix="y = pl.add(x, x)",
    ),
    Bad(
        "add-a-string",
        scope('y = pl.add(x, "1")  # <-\n'),
        ParseError,
        "pl.add: right operand must be a tensor or a tile, got the str '1'",
        'pl.add(x, "1")',
        fix="y = pl.add(x, x)",
    ),
    Bad(
        "scalar-on-the-left",
        scope("y = pl.sub(1.0, x)  # <-\n"),
        ParseError,
        "pl.sub: the scalar form takes the scalar as the right operand",
        "pl.sub(1.0, x)",
        fix="y = pl.add(pl.neg(x), 1.0)",
    ),
    Bad(
        "fraction-on-an-int-tile",
        scope("y = pl.mul(xi, 2.5)  # <-\n"),
        TypeCheckError,
        "pl.mul: the scalar operand is a FP32 scalar 2.5",
        "pl.mul(xi, 2.5)",
        fix="y = pl.mul(pl.cast(xi, pl.FP32), 2.5)",
    ),
    Bad(
        "exp-of-an-int-tile",
        scope("y = pl.exp(xi)  # <-\n"),
        TypeCheckError,
        "pl.exp: is defined on floats, got Tile[[64, 64], INT32, Vec]",
        "pl.exp(xi)",
        fix="y = pl.exp(pl.cast(xi, pl.FP32))",
    ),
    Bad(
        "tile-op-on-a-tensor",
        scope("y = pl.tile.add(a, b)  # <-\n"),
        ParseError,
        "pl.tile.add: takes tiles, got Tensor[[64, 64], FP32]",
        "pl.tile.add(a, b)",
        fix="y = pl.add(a, b)",
    ),
    Bad(
        "cast-dtype-string",
        scope('y = pl.cast(x, "fp16")  # <-\n'),
        ParseError,
        "pl.cast: dtype must be a pl dtype such as pl.FP32, got the str 'fp16'",
        'pl.cast(x, "fp16")',
        fix="y = pl.cast(x, pl.FP16)",
    ),
    Bad(
        "cast-mode",
        scope('y = pl.cast(x, pl.INT32, mode="nearest")  # <-\n'),
        ParseError,
        "pl.cast: unknown rounding mode the str 'nearest'",
        'pl.cast(x, pl.INT32, mode="nearest")',
        fix='y = pl.cast(x, pl.INT32, mode="rint")',
    ),
    Bad(
        "concat-rows",
        scope("y = pl.concat(x, x[0:32, :])  # <-\n"),
        TypeCheckError,
        "pl.concat: concatenates columns of 2-D operands with equal row counts",
        "pl.concat(x, x[0:32, :])",
        fix="y = pl.concat(x[0:32, :], x[0:32, :])",
    ),
    Bad(
        "concat-dtype",
        scope("y = pl.concat(x, xi)  # <-\n"),
        TypeCheckError,
        "pl.concat: operand dtype mismatch",
        "pl.concat(x, xi)",
        fix="y = pl.concat(x, pl.cast(xi, pl.FP32))",
    ),
    # ---------------------------------------------------------------- op table: matmul
    Bad(
        "matmul-inner-dims",
        scope("y = pl.matmul(a, b[0:32, :])  # <-\n"),
        TypeCheckError,
        "pl.matmul: inner dimensions differ",
        "pl.matmul(a, b[0:32, :])",
        fix="y = pl.matmul(a[:, 0:32], b[0:32, :])",
    ),
    Bad(
        "matmul-vec-operands",
        scope("y = pl.matmul(x, x)  # <-\n"),
        TypeCheckError,
        "pl.matmul: the left operand must be in Left, got Tile[[64, 64], FP32, Vec]",
        "pl.matmul(x, x)",
        fix="y = pl.matmul(pl.move(pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left), pl.move(m, target_memory=pl.Mem.Right))",
    ),
    Bad(
        "matmul-dtype",
        scope("y = pl.matmul(a, h)  # <-\n"),
        TypeCheckError,
        "pl.matmul: operand dtype mismatch",
        "pl.matmul(a, h)",
        fix="y = pl.matmul(a, pl.cast(h, pl.FP32))",
    ),
    Bad(
        "matmul-1d",
        scope("y = pl.matmul(v, b)  # <-\n"),
        TypeCheckError,
        "pl.matmul: needs 2-D operands",
        "pl.matmul(v, b)",
        fix="y = pl.matmul(pl.reshape(v, [1, 64]), b)",
    ),
    Bad(
        "matmul-acc-accumulator",
        scope("y = pl.matmul_acc(b[0:32, :], a, b)  # <-\n"),
        TypeCheckError,
        "pl.matmul_acc: accumulator must be a [64, 64] FP32 tensor",
        "pl.matmul_acc(b[0:32, :], a, b)",
        fix="y = pl.matmul_acc(pl.matmul(a, b), a, b)",
    ),
    Bad(
        "matmul-out-dtype-string",
        scope('y = pl.matmul(a, b, out_dtype="fp32")  # <-\n'),
        ParseError,
        "pl.matmul: out_dtype must be a pl dtype, got the str 'fp32'",
        'pl.matmul(a, b, out_dtype="fp32")',
        fix="y = pl.matmul(a, b, out_dtype=pl.FP32)",
    ),
    # ---------------------------------------------------------------- op table: loads, stores, moves
    Bad(
        "load-offsets-count",
        scope("y = pl.load(a, [0], [64, 64])  # <-\n"),
        TypeCheckError,
        "pl.load: offsets must be a list of 2 indices, got 1",
        "pl.load(a, [0], [64, 64])",
        fix="y = pl.load(a, [0, 0], [64, 64])",
    ),
    Bad(
        "load-shape-rank",
        scope("y = pl.load(a, [0, 0], [64])  # <-\n"),
        TypeCheckError,
        "pl.load: shape [64] has 1 dim(s), but Tensor[[64, 64], FP32] has 2",
        "pl.load(a, [0, 0], [64])",
        fix="y = pl.load(a, [0, 0], [64, 64])",
    ),
    Bad(
        "load-out-of-bounds",
        scope("y = pl.load(a, [32, 0], [64, 64])  # <-\n"),
        TypeCheckError,
        "pl.load: region [32:96] is outside dim 0 of size 64",
        "pl.load(a, [32, 0], [64, 64])",
        fix="y = pl.load(a, [0, 0], [64, 64])",
    ),
    Bad(
        "load-valid-shape-too-large",
        scope("y = pl.load(a, [0, 0], [32, 64], valid_shape=[64, 64])  # <-\n"),
        TypeCheckError,
        "pl.load: valid_shape [64, 64] is larger than the tile shape [32, 64] in dim 0",
        "pl.load(a, [0, 0], [32, 64], valid_shape=[64, 64])",
        fix="y = pl.load(a, [0, 0], [32, 64], valid_shape=[32, 64])",
    ),
    Bad(
        "load-memory-string",
        scope('y = pl.load(a, [0, 0], [64, 64], target_memory="Mat")  # <-\n'),
        ParseError,
        "pl.load: target_memory must be a pl.Mem member, got the str 'Mat'",
        'pl.load(a, [0, 0], [64, 64], target_memory="Mat")',
        fix="y = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)",
    ),
    Bad(
        "load-from-a-tile",
        scope("y = pl.load(x, [0, 0], [64, 64])  # <-\n"),
        ParseError,
        "pl.load: source must be a tensor, got Tile[[64, 64], FP32, Vec]",
        "pl.load(x, [0, 0], [64, 64])",
    ),
    Bad(
        "load-offsets-not-a-list",
        scope("y = pl.load(a, 0, [64, 64])  # <-\n"),
        ParseError,
        "offsets must be a list such as [0, 0], got the int 0",
        "pl.load(a, 0, [64, 64])",
        fix="y = pl.load(a, [0, 0], [64, 64])",
    ),
    Bad(
        "load-shape-not-a-list",
        scope("y = pl.load(a, [0, 0], 64)  # <-\n"),
        ParseError,
        "shape must be a non-empty list of ints, got the int 64",
        "pl.load(a, [0, 0], 64)",
        fix="y = pl.load(a, [0, 0], [64, 64])",
    ),
    Bad(
        "load-run-time-shape",
        scope("y = pl.load(a, [0, 0], [n, 64])  # <-\n"),
        ParseError,
        "shape must hold positive ints known at compile time, got Scalar[INDEX]",
        "pl.load(a, [0, 0], [n, 64])",
        fix="y = pl.load(a, [0, 0], [64, 64], valid_shape=[n, 64])",
    ),
    Bad(
        "store-dtype",
        scope("pl.store(xi, [0, 0], out)  # <-\n"),
        TypeCheckError,
        "pl.store: dtype mismatch: Tile[[64, 64], INT32, Vec] into Tensor[[64, 64], FP32]",
        "pl.store(xi, [0, 0], out)",
        fix="pl.store(pl.cast(xi, pl.FP32), [0, 0], out)",
    ),
    Bad(
        "store-a-tensor",
        scope("pl.store(a, [0, 0], out)  # <-\n"),
        ParseError,
        "pl.store: value must be a tile, got Tensor[[64, 64], FP32]",
        "pl.store(a, [0, 0], out)",
        fix="pl.store(x, [0, 0], out)",
    ),
    Bad(
        "store-tile-rank",
        scope("pl.store(pl.load(v, [0], [64]), [0, 0], out)  # <-\n"),
        TypeCheckError,
        "pl.store: the tile's shape [64] has 1 dim(s), but Tensor[[64, 64], FP32] has 2",
        "pl.store(pl.load(v, [0], [64]), [0, 0], out)",
    ),
    Bad(
        "move-a-tensor",
        scope("y = pl.move(a, target_memory=pl.Mem.Mat)  # <-\n"),
        ParseError,
        "pl.move: source must be a tile, got Tensor[[64, 64], FP32]",
        "pl.move(a, target_memory=pl.Mem.Mat)",
        fix="y = pl.move(m, target_memory=pl.Mem.Left)",
    ),
    Bad(
        "move-target-memory",
        scope("y = pl.move(m, target_memory=3)  # <-\n"),
        ParseError,
        "pl.move: target_memory must be a pl.Mem member, got the int 3",
        "pl.move(m, target_memory=3)",
        fix="y = pl.move(m, target_memory=pl.Mem.Left)",
    ),
    Bad(
        "assemble-atomic-string",
        scope('pl.assemble(out, x, [0, 0], atomic="add")  # <-\n'),
        ParseError,
        "pl.assemble: atomic must be a pl.AtomicType such as pl.AtomicType.Add, got the str 'add'",
        'pl.assemble(out, x, [0, 0], atomic="add")',
        fix="pl.assemble(out, x, [0, 0], atomic=pl.AtomicType.Add)",
    ),
    Bad(
        "assemble-atomic-into-a-tile",
        scope("y = pl.assemble(x, x[0:32, :], [0, 0], atomic=pl.AtomicType.Add)  # <-\n"),
        ParseError,
        "atomic= applies to writes into global memory",
        "pl.assemble(x, x[0:32, :], [0, 0], atomic=pl.AtomicType.Add)",
        fix="pl.assemble(out, x, [0, 0], atomic=pl.AtomicType.Add)",
    ),
    Bad(
        "assemble-tile-dtype",
        scope("y = pl.assemble(x, xi[0:32, :], [0, 0])  # <-\n"),
        TypeCheckError,
        "pl.assemble: writes Tile[[32, 64], INT32, Vec] into Tile[[64, 64], FP32, Vec]: dtype or rank differs",
        "pl.assemble(x, xi[0:32, :], [0, 0])",
        fix="y = pl.assemble(x, pl.cast(xi[0:32, :], pl.FP32), [0, 0])",
    ),
    Bad(
        "assemble-tile-spaces",
        scope("y = pl.assemble(x, m[0:32, :], [0, 0])  # <-\n"),
        TypeCheckError,
        "pl.assemble: cannot assemble Tile[[32, 64], FP32, Mat] into Tile[[64, 64], FP32, Vec]",
        "pl.assemble(x, m[0:32, :], [0, 0])",
    ),
    Bad(
        "read-from-a-scalar",
        scope("r = pl.read(s, [0, 0])  # <-\n"),
        ParseError,
        "pl.read: the read value must be a tensor or a tile, got Scalar[FP32]",
        "pl.read(s, [0, 0])",
        fix="r = pl.read(a, [0, 0])",
    ),
    Bad(
        "read-offsets-count",
        scope("r = pl.read(a, [0])  # <-\n"),
        TypeCheckError,
        "pl.read: offsets must be a list of 2 indices, got 1",
        "pl.read(a, [0])",
        fix="r = pl.read(a, [0, 0])",
    ),
    Bad(
        "gather-row-dtype",
        scope("rows = pl.gather_row(pl.create_tile([8, 64], pl.INT32), a, [0, 0], [0, 0], [1, 64])  # <-\n"),
        TypeCheckError,
        "pl.gather_row: dtype mismatch: Tensor[[64, 64], FP32] into Tile[[8, 64], INT32, Vec]",
        "pl.gather_row(pl.create_tile([8, 64], pl.INT32), a, [0, 0], [0, 0], [1, 64])",
        fix="rows = pl.gather_row(pl.create_tile([8, 64], pl.FP32), a, [0, 0], [0, 0], [1, 64])",
    ),
    Bad(
        "gather-row-shape",
        scope("rows = pl.gather_row(pl.create_tile([8, 64], pl.FP32), a, [0, 0], [0, 0], [64])  # <-\n"),
        TypeCheckError,
        "pl.gather_row: copies a 2-D window of rows: shape must be [R, C], got [64]",
        "pl.gather_row(pl.create_tile([8, 64], pl.FP32), a, [0, 0], [0, 0], [64])",
        fix="rows = pl.gather_row(pl.create_tile([8, 64], pl.FP32), a, [0, 0], [0, 0], [1, 64])",
    ),
    Bad(
        "gather-row-window-past-the-tile",
        scope("rows = pl.gather_row(pl.create_tile([8, 64], pl.FP32), a, [4, 0], [0, 0], [8, 64])  # <-\n"),
        TypeCheckError,
        "pl.gather_row: region [4:12] is outside dim 0 of size 8",
        "pl.gather_row(pl.create_tile([8, 64], pl.FP32), a, [4, 0], [0, 0], [8, 64])",
        fix="rows = pl.gather_row(pl.create_tile([8, 64], pl.FP32), a, [4, 0], [0, 0], [8, 64], valid_shape=[4, 64])",
    ),
    Bad(
        "gather-row-valid-shape-past-the-window",
        scope(
            "rows = pl.gather_row(pl.create_tile([8, 64], pl.FP32), a, [0, 0], [0, 0], [8, 64], valid_shape=[9, 64])  # <-\n"
        ),
        TypeCheckError,
        "pl.gather_row: valid_shape 9 of dim 0 is outside the window shape [8, 64]",
        "pl.gather_row(pl.create_tile([8, 64], pl.FP32), a, [0, 0], [0, 0], [8, 64], valid_shape=[9, 64])",
        fix="rows = pl.gather_row(pl.create_tile([8, 64], pl.FP32), a, [0, 0], [0, 0], [8, 64], valid_shape=[8, 64])",
    ),
    Bad(
        "gather-row-valid-shape-negative",
        scope(
            "rows = pl.gather_row(pl.create_tile([8, 64], pl.FP32), a, [0, 0], [n, 0], [8, 64], valid_shape=[-1, 64])  # <-\n"
        ),
        TypeCheckError,
        "pl.gather_row: valid_shape -1 of dim 0 is outside the window shape [8, 64]",
        "pl.gather_row(pl.create_tile([8, 64], pl.FP32), a, [0, 0], [n, 0], [8, 64], valid_shape=[-1, 64])",
        fix="rows = pl.gather_row(pl.create_tile([8, 64], pl.FP32), a, [0, 0], [n, 0], [8, 64], valid_shape=[0, 64])",
    ),
    Bad(
        "gather-row-valid-shape-past-the-tile",
        scope(
            "rows = pl.gather_row(pl.create_tile([8, 64], pl.FP32), a, [4, 0], [n, 0], [8, 64], valid_shape=[6, 64])  # <-\n"
        ),
        TypeCheckError,
        "pl.gather_row: region [4:10] is outside dim 0 of size 8",
        "pl.gather_row(pl.create_tile([8, 64], pl.FP32), a, [4, 0], [n, 0], [8, 64], valid_shape=[6, 64])",
        fix="rows = pl.gather_row(pl.create_tile([8, 64], pl.FP32), a, [4, 0], [n, 0], [8, 64], valid_shape=[4, 64])",
    ),
    Bad(
        "gather-row-valid-shape-with-transpose",
        scope(
            "kv = pl.create_l1([8, 64], pl.FP32, transpose=True)\n"
            "kv = pl.gather_row(kv, a, [0, 0], [0, 0], [8, 64], transpose=True, valid_shape=[n, 64])  # <-\n"
        ),
        TypeCheckError,
        "pl.gather_row: valid_shape= cannot be combined with transpose=True",
        "pl.gather_row(kv, a, [0, 0], [0, 0], [8, 64], transpose=True, valid_shape=[n, 64])",
        fix="kv = pl.gather_row(kv, a, [0, 0], [0, 0], [8, 64], valid_shape=[n, 64])",
    ),
    Bad(
        "create-tile-dtype",
        scope("t = pl.create_tile([64, 64], float)  # <-\n"),
        ParseError,
        "pl.create_tile: dtype must be a pl dtype, got a Python type object",
        "pl.create_tile([64, 64], float)",
        fix="t = pl.create_tile([64, 64], pl.FP32)",
    ),
    Bad(
        "create-tensor-manual-dep",
        entry('t = pl.create_tensor([64, 64], pl.FP32, manual_dep="yes")  # <-\n'),
        ParseError,
        "pl.create_tensor: manual_dep= must be True or False, got the str 'yes'",
        'pl.create_tensor([64, 64], pl.FP32, manual_dep="yes")',
        fix="t = pl.create_tensor([64, 64], pl.FP32, manual_dep=True)",
    ),
    # ---------------------------------------------------------------- op table: reductions and views
    Bad(
        "row-sum-without-scratch",
        scope("r = pl.row_sum(x)  # <-\n"),
        TypeCheckError,
        "pl.row_sum: needs a scratch tile shaped like Tile[[64, 64], FP32, Vec], got no scratch tile",
        "pl.row_sum(x)",
        fix="r = pl.row_sum(x, pl.create_tile(x.shape, x.dtype))",
    ),
    Bad(
        "row-sum-tensor-with-scratch",
        scope("r = pl.row_sum(a, b)  # <-\n"),
        TypeCheckError,
        "pl.row_sum: on Tensor[[64, 64], FP32] takes no scratch operand",
        "pl.row_sum(a, b)",
        fix="r = pl.row_sum(a)",
    ),
    Bad(
        "row-max-of-a-vector",
        scope("r = pl.row_max(v)  # <-\n"),
        TypeCheckError,
        "pl.row_max: operand must be 2-D, got Tensor[[64], FP32]",
        "pl.row_max(v)",
        fix="r = pl.row_max(pl.reshape(v, [1, 64]))",
    ),
    Bad(
        "row-expand-vector-shape",
        scope("y = pl.row_expand_mul(a, b[0:1, :])  # <-\n"),
        TypeCheckError,
        "pl.row_expand_mul: the broadcast operand must be [64, 1]",
        "pl.row_expand_mul(a, b[0:1, :])",
    ),
    Bad(
        "col-expand-dtype",
        scope("y = pl.col_expand_mul(a, pl.cast(b[0:1, :], pl.FP16))  # <-\n"),
        TypeCheckError,
        "pl.col_expand_mul: operand dtype mismatch",
        "pl.col_expand_mul(a, pl.cast(b[0:1, :], pl.FP16))",
        fix="y = pl.col_expand_mul(a, pl.cast(pl.cast(b[0:1, :], pl.FP16), pl.FP32))",
    ),
    Bad(
        "reshape-element-count",
        scope("y = pl.reshape(x, [32, 64])  # <-\n"),
        TypeCheckError,
        "pl.reshape: cannot reshape Tile[[64, 64], FP32, Vec] (4096 elements) to [32, 64] (2048 elements)",
        "pl.reshape(x, [32, 64])",
        fix="y = pl.reshape(x, [32, 128])",
    ),
    Bad(
        "slice-rank",
        scope("y = pl.slice(x, [64], [0, 0])  # <-\n"),
        TypeCheckError,
        "pl.slice: a slice of Tile[[64, 64], FP32, Vec] needs a shape of rank 2",
        "pl.slice(x, [64], [0, 0])",
        fix="y = pl.slice(x, [64, 64], [0, 0])",
    ),
    Bad(
        "fillpad-a-scalar",
        scope("y = pl.fillpad(s)  # <-\n"),
        ParseError,
        "pl.fillpad: the padded value must be a tensor or a tile, got Scalar[FP32]",
        "pl.fillpad(s)",
        fix="y = pl.fillpad(pl.load(a, [0, 0], [64, 64], valid_shape=[n, 64]))",
    ),
    Bad(
        "fillpad-pad-value-string",
        scope('y = pl.fillpad(x, pad_value="zero")  # <-\n'),
        ParseError,
        "pl.fillpad: pad_value must be a pl.PadValue (or 0, math.inf, -math.inf), got the str 'zero'",
        'pl.fillpad(x, pad_value="zero")',
        fix="y = pl.fillpad(x, pad_value=pl.PadValue.zero)",
    ),
    Bad(
        "full-of-a-tile",
        scope("y = pl.full([64, 64], pl.FP32, x)  # <-\n"),
        ParseError,
        "pl.full: the fill value must be a scalar, got Tile[[64, 64], FP32, Vec]",
        "pl.full([64, 64], pl.FP32, x)",
        fix="y = pl.full([64, 64], pl.FP32, 0)",
    ),
    Bad(
        "full-out-of-range",
        scope("y = pl.full([64, 64], pl.INT8, 1000)  # <-\n"),
        TypeCheckError,
        "pl.full: the fill value 1000 does not fit pl.INT8",
        "pl.full([64, 64], pl.INT8, 1000)",
        fix="y = pl.full([64, 64], pl.INT8, 127)",
    ),
]


def _write(tmp_path: Path, source: str) -> tuple[Path, int | None]:
    """The module file of one row and the 1-based line that carries the marker (if any)."""
    text = HEADER + "\n\n" + source
    marked = [n for n, line in enumerate(text.splitlines(), 1) if line.rstrip().endswith(MARK)]
    path = tmp_path / f"bad_kernel_{uuid.uuid4().hex}.py"
    path.write_text(text)
    return path, marked[0] if len(marked) == 1 else None


def _parse(path: Path) -> None:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # a bad annotation already fails here, at def time
    module.k.parse()


@pytest.mark.parametrize("row", ROWS, ids=[row.id for row in ROWS])
def test_a_bad_kernel_is_an_error_at_its_line_with_a_caret_and_a_hint(tmp_path, row):
    path, line = _write(tmp_path, row.source)
    assert line is not None, "a row marks exactly one line"
    with pytest.raises(row.error) as info:
        _parse(path)
    err = info.value
    assert row.message in err.message
    assert err.span is not None and err.span.file == str(path) and err.span.line == line
    source_line = path.read_text().splitlines()[line - 1]
    assert source_line[err.span.col :].startswith(row.underlined)

    header, shown, carets, *rest = str(err).splitlines()
    assert header == f"{path}:{line}:{err.span.col + 1}: error: {err.message}"
    gutter = f"{line:>5} | "
    assert shown == gutter + source_line
    start = carets.index("^")
    assert carets[start:] == "^" * len(row.underlined)
    assert shown[start : start + len(row.underlined)] == row.underlined
    assert rest and rest[-1].startswith("hint: ") and rest[-1].removeprefix("hint: ").strip()
    assert err.hint and rest[-1] == f"hint: {err.hint}"


FIXED = [row for row in ROWS if row.fix is not None]


@pytest.mark.parametrize("row", FIXED, ids=[row.id for row in FIXED])
def test_the_line_rewritten_as_the_hint_says_parses(tmp_path, row):
    """The hint's fix is a real one: with the marked line written that way, the kernel parses."""
    path, _ = _write(tmp_path, row.fixed_source())
    _parse(path)


def test_the_table_covers_many_distinct_errors():
    assert len(ROWS) >= 60
    assert len({row.id for row in ROWS}) == len(ROWS)
    assert len({row.message for row in ROWS}) >= 60
    assert len(FIXED) >= 100
