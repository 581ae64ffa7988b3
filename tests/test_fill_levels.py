"""``pl.full`` takes the level of the values it meets, on a2a3sim against torch.

PyPTO's manual makes ``pl.full`` a tensor (``pl.tensor.full``): in a scope it is tensor-level
code the compiler tiles, alone, carried through loops beside tensor ops, reshaped and assembled
into outputs. Tile-level code uses the same call for an accumulator that tile ops update: there
it is a tile, as before. ``pl.tile.full`` / ``pl.tensor.full`` make their own level always.
"""

import warnings

import pytest
import torch

import pypto.language as pl
from pypto.ir import ParseError, Program, TypeCheckError
from pypto.ir.errors import CompileWarning
from pypto.ir.nodes import Call, walk_expr, walk_stmts
from pypto.ir.nodes import stmt_exprs as exprs_of
from pypto.runtime import RunConfig

SIM = RunConfig(platform="a2a3sim")
B, H, KC = 16, 512, 128  # rows, columns, the column chunk of a loop
EPS = 1e-6


def rand(*shape, seed=0, dtype=torch.float32):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


def ops(program: Program) -> set[str]:
    """Every op the program's functions call."""
    found: set[str] = set()
    for fn in program.functions.values():
        for stmt in walk_stmts(fn.body):
            for expr in exprs_of(stmt):
                found.update(e.op for e in walk_expr(expr) if isinstance(e, Call))
    return found


# ---------------------------------------------------------------- tensor level, in a scope


@pl.jit
def sum_of_squares(x: pl.Tensor[[B, H], pl.BF16], out: pl.Out[pl.Tensor[[1, B], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="sum_of_squares"):
        total = pl.full([1, B], dtype=pl.FP32, value=0.0)
        for kb in pl.pipeline(H // KC, stage=2):
            k0 = kb * KC
            chunk = pl.cast(x[:, k0 : k0 + KC], target_type=pl.FP32)
            total = pl.add(total, pl.reshape(pl.row_sum(pl.mul(chunk, chunk)), [1, B]))
        out = pl.assemble(out, pl.mul(total, 1.0 / H), [0, 0])
    return out


def test_a_fill_carried_through_a_pipeline_loop_beside_tensor_ops_is_a_tensor():
    x, out = rand(B, H, dtype=torch.bfloat16), torch.zeros(1, B)
    assert "tensor.full" in ops(sum_of_squares.parse(x, out))
    sum_of_squares(x, out, config=SIM)
    expected = (x.float() ** 2).mean(1).reshape(1, B)
    torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-4)


@pl.jit
def rms_norm(
    x: pl.Tensor[[B, H], pl.BF16],
    gamma: pl.Tensor[[1, H], pl.FP32],
    out: pl.Out[pl.Tensor[[B, H], pl.BF16]],
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="rms_norm"):
        sq = pl.full([1, B], dtype=pl.FP32, value=0.0)
        for kb in pl.range(H // KC):
            k0 = kb * KC
            chunk = pl.cast(x[:, k0 : k0 + KC], target_type=pl.FP32)
            sq = pl.add(sq, pl.reshape(pl.row_sum(pl.mul(chunk, chunk)), [1, B]))
        # Computed before the next loop and read inside it, past the loop that ends its statements.
        inv = pl.recip(pl.sqrt(pl.reshape(pl.add(pl.mul(sq, 1.0 / H), EPS), [B, 1])))
        for kb in pl.range(H // KC):
            k0 = kb * KC
            chunk = pl.cast(x[:, k0 : k0 + KC], target_type=pl.FP32)
            normed = pl.col_expand_mul(pl.row_expand_mul(chunk, inv), gamma[:, k0 : k0 + KC])
            out = pl.assemble(out, pl.cast(normed, target_type=pl.BF16), [0, k0])
    return out


def test_a_two_pass_rms_norm_on_a_tensor_fill_matches_torch():
    x, gamma = rand(B, H, dtype=torch.bfloat16), 1 + 0.1 * rand(1, H, seed=1)
    out = torch.zeros(B, H, dtype=torch.bfloat16)
    rms_norm(x, gamma, out, config=SIM)
    xf = x.float()
    expected = xf * torch.rsqrt((xf * xf).mean(1, keepdim=True) + EPS) * gamma
    torch.testing.assert_close(out.float(), expected.to(torch.bfloat16).float(), rtol=2e-2, atol=2e-2)


ROWS, COLS = 256, 512  # 512 KiB of FP32: more than a vector core's buffer holds as one tile


@pl.jit
def filled(out: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="filled"):
        out[:] = pl.full([ROWS, COLS], dtype=pl.FP32, value=1.5)
    return out


def test_a_fill_alone_is_a_tensor_the_compiler_tiles_however_large():
    out = torch.zeros(ROWS, COLS)
    assert "tensor.full" in ops(filled.parse(out))
    filled(out, config=SIM)
    assert torch.equal(out, torch.full((ROWS, COLS), 1.5))


@pl.jit
def shifted(x: pl.Tensor[[64, 32], pl.FP32], out: pl.Out[pl.Tensor[[64, 32], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="shifted"):
        twos = pl.reshape(pl.full([32, 64], dtype=pl.FP32, value=2.0), [64, 32])
        out[:] = pl.maximum(pl.mul(x, twos), pl.full([64, 32], pl.FP32, -1.0))
    return out


def test_a_reshaped_fill_mixes_with_tensor_ops():
    x, out = rand(64, 32), torch.zeros(64, 32)
    shifted(x, out, config=SIM)
    torch.testing.assert_close(out, torch.maximum(x * 2, torch.tensor(-1.0)))


@pl.jit
def padded(q: pl.Tensor[[8, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 64], pl.BF16]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="padded"):
        for g in pl.range(2):
            row = g * 16
            out = pl.assemble(out, pl.cast(pl.mul(q, 0.5), target_type=pl.BF16), [row, 0])
            zeros = pl.cast(pl.full([8, 64], dtype=pl.FP32, value=0.0), target_type=pl.BF16)
            out = pl.assemble(out, zeros, [row + 8, 0])
    return out


def test_a_cast_fill_assembled_into_an_output_pads_it():
    q, out = rand(8, 64), torch.ones(32, 64, dtype=torch.bfloat16)
    padded(q, out, config=SIM)
    half = (q * 0.5).to(torch.bfloat16)
    expected = torch.cat([half, torch.zeros(8, 64, dtype=torch.bfloat16)]).repeat(2, 1)
    assert torch.equal(out, expected)


N = pl.Tensor[[4], pl.INT32]


@pl.jit
def picked(x: pl.Tensor[[64, 64], pl.FP32], n: N, out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="picked"):
        if pl.read(n, [0]) > 0:  # noqa: SIM108 (the if statement is what is tested)
            r = pl.full([64, 64], pl.FP32, 7.0)
        else:
            r = pl.exp(x)
        out[:] = pl.add(r, x)
    return out


@pytest.mark.parametrize("taken", [1, 0])
def test_a_fill_leaving_an_if_takes_the_other_arms_level(taken):
    x, out = rand(64, 64), torch.zeros(64, 64)
    picked(x, torch.tensor([taken, 0, 0, 0], dtype=torch.int32), out, config=SIM)
    torch.testing.assert_close(out, (torch.full_like(x, 7.0) if taken else x.exp()) + x)


M = pl.dynamic("M")


@pl.jit
def shifted_rows(x: pl.Tensor[[M, 64], pl.FP32], out: pl.Out[pl.Tensor[[M, 64], pl.FP32]]):
    rows = x.shape[0]
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="shifted_rows"):
        out[:] = pl.add(x, pl.full([rows, 64], pl.FP32, 1.0))
    return out


def test_a_tensor_fill_takes_a_dynamic_extent():
    x, out = rand(200, 64), torch.zeros(200, 64)
    shifted_rows(x, out, config=SIM)
    torch.testing.assert_close(out, x + 1)


# ---------------------------------------------------------------- tile level, unchanged


@pl.jit
def tile_sum(x: pl.Tensor[[128, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="tile_sum"):
        acc = pl.full([32, 64], pl.FP32, 0.0)
        for i in pl.range(4):
            acc = pl.add(acc, pl.load(x, [i * 32, 0], [32, 64]))
        pl.store(acc, [0, 0], out)
    return out


def test_a_fill_a_loop_adds_tiles_to_is_a_tile_as_before():
    x, out = rand(128, 64), torch.zeros(32, 64)
    program = tile_sum.parse(x, out)
    assert "tile.full" in ops(program) and "tensor.full" not in ops(program)
    tile_sum(x, out, config=SIM)
    torch.testing.assert_close(out, x.view(4, 32, 64).sum(0))


@pl.jit
def gathered(table: pl.Tensor[[64, 32], pl.FP32], out: pl.Out[pl.Tensor[[8, 32], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="gathered"):
        rows = pl.full([8, 32], dtype=pl.FP32, value=0.0)
        for k in pl.range(8):
            rows = pl.gather_row(rows, table, [k, 0], [k * 8, 0], [1, 32])
        t: pl.Tile[[8, 32], pl.FP32] = pl.full([8, 32], pl.FP32, 1.0)
        pl.store(pl.add(rows, t), [0, 0], out)
    return out


def test_a_fill_a_tile_only_op_writes_or_an_annotation_names_is_a_tile():
    table, out = rand(64, 32), torch.zeros(8, 32)
    gathered(table, out, config=SIM)
    torch.testing.assert_close(out, table[::8] + 1)


@pl.jit
def spelled(x: pl.Tensor[[32, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="spelled"):
        t = pl.add(pl.load(x, [0, 0], [32, 64]), pl.tile.full([32, 64], pl.FP32, 1.0))
        out[:] = pl.add(pl.tensor.full([32, 64], pl.FP32, 2.0), x)
        pl.store(t, [0, 0], out, shapes=[16, 64])
    return out


def test_the_tile_and_tensor_spellings_make_their_own_level():
    x, out = rand(32, 64), torch.zeros(32, 64)
    assert {"tile.full", "tensor.full"} <= ops(spelled.parse(x, out))
    spelled(x, out, config=SIM)
    torch.testing.assert_close(out, torch.cat([x[:16] + 1, x[16:] + 2]))


@pl.program
class VectorKernel:
    @pl.function(type=pl.FunctionType.AIV)
    def fill(self, out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        pl.store(pl.full([16, 64], pl.FP32, 3.0), [0, 0], out)
        return out


def test_a_fill_in_a_vector_function_is_a_tile():
    found = ops(VectorKernel)  # type: ignore[arg-type]
    assert "tile.full" in found and "tensor.full" not in found


def test_a_reparse_shows_each_warning_once():
    @pl.jit
    def warns(x: pl.Tensor[[32, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="warns"):
            acc = pl.full([32, 64], pl.FP32, 0.0)
            acc = pl.add(acc, pl.load(x, [0, 0], [32, 64]))  # the fill is a tile: a second parse
            out = pl.store(acc, [0, 0], out)
            out = pl.create_tensor([32, 64], dtype=pl.FP32)  # rebinds the output: a warning
        return out

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        warns.parse(rand(32, 64), torch.zeros(32, 64))
    assert len([w for w in seen if issubclass(w.category, CompileWarning)]) == 1


# ---------------------------------------------------------------- bad inputs


def test_one_fill_meeting_a_tile_and_a_tensor_is_an_error_at_the_second_use():
    @pl.jit
    def both(x: pl.Tensor[[32, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="both"):
            z = pl.full([32, 64], pl.FP32, 0.0)
            t = pl.add(z, pl.load(x, [0, 0], [32, 64]))
            out[:] = pl.add(z, x)  # <- here z must be a tensor
            pl.store(t, [0, 0], out)
        return out

    with pytest.raises(ParseError) as info:
        both.parse(rand(32, 64), torch.zeros(32, 64))
    err = info.value
    assert "comes from the pl.full at line" in err.message and "must be a tensor" in err.message
    assert "out[:] = pl.add(z, x)" in str(err)
    assert "pl.tile.full" in err.hint and "pl.tensor.full" in err.hint


def test_a_fill_outside_a_scope_is_an_error_at_its_line():
    @pl.jit
    def outside(out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
        z = pl.full([32, 64], pl.FP32, 0.0)
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = z
        return out

    with pytest.raises(ParseError, match=r"pl\.full outside a pl\.at scope") as info:
        outside.parse(torch.zeros(32, 64))
    assert "z = pl.full([32, 64], pl.FP32, 0.0)" in str(info.value)


def test_a_dynamic_fill_that_meets_a_tile_says_a_tile_is_static():
    @pl.jit
    def dynamic_tile(x: pl.Tensor[[M, 64], pl.FP32], out: pl.Out[pl.Tensor[[M, 64], pl.FP32]]):
        rows = x.shape[0]
        with pl.at(level=pl.Level.CORE_GROUP):
            z = pl.full([rows, 64], pl.FP32, 0.0)
            pl.store(pl.add(z, pl.load(x, [0, 0], [64, 64])), [0, 0], out)
        return out

    with pytest.raises(ParseError, match="a tile's shape is static") as info:
        dynamic_tile.parse(rand(64, 64), torch.zeros(64, 64))
    assert "z = pl.full([rows, 64], pl.FP32, 0.0)" in str(info.value)


def test_a_tile_spelling_beside_a_tensor_still_mixes():
    @pl.jit
    def pinned(x: pl.Tensor[[32, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.add(pl.tile.full([32, 64], pl.FP32, 0.0), x)
        return out

    with pytest.raises(TypeCheckError, match="operands mix a tensor and a tile"):
        pinned.parse(rand(32, 64), torch.zeros(32, 64))


@pl.jit
def read_back(out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="read_back"):
        z = pl.full([16, 64], pl.FP32, 2.5)
        s = pl.read(z, [3, 5])
        out[:] = pl.full([16, 64], pl.FP32, s)
    return out


def test_an_element_read_from_a_fill_reads_a_tile():
    out = torch.zeros(16, 64)
    read_back(out, config=SIM)
    assert torch.equal(out, torch.full((16, 64), 2.5))


def test_a_fill_loaded_like_a_tensor_in_memory_is_an_error_at_the_load():
    @pl.jit
    def loaded(out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            z = pl.full([16, 64], pl.FP32, 0.0)
            pl.store(pl.load(z, [0, 0], [16, 64]), [0, 0], out)
        return out

    with pytest.raises(ParseError, match=r"comes from pl\.full, which is in no global memory") as info:
        loaded.parse(torch.zeros(16, 64))
    assert "pl.load(z, [0, 0], [16, 64])" in str(info.value)
