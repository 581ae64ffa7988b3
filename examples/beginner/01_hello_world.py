"""Hello world: c = a + b on [128, 128] fp32 tiles, run on the a2a3 simulator.

The body of a ``pl.at(level=CORE_GROUP)`` scope is one kernel: load both operands into the
vector unit's memory (Vec), add them, store the result back to global memory.

    python examples/beginner/01_hello_world.py [-p a2a3sim]
"""

import argparse

import torch

import pypto.language as pl
from pypto.runtime import RunConfig


@pl.jit
def hello_add(
    a: pl.Tensor[[128, 128], pl.FP32],
    b: pl.Tensor[[128, 128], pl.FP32],
    c: pl.Out[pl.Tensor[[128, 128], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="hello_add"):
        ta = pl.load(a, [0, 0], [128, 128])
        tb = pl.load(b, [0, 0], [128, 128])
        tc = pl.add(ta, tb)
        pl.store(tc, [0, 0], c)
    return c


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-p", "--platform", default="a2a3sim", help="platform to run on (default: a2a3sim)")
    args = parser.parse_args()

    torch.manual_seed(0)
    a = torch.randn(128, 128)
    b = torch.randn(128, 128)
    c = torch.zeros(128, 128)
    hello_add(a, b, c, config=RunConfig(platform=args.platform))
    # The simulator adds in fp32 as torch does: the sums are exact, not merely close (and
    # torch.equal spares this script the 0.6 s torch.testing.assert_close spends importing
    # torch.distributed on its first call).
    if not torch.equal(c, a + b):
        raise SystemExit(f"c differs from a + b by up to {(c - (a + b)).abs().max().item()}")
    print("OK")


if __name__ == "__main__":
    main()
