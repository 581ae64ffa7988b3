"""Partial tiles: a softmax over the first ``cols`` columns of the first ``n`` rows of x.

The kernel walks x in blocks of 32 rows; the last block holds only ``n % 32`` of them. Each
block is loaded with ``valid_shape=[rows, cols]``, where ``rows = min(32, n - r0)`` is a
run-time value, so the load reads only the valid part and the store writes only that part
back. Before reducing a row, ``pl.fillpad`` fills the columns past ``cols``: with the lowest
value for the row maximum, with zero for the row sum.

``n`` and ``cols`` are scalar parameters. Called with Python ints they are compiled in (one
specialization per value); compiled without arguments they stay run-time scalars, and one
compiled program serves every size.

    python examples/intermediate/06_dyn_valid_shape.py [-p a2a3sim]
"""

import argparse

import torch

import pypto.language as pl
from pypto.runtime import RunConfig

R, C = 128, 64  # the tensors' extent
BLOCK = 32
T = pl.Tensor[[R, C], pl.FP32]


@pl.jit
def masked_softmax(x: T, out: pl.Out[T], n: pl.Scalar[pl.INDEX], cols: pl.Scalar[pl.INDEX]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="masked_softmax"):
        tmp = pl.create_tile([BLOCK, C], pl.FP32)
        for r0 in pl.range(0, n, BLOCK):
            rows = pl.minimum(BLOCK, n - r0)
            t = pl.load(x, [r0, 0], [BLOCK, C], valid_shape=[rows, cols])
            row_max = pl.row_max(pl.fillpad(t, pad_value=pl.PadValue.min), tmp)
            e = pl.exp(pl.row_expand_sub(t, row_max))
            row_sum = pl.row_sum(pl.fillpad(e, pad_value=pl.PadValue.zero), tmp)
            pl.store(pl.row_expand_div(e, row_sum), [r0, 0], out)
    return out


def reference(x: torch.Tensor, out: torch.Tensor, n: int, cols: int) -> torch.Tensor:
    want = out.clone()
    want[:n, :cols] = torch.softmax(x[:n, :cols], dim=1)
    return want


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-p", "--platform", default="a2a3sim", help="platform to run on (default: a2a3sim)")
    config = RunConfig(platform=parser.parse_args().platform)

    torch.manual_seed(0)
    x = torch.randn(R, C) * 3
    for n, cols in ((100, 50), (R, C)):  # specialized on the sizes: 3 full blocks and 4 rows; all full
        out = torch.full((R, C), -1.0)
        masked_softmax(x, out, n, cols, config=config)
        torch.testing.assert_close(out, reference(x, torch.full((R, C), -1.0), n, cols))

    compiled = masked_softmax.compile(config=config)  # n and cols stay run-time scalars
    for n, cols in ((37, 17), (1, 64)):
        out = torch.full((R, C), -1.0)
        compiled.run(x, out, n, cols)
        torch.testing.assert_close(out, reference(x, torch.full((R, C), -1.0), n, cols))
    print("OK")


if __name__ == "__main__":
    main()
