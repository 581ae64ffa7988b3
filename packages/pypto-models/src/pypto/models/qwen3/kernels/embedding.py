"""The token embedding: one row of the embedding table per batch row, looked up by the token id
read at run time, widened to the FP32 residual stream."""

from __future__ import annotations

import pypto.language as pl


@pl.jit.incore
def embed_tokens(tokens: pl.Tensor, table: pl.Tensor, out: pl.Out[pl.Tensor]):
    """``out[b] = table[tokens[b]]``: ``tokens`` ``[batch]`` INT32, ``table`` ``[vocab, hidden]``,
    ``out`` ``[batch, hidden]`` FP32."""
    batch = tokens.shape[0]
    hidden = table.shape[1]
    for b in pl.range(batch):
        token = pl.cast(pl.read(tokens, [b]), pl.INDEX)
        row = pl.load(table, [token, 0], [1, hidden])
        pl.store(row if table.dtype == pl.FP32 else pl.cast(row, pl.FP32), [b, 0], out)
    return out
