"""Tile and tensor annotations as PyPTO code writes them."""

import pytest

import pypto.language as pl
from pypto.ir import TypeCheckError


def test_a_tile_annotation_without_a_space_matches_a_tile_in_any_space():
    """pl.Tile[[64, 64], pl.FP32] as PyPTO writes it: an Acc result (a matmul) matches it, as a Vec
    tile does; a space given pins it (issue #11, item 6)."""
    M, K = 64, 64

    @pl.jit
    def product(
        a: pl.Tensor[[M, K], pl.FP16], b: pl.Tensor[[K, M], pl.FP16], out: pl.Out[pl.Tensor[[M, M], pl.FP32]]
    ):
        with pl.at(level=pl.Level.CORE_GROUP):
            a_l = pl.move(pl.load(a, [0, 0], [M, K], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
            b_r = pl.move(pl.load(b, [0, 0], [K, M], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            c: pl.Tile[[M, M], pl.FP32] = pl.matmul(a_l, b_r)
            pl.store(c, [0, 0], out)
        return out

    product.parse()  # the Acc result matches; tests/test_tile_annotations.py runs it against torch

    @pl.jit
    def pinned(a: pl.Tensor[[M, K], pl.FP32], out: pl.Out[pl.Tensor[[M, K], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t: pl.Tile[[M, K], pl.FP32, pl.Mem.Mat] = pl.load(a, [0, 0], [M, K])
            pl.store(t, [0, 0], out)
        return out

    with pytest.raises(TypeCheckError, match="is annotated"):
        pinned.parse()
