"""The op registry: every op is declared once, as an :class:`OpSpec`, in its family module.

A spec gives the op's name, level (tensor / tile / scalar / system), the unit that executes it,
its operands by role (tensor, tile with the memory spaces it accepts, offsets, valid shape,
scalar), a typed attribute schema, the family's shared type rule, and traits the other layers
read instead of keeping their own tables (:mod:`pypto.ir.ops.spec`). Other layers name ops
through the handles ``tile``, ``tensor``, ``scalar``, ``system``, ``array`` and ``op`` (``tile.add ==
"tile.add"``), and find families with :func:`ops_with` (``ops_with(Reduction)``).

Naming: ``tensor.*`` ops work on whole global-memory tensors inside a scope (the compiler tiles
them), ``tile.*`` ops are single tile instructions, ``scalar.*`` ops are index arithmetic,
``system.*`` ops order memory across cores; pipe ops, block indices and ``call`` have no prefix.
"""

from __future__ import annotations

from pypto.ir.ops import (
    array_ops,
    crosscore,
    cube,
    elementwise,
    generate,
    indexed,
    movement,
    reduction,
    scalar_ops,
    system_ops,
)
from pypto.ir.ops.array_ops import MAX_ARRAY_SIZE
from pypto.ir.ops.crosscore import CUBE_OUT, RECEIVES, is_crossing_op, split_axis, split_shape
from pypto.ir.ops.cube import matmul_result_dtype
from pypto.ir.ops.enums import (
    PAD_VALUES,
    AtomicType,
    CastMode,
    CompactMode,
    PadValue,
    PipeType,
    TensorLayout,
    TileLayout,
)
from pypto.ir.ops.movement import TILE_ASSEMBLE_PATHS
from pypto.ir.ops.rules import check_same_rank, check_scalar_fits, short_name, user_name
from pypto.ir.ops.spec import (
    ALL,
    OPS,
    REQUIRED,
    SPLIT_FREELY,
    WHOLE_TILE,
    Attr,
    Boundary,
    Broadcast,
    Commutative,
    Cost,
    Effect,
    Elementwise,
    FloatOnly,
    Fold,
    FormatFree,
    GmAccess,
    Infix,
    InPipeSlot,
    KeepsValid,
    Level,
    Lowers,
    OnSide,
    Operand,
    OpNames,
    OpSpec,
    Ordering,
    PipeAction,
    PipeDirection,
    PipeEnd,
    PlacesTile,
    Positional,
    Product,
    Reduction,
    Reinterprets,
    Role,
    RowShared,
    Rule,
    SetsValid,
    Side,
    SplitPolicy,
    TaskIds,
    Trait,
    Unit,
    WholeRegion,
    array,
    declare,
    get_op,
    make_call,
    op,
    ops_with,
    pipe_op,
    scalar,
    system,
    tensor,
    tile,
    trait_of,
    undeclare,
)

FAMILIES = (
    elementwise,
    reduction,
    movement,
    generate,
    indexed,
    cube,
    crosscore,
    system_ops,
    scalar_ops,
    array_ops,
)

# The families' members by DSL name, as the family modules declare them (for loops over a family).
ELEMENTWISE_BINARY = tuple(elementwise.BINARY)
ELEMENTWISE_UNARY = tuple(elementwise.UNARY)
FLOAT_ONLY = frozenset(name for name, (floats, *_) in elementwise.UNARY.items() if floats)
ROW_REDUCTIONS = tuple(name for name, (axis, _, _) in reduction.REDUCTIONS.items() if axis == 1)
COL_REDUCTIONS = tuple(name for name, (axis, _, _) in reduction.REDUCTIONS.items() if axis == 0)
# The row broadcasts that join x and the vector by an elementwise op (not the plain repeat row_expand).
ROW_EXPANDS = tuple(
    name for name, (axis, _, _) in reduction.BROADCASTS.items() if axis == 1 and name != "row_expand"
)
COL_EXPANDS = tuple(name for name, (axis, _, _) in reduction.BROADCASTS.items() if axis == 0)
SCALAR_BINARY = tuple(scalar_ops.ARITHMETIC)
SCALAR_COMPARE = tuple(scalar_ops.COMPARE)

__all__ = [
    "ALL",
    "COL_EXPANDS",
    "COL_REDUCTIONS",
    "CUBE_OUT",
    "ELEMENTWISE_BINARY",
    "ELEMENTWISE_UNARY",
    "FAMILIES",
    "FLOAT_ONLY",
    "MAX_ARRAY_SIZE",
    "OPS",
    "PAD_VALUES",
    "RECEIVES",
    "REQUIRED",
    "ROW_EXPANDS",
    "ROW_REDUCTIONS",
    "SCALAR_BINARY",
    "SCALAR_COMPARE",
    "SPLIT_FREELY",
    "TILE_ASSEMBLE_PATHS",
    "WHOLE_TILE",
    "AtomicType",
    "Attr",
    "Boundary",
    "Broadcast",
    "CastMode",
    "Commutative",
    "CompactMode",
    "Cost",
    "Effect",
    "Elementwise",
    "FloatOnly",
    "Fold",
    "FormatFree",
    "GmAccess",
    "InPipeSlot",
    "Infix",
    "KeepsValid",
    "Level",
    "Lowers",
    "OnSide",
    "OpNames",
    "OpSpec",
    "Operand",
    "Ordering",
    "PadValue",
    "PipeAction",
    "PipeDirection",
    "PipeEnd",
    "PipeType",
    "PlacesTile",
    "Positional",
    "Product",
    "Reduction",
    "Reinterprets",
    "Role",
    "RowShared",
    "Rule",
    "SetsValid",
    "Side",
    "SplitPolicy",
    "TaskIds",
    "TensorLayout",
    "TileLayout",
    "Trait",
    "Unit",
    "WholeRegion",
    "array",
    "check_same_rank",
    "check_scalar_fits",
    "declare",
    "get_op",
    "is_crossing_op",
    "make_call",
    "matmul_result_dtype",
    "op",
    "ops_with",
    "pipe_op",
    "scalar",
    "short_name",
    "split_axis",
    "split_shape",
    "system",
    "tensor",
    "tile",
    "trait_of",
    "undeclare",
    "user_name",
]
