"""The DSL builtins: ``pl.add``, ``pl.load``, ``pl.at``, ``pl.range``, ...

A builtin is a named marker. The parser recognizes it when it resolves a callee and builds IR
for it; called as plain Python it raises, because a kernel body is parsed, never executed.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, NoReturn

from pypto.language.errors import KernelOnlyError

# name -> (signature, one-line meaning); the signatures are what the parser accepts.
BUILTIN_DOCS: dict[str, tuple[str, str]] = {
    "at": ("at(level=, optimizations=[...], name_hint=)", "a scope that becomes one kernel"),
    "range": ("range(stop) / range(start, stop, step=1)", "a sequential loop over an INDEX var"),
    "parallel": ("parallel(stop) / parallel(start, stop, step=1)", "a loop with independent iterations"),
    "unroll": ("unroll(stop) / unroll(start, stop, step=1)", "a loop unrolled at compile time"),
    "load": (
        "load(tensor, offsets, shape, target_memory=pl.Mem.Vec, valid_shape=None)",
        "tensor region -> tile",
    ),
    "store": ("store(tile, offsets, tensor)", "tile -> tensor region"),
    "move": ("move(tile, target_memory=)", "tile -> tile in another memory space"),
    "create_tile": ("create_tile(shape, dtype, target_memory=pl.Mem.Vec)", "an uninitialized tile"),
    "create_tensor": ("create_tensor(shape, dtype)", "a global-memory tensor"),
    "assemble": ("assemble(target, value, offsets)", "write value into a region of target"),
    "matmul": ("matmul(a, b, out_dtype=None, a_trans=False, b_trans=False)", "matrix product"),
    "matmul_acc": ("matmul_acc(acc, a, b)", "acc + a @ b on Acc/Left/Right tiles"),
    "cast": ("cast(x, dtype, mode='round')", "convert the element type"),
    "concat": ("concat(a, b)", "concatenate columns"),
}
for _name in ("add", "sub", "mul", "div", "maximum", "minimum"):
    BUILTIN_DOCS[_name] = (f"{_name}(lhs, rhs)", "elementwise; a scalar rhs selects the scalar form")
for _name in ("exp", "log", "sqrt", "rsqrt", "recip", "neg", "abs", "relu"):
    BUILTIN_DOCS[_name] = (f"{_name}(x)", "elementwise")

TILE_OPS = (
    *("load", "store", "move", "matmul", "matmul_acc", "cast", "concat"),
    *("add", "sub", "mul", "div", "maximum", "minimum"),
    *("exp", "log", "sqrt", "rsqrt", "recip", "neg", "abs", "relu"),
)
TENSOR_OPS = (
    *("matmul", "cast", "concat", "assemble"),
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
        self.__name__ = name
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
