"""Column concatenation: two [32, 16] tiles side by side make a [32, 32] tile.

python examples/beginner/06_concat.py [-p a2a3sim]
"""

import argparse

import torch

import pypto.language as pl
from pypto.runtime import RunConfig


@pl.jit
def concat(
    a: pl.Tensor[[32, 16], pl.FP32],
    b: pl.Tensor[[32, 16], pl.FP32],
    out: pl.Out[pl.Tensor[[32, 32], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="concat"):
        ta = pl.load(a, [0, 0], [32, 16])
        tb = pl.load(b, [0, 0], [32, 16])
        pl.store(pl.concat(ta, tb), [0, 0], out)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-p", "--platform", default="a2a3sim", help="platform to run on (default: a2a3sim)")
    config = RunConfig(platform=parser.parse_args().platform)

    torch.manual_seed(0)
    a, b, out = torch.randn(32, 16), torch.randn(32, 16), torch.zeros(32, 32)
    concat(a, b, out, config=config)
    torch.testing.assert_close(out, torch.cat([a, b], dim=1))
    print("OK")


if __name__ == "__main__":
    main()
