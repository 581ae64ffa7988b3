"""A name that means one value however control flow went: bound to the same tensor in both arms
of a run-time ``if`` (the output each arm stores into), or carried by ``init_values=`` through a
loop whose body only writes it in place. After the ``if`` or the loop the name is that tensor, so
a kernel returns it as the output it is (as PyPTO's paged-attention kernels do)."""

import torch

import pypto.language as pl
from pypto.runtime import RunConfig

SIM = RunConfig(platform="a2a3sim")


@pl.jit.incore
def either(
    x: pl.Tensor[[16, 64], pl.FP32], flag: pl.Scalar[pl.INDEX], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]
):
    t = pl.load(x, [0, 0], [16, 64])
    if flag > 0:  # noqa: SIM108 (a run-time if: both arms are compiled)
        written = pl.store(pl.exp(t), [0, 0], out)
    else:
        written = pl.store(pl.neg(t), [0, 0], out)
    return written  # out, whichever arm ran


@pl.jit
def choose(
    x: pl.Tensor[[16, 64], pl.FP32],
    flags: pl.Tensor[[1], pl.INDEX],
    out: pl.Out[pl.Tensor[[16, 64], pl.FP32]],
):
    out = either(x, pl.tensor.read(flags, [0]), out)
    return out


def test_a_name_bound_to_the_same_output_in_both_arms_is_that_output_after_the_if():
    x = torch.randn(16, 64)
    for flag, want in ((1, x.exp()), (0, -x)):
        out = torch.zeros(16, 64)
        choose(x, torch.tensor([flag]), out, config=SIM)
        torch.testing.assert_close(out, want)


@pl.program
class CarriedInPlace:
    @pl.function(type=pl.FunctionType.InCore)
    def rows(
        self,
        x: pl.Tensor[[64, 64], pl.FP32],
        n: pl.Scalar[pl.INDEX],
        out: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
    ) -> pl.Tensor[[64, 64], pl.FP32]:
        for i, (acc,) in pl.range(n, init_values=(out,)):
            written = pl.store(pl.exp(pl.load(x, [i * 16, 0], [16, 64])), [i * 16, 0], acc)
            (result,) = pl.yield_(written)
        return result  # out: the loop only wrote into it

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        x: pl.Tensor[[64, 64], pl.FP32],
        n: pl.Tensor[[1], pl.INDEX],
        out: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
    ) -> pl.Tensor[[64, 64], pl.FP32]:
        out = self.rows(x, pl.tensor.read(n, [0]), out)
        return out


def test_a_tensor_carried_by_init_values_and_only_written_in_place_is_the_loops_result():
    from pypto.runtime import compile_program

    x, out = torch.randn(64, 64), torch.zeros(64, 64)
    compile_program(CarriedInPlace, SIM).run(x, torch.tensor([3]), out)
    torch.testing.assert_close(out[:48], x[:48].exp())
    assert bool((out[48:] == 0).all())
    assert "init_values" not in CarriedInPlace.function("rows").as_python()  # nothing is carried
