# The DSL functions carry the DSL's annotations, which mypy cannot read as Python types:
# mypy: disable-error-code="valid-type, type-arg, attr-defined, var-annotated"
"""A Qwen3 decoder layer split over several chips (tensor parallelism, Megatron style).

Each of the ``R`` ranks holds a share of the layer's weights: q/k/v by heads (rank ``r`` the query
heads ``r * heads / R ...`` and the KV heads they read), gate/up by intermediate columns (the
column-parallel projections), o_proj and down_proj by their input columns (the row-parallel
ones, whose products on one rank are partial sums of the full output). A decode step then runs,
on every rank at once and on its own chip::

    normed = rmsnorm(x)                           (every rank, the full hidden state)
    q, k, v = normed @ Wq_r^T, ...                (the rank's heads)
    attended = attention(q, k, v, cache_r)        (the rank's KV cache: its KV heads only)
    mid = x + allreduce(attended @ Wo_r^T)        (the partial products summed over the ranks)
    act = silu(rmsnorm(mid) @ Wg_r^T) * (... Wu_r^T)   (the rank's intermediate columns)
    x = mid + allreduce(act @ Wd_r^T)

The sums are the collective ``pld.tensor.allreduce`` in a kernel on a window (one per sum, with its
signal), and the residual is added once, after the sum. Every rank ends with the same ``x``.

:func:`tp_decoder_layer` is the ``@pl.jit.host`` orchestrator: it allocates the windows and
dispatches :func:`tp_layer_chip` (a ``@pl.jit`` chip orchestration) to each rank with ``device=r``
and that rank's weight shards (``w[r]`` of stacked host tensors). The rank count is the
``DistributedConfig``'s. :func:`shard_weights` cuts a model's :class:`Qwen3Weights` into
:class:`TensorParallelWeights`; :class:`TensorParallelLayer` runs a layer over them, one call at a
time or, through :meth:`TensorParallelLayer.prepare`, with the shards and caches resident on the
chips of a prepared ``DistributedWorker``.

>>> tp = TensorParallelLayer(Qwen3Weights.random(get_config("tiny")), ranks=2)  # doctest: +SKIP
>>> tp(x, positions, cos, sin, k_cache, v_cache, layer=0)  # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import torch

import pypto.language as pl
import pypto.language.distributed as pld
from pypto.ir.backend import WorldReport
from pypto.ir.distributed_compiled_program import DistributedConfig
from pypto.models.errors import ModelConfigError, ModelError
from pypto.models.qwen3.config import Qwen3Config
from pypto.models.qwen3.kernels.attention import attention
from pypto.models.qwen3.kernels.collective import allreduce_residual
from pypto.models.qwen3.kernels.mlp import down_proj_partial, project_gate_up
from pypto.models.qwen3.kernels.projection import k_proj, o_proj_partial, q_proj, v_proj
from pypto.models.qwen3.kernels.rmsnorm import rmsnorm
from pypto.models.qwen3.weights import Qwen3Weights, rope_tables
from pypto.runtime import DistributedWorker, RunConfig


@pl.jit
def tp_layer_chip(
    x: pl.InOut[pl.Tensor],
    positions: pl.Tensor,
    input_norm: pl.Tensor,
    q_proj_w: pl.Tensor,
    k_proj_w: pl.Tensor,
    v_proj_w: pl.Tensor,
    q_norm: pl.Tensor,
    k_norm: pl.Tensor,
    o_proj_w: pl.Tensor,
    post_norm: pl.Tensor,
    gate_w: pl.Tensor,
    up_w: pl.Tensor,
    down_w: pl.Tensor,
    cos: pl.Tensor,
    sin: pl.Tensor,
    k_cache: pl.InOut[pl.Tensor],
    v_cache: pl.InOut[pl.Tensor],
    attn_sum: pl.InOut[pld.DistributedTensor],
    attn_signal: pl.InOut[pld.DistributedTensor],
    mlp_sum: pl.InOut[pld.DistributedTensor],
    mlp_signal: pl.InOut[pld.DistributedTensor],
    layer: pl.INDEX,
    max_seq: pl.INDEX,
    eps: pl.FP32,
    scale: pl.FP32,
):
    """One rank's share of layer ``layer``, in place on its copy of the residual stream ``x``
    ``[batch, hidden]`` (FP32) and on its caches (``[layers * batch * max_seq, its kv heads *
    head_dim]``); the weights are the rank's shards (see :class:`TensorParallelWeights`)."""
    rows, hidden = x.shape
    layers = input_norm.shape[0]
    dim = q_norm.shape[1]
    q_size = q_proj_w.shape[0] // layers
    kv_size = k_proj_w.shape[0] // layers
    inter = gate_w.shape[0] // layers
    dtype = q_proj_w.dtype
    normed = pl.create_tensor([rows, hidden], dtype)
    normed = rmsnorm(x, input_norm, normed, eps, layer)
    q = pl.create_tensor([rows, q_size], pl.FP32)
    k = pl.create_tensor([rows, kv_size], pl.FP32)
    v = pl.create_tensor([rows, kv_size], pl.FP32)
    q = q_proj(normed, q_proj_w, q, layer)
    k = k_proj(normed, k_proj_w, k, layer)
    v = v_proj(normed, v_proj_w, v, layer)
    q_rot = pl.create_tensor([rows * (q_size // dim), dim], dtype)
    attended = pl.create_tensor([rows, q_size], dtype)
    attended, k_cache, v_cache = attention(
        q,
        k,
        v,
        q_norm,
        k_norm,
        cos,
        sin,
        positions,
        k_cache,
        v_cache,
        q_rot,
        attended,
        layer,
        max_seq,
        eps,
        scale,
    )
    attn_sum = o_proj_partial(attended, o_proj_w, attn_sum, layer)
    mid = pl.create_tensor([rows, hidden], pl.FP32)
    mid = allreduce_residual(attn_sum, attn_signal, x, mid)
    normed_mid = pl.create_tensor([rows, hidden], dtype)
    normed_mid = rmsnorm(mid, post_norm, normed_mid, eps, layer)
    act = pl.create_tensor([rows, inter], dtype)
    act = project_gate_up(normed_mid, gate_w, up_w, act, layer)
    mlp_sum = down_proj_partial(act, down_w, mlp_sum, layer)
    x = allreduce_residual(mlp_sum, mlp_signal, mid, x)
    return x, k_cache, v_cache


@pl.jit.host
def tp_decoder_layer(
    x: pl.InOut[pl.Tensor],
    positions: pl.Tensor,
    input_norm: pl.Tensor,
    q_proj_w: pl.Tensor,
    k_proj_w: pl.Tensor,
    v_proj_w: pl.Tensor,
    q_norm: pl.Tensor,
    k_norm: pl.Tensor,
    o_proj_w: pl.Tensor,
    post_norm: pl.Tensor,
    gate_w: pl.Tensor,
    up_w: pl.Tensor,
    down_w: pl.Tensor,
    cos: pl.Tensor,
    sin: pl.Tensor,
    k_cache: pl.InOut[pl.Tensor],
    v_cache: pl.InOut[pl.Tensor],
    layer: pl.INDEX,
    max_seq: pl.INDEX,
    eps: pl.FP32,
    scale: pl.FP32,
):
    """Layer ``layer`` of a decode step over the world's ranks: ``x`` ``[ranks, batch, hidden]``
    (each rank's copy of the FP32 residual stream; all equal), the sharded weights and caches
    stacked by rank (``[ranks, ...]``, as many as the ``DistributedConfig`` has devices), the norm
    weights, ``positions`` and the RoPE tables shared. Rank ``r`` runs :func:`tp_layer_chip` on its
    shards."""
    ranks, rows, hidden = x.shape  # the tensors stacked by rank: the world's size
    attn_buf = pld.alloc_window_buffer([rows, hidden], dtype=pl.FP32)
    mlp_buf = pld.alloc_window_buffer([rows, hidden], dtype=pl.FP32)
    attn_signal_buf = pld.alloc_window_buffer([ranks, 1], dtype=pl.INT32)  # a cell per rank
    mlp_signal_buf = pld.alloc_window_buffer([ranks, 1], dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        attn_sum = pld.window(attn_buf, [rows, hidden], dtype=pl.FP32)
        attn_signal = pld.window(attn_signal_buf, [ranks, 1], dtype=pl.INT32)
        mlp_sum = pld.window(mlp_buf, [rows, hidden], dtype=pl.FP32)
        mlp_signal = pld.window(mlp_signal_buf, [ranks, 1], dtype=pl.INT32)
        tp_layer_chip(
            x[r],
            positions,
            input_norm,
            q_proj_w[r],
            k_proj_w[r],
            v_proj_w[r],
            q_norm,
            k_norm,
            o_proj_w[r],
            post_norm,
            gate_w[r],
            up_w[r],
            down_w[r],
            cos,
            sin,
            k_cache[r],
            v_cache[r],
            attn_sum,
            attn_signal,
            mlp_sum,
            mlp_signal,
            layer,
            max_seq,
            eps,
            scale,
            device=r,
        )
    return x, k_cache, v_cache


def check_ranks(config: Qwen3Config, ranks: object) -> int:
    """``ranks`` as a rank count the configuration splits evenly: it must divide the query heads,
    the KV heads (each rank keeps whole KV heads in its cache) and the intermediate size."""
    if isinstance(ranks, bool) or not isinstance(ranks, int) or ranks < 1:
        raise ModelConfigError.here(
            f"the rank count must be a whole number of at least 1, got {ranks!r}",
            "pass ranks=len(device_ids), e.g. ranks=2",
        )
    parts = {
        "query heads (num_heads)": config.num_heads,
        "KV heads (num_kv_heads)": config.num_kv_heads,
        "intermediate size": config.intermediate_size,
    }
    for what, count in parts.items():
        if count % ranks:
            fitting = [n for n in range(1, 9) if all(c % n == 0 for c in parts.values())]
            raise ModelConfigError.here(
                f"{ranks} ranks cannot split the {count} {what} evenly: a tensor-parallel rank holds "
                "whole heads and an equal share of the MLP's columns",
                f"use a rank count that divides {config.num_heads} heads, {config.num_kv_heads} KV heads "
                f"and {config.intermediate_size} intermediate columns (up to 8: {fitting})",
            )
    return ranks


@dataclass(frozen=True)
class TensorParallelWeights:
    """A model's layer weights cut into ``ranks`` shards, stacked by rank (``[ranks, ...]``; shard
    ``r`` is ``w[r]``), in the layout the decode kernels read (the layers stacked along the
    rows). The norm weights are whole: every rank reads them."""

    config: Qwen3Config
    ranks: int
    input_norm: torch.Tensor  # [layers, hidden]
    q_proj: torch.Tensor  # [ranks, layers * heads / ranks * head_dim, hidden]
    k_proj: torch.Tensor  # [ranks, layers * kv_heads / ranks * head_dim, hidden]
    v_proj: torch.Tensor  # [ranks, layers * kv_heads / ranks * head_dim, hidden]
    q_norm: torch.Tensor  # [layers, head_dim]
    k_norm: torch.Tensor  # [layers, head_dim]
    o_proj: torch.Tensor  # [ranks, layers * hidden, heads / ranks * head_dim]
    post_norm: torch.Tensor  # [layers, hidden]
    gate_proj: torch.Tensor  # [ranks, layers * intermediate / ranks, hidden]
    up_proj: torch.Tensor  # [ranks, layers * intermediate / ranks, hidden]
    down_proj: torch.Tensor  # [ranks, layers * hidden, intermediate / ranks]

    @property
    def dtype(self) -> torch.dtype:
        return self.q_proj.dtype

    @property
    def kv_heads_per_rank(self) -> int:
        return self.config.num_kv_heads // self.ranks

    def layer_weights(self) -> tuple[torch.Tensor, ...]:
        """The weights in the order :func:`tp_decoder_layer` takes them."""
        return (
            self.input_norm,
            self.q_proj,
            self.k_proj,
            self.v_proj,
            self.q_norm,
            self.k_norm,
            self.o_proj,
            self.post_norm,
            self.gate_proj,
            self.up_proj,
            self.down_proj,
        )


def _shard_rows(weight: torch.Tensor, layers: int, ranks: int) -> torch.Tensor:
    """``[layers * out, in]`` cut along ``out`` -> ``[ranks, layers * out / ranks, in]``."""
    cols = weight.shape[1]
    per_layer = weight.reshape(layers, ranks, -1, cols)
    return per_layer.transpose(0, 1).reshape(ranks, -1, cols).contiguous()


def _shard_cols(weight: torch.Tensor, ranks: int) -> torch.Tensor:
    """``[layers * out, in]`` cut along ``in`` -> ``[ranks, layers * out, in / ranks]``."""
    rows = weight.shape[0]
    return weight.reshape(rows, ranks, -1).transpose(0, 1).contiguous()


def shard_weights(weights: Qwen3Weights, ranks: int) -> TensorParallelWeights:
    """Cut a model's layer weights into ``ranks`` tensor-parallel shards: rank ``r`` gets the
    query heads ``[r * heads / ranks, (r + 1) * heads / ranks)`` (their q_proj rows and o_proj
    columns), the KV heads they read (k_proj / v_proj rows) and the intermediate columns ``[r *
    inter / ranks, ...)`` (gate_proj / up_proj rows, down_proj columns). A rank count that does
    not divide the heads, the KV heads or the intermediate size is a :class:`ModelConfigError`."""
    if not isinstance(weights, Qwen3Weights):
        raise ModelError.here(
            f"shard_weights takes Qwen3Weights, got {type(weights).__name__}",
            "load them: Qwen3Weights.from_state_dict(state_dict, config), from_safetensors or random",
        )
    config = weights.config
    ranks = check_ranks(config, ranks)
    layers = config.num_layers
    return TensorParallelWeights(
        config=config,
        ranks=ranks,
        input_norm=weights.input_norm,
        q_proj=_shard_rows(weights.q_proj, layers, ranks),
        k_proj=_shard_rows(weights.k_proj, layers, ranks),
        v_proj=_shard_rows(weights.v_proj, layers, ranks),
        q_norm=weights.q_norm,
        k_norm=weights.k_norm,
        o_proj=_shard_cols(weights.o_proj, ranks),
        post_norm=weights.post_norm,
        gate_proj=_shard_rows(weights.gate_proj, layers, ranks),
        up_proj=_shard_rows(weights.up_proj, layers, ranks),
        down_proj=_shard_cols(weights.down_proj, ranks),
    )


def shard_kv_cache(cache: torch.Tensor, ranks: int) -> torch.Tensor:
    """A whole cache ``[rows, kv_heads * head_dim]`` -> the ranks' caches ``[ranks, rows, kv_heads
    / ranks * head_dim]`` (rank ``r`` its KV heads' columns)."""
    return _shard_cols(cache, ranks)


def gather_kv_cache(caches: torch.Tensor) -> torch.Tensor:
    """The ranks' caches ``[ranks, rows, kv_heads / ranks * head_dim]`` -> the whole cache ``[rows,
    kv_heads * head_dim]`` (:func:`shard_kv_cache` undone)."""
    ranks, rows, width = caches.shape
    return caches.transpose(0, 1).reshape(rows, ranks * width).contiguous()


class TensorParallelLayer:
    """A Qwen3 decoder layer run tensor-parallel over the chips ``device_ids`` (one rank each;
    default ``range(ranks)``).

    ``layer(x, positions, cos, sin, k_caches, v_caches, layer=l)`` runs layer ``l`` of a decode
    step in place on ``x`` ``[batch, hidden]`` (FP32) and on the ranks' caches ``[ranks,
    layers * batch * max_seq, kv_heads / ranks * head_dim]`` (:func:`shard_kv_cache` cuts a
    whole one); :attr:`last_report` is the run's :class:`~pypto.ir.WorldReport`.
    """

    def __init__(
        self,
        weights: Qwen3Weights | TensorParallelWeights,
        ranks: int | None = None,
        device_ids: list[int] | None = None,
        run_config: RunConfig | None = None,
    ) -> None:
        if ranks is None:
            ranks = len(device_ids) if device_ids is not None else getattr(weights, "ranks", None)
        if ranks is None:
            raise ModelError.here(
                "TensorParallelLayer needs the rank count", "pass ranks=N or device_ids=[...]"
            )
        if device_ids is not None and len(device_ids) != ranks:
            raise ModelError.here(
                f"{len(device_ids)} device id(s) for {ranks} ranks", "give one device id per rank"
            )
        if isinstance(weights, TensorParallelWeights):
            if weights.ranks != ranks:
                raise ModelError.here(
                    f"the weights are cut into {weights.ranks} shards, not {ranks}",
                    "shard the model's weights for this rank count: shard_weights(weights, ranks)",
                )
            self.weights = weights
        else:
            self.weights = shard_weights(weights, ranks)
        self.config, self.ranks = self.weights.config, ranks
        self.device_ids = list(range(ranks)) if device_ids is None else list(device_ids)
        distributed = DistributedConfig(device_ids=self.device_ids)
        base = run_config or RunConfig()
        self.run_config = replace(base, distributed_config=distributed)
        self.last_report: WorldReport | None = None

    def __call__(
        self,
        x: torch.Tensor,
        positions: torch.Tensor,
        cos: torch.Tensor,
        sin: torch.Tensor,
        k_caches: torch.Tensor,
        v_caches: torch.Tensor,
        layer: int = 0,
    ) -> torch.Tensor:
        """Run layer ``layer`` over the ranks; ``x`` is updated in place (and returned)."""
        config = self.config
        if x.dim() != 2 or x.shape[1] != config.hidden_size or x.dtype != torch.float32:
            raise ModelError.here(
                f"x is the FP32 residual stream [batch, {config.hidden_size}], got {list(x.shape)} {x.dtype}",
                "pass the layer's input hidden states as float32, one row per batch row",
            )
        batch = x.shape[0]
        expected = (self.ranks, k_caches.shape[1], self.weights.kv_heads_per_rank * config.head_dim)
        if tuple(k_caches.shape) != expected or tuple(v_caches.shape) != expected:
            raise ModelError.here(
                f"the ranks' caches are {list(k_caches.shape)} and {list(v_caches.shape)}; this layer "
                f"needs [{self.ranks}, layers * batch * max_seq, {expected[2]}] (each rank its KV heads)",
                "cut a whole cache with shard_kv_cache(cache, ranks)",
            )
        max_seq = k_caches.shape[1] // (config.num_layers * batch)
        stream = x.unsqueeze(0).repeat(self.ranks, 1, 1).contiguous()  # each rank's copy
        tp_decoder_layer(
            stream,
            positions,
            *self.weights.layer_weights(),
            cos,
            sin,
            k_caches,
            v_caches,
            layer,
            max_seq,
            config.rms_norm_eps,
            config.head_dim**-0.5,
            config=self.run_config,
        )
        self.last_report = tp_decoder_layer.last_report
        x.copy_(stream[0])
        return x

    def prepare(self, batch: int, max_seq: int) -> ResidentTensorParallelLayer:
        """A prepared world for many decode steps of ``batch`` rows and ``max_seq`` positions: each
        rank's weight shards and its (zeroed) KV caches uploaded once, resident on its chip
        (``StackedDeviceTensor`` s of a :class:`~pypto.runtime.DistributedWorker`). Use it as a
        context manager (``with tp.prepare(2, 64) as resident: resident(x, positions, layer=0)``)."""
        return ResidentTensorParallelLayer(self, batch, max_seq)


class ResidentTensorParallelLayer:
    """A :class:`TensorParallelLayer` on a prepared :class:`~pypto.runtime.DistributedWorker`: the
    ranks' weight shards and KV caches live on their chips across calls; each call moves only the
    residual stream and the positions (host tensors in shared memory, as the worker requires). The
    worker holds one program per layer (a layer index is part of a program's specialization).

    ``resident(x, positions, layer=l)`` runs layer ``l`` in place on ``x`` ``[batch, hidden]``;
    :meth:`kv_caches` reads the ranks' caches back whole; :meth:`close` (or leaving the ``with``)
    releases the world."""

    def __init__(self, tp: TensorParallelLayer, batch: int, max_seq: int) -> None:
        config, ranks = tp.config, tp.ranks
        for name, value in (("batch", batch), ("max_seq", max_seq)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ModelError.here(
                    f"{name} must be a whole number of at least 1, got {value!r}", f"pass {name}=1 or more"
                )
        if max_seq > config.max_position_embeddings:
            raise ModelError.here(
                f"max_seq {max_seq} is past the model's {config.max_position_embeddings} positions",
                "pass the longest sequence you will decode",
            )
        self.tp, self.batch, self.max_seq = tp, batch, max_seq
        weights = tp.weights
        # Per-call IO and the tensors every rank reads whole: in shared memory before prepare().
        self._stream = torch.zeros(ranks, batch, config.hidden_size).share_memory_()
        self._positions = torch.zeros(batch, dtype=torch.int32).share_memory_()
        cos, sin = rope_tables(config, max_seq)
        self._cos, self._sin = cos.share_memory_(), sin.share_memory_()
        self._norms = {
            name: getattr(weights, name).clone().share_memory_()
            for name in ("input_norm", "q_norm", "k_norm", "post_norm")
        }
        cache_shape = (
            ranks,
            config.num_layers * batch * max_seq,
            weights.kv_heads_per_rank * config.head_dim,
        )
        caches = torch.zeros(cache_shape, dtype=weights.dtype)
        # A layer index is part of a program's specialization: one program per layer, one worker.
        self._programs: dict[int, Any] = {}
        for layer in range(config.num_layers):
            arguments = self._arguments(weights, caches, caches, layer)
            self._programs[layer] = tp_decoder_layer.compile(*arguments, config=tp.run_config)
        self.worker = DistributedWorker(list(self._programs.values()))
        self._resident = {
            name: self.worker.alloc_stacked_tensor(getattr(weights, name))
            for name in ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
        }
        self._k_caches = self.worker.alloc_stacked_tensor(caches)
        self._v_caches = self.worker.alloc_stacked_tensor(caches)
        self._cache_shape = cache_shape
        self.last_report: WorldReport | None = None

    def _arguments(self, shards: Any, k_caches: Any, v_caches: Any, layer: int) -> tuple[Any, ...]:
        """:func:`tp_decoder_layer`'s arguments: the shared IO, the norms, ``shards``' projections."""
        config, norms = self.tp.config, self._norms
        return (
            self._stream,
            self._positions,
            norms["input_norm"],
            _weight(shards, "q_proj"),
            _weight(shards, "k_proj"),
            _weight(shards, "v_proj"),
            norms["q_norm"],
            norms["k_norm"],
            _weight(shards, "o_proj"),
            norms["post_norm"],
            _weight(shards, "gate_proj"),
            _weight(shards, "up_proj"),
            _weight(shards, "down_proj"),
            self._cos,
            self._sin,
            k_caches,
            v_caches,
            layer,
            self.max_seq,
            config.rms_norm_eps,
            config.head_dim**-0.5,
        )

    def __call__(self, x: torch.Tensor, positions: torch.Tensor, layer: int = 0) -> torch.Tensor:
        """Run layer ``layer`` of a decode step at ``positions`` ``[batch]``; ``x`` ``[batch,
        hidden]`` (FP32) is updated in place (and returned)."""
        if tuple(x.shape) != tuple(self._stream.shape[1:]) or tuple(positions.shape) != (self.batch,):
            raise ModelError.here(
                f"x is {list(x.shape)} and positions {list(positions.shape)}; this world was prepared "
                f"for [{self.batch}, {self.tp.config.hidden_size}] and [{self.batch}]",
                "prepare another: tp.prepare(batch, max_seq)",
            )
        self._stream.copy_(x.unsqueeze(0).expand_as(self._stream))
        self._positions.copy_(positions)
        if layer not in self._programs:
            raise ModelError.here(
                f"layer {layer!r} is not one of the model's {len(self._programs)} layers",
                f"pass layer=0 .. {len(self._programs) - 1}",
            )
        program = self._programs[layer]
        self.worker.run(program, *self._arguments(self._resident, self._k_caches, self._v_caches, layer))
        self.last_report = self.worker.last_report
        x.copy_(self._stream[0])
        return x

    def kv_caches(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The ranks' caches read back, ``[ranks, layers * batch * max_seq, kv_heads / ranks *
        head_dim]`` each (:func:`gather_kv_cache` makes a whole one)."""
        k_out = torch.empty(self._cache_shape, dtype=self.tp.weights.dtype)
        v_out = torch.empty_like(k_out)
        self.worker.copy_stacked_from(self._k_caches, k_out)
        self.worker.copy_stacked_from(self._v_caches, v_out)
        return k_out, v_out

    def close(self) -> None:
        """Release the world (the resident tensors and the ranks)."""
        self.worker.close()

    def __enter__(self) -> ResidentTensorParallelLayer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _weight(shards: Any, name: str) -> Any:
    """A projection's shards: a field of TensorParallelWeights or an entry of a dict of resident ones."""
    return shards[name] if isinstance(shards, dict) else getattr(shards, name)
