"""Limits of the distributed model the manual states, checked where a program meets the chip: a
HOST allreduce whose core_num asks more AIV blocks than the chip has (they must all run at once)."""

from __future__ import annotations

import pytest
import torch

import pypto.language as pl
import pypto.language.distributed as pld
from pypto.ir.distributed_compiled_program import DistributedConfig
from pypto.runtime import RunConfig

SIZE = 256


@pl.jit.incore
def stage(x: pl.Tensor[[1, SIZE], pl.FP32], data: pl.InOut[pld.DistributedTensor[[1, SIZE], pl.FP32]]):
    return pl.store(pl.load(x, [0, 0], [1, SIZE]), [0, 0], data)


@pl.jit
def put_in(x: pl.Tensor[[1, SIZE], pl.FP32], data: pl.InOut[pld.DistributedTensor[[1, SIZE], pl.FP32]]):
    return stage(x, data)


def host_with(core_num: int):
    @pl.jit.host
    def host(x: pl.Tensor[[2, 1, SIZE], pl.FP32]):
        buf = pld.alloc_window_buffer([1, SIZE], dtype=pl.FP32)
        data = pld.window(buf, [1, SIZE], dtype=pl.FP32)
        for r in pl.range(pld.world_size()):
            put_in(x[r], data, device=r)
        data = pld.tensor.allreduce(data, op=pld.ReduceOp.Sum, core_num=core_num)
        return x

    return host


def test_a_host_allreduce_over_more_aiv_cores_than_the_chip_has():
    config = RunConfig(platform="a2a3sim", distributed_config=DistributedConfig(device_ids=[0, 1]))
    host_with(48)(torch.randn(2, 1, SIZE), config=config)  # every AIV core of the chip: runs
    with pytest.raises(
        Exception, match=r"core_num=49\) launches 49 AIV blocks .* has 48 AIV cores"
    ) as caught:
        host_with(49)(torch.randn(2, 1, SIZE), config=config)
    assert caught.value.hint == "use core_num <= 48"
    assert "pld.tensor.allreduce(data" in str(caught.value)  # the user's line, with a caret
