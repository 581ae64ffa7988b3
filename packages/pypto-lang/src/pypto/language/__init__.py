"""pypto.language — the ``pl`` DSL: ``import pypto.language as pl``.

>>> @pl.jit
... def add(a: pl.Tensor[[64, 64], pl.FP32], b: pl.Tensor[[64, 64], pl.FP32],
...         out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
...     with pl.at(level=pl.Level.CORE_GROUP):
...         out[:] = pl.add(a, b)
...     return out
"""

from pypto.ir import AtomicType, CastMode, DataType, Level, MemorySpace, PadValue, SplitMode
from pypto.ir import FunctionKind as FunctionType
from pypto.language.annotations import InOut, Out, Scalar, Tensor, Tile
from pypto.language.builtins import BUILTINS, system, tensor, tile
from pypto.language.errors import KernelOnlyError, ScopeOptionError
from pypto.language.jit import JitFunction, jit
from pypto.language.options import cross_core_slot, split

FP16 = DataType.FP16
BF16 = DataType.BF16
FP32 = DataType.FP32
INT8 = DataType.INT8
INT16 = DataType.INT16
INT32 = DataType.INT32
INT64 = DataType.INT64
UINT8 = DataType.UINT8
BOOL = DataType.BOOL
INDEX = DataType.INDEX

Mem = MemorySpace

at = BUILTINS["at"]
manual_scope = BUILTINS["manual_scope"]
spmd = BUILTINS["spmd"]
range = BUILTINS["range"]  # shadows the builtin on purpose: pl.range is the DSL loop
parallel = BUILTINS["parallel"]
unroll = BUILTINS["unroll"]
yield_ = BUILTINS["yield_"]

load = BUILTINS["load"]
store = BUILTINS["store"]
move = BUILTINS["move"]
create_tile = BUILTINS["create_tile"]
create_tensor = BUILTINS["create_tensor"]
assemble = BUILTINS["assemble"]
matmul = BUILTINS["matmul"]
matmul_acc = BUILTINS["matmul_acc"]
cast = BUILTINS["cast"]
concat = BUILTINS["concat"]
add = BUILTINS["add"]
sub = BUILTINS["sub"]
mul = BUILTINS["mul"]
div = BUILTINS["div"]
maximum = BUILTINS["maximum"]
minimum = BUILTINS["minimum"]
exp = BUILTINS["exp"]
log = BUILTINS["log"]
sqrt = BUILTINS["sqrt"]
rsqrt = BUILTINS["rsqrt"]
recip = BUILTINS["recip"]
neg = BUILTINS["neg"]
abs = BUILTINS["abs"]
relu = BUILTINS["relu"]
read = BUILTINS["read"]
gather_row = BUILTINS["gather_row"]
reshape = BUILTINS["reshape"]
slice = BUILTINS["slice"]  # shadows the builtin on purpose: pl.slice is the DSL view
fillpad = BUILTINS["fillpad"]
full = BUILTINS["full"]
row_max = BUILTINS["row_max"]
row_sum = BUILTINS["row_sum"]
row_min = BUILTINS["row_min"]
col_sum = BUILTINS["col_sum"]
col_max = BUILTINS["col_max"]
row_expand_add = BUILTINS["row_expand_add"]
row_expand_sub = BUILTINS["row_expand_sub"]
row_expand_mul = BUILTINS["row_expand_mul"]
row_expand_div = BUILTINS["row_expand_div"]
col_expand = BUILTINS["col_expand"]
col_expand_mul = BUILTINS["col_expand_mul"]

split_aiv = BUILTINS["split_aiv"]
aic_initialize_pipe = BUILTINS["aic_initialize_pipe"]
aiv_initialize_pipe = BUILTINS["aiv_initialize_pipe"]
tpush_to_aiv = BUILTINS["tpush_to_aiv"]
tpush_to_aic = BUILTINS["tpush_to_aic"]
tpop_from_aic = BUILTINS["tpop_from_aic"]
tpop_from_aiv = BUILTINS["tpop_from_aiv"]
tfree_to_aic = BUILTINS["tfree_to_aic"]
tfree_to_aiv = BUILTINS["tfree_to_aiv"]
aiv_shard = BUILTINS["aiv_shard"]
aic_gather = BUILTINS["aic_gather"]
get_subblock_idx = BUILTINS["get_subblock_idx"]
get_block_idx = BUILTINS["get_block_idx"]
get_block_num = BUILTINS["get_block_num"]

__all__ = [
    "BF16",
    "BOOL",
    "FP16",
    "FP32",
    "INDEX",
    "INT8",
    "INT16",
    "INT32",
    "INT64",
    "UINT8",
    "AtomicType",
    "CastMode",
    "DataType",
    "FunctionType",
    "InOut",
    "JitFunction",
    "KernelOnlyError",
    "Level",
    "Mem",
    "MemorySpace",
    "Out",
    "PadValue",
    "Scalar",
    "ScopeOptionError",
    "SplitMode",
    "Tensor",
    "Tile",
    "abs",
    "add",
    "aic_gather",
    "aic_initialize_pipe",
    "aiv_initialize_pipe",
    "aiv_shard",
    "assemble",
    "at",
    "cast",
    "col_expand",
    "col_expand_mul",
    "col_max",
    "col_sum",
    "concat",
    "create_tensor",
    "create_tile",
    "cross_core_slot",
    "div",
    "exp",
    "fillpad",
    "full",
    "gather_row",
    "get_block_idx",
    "get_block_num",
    "get_subblock_idx",
    "jit",
    "load",
    "log",
    "manual_scope",
    "matmul",
    "matmul_acc",
    "maximum",
    "minimum",
    "move",
    "mul",
    "neg",
    "parallel",
    "range",
    "read",
    "recip",
    "relu",
    "reshape",
    "row_expand_add",
    "row_expand_div",
    "row_expand_mul",
    "row_expand_sub",
    "row_max",
    "row_min",
    "row_sum",
    "rsqrt",
    "slice",
    "split",
    "split_aiv",
    "spmd",
    "sqrt",
    "store",
    "sub",
    "system",
    "tensor",
    "tfree_to_aic",
    "tfree_to_aiv",
    "tile",
    "tpop_from_aic",
    "tpop_from_aiv",
    "tpush_to_aic",
    "tpush_to_aiv",
    "unroll",
    "yield_",
]
