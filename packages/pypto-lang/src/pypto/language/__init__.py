"""pypto.language — the ``pl`` DSL: ``import pypto.language as pl``.

>>> @pl.jit
... def add(a: pl.Tensor[[64, 64], pl.FP32], b: pl.Tensor[[64, 64], pl.FP32],
...         out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
...     with pl.at(level=pl.Level.CORE_GROUP):
...         out[:] = pl.add(a, b)
...     return out
"""

from pypto.ir import DataType, Level, MemorySpace, SplitMode
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
range = BUILTINS["range"]  # shadows the builtin on purpose: pl.range is the DSL loop
parallel = BUILTINS["parallel"]
unroll = BUILTINS["unroll"]

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
    "DataType",
    "FunctionType",
    "InOut",
    "JitFunction",
    "KernelOnlyError",
    "Level",
    "Mem",
    "MemorySpace",
    "Out",
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
    "concat",
    "create_tensor",
    "create_tile",
    "cross_core_slot",
    "div",
    "exp",
    "gather_row",
    "get_block_idx",
    "get_block_num",
    "get_subblock_idx",
    "jit",
    "load",
    "log",
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
    "rsqrt",
    "split",
    "split_aiv",
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
]
