"""pypto.language — the ``pl`` DSL: ``import pypto.language as pl``.

>>> @pl.jit
... def add(a: pl.Tensor[[64, 64], pl.FP32], b: pl.Tensor[[64, 64], pl.FP32],
...         out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
...     with pl.at(level=pl.Level.CORE_GROUP):
...         out[:] = pl.add(a, b)
...     return out
"""

from typing import Any

from pypto.ir import (
    AtomicType,
    CastMode,
    CmpType,
    CompactMode,
    DataType,
    Level,
    MemorySpace,
    MemRefError,
    PadValue,
    PipeType,
    Role,
    SplitMode,
    TensorLayout,
    TileLayout,
)
from pypto.ir import FunctionKind as FunctionType
from pypto.ir.memory import Allocation, MemoryPlan, Reservation
from pypto.language import advice as _advice  # noqa: F401  (registers the DSL wording of the type rules' hints)
from pypto.language import debug, optimizations
from pypto.language.annotations import (
    Array,
    AsyncEvent,
    AsyncSession,
    InOut,
    MemRef,
    Out,
    PrefetchAsyncContext,
    Scalar,
    TaskId,
    Tensor,
    TensorView,
    Tile,
    TileView,
    Tuple,
    dynamic,
)
from pypto.language.builtins import (
    STATEMENTS,
    array,
    dump_tag,
    no_dep,
    op_builtins,
    prefetch,
    system,
    tensor,
    tile,
)
from pypto.language.directives import DIRECTIVES
from pypto.language.errors import KernelOnlyError, ScopeOptionError
from pypto.language.extensions import LANGUAGE
from pypto.language.jit import InlineFunction, JitFunction, inline, jit
from pypto.language.options import AUTO, ScopeMode, cross_core_slot, split
from pypto.language.parser.classes import (
    func_attr,
    function,
    loads,
    loads_program,
    parse,
    parse_program,
    program,
)
from pypto.runtime.compiling.compiled import register_reader

FP16 = DataType.FP16
BF16 = DataType.BF16
FP32 = DataType.FP32
INT8 = DataType.INT8
INT16 = DataType.INT16
INT32 = DataType.INT32
INT64 = DataType.INT64
UINT8 = DataType.UINT8
UINT16 = DataType.UINT16
UINT32 = DataType.UINT32
UINT64 = DataType.UINT64  # moved, viewed and converted only: a2a3 does not compute with it
# The storage formats: 4-bit ones (packed two to a byte; no a2a3 kernel holds them) and the 8-bit
# float formats of the MX matmul (moved, viewed and converted, not computed with).
INT4 = DataType.INT4
UINT4 = DataType.UINT4
FP4 = DataType.FP4
HF4 = DataType.HF4
FP8E4M3FN = DataType.FP8E4M3FN
FP8E5M2 = DataType.FP8E5M2
FP8E8M0 = DataType.FP8E8M0
HF8 = DataType.HF8
BOOL = DataType.BOOL
INDEX = DataType.INDEX
TASK_ID = DataType.TASK_ID  # the dtype of a task id: pl.TaskId is pl.Scalar[pl.TASK_ID]

Mem = MemorySpace
ND = TensorLayout.ND  # row-major: what a tensor is unless a pl.TensorView says otherwise
DN = TensorLayout.DN
NZ = TensorLayout.NZ

register_reader(parse_program)  # what RunConfig(verification_level=ROUNDTRIP) reads dumps back with

at = STATEMENTS["at"]
manual_scope = STATEMENTS["manual_scope"]
scope = STATEMENTS["scope"]
cluster = STATEMENTS["cluster"]
spmd = STATEMENTS["spmd"]
range = STATEMENTS["range"]  # shadows the builtin on purpose: pl.range is the DSL loop
parallel = STATEMENTS["parallel"]
unroll = STATEMENTS["unroll"]
pipeline = STATEMENTS["pipeline"]
submit = STATEMENTS["submit"]
spmd_submit = STATEMENTS["spmd_submit"]
yield_ = STATEMENTS["yield_"]
while_ = STATEMENTS["while_"]
cond = STATEMENTS["cond"]
split_aiv = STATEMENTS["split_aiv"]
static_print = DIRECTIVES["static_print"]
static_assert = DIRECTIVES["static_assert"]
const = DIRECTIVES["const"]
min = DIRECTIVES["min"]  # shadows the builtin on purpose: pl.min is the scalar minimum
max = DIRECTIVES["max"]
dim = DIRECTIVES["dim"]
create_l1 = DIRECTIVES["create_l1"]


# The ops (pl.add, pl.load, pl.tpush_to_aiv, ...) are read from the op registry when looked up, so
# an op declared there is a pl function with no edit here; type checkers see each as a Builtin.
# The names of packages built on the language (pl.autotune, pl.Config, pl.Autotuner: pypto.tuning)
# are loaded from those packages when first read (see pypto.language.extensions).
def __getattr__(name: str) -> Any:
    found = op_builtins().get(name)
    if found is not None:
        return found
    try:
        return LANGUAGE.get(name)
    except LookupError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


def __dir__() -> list[str]:
    return sorted({*globals(), *op_builtins(), *LANGUAGE.offered()})


__all__ = [
    "AUTO",
    "BF16",
    "BOOL",
    "DN",
    "FP4",
    "FP8E4M3FN",
    "FP8E5M2",
    "FP8E8M0",
    "FP16",
    "FP32",
    "HF4",
    "HF8",
    "INDEX",
    "INT4",
    "INT8",
    "INT16",
    "INT32",
    "INT64",
    "ND",
    "NZ",
    "TASK_ID",
    "UINT4",
    "UINT8",
    "UINT16",
    "UINT32",
    "UINT64",
    "Allocation",
    "Array",
    "AsyncEvent",
    "AsyncSession",
    "AtomicType",
    "CastMode",
    "CmpType",
    "CompactMode",
    "DataType",
    "FunctionType",
    "InOut",
    "InlineFunction",
    "JitFunction",
    "KernelOnlyError",
    "Level",
    "Mem",
    "MemRef",
    "MemRefError",
    "MemoryPlan",
    "MemorySpace",
    "Out",
    "PadValue",
    "PipeType",
    "PrefetchAsyncContext",
    "Reservation",
    "Role",
    "Scalar",
    "ScopeMode",
    "ScopeOptionError",
    "SplitMode",
    "TaskId",
    "Tensor",
    "TensorLayout",
    "TensorView",
    "Tile",
    "TileLayout",
    "TileView",
    "Tuple",
    "array",
    "at",
    "cluster",
    "cond",
    "const",
    "create_l1",
    "cross_core_slot",
    "debug",
    "dim",
    "dump_tag",
    "dynamic",
    "func_attr",
    "function",
    "inline",
    "jit",
    "loads",
    "loads_program",
    "manual_scope",
    "max",
    "min",
    "no_dep",
    "optimizations",
    "parallel",
    "parse",
    "parse_program",
    "pipeline",
    "prefetch",
    "program",
    "range",
    "scope",
    "split",
    "split_aiv",
    "spmd",
    "spmd_submit",
    "static_assert",
    "static_print",
    "submit",
    "system",
    "tensor",
    "tile",
    "unroll",
    "while_",
    "yield_",
]
__all__ += sorted(op_builtins())  # pl.add, pl.load, ...: one per op of the registry
