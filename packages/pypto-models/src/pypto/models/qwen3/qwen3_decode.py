"""The Qwen3 decode path in ``pl``: one decoder layer, N layers, the final norm and the LM head,
and greedy generation on top.

:func:`decode_step` is the ``@pl.jit`` entry of one decode step: it embeds one token per batch
row, runs every layer (:func:`decoder_layer`, an ``@pl.jit.opaque`` function the step calls once
per layer) and writes the final hidden states and the logits. Everything in it runs on the
backend (``a2a3sim`` by default); :class:`Qwen3Decoder` keeps the KV cache and the positions
between steps, prefills a prompt one token at a time and decodes greedily.

>>> decoder = Qwen3Decoder(Qwen3Weights.random(get_config("tiny"), seed=0))  # doctest: +SKIP
>>> decoder.generate(torch.tensor([[1, 2, 3]]), max_new_tokens=16)  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import torch

import pypto.language as pl
from pypto.ir import RunReport
from pypto.models.errors import ModelError, TokenError
from pypto.models.qwen3.kernels.attention import attention
from pypto.models.qwen3.kernels.embedding import embed_tokens
from pypto.models.qwen3.kernels.mlp import mlp
from pypto.models.qwen3.kernels.projection import k_proj, lm_head, o_proj, q_proj, v_proj
from pypto.models.qwen3.kernels.rmsnorm import rmsnorm
from pypto.models.qwen3.weights import Qwen3Weights, rope_tables
from pypto.runtime import RunConfig


@pl.jit.opaque
def decoder_layer(
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
    """Layer ``layer`` of a decode step, in place on the residual stream ``x`` ``[batch, hidden]``
    (FP32): ``x += attention(rmsnorm(x))``, then ``x += mlp(rmsnorm(x))``."""
    rows, hidden = x.shape
    layers = input_norm.shape[0]
    dim = q_norm.shape[1]
    q_size = q_proj_w.shape[0] // layers
    kv_size = k_proj_w.shape[0] // layers
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
    mid = pl.create_tensor([rows, hidden], pl.FP32)
    mid = o_proj(attended, o_proj_w, x, mid, layer)
    x = mlp(mid, post_norm, gate_w, up_w, down_w, x, layer, eps)
    return x, k_cache, v_cache


@pl.jit
def decode_step(
    tokens: pl.Tensor,
    positions: pl.Tensor,
    embed: pl.Tensor,
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
    final_norm: pl.Tensor,
    lm_head_w: pl.Tensor,
    cos: pl.Tensor,
    sin: pl.Tensor,
    k_cache: pl.InOut[pl.Tensor],
    v_cache: pl.InOut[pl.Tensor],
    hidden: pl.Out[pl.Tensor],
    logits: pl.Out[pl.Tensor],
    eps: pl.FP32,
    scale: pl.FP32,
):
    """One decode step: ``tokens`` ``[batch]`` (INT32) at ``positions`` ``[batch]`` (INT32, the
    cache length of each row before it) -> ``hidden`` ``[batch, hidden]`` (after the final norm, in
    the model's dtype) and ``logits`` ``[batch, vocab]`` (FP32); the step's keys and values are
    written into ``k_cache`` / ``v_cache`` (``[layers * batch * max_seq, kv_heads * head_dim]``)."""
    rows = tokens.shape[0]
    layers = input_norm.shape[0]
    max_seq = k_cache.shape[0] // (rows * layers)
    x = pl.create_tensor([rows, embed.shape[1]], pl.FP32)
    x = embed_tokens(tokens, embed, x)
    for layer in pl.range(layers):
        x, k_cache, v_cache = decoder_layer(
            x,
            positions,
            input_norm,
            q_proj_w,
            k_proj_w,
            v_proj_w,
            q_norm,
            k_norm,
            o_proj_w,
            post_norm,
            gate_w,
            up_w,
            down_w,
            cos,
            sin,
            k_cache,
            v_cache,
            layer,
            max_seq,
            eps,
            scale,
        )
    hidden = rmsnorm(x, final_norm, hidden, eps, 0)
    logits = lm_head(hidden, lm_head_w, logits, 0)
    return logits


class Qwen3Decoder:
    """A Qwen3 model decoding on a backend: its weights, its KV cache and each batch row's position.

    ``batch`` rows decode together, one token each per :meth:`step`; the cache holds ``max_seq``
    positions per row (default: the smaller of 512 and the model's ``max_position_embeddings``).
    Every step's :class:`~pypto.ir.RunReport` is kept in :attr:`reports`.
    """

    def __init__(
        self,
        weights: Qwen3Weights,
        batch: int = 1,
        max_seq: int | None = None,
        run_config: RunConfig | None = None,
    ) -> None:
        if not isinstance(weights, Qwen3Weights):
            raise ModelError.here(
                f"Qwen3Decoder takes Qwen3Weights, got {type(weights).__name__}",
                "load them: Qwen3Weights.from_state_dict(state_dict, config), from_safetensors or random",
            )
        config = weights.config
        if not _is_count(batch) or batch < 1:
            raise ModelError.here(
                f"batch must be a whole number of at least 1, got {batch!r}", "pass batch=1"
            )
        self.weights, self.config, self.batch = weights, config, batch
        self.max_seq = min(512, config.max_position_embeddings) if max_seq is None else max_seq
        if not _is_count(self.max_seq) or not 1 <= self.max_seq <= config.max_position_embeddings:
            raise ModelError.here(
                f"max_seq must be between 1 and the model's {config.max_position_embeddings} positions, "
                f"got {self.max_seq!r}",
                "leave it out for the default, or pass the longest sequence you will decode",
            )
        self.run_config = run_config
        kv_width = config.num_kv_heads * config.head_dim
        cache_rows = config.num_layers * batch * self.max_seq
        self.k_cache = torch.zeros(cache_rows, kv_width, dtype=weights.dtype)
        self.v_cache = torch.zeros(cache_rows, kv_width, dtype=weights.dtype)
        self.positions = torch.zeros(batch, dtype=torch.int32)
        self.cos, self.sin = rope_tables(config, self.max_seq)
        self.hidden = torch.zeros(batch, config.hidden_size, dtype=weights.dtype)
        self.logits = torch.zeros(batch, config.vocab_size)
        self.reports: list[RunReport] = []
        # Called after each step with its tokens, its positions and its logits (e.g. a check).
        self.on_step: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], None] | None = None

    def reset(self) -> None:
        """Forget every sequence: positions back to 0 (the cache is overwritten as rows advance)."""
        self.positions.zero_()
        self.reports.clear()

    def step(self, tokens: torch.Tensor | Sequence[int], run_config: RunConfig | None = None) -> torch.Tensor:
        """Decode one token per batch row (``tokens`` ``[batch]``) at each row's position; returns
        the logits ``[batch, vocab]`` and advances the positions. ``run_config`` replaces the
        decoder's for this step (e.g. to profile one step)."""
        ids = self._token_ids(tokens, "tokens").reshape(-1)
        if ids.numel() != self.batch:
            raise TokenError.here(
                f"step takes one token per batch row ({self.batch}), got {ids.numel()}",
                f"pass {self.batch} token id(s), one per batch row",
            )
        full = int(self.positions.max())
        if full >= self.max_seq:
            raise TokenError.here(
                f"the KV cache holds {self.max_seq} positions and a row is full",
                "build the decoder with a larger max_seq, or decoder.reset() to start again",
            )
        w = self.weights
        decode_step(
            ids.to(torch.int32),
            self.positions,
            w.embed,
            *w.layer_weights(),
            w.final_norm,
            w.lm_head,
            self.cos,
            self.sin,
            self.k_cache,
            self.v_cache,
            self.hidden,
            self.logits,
            self.config.rms_norm_eps,
            self.config.head_dim**-0.5,
            config=run_config or self.run_config,
        )
        assert decode_step.last_report is not None
        self.reports.append(decode_step.last_report)
        logits = self.logits.clone()
        if self.on_step is not None:
            self.on_step(ids, self.positions.clone(), logits)
        self.positions += 1
        return logits

    def _token_ids(self, value: object, name: str) -> torch.Tensor:
        """``value`` as int64 token ids: integers within the vocabulary, never floats or bools."""
        try:
            ids = torch.as_tensor(value)
        except (TypeError, ValueError, RuntimeError, OverflowError) as err:
            raise TokenError.here(
                f"{name} must be integer token ids, got {value!r} ({err})",
                "pass a list of ints or an integer torch tensor, e.g. [[1, 2, 3]]",
            ) from None
        empty = ids.numel() == 0  # [[]] is float to torch; its shape is what is wrong
        if not empty and (ids.dtype.is_floating_point or ids.dtype.is_complex or ids.dtype == torch.bool):
            raise TokenError.here(
                f"{name} must be integer token ids, got {ids.dtype} values {_few(ids)}",
                "token ids are whole numbers: pass ints, or convert with ids.long() if they are whole",
            )
        ids = ids.to(torch.int64)
        vocab = self.config.vocab_size
        outside = (ids < 0) | (ids >= vocab)
        if bool(outside.any()):
            raise TokenError.here(
                f"token ids must lie in [0, {vocab}), got {_few(ids[outside])}",
                f"the model's vocabulary has {vocab} tokens; use its tokenizer's ids",
            )
        return ids

    def profile_dir(self, run_config: RunConfig | None = None) -> Path | None:
        """Where a step run with ``run_config`` (default: the decoder's) writes its profile
        (trace, swimlane, summary), or None when it does not profile."""
        return (run_config or self.run_config or RunConfig()).profile_path(decode_step.name)

    def generate(
        self, prompt_ids: torch.Tensor | Sequence[Sequence[int]], max_new_tokens: int = 16
    ) -> torch.Tensor:
        """Greedy decoding: prefill the prompts ``[batch, length]`` one decode step per token, then
        append the most likely token ``max_new_tokens`` times. Returns ``[batch, length +
        max_new_tokens]``, prompts included, as transformers' ``generate`` does."""
        prompts = self._token_ids(prompt_ids, "prompt_ids")
        if prompts.dim() == 1:
            prompts = prompts.unsqueeze(0)
        if prompts.dim() != 2 or prompts.shape[0] != self.batch or prompts.shape[1] < 1:
            raise TokenError.here(
                f"prompt_ids must be [{self.batch}, length >= 1], got {list(prompts.shape)}",
                f"pass {self.batch} prompt(s) of at least one token each, e.g. [[1, 2, 3]]",
            )
        if not _is_count(max_new_tokens) or max_new_tokens < 0:
            raise TokenError.here(
                f"max_new_tokens must be a whole number of at least 0, got {max_new_tokens!r}",
                "pass how many tokens to append, e.g. max_new_tokens=16",
            )
        if prompts.shape[1] + max_new_tokens > self.max_seq + 1:
            raise TokenError.here(
                f"{prompts.shape[1]} prompt tokens and {max_new_tokens} new ones need a cache of "
                f"{prompts.shape[1] + max_new_tokens - 1} positions; this one holds {self.max_seq}",
                "build the decoder with a larger max_seq, or ask for fewer tokens",
            )
        self.reset()
        for t in range(prompts.shape[1]):
            logits = self.step(prompts[:, t])
        new: list[torch.Tensor] = []
        for i in range(max_new_tokens):
            new.append(logits.argmax(dim=-1, keepdim=True))
            if i + 1 < max_new_tokens:  # the last token needs no step of its own
                logits = self.step(new[-1])
        return torch.cat([prompts, *new], dim=1)


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _few(ids: torch.Tensor) -> str:
    """Up to eight of ``ids``' values, for a message."""
    flat = ids.reshape(-1).tolist()
    return str(flat[:8])[:-1] + (", ...]" if len(flat) > 8 else "]")
