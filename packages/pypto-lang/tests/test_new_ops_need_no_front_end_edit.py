"""An op declared in the registry is a pl function at once: parsed, bound and printed with no
edit of pypto-lang. Each fixture declares throwaway family members the way the family modules do
and takes them out again."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from enum import Enum

import pytest

import pypto.language as pl
from pypto.ir import ParseError
from pypto.ir.ops import (
    REQUIRED,
    Attr,
    Commutative,
    Cost,
    Elementwise,
    KeepsValid,
    Level,
    Lowers,
    Operand,
    OpSpec,
    PlacesTile,
    Role,
    Unit,
    declare,
    undeclare,
)
from pypto.ir.ops.elementwise import binary, binary_scalar, unary
from pypto.ir.printer import print_ir
from pypto.ir.types import MemorySpace

VEC = (MemorySpace.Vec,)


def _x(name: str, level: Level) -> Operand:
    return Operand(name, Role.TILE, VEC) if level is Level.TILE else Operand(name, Role.TENSOR)


def _traits(level: Level, name: str) -> tuple:
    lowers = (Lowers(f"tile.{name}"),) if level is Level.TENSOR else (PlacesTile(),)
    return (Cost("vector_slow"), KeepsValid(), Elementwise(), *lowers)


@pytest.fixture
def declared() -> Iterator[list[str]]:
    """Declare the ops a test appends specs of, and remove them afterwards."""
    names: list[str] = []
    yield names
    for name in names:
        undeclare(name)


def _declare(names: list[str], spec: OpSpec) -> None:
    declare(spec)
    names.append(spec.name)


@pytest.fixture
def softsign(declared: list[str]) -> None:
    """``softsign`` as a member of the elementwise UNARY family, on tensors and tiles."""
    for level in (Level.TENSOR, Level.TILE):
        spec = OpSpec(
            f"{level.value}.softsign",
            level,
            Unit.VECTOR,
            unary,
            (_x("x", level),),
            traits=_traits(level, "softsign"),
            dsl="softsign",
            signature="pl.softsign(x)",
            doc="x / (1 + |x|) of each element",
        )
        _declare(declared, spec)


@pytest.fixture
def hypot(declared: list[str]) -> None:
    """``hypot`` as a member of the elementwise BINARY family, with its scalar form."""
    for level in (Level.TENSOR, Level.TILE):
        p = level.value
        pair = (_x("lhs", level), _x("rhs", level))
        traits = (*_traits(level, "hypot")[:2], Elementwise(f"{p}.hypots"), Commutative())
        _declare(
            declared,
            OpSpec(
                f"{p}.hypot",
                level,
                Unit.VECTOR,
                binary,
                pair,
                traits=traits,
                dsl="hypot",
                signature="pl.hypot(lhs, rhs)",
                doc="sqrt(lhs^2 + rhs^2)",
            ),
        )
        scalar = (_x("lhs", level), Operand("rhs", Role.SCALAR))
        _declare(
            declared,
            OpSpec(
                f"{p}.hypots",
                level,
                Unit.VECTOR,
                binary_scalar,
                scalar,
                traits=traits[:2],
                dsl="hypot",
                signature="pl.hypot(lhs, scalar)",
                doc="sqrt(lhs^2 + c^2)",
            ),
        )


class Rounding(Enum):
    """A throwaway enum attribute."""

    up = "up"
    down = "down"


ROUNDING: object = Rounding.up  # the kernel of the enum test reads it, a module global


@pytest.fixture
def snap(declared: list[str]) -> None:
    """A tile op with an enum attribute and an int attribute with a default."""

    def rule(spec, args, attrs, span):
        return args[0].type

    attrs = (Attr("rounding", Rounding, REQUIRED), Attr("step", int, 1))
    _declare(
        declared,
        OpSpec(
            "tile.snap",
            Level.TILE,
            Unit.VECTOR,
            rule,
            (_x("x", Level.TILE),),
            attrs,
            traits=(PlacesTile(),),
            dsl="snap",
            signature="pl.snap(x, rounding, step=1)",
            doc="each element snapped to a multiple of step",
        ),
    )


def _kernel():
    @pl.jit
    def kernel(a: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [0, 0], [16, 64])
            y = pl.softsign(x)
            z = pl.tile.softsign(y)
            pl.store(z, [0, 0], out)
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.softsign(a)
        return out

    return kernel


def test_a_new_unary_op_is_a_pl_function_that_parses_on_tiles_and_tensors(softsign):
    text = print_ir(_kernel().parse())
    assert "y: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.softsign(x)" in text
    assert "z: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.softsign(y)" in text
    assert "softsign: pl.Tensor[[16, 64], pl.FP32] = pl.tensor.softsign(a)" in text
    assert pl.softsign.__doc__.startswith("pl.softsign(x): x / (1 + |x|) of each element.")
    assert "softsign" in dir(pl) and "softsign" in dir(pl.tile)


def test_a_new_op_leaves_the_namespace_with_its_spec(declared):
    with pytest.raises(AttributeError):
        pl.softsign  # noqa: B018
    kernel = _kernel()
    with pytest.raises(ParseError, match="has no attribute 'softsign'"):
        kernel.parse()


def test_a_new_unary_op_on_a_number_without_a_fold_says_so(softsign):
    @pl.jit
    def kernel(a: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.mul(a, pl.softsign(2.0))
        return out

    with pytest.raises(ParseError) as info:
        kernel.parse()
    assert info.value.message == "pl.softsign: has no compile-time form: cannot fold 2.0"
    assert info.value.hint.startswith("compute it on a tile")


def test_a_new_binary_op_takes_its_scalar_form_and_swaps_a_scalar_left_operand(hypot):
    @pl.jit
    def kernel(a: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [0, 0], [16, 64])
            y = pl.hypot(x, x)
            pl.store(pl.hypot(3.0, y), [0, 0], out)
        return out

    text = print_ir(kernel.parse())
    assert "pl.tile.hypot(x, x)" in text and "pl.tile.hypots(y, 3.0)" in text


def test_a_new_ops_enum_attribute_is_converted_and_checked_by_its_schema(snap, monkeypatch):
    @pl.jit
    def kernel(a: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [0, 0], [16, 64])
            pl.store(pl.snap(x, ROUNDING, step=4), [0, 0], out)
        return out

    assert "pl.tile.snap(x, rounding=pl.Rounding.up, step=4)" in print_ir(kernel.parse())
    monkeypatch.setattr(sys.modules[__name__], "ROUNDING", "sideways")
    with pytest.raises(ParseError) as info:
        kernel.parse()
    assert info.value.message == "pl.snap: rounding must be a pl.Rounding, got the str 'sideways'"
    assert info.value.hint == "write rounding= one of pl.Rounding.up, pl.Rounding.down"
