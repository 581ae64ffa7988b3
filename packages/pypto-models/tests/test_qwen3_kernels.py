"""Each Qwen3 decode kernel on a2a3sim against transformers' own modules (or torch's), at the
tiny model's shapes and beyond: the projections (column blocks and a tail, one mixed kernel per
block for the residual forms), q/k norm + RoPE + the cache write, decode attention over cache
blocks with grouped heads and per-row lengths, the SwiGLU MLP, the embedding."""

import pytest
import torch
import torch.nn.functional as F
from transformers import Qwen3Config as HfQwen3Config
from transformers.models.qwen3.modeling_qwen3 import (
    Qwen3MLP,
    Qwen3RMSNorm,
    apply_rotary_pos_emb,
    repeat_kv,
)

from pypto.models.qwen3 import get_config, rope_tables
from pypto.models.qwen3.kernels.attention import attention
from pypto.models.qwen3.kernels.embedding import embed_tokens
from pypto.models.qwen3.kernels.mlp import mlp
from pypto.models.qwen3.kernels.projection import o_proj, q_proj

TINY = get_config("tiny")


def rand(*shape, seed=0, dtype=torch.float32):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


# ---------------------------------------------------------------- projections


@pytest.mark.parametrize(("rows", "k", "n"), [(4, 256, 256), (1, 256, 1000), (16, 512, 2304)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_a_projection_reads_one_layer_of_stacked_weights_over_column_blocks(rows, k, n, dtype):
    x, weights = rand(rows, k, seed=1, dtype=dtype), rand(3 * n, k, seed=2, dtype=dtype)
    out = torch.zeros(rows, n)
    q_proj(x, weights, out, 1)
    torch.testing.assert_close(out, F.linear(x.float(), weights[n : 2 * n].float()), rtol=1e-4, atol=1e-4)
    kernels = {t.kernel for t in q_proj.last_report.tasks}
    assert kernels == ({"q_proj", "q_proj_tail"} if n == 1000 else {"q_proj"})
    assert len(q_proj.last_report.tasks) > 1  # the blocks spread over core groups
    assert len({t.core_group for t in q_proj.last_report.tasks}) > 1


@pytest.mark.parametrize("n", [256, 1000])
def test_a_residual_projection_is_one_mixed_kernel_per_block(n):
    x, weights, residual = rand(2, 256, seed=3), rand(2 * n, 256, seed=4), rand(2, n, seed=5)
    out = torch.zeros(2, n)
    o_proj(x, weights, residual, out, 0)
    torch.testing.assert_close(out, residual + F.linear(x, weights[:n]), rtol=1e-4, atol=1e-4)
    report = o_proj.last_report
    assert {t.kernel for t in report.tasks} <= {"o_proj", "o_proj_tail"}
    for task in report.tasks:  # in each block's task the cube and both vector lanes worked
        cores = {s.core.split(".")[1] for s in report.timeline if s.task == task.kernel and not s.stalled}
        assert {"AIC", "AIV0", "AIV1"} <= cores


# ---------------------------------------------------------------- attention


def reference_attention(q, k, v, q_norm_w, k_norm_w, cache_k, cache_v, positions, eps):
    """One decode step of Qwen3Attention after the projections, with transformers' functions:
    returns the attention output [batch, heads * dim] and the rotated new keys [batch, kv, dim]."""
    batch, dim = q.shape[0], q_norm_w.shape[0]
    heads, kv_heads = q.shape[1] // dim, k.shape[1] // dim
    q_norm, k_norm = Qwen3RMSNorm(dim, eps), Qwen3RMSNorm(dim, eps)
    with torch.no_grad():
        q_norm.weight.copy_(q_norm_w)
        k_norm.weight.copy_(k_norm_w)
    cos_table, sin_table = rope_tables(TINY, int(positions.max()) + 1)
    outs, new_keys = [], []
    for b in range(batch):
        pos = int(positions[b])
        qb = q_norm(q[b].view(1, 1, heads, dim)).transpose(1, 2)  # [1, heads, 1, dim]
        kb = k_norm(k[b].view(1, 1, kv_heads, dim)).transpose(1, 2)
        cos, sin = cos_table[pos].view(1, 1, dim), sin_table[pos].view(1, 1, dim)
        qb, kb = apply_rotary_pos_emb(qb, kb, cos, sin)
        new_keys.append(kb[0, :, 0])
        keys = torch.cat([cache_k[b, :pos], kb[0].transpose(0, 1)], dim=0)  # [pos + 1, kv, dim]
        values = torch.cat([cache_v[b, :pos], v[b].view(1, kv_heads, dim)], dim=0)
        keys = repeat_kv(keys.permute(1, 0, 2).unsqueeze(0), heads // kv_heads)
        values = repeat_kv(values.permute(1, 0, 2).unsqueeze(0), heads // kv_heads)
        weights = torch.softmax((qb @ keys.transpose(2, 3)) * dim**-0.5, dim=-1)
        outs.append((weights @ values)[0, :, 0].reshape(heads * dim))
    return torch.stack(outs), torch.stack(new_keys)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_attention_matches_transformers_with_a_length_per_batch_row(dtype):
    batch, max_seq, layers, layer, eps = 3, 160, 2, 1, 1e-6
    dim, heads, kv_heads = TINY.head_dim, TINY.num_heads, TINY.num_kv_heads
    positions = torch.tensor([0, 130, 57], dtype=torch.int32)  # 130: past the first block of 128
    q, k, v = (
        rand(batch, heads * dim, seed=6),
        rand(batch, kv_heads * dim, seed=7),
        rand(batch, kv_heads * dim, seed=8),
    )
    norms = [1 + 0.1 * rand(layers, dim, seed=s) for s in (9, 10)]
    cache_k = rand(layers * batch * max_seq, kv_heads * dim, seed=11, dtype=dtype)
    cache_v = rand(layers * batch * max_seq, kv_heads * dim, seed=12, dtype=dtype)
    old_k, old_v = cache_k.clone(), cache_v.clone()
    cos, sin = rope_tables(TINY, max_seq)
    q_rot = torch.zeros(batch * heads, dim, dtype=dtype)
    out = torch.zeros(batch, heads * dim, dtype=dtype)
    q_norm, k_norm = (n.to(dtype) for n in norms)
    attention(
        q,
        k,
        v,
        q_norm,
        k_norm,
        cos,
        sin,
        positions,
        cache_k,
        cache_v,
        q_rot,
        out,
        layer,
        max_seq,
        eps,
        dim**-0.5,
    )

    def layer_rows(cache):  # [batch, max_seq, kv, dim] of layer `layer`
        return cache.float().view(layers, batch, max_seq, kv_heads, dim)[layer]

    want, new_keys = reference_attention(
        q,
        k,
        v,
        q_norm.float()[layer],
        k_norm.float()[layer],
        layer_rows(old_k),
        layer_rows(old_v),
        positions,
        eps,
    )
    tolerance = {"rtol": 1e-5, "atol": 1e-5} if dtype is torch.float32 else {"rtol": 2e-2, "atol": 2e-2}
    torch.testing.assert_close(out.float(), want, **tolerance)
    written = cache_k.float().view(layers, batch, max_seq, kv_heads, dim)
    for b in range(batch):
        pos = int(positions[b])
        torch.testing.assert_close(written[layer, b, pos], new_keys[b], **tolerance)
        torch.testing.assert_close(
            cache_v.float().view(layers, batch, max_seq, kv_heads, dim)[layer, b, pos],
            v[b].view(kv_heads, dim).to(dtype).float(),
        )
    unchanged = torch.ones(layers, batch, max_seq, dtype=torch.bool)
    unchanged[layer, torch.arange(batch), positions.long()] = False
    assert torch.equal(
        cache_k.view(layers, batch, max_seq, -1)[unchanged], old_k.view(layers, batch, max_seq, -1)[unchanged]
    )
    blocks = {t.block for t in attention.last_report.tasks if t.kernel == "decode_attention"}
    assert blocks == set(range(batch * kv_heads))  # one block per batch row and KV head


# ---------------------------------------------------------------- MLP and embedding


@pytest.mark.parametrize(("hidden", "inter"), [(TINY.hidden_size, TINY.intermediate_size), (256, 1600)])
def test_the_mlp_matches_transformers_qwen3mlp_plus_the_residual(hidden, inter):
    config = HfQwen3Config(hidden_size=hidden, intermediate_size=inter)
    reference, norm = Qwen3MLP(config), Qwen3RMSNorm(hidden, 1e-6)
    with torch.no_grad():
        norm.weight.copy_(1 + 0.1 * rand(hidden, seed=13))
    x, out = rand(2, hidden, seed=14), torch.zeros(2, hidden)
    sd = reference.state_dict()
    mlp(
        x,
        norm.weight.detach().reshape(1, -1).clone(),
        sd["gate_proj.weight"],
        sd["up_proj.weight"],
        sd["down_proj.weight"],
        out,
        0,
        1e-6,
    )
    with torch.no_grad():
        want = x + reference(norm(x))
    torch.testing.assert_close(out, want, rtol=1e-4, atol=1e-5)
    kernels = {t.kernel for t in mlp.last_report.tasks}
    assert {"rmsnorm", "gate_up", "down_proj"} <= kernels


def test_the_embedding_gathers_the_rows_of_the_token_ids_read_at_run_time():
    table = rand(TINY.vocab_size, TINY.hidden_size, seed=15, dtype=torch.bfloat16)
    tokens = torch.tensor([7, 1023, 0, 7], dtype=torch.int32)
    out = torch.zeros(4, TINY.hidden_size)

    embed_tokens(tokens, table, out)
    torch.testing.assert_close(out, table[tokens.long()].float())
