"""The DSL builtins: ``pl.add``, ``pl.load``, ``pl.at``, ``pl.range``, ``pl.system.syncall``, ...

A builtin is a named marker. The parser recognizes it when it resolves a callee and builds IR
for it; called as plain Python it raises, because a kernel body is parsed, never executed.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, NoReturn

from pypto.language.errors import KernelOnlyError

# name -> (signature, one-line meaning); the signatures are what the parser accepts.
BUILTIN_DOCS: dict[str, tuple[str, str]] = {
    "at": (
        "at(level=, optimizations=[...], name_hint=, deps=[...], no_dep_args=[...]) as tid",
        "a scope that becomes one kernel, called as one task",
    ),
    "manual_scope": ("manual_scope()", "a block in which only explicit deps= order tasks"),
    "spmd": (
        "spmd(core_num)",
        "`for i in pl.spmd(n):` launches each kernel of the body on n core groups; i is the block index",
    ),
    "range": ("range(stop) / range(start, stop, step=1)", "a sequential loop over an INDEX var"),
    "yield_": (
        "yield_(a, b, ...)",
        "the values of a loop's carried names for the next iteration: `a, b = pl.yield_(a2, b2)`",
    ),
    "parallel": ("parallel(stop) / parallel(start, stop, step=1)", "a loop with independent iterations"),
    "unroll": ("unroll(stop) / unroll(start, stop, step=1)", "a loop unrolled at compile time"),
    "load": (
        "load(tensor, offsets, shape, target_memory=pl.Mem.Vec, valid_shape=None)",
        "tensor region -> tile",
    ),
    "store": ("store(tile, offsets, tensor)", "tile -> tensor region"),
    "move": ("move(tile, target_memory=)", "tile -> tile in another memory space"),
    "create_tile": ("create_tile(shape, dtype, target_memory=pl.Mem.Vec)", "an uninitialized tile"),
    "create_tensor": (
        "create_tensor(shape, dtype, manual_dep=False)",
        "a global-memory tensor (manual_dep=True: tasks are never ordered through it)",
    ),
    "assemble": (
        "assemble(target, value, offsets, atomic=pl.AtomicType.NONE)",
        "write value into a region of target (a tensor, added in when atomic=pl.AtomicType.Add; or a tile)",
    ),
    "matmul": ("matmul(a, b, out_dtype=None, a_trans=False, b_trans=False)", "matrix product"),
    "matmul_acc": ("matmul_acc(acc, a, b)", "acc + a @ b, on tensors or on Acc/Left/Right tiles"),
    "reshape": ("reshape(x, shape)", "the same elements in another shape"),
    "slice": ("slice(x, shape, offset)", "a region of a tensor or tile (offsets may be run-time)"),
    "fillpad": (
        "fillpad(x, pad_value=pl.PadValue.zero)",
        "fill a tile outside its valid shape with 0, the dtype's lowest or its highest value",
    ),
    "full": ("full(shape, dtype, value)", "a Vec tile holding value everywhere"),
    "col_expand": ("col_expand(x, col_vec)", "a [1, C] vector repeated down the rows of x's shape"),
    "col_expand_mul": ("col_expand_mul(x, col_vec)", "x times a [1, C] vector, row by row"),
    "cast": ("cast(x, dtype, mode='round')", "convert the element type"),
    "concat": ("concat(a, b)", "concatenate columns"),
    "read": ("read(tensor, offsets)", "one element of a tensor, as a run-time scalar"),
    "gather_row": (
        "gather_row(dst_tile, src_tensor, dst_offset, src_offset, shape)",
        "copy a [1, C] row of a tensor into the tile (destination-passing: returns dst_tile)",
    ),
    "split_aiv": (
        "split_aiv(2, mode=pl.SplitMode.NONE)",
        "an explicit vector region; iterates over the lane",
    ),
    "aiv_shard": ("aiv_shard(tile, split=None)", "a cube tile -> each AIV lane's share"),
    "aic_gather": ("aic_gather(tile, split=None)", "the lanes' shares -> one cube tile"),
    "get_subblock_idx": ("get_subblock_idx()", "this AIV lane (0 or 1)"),
    "get_block_idx": ("get_block_idx()", "this core group's index in the launch"),
    "get_block_num": ("get_block_num()", "the number of core groups in the launch"),
    "system.fence": ("system.fence()", "order this core's earlier global-memory writes before later ones"),
    "system.cacheinvalid": (
        "system.cacheinvalid(tensor=None, offsets=None, shape=None)",
        "write back and invalidate the data cache: all of GM, or one tensor region",
    ),
    "system.syncall": (
        'system.syncall(core_type=None, mode="hard", gm_workspace=None, used_cores=None)',
        "a barrier across the cores of the launch",
    ),
}
for _side, _peer in (("aic", "aiv"), ("aiv", "aic")):
    BUILTIN_DOCS[f"{_side}_initialize_pipe"] = (
        f"{_side}_initialize_pipe(*, dir_mask, slot_size, slot_num)",
        f"set up the cross-core pipe on the {_side.upper()} side",
    )
    BUILTIN_DOCS[f"tpush_to_{_peer}"] = (
        f"tpush_to_{_peer}(tile, split=pl.SplitMode.NONE)",
        f"push a tile to the {_peer.upper()} through the pipe",
    )
    BUILTIN_DOCS[f"tpop_from_{_peer}"] = (
        f"tpop_from_{_peer}(shape, dtype, split=pl.SplitMode.NONE)",
        f"pop the next tile the {_peer.upper()} pushed",
    )
    BUILTIN_DOCS[f"tfree_to_{_peer}"] = (
        f"tfree_to_{_peer}(tile)",
        f"give a tile popped from the {_peer.upper()} back to its ring",
    )
for _name in ("add", "sub", "mul", "div", "maximum", "minimum"):
    BUILTIN_DOCS[_name] = (f"{_name}(lhs, rhs)", "elementwise; a scalar rhs selects the scalar form")
for _name in ("exp", "log", "sqrt", "rsqrt", "recip", "neg", "abs", "relu"):
    BUILTIN_DOCS[_name] = (f"{_name}(x)", "elementwise")
for _name in ("row_max", "row_sum", "row_min"):
    BUILTIN_DOCS[_name] = (
        f"{_name}(x, tmp=None)",
        "reduce each row to [R, 1]; on tiles tmp is a scratch tile like x",
    )
for _name in ("col_sum", "col_max"):
    BUILTIN_DOCS[_name] = (f"{_name}(x)", "reduce each column to [1, C]")
for _name in ("add", "sub", "mul", "div"):
    BUILTIN_DOCS[f"row_expand_{_name}"] = (
        f"row_expand_{_name}(x, row_vec)",
        f"{_name} a [R, 1] vector to every column of x",
    )

REDUCTION_OPS = (
    *("row_max", "row_sum", "row_min", "col_sum", "col_max"),
    *("row_expand_add", "row_expand_sub", "row_expand_mul", "row_expand_div", "col_expand", "col_expand_mul"),
)

TILE_OPS = (
    *("load", "store", "move", "matmul", "matmul_acc", "cast", "concat"),
    *("assemble", "reshape", "slice", "fillpad", "full", *REDUCTION_OPS),
    *("add", "sub", "mul", "div", "maximum", "minimum"),
    *("exp", "log", "sqrt", "rsqrt", "recip", "neg", "abs", "relu"),
)
TENSOR_OPS = (
    *("matmul", "matmul_acc", "cast", "concat", "assemble", "reshape", "slice", *REDUCTION_OPS),
    *("add", "sub", "mul", "div", "maximum", "minimum"),
    *("exp", "log", "sqrt", "rsqrt", "recip", "neg", "abs", "relu"),
)


class Builtin:
    """A DSL function recognized by the parser; ``level`` pins ``pl.tile.*`` / ``pl.tensor.*`` spellings.

    >>> pl.add(a, b)  # doctest: +SKIP  (only inside a @pl.jit body)
    """

    def __init__(self, name: str, level: str | None = None) -> None:
        self.name = name
        self.level = level
        signature, meaning = BUILTIN_DOCS[name]
        self.__name__ = name.rsplit(".", 1)[-1]
        self.__doc__ = f"pl.{signature}: {meaning}."

    @property
    def dsl_name(self) -> str:
        return f"pl.{self.level}.{self.name}" if self.level else f"pl.{self.name}"

    def __call__(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise KernelOnlyError(
            f"{self.dsl_name}() can only be used inside a @pl.jit function",
            hint="kernels are parsed, not executed: call the @pl.jit function with torch tensors instead",
        )

    def __repr__(self) -> str:
        return f"<pl builtin {self.dsl_name}>"


BUILTINS: dict[str, Builtin] = {name: Builtin(name) for name in BUILTIN_DOCS}


def _namespace(level: str, names: tuple[str, ...], aliases: dict[str, str]) -> SimpleNamespace:
    ops = {name: Builtin(name, level) for name in names}
    ops.update({alias: Builtin(target, level) for alias, target in aliases.items()})
    return SimpleNamespace(**ops)


tile = _namespace("tile", TILE_OPS, {"create": "create_tile"})
tensor = _namespace("tensor", TENSOR_OPS, {"create": "create_tensor"})
system = SimpleNamespace(
    **{name.split(".", 1)[1]: builtin for name, builtin in BUILTINS.items() if name.startswith("system.")}
)
