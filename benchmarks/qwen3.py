"""Qwen3 decode benchmarks (issue #13), measured in one run; nothing here is a timed test.

    nox -s bench            # runs this after bench.py; or: python benchmarks/qwen3.py [--skip-full]

1. the tiny configuration's decode step end to end on a2a3sim: the first step of a process
   (parse, compile, simulate) and a later one (cached), wall time; the goal is under 5 s;
2. one Qwen3-32B decoder layer at its published shapes, batch 16, a 4096-position KV cache, random
   BF16 weights: lowered (wall time), simulated on a2a3sim (wall time, modeled cycles; the timeline,
   which a2a3sim makes when it is first read, timed apart), and checked against the plain-torch
   reference of the same layer (pypto.models.qwen3.reference); then simulated timing-only
   (RunConfig(timing_only=True): wall time, and the same modeled cycles and timeline);
3. the same layer tensor-parallel (pypto.models.qwen3.tp) over 1, 2, 4 and 8 simulated chips: the
   world's modeled time per chip count (the WorldReport's total), the bytes over the links, wall
   time, and the same check against the plain-torch layer.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import torch

from pypto.models.qwen3 import Qwen3Decoder, Qwen3Weights, decoder_layer, get_config, reference, rope_tables
from pypto.models.qwen3.profile import DecodeProfile
from pypto.models.qwen3.tp import TensorParallelLayer, gather_kv_cache, shard_kv_cache
from pypto.runtime import RunConfig

TINY_GOAL_SECONDS = 5.0
FULL_BATCH, FULL_CACHE = 16, 4096
TP_CHIPS = (1, 2, 4, 8)


def tiny_decode_step() -> None:
    config = get_config("tiny")
    decoder = Qwen3Decoder(Qwen3Weights.random(config, seed=0), batch=1, max_seq=64)
    start = time.perf_counter()
    decoder.step([1])
    first = time.perf_counter() - start
    later = []
    for token in (2, 3, 4, 5):
        start = time.perf_counter()
        decoder.step([token])
        later.append(time.perf_counter() - start)
    warm = sorted(later)[len(later) // 2]
    print("tiny Qwen3 decode step on a2a3sim (2 layers, hidden 256, batch 1), end to end")
    verdict = "under" if first < TINY_GOAL_SECONDS else "OVER"
    print(
        f"  first step (parse + compile + simulate) {first:6.2f} s   later steps {warm:6.2f} s   "
        f"({verdict} the {TINY_GOAL_SECONDS:.0f} s goal)"
    )
    profile = DecodeProfile.of(decoder.reports[-1], batch=1)
    print("  " + profile.summary().replace("\n", "\n  "))


def full_size_layer() -> None:
    config = get_config("qwen3-32b").with_layers(1)
    dtype = torch.bfloat16
    start = time.perf_counter()
    weights = Qwen3Weights.random(config, seed=0, dtype=dtype, vocab=False)
    generator = torch.Generator().manual_seed(1)
    kv_width = config.num_kv_heads * config.head_dim
    k_cache = (torch.randn(FULL_BATCH * FULL_CACHE, kv_width, generator=generator) * 0.5).to(dtype)
    v_cache = torch.randn(FULL_BATCH * FULL_CACHE, kv_width, generator=generator).to(dtype)
    # Rows at different lengths, the longest filling the cache: the new token's position.
    positions = torch.tensor([FULL_CACHE - 1 - 61 * b for b in range(FULL_BATCH)], dtype=torch.int32)
    x = torch.randn(FULL_BATCH, config.hidden_size, generator=generator)
    cos, sin = rope_tables(config, FULL_CACHE)
    setup = time.perf_counter() - start
    eps, scale = config.rms_norm_eps, config.head_dim**-0.5
    ours_x, ours_k, ours_v = x.clone(), k_cache.clone(), v_cache.clone()
    call = (ours_x, positions, *weights.layer_weights(), cos, sin, ours_k, ours_v, 0, FULL_CACHE, eps, scale)
    start = time.perf_counter()
    decoder_layer.compile(*call)
    lowered = time.perf_counter() - start
    start = time.perf_counter()
    decoder_layer(*call)
    simulated = time.perf_counter() - start
    report = decoder_layer.last_report
    assert report is not None
    start = time.perf_counter()
    slices = len(report.timeline)  # made when first read
    timeline = time.perf_counter() - start
    state = (x.clone(), positions, *weights.layer_weights(), cos, sin, k_cache.clone(), v_cache.clone())
    timed_call = (*state, 0, FULL_CACHE, eps, scale)
    start = time.perf_counter()
    decoder_layer(*timed_call, config=RunConfig(timing_only=True))
    timing_only = time.perf_counter() - start
    timed = decoder_layer.last_report
    assert timed is not None
    same_time = timed.total_cycles == report.total_cycles and timed.timeline == report.timeline
    start = time.perf_counter()
    want_x, want_k, want_v = x.clone(), k_cache.clone(), v_cache.clone()
    reference.decode_layer(weights, 0, want_x, positions, cos, sin, want_k, want_v)
    torch_seconds = time.perf_counter() - start
    error = float((ours_x - want_x).abs().max() / want_x.abs().max())
    cache_error = float((ours_k.float() - want_k.float()).abs().max())
    ok = error < 2e-2 and cache_error <= 0.0625
    layers = get_config("qwen3-32b").num_layers
    step_us = report.total_us * layers
    shape = f"{config.num_heads} heads / {config.num_kv_heads} KV, intermediate {config.intermediate_size}"
    print(f"Qwen3-32B decoder layer (hidden {config.hidden_size}, {shape}),")
    print(f"  batch {FULL_BATCH}, {FULL_CACHE}-position cache, BF16 weights")
    print(
        f"  wall: random weights and cache {setup:6.1f} s   lower {lowered:6.1f} s   "
        f"simulate {simulated:6.1f} s"
    )
    made = f"{slices:,} slices in {timeline:.1f} s"
    print(f"  the timeline, made when first read (here, for the module profile): {made}")
    print(
        f"  timing-only (RunConfig(timing_only=True)): simulate {timing_only:6.1f} s, "
        f"{'the same modeled cycles and timeline' if same_time else 'DIFFERENT modeled time'}"
    )
    print(
        f"  {report.total_cycles} modeled cycles = {report.total_us / 1e3:.3f} modeled ms per layer on a2a3"
    )
    print(
        f"  x {layers} layers = {step_us / 1e3:.1f} modeled ms per step = "
        f"{FULL_BATCH / (step_us / 1e6):,.0f} modeled tokens/s at batch {FULL_BATCH} (the layers only)"
    )
    profile = DecodeProfile.of(report, batch=FULL_BATCH)
    for line in profile.summary().splitlines()[1:]:
        print("  " + line)
    print(
        f"  against plain torch ({torch_seconds:.1f} s): residual stream within {error:.1e} of the largest "
        f"value, cache row within {cache_error:.3f}: {'OK' if ok else 'MISMATCH'}"
    )
    if not (ok and same_time):
        raise SystemExit(1)


def tensor_parallel_layer(chip_counts: tuple[int, ...] = TP_CHIPS) -> None:
    """The Qwen3-32B layer of full_size_layer split over 1, 2, 4 and 8 chips (one rank each)."""
    config = get_config("qwen3-32b").with_layers(1)
    dtype = torch.bfloat16
    weights = Qwen3Weights.random(config, seed=0, dtype=dtype, vocab=False)
    generator = torch.Generator().manual_seed(1)
    kv_width = config.num_kv_heads * config.head_dim
    k_cache = (torch.randn(FULL_BATCH * FULL_CACHE, kv_width, generator=generator) * 0.5).to(dtype)
    v_cache = torch.randn(FULL_BATCH * FULL_CACHE, kv_width, generator=generator).to(dtype)
    positions = torch.tensor([FULL_CACHE - 1 - 61 * b for b in range(FULL_BATCH)], dtype=torch.int32)
    x = torch.randn(FULL_BATCH, config.hidden_size, generator=generator)
    cos, sin = rope_tables(config, FULL_CACHE)
    want_x, want_k = x.clone(), k_cache.clone()
    reference.decode_layer(weights, 0, want_x, positions, cos, sin, want_k, v_cache.clone())
    print(f"Qwen3-32B decoder layer, tensor-parallel (batch {FULL_BATCH}, {FULL_CACHE}-position cache, BF16)")
    print(f"  {'chips':>5} {'modeled us':>11} {'vs 1 chip':>9} {'link bytes':>12} {'wall s':>7}  check")
    first_us = None
    failed = False
    for chips in chip_counts:
        tp = TensorParallelLayer(weights, ranks=chips)
        ours_x = x.clone()
        k_caches, v_caches = shard_kv_cache(k_cache, chips), shard_kv_cache(v_cache, chips)
        start = time.perf_counter()
        tp(ours_x, positions, cos, sin, k_caches, v_caches, layer=0)
        wall = time.perf_counter() - start
        report = tp.last_report
        assert report is not None
        first_us = first_us or report.total_us
        error = float((ours_x - want_x).abs().max() / want_x.abs().max())
        cache_error = float((gather_kv_cache(k_caches).float() - want_k.float()).abs().max())
        ok = error < 2e-2 and cache_error <= 0.0625
        failed = failed or not ok
        link_bytes = sum(report.link_bytes().values())
        print(
            f"  {chips:>5} {report.total_us:>11.1f} {first_us / report.total_us:>8.2f}x {link_bytes:>12,} "
            f"{wall:>7.1f}  {'OK' if ok else 'MISMATCH'} ({error:.1e})"
        )
        del tp, k_caches, v_caches
    print("  modeled us: the world's end on its one modeled clock; wall: lowering and simulating, in seconds")
    if failed:
        raise SystemExit(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-full", action="store_true", help="only the tiny decode step")
    parser.add_argument("--only-tp", action="store_true", help="only the tensor-parallel Qwen3-32B layer")
    args = parser.parse_args()
    torch.set_num_threads(1)
    machine = f"{platform.machine()}, {os.cpu_count()} CPU(s), python {platform.python_version()}"
    print(f"Qwen3 benchmarks — {machine}; torch {torch.__version__} on {torch.get_num_threads()} thread(s)\n")
    if args.only_tp:
        tensor_parallel_layer()
        return
    tiny_decode_step()
    if not args.skip_full:
        print()
        full_size_layer()
        print()
        tensor_parallel_layer()


if __name__ == "__main__":
    main()
