"""Qwen3 decode benchmarks (issue #13), measured in one run; nothing here is a timed test.

    nox -s bench            # runs this after bench.py; or: python benchmarks/qwen3.py [--skip-full]
    python benchmarks/qwen3.py --only-step [--by-layer] [--step-layers N]   # the whole step alone

1. the tiny configuration's decode step end to end on a2a3sim: the first step of a process
   (parse, compile, simulate) and a later one (cached), wall time; the goal is under 5 s;
2. one Qwen3-32B decoder layer at its published shapes, batch 16, a 4096-position KV cache, random
   BF16 weights: lowered (wall time), simulated on a2a3sim (wall time, modeled cycles; the timeline,
   which a2a3sim makes when it is first read, timed apart), and checked against the plain-torch
   reference of the same layer (pypto.models.qwen3.reference); then simulated timing-only
   (RunConfig(timing_only=True): wall time, and the same modeled cycles and timeline);
3. the same layer tensor-parallel (pypto.models.qwen3.tp) over 1, 2, 4 and 8 simulated chips: the
   world's modeled time per chip count (the WorldReport's total), the bytes over the links, wall
   time, and the same check against the plain-torch layer;
4. issue #38's acceptance figures of the decode step: the full Qwen3-32B decode step (64 layers,
   batch 16, a 4096-position cache, BF16) simulated with numbers against plain torch doing the same
   step (pypto.models.qwen3.reference), goal 2x, and the same step in timing-only mode, goal 60 s;
   its numbers checked against the exact step (reference.decode_step(exact=True): FP64, nothing
   rounded), at most 1.5x as far from it as plain torch's BF16 step is (see StepDrift).
   Measured on the whole step with ``--full-step`` (about 15 minutes on an idle 2-core machine);
   without it, extrapolated from the one layer of 2. (its ratio, labelled so). The 64 layers share
   one layer's memory (benchmarks/aliased.py). As one ``decode_step`` program the run keeps each
   layer's timeline (about 0.05 GB a layer here: a retired task's launches and GM accesses are let
   go); ``--by-layer`` runs the same kernels as one program per layer.
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import platform
import time
from dataclasses import dataclass, fields
from typing import Any

import aliased
import memwatch
import torch
from acceptance import Figure, print_summary, record

import pypto.language as pl
from pypto.models.qwen3 import (
    Qwen3Config,
    Qwen3Decoder,
    Qwen3Weights,
    decode_step,
    decoder_layer,
    get_config,
    reference,
    rope_tables,
)
from pypto.models.qwen3.kernels.embedding import embed_tokens
from pypto.models.qwen3.kernels.projection import lm_head
from pypto.models.qwen3.kernels.rmsnorm import rmsnorm
from pypto.models.qwen3.profile import DecodeProfile
from pypto.models.qwen3.tp import TensorParallelLayer, gather_kv_cache, shard_kv_cache
from pypto.models.qwen3.weights import layer_shapes
from pypto.runtime import RunConfig

TINY_GOAL_SECONDS = 5.0
FULL_BATCH, FULL_CACHE = 16, 4096
TP_CHIPS = (1, 2, 4, 8)
MEMORY_FLOOR_GB = 2.0  # the whole step stops itself when the machine has less available
STEP_GOAL = 2.0  # the step with numbers: at most this times plain torch's wall time
TIMING_ONLY_GOAL = 60.0  # seconds for the step in timing-only mode
STEP_NAME = "Qwen3-32B decode step, with numbers: sim / torch"
TIMING_ONLY_NAME = "Qwen3-32B decode step, timing-only: wall"
CHECK_NAME = "Qwen3-32B decode step: numbers"
# The simulated BF16 step may be at most this times as far from the exact (FP64) step as plain
# torch's BF16 step is (both round alike; see StepDrift), plus this floor relative to the largest value.
DRIFT_FACTOR, DRIFT_FLOOR = 1.5, 1e-6


def has_timing_only() -> bool:
    """Whether this tree's RunConfig has the timing-only option (issue #38, being built)."""
    return "timing_only" in {f.name for f in fields(RunConfig)}


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


@dataclass(frozen=True)
class LayerFigures:
    """What full_size_layer measured: wall seconds of the simulated layer and of plain torch, the
    layer's modeled cycles, the check, and the layer in timing-only mode (None: not in this tree)."""

    simulated: float
    torch_seconds: float
    cycles: int
    ok: bool
    timing_only: float | None


def full_size_layer() -> LayerFigures:
    config = get_config("qwen3-32b").with_layers(1)
    dtype = torch.bfloat16
    start = time.perf_counter()
    weights = Qwen3Weights.random(config, seed=0, dtype=dtype, vocab=False)
    generator = torch.Generator().manual_seed(1)
    k_cache, v_cache = random_caches(config, generator)
    # Rows at different lengths, the longest filling the cache: the new token's position.
    positions = cache_positions()
    x = torch.randn(FULL_BATCH, config.hidden_size, generator=generator)
    cos, sin = rope_tables(config, FULL_CACHE)
    setup = time.perf_counter() - start
    eps, scale = config.rms_norm_eps, config.head_dim**-0.5
    ours_x, ours_k, ours_v = x.clone(), k_cache.clone(), v_cache.clone()
    call = (ours_x, positions, *weights.layer_weights(), cos, sin, ours_k, ours_v, 0, FULL_CACHE, eps, scale)
    start = time.perf_counter()
    decoder_layer.compile(*call)
    lowered = time.perf_counter() - start
    gc.collect()
    start = time.perf_counter()
    decoder_layer(*call)
    simulated = time.perf_counter() - start
    report = decoder_layer.last_report
    assert report is not None
    start = time.perf_counter()
    slices = len(report.timeline)  # made when first read
    timeline = time.perf_counter() - start
    gc.collect()
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
    cycles = report.total_cycles
    del report, profile
    timing_only = None
    if has_timing_only():
        timing_only, timed_cycles = timing_only_run(decoder_layer, call)
        same = (
            "the same modeled cycles"
            if timed_cycles == cycles
            else f"{timed_cycles} modeled cycles: DIFFERENT"
        )
        print(f"  timing-only (RunConfig(timing_only=True)): {timing_only:.1f} s, {same}")
        ok = ok and timed_cycles == cycles
    else:
        print("  timing-only: not available in this tree")
    if not ok:
        raise SystemExit(1)
    return LayerFigures(simulated, torch_seconds, cycles, ok, timing_only)


def timing_only_run(kernel: Any, call: tuple[Any, ...]) -> tuple[float, int]:
    """(wall seconds, modeled cycles) of ``kernel(*call)`` in timing-only mode, compiled first (the
    compile apart: a configuration of its own may lower again)."""
    config = RunConfig(timing_only=True)
    kernel.compile(*call, config=config)
    gc.collect()
    start = time.perf_counter()
    kernel(*call, config=config)
    seconds = time.perf_counter() - start
    return seconds, kernel.last_report.total_cycles


def random_caches(config: Qwen3Config, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """One layer's K and V caches (``[batch * cache, kv_width]``, BF16), random."""
    kv_width = config.num_kv_heads * config.head_dim
    k_cache = (torch.randn(FULL_BATCH * FULL_CACHE, kv_width, generator=generator) * 0.5).to(torch.bfloat16)
    v_cache = torch.randn(FULL_BATCH * FULL_CACHE, kv_width, generator=generator).to(torch.bfloat16)
    return k_cache, v_cache


def cache_positions() -> torch.Tensor:
    """Each row's new position: rows at different lengths, 61 apart, the longest filling the cache."""
    return torch.tensor([FULL_CACHE - 1 - 61 * b for b in range(FULL_BATCH)], dtype=torch.int32)


def record_layer_extrapolation(layer: LayerFigures) -> None:
    """The step's acceptance figures, extrapolated from one layer (``--full-step`` measures them)."""
    layers = get_config("qwen3-32b").num_layers
    how = f"one layer x {layers} (the layer's ratio; embedding, final norm and LM head left out)"
    print(
        f"Qwen3-32B decode step, extrapolated from the layer above ({layers} layers; --full-step measures it)"
    )
    print(
        f"  with numbers: sim {layer.simulated * layers:7.1f} s   "
        f"torch {layer.torch_seconds * layers:6.1f} s   "
        f"sim/torch = {layer.simulated / layer.torch_seconds:.2f}x   "
        f"{layer.cycles * layers:,} modeled cycles (the layers)"
    )
    record(Figure(STEP_NAME, layer.simulated / layer.torch_seconds, STEP_GOAL, "x", how))
    if layer.timing_only is None:
        print("  timing-only: not available in this tree")
        record(
            Figure(TIMING_ONLY_NAME, None, TIMING_ONLY_GOAL, "s", "timing-only: not available in this tree")
        )
    else:
        print(f"  timing-only: {layer.timing_only * layers:.1f} s")
        how = f"one layer x {layers} (embedding, final norm and LM head left out)"
        record(Figure(TIMING_ONLY_NAME, layer.timing_only * layers, TIMING_ONLY_GOAL, "s", how))
    record(
        Figure(CHECK_NAME, None, None, "", "one layer, within 2e-2 of reference.decode_layer", ok=layer.ok)
    )


def shared_layer_weights(config: Qwen3Config, seed: int = 0) -> Qwen3Weights:
    """Random BF16 weights of ``config`` at its sizes in which every layer holds the same values:
    one layer's projection weights mapped ``config.num_layers`` times (:mod:`aliased`: the memory
    of one layer), the small norm weights repeated; the embedding and the LM head whole."""
    one = Qwen3Weights.random(config.with_layers(1), seed=seed, dtype=torch.bfloat16)
    shapes = layer_shapes(config)
    layers = config.num_layers
    stacked = {
        name: aliased.repeated(getattr(one, name), layers)
        if len(shapes[name]) == 2
        else getattr(one, name).repeat(layers, 1)
        for name in shapes
    }
    return Qwen3Weights(
        config=config, embed=one.embed, final_norm=one.final_norm, lm_head=one.lm_head, **stacked
    )


def full_decode_step(layers: int, by_layer: bool = False) -> None:
    """The whole decode step (``decode_step``: embedding, ``layers`` layers, final norm, LM head)
    at Qwen3-32B's sizes, batch 16, a 4096-position cache, on a2a3sim with numbers, against plain
    torch doing the same step; then in timing-only mode when this tree has it. ``by_layer`` runs
    the same kernels as one program per layer (see :func:`step_by_layer`)."""
    config = get_config("qwen3-32b").with_layers(layers)
    if not aliased.available():
        raise SystemExit("--full-step shares one layer's memory among the layers, which needs Linux (memfd)")
    start = time.perf_counter()
    weights = shared_layer_weights(config)
    generator = torch.Generator().manual_seed(1)
    k_layer, v_layer = random_caches(config, generator)
    ours_k, ours_v = aliased.repeated(k_layer, layers), aliased.repeated(v_layer, layers)
    want_k, want_v = aliased.repeated(k_layer, layers), aliased.repeated(v_layer, layers)
    exact_k, exact_v = (aliased.repeated(cache.double(), layers) for cache in (k_layer, v_layer))
    del k_layer, v_layer
    positions = cache_positions()
    tokens = torch.randint(0, config.vocab_size, (FULL_BATCH,), generator=generator, dtype=torch.int32)
    cos, sin = rope_tables(config, FULL_CACHE)
    hidden = torch.zeros(FULL_BATCH, config.hidden_size, dtype=torch.bfloat16)
    logits = torch.zeros(FULL_BATCH, config.vocab_size)
    setup = time.perf_counter() - start
    print(
        f"Qwen3-32B decode step ({'one program per layer' if by_layer else 'decode_step'}: embedding, "
        f"{layers} layers, final norm, LM head over "
        f"{config.vocab_size:,} tokens), batch {FULL_BATCH}, {FULL_CACHE}-position cache, BF16"
    )
    print(
        f"  the {layers} layers share one layer's random weights and one layer's KV cache, the same memory "
        f"mapped {layers} times\n  ({layers} distinct layers would need ~{weight_gb(config):.0f} GB of "
        f"weights and {cache_gb(config):.0f} GB of cache): each layer reads its own rows, as a distinct "
        "layer would"
    )
    call = (
        tokens,
        positions,
        weights.embed,
        *weights.layer_weights(),
        weights.final_norm,
        weights.lm_head,
        cos,
        sin,
        ours_k,
        ours_v,
        hidden,
        logits,
        config.rms_norm_eps,
        config.head_dim**-0.5,
    )
    free = memwatch.available_gb()
    if free is not None:
        print(
            f"  memory: {free:.1f} GB available; the run stops itself under {MEMORY_FLOOR_GB:.0f} GB "
            "(a program's run keeps its timeline until it ends)"
        )
    with memwatch.MemoryWatch(MEMORY_FLOOR_GB, what="the Qwen3-32B step") as watch:
        if by_layer:
            lowered, simulated, cycles, modeled_us = step_by_layer(config, call)
        else:
            start = time.perf_counter()
            decode_step.compile(*call)
            lowered = time.perf_counter() - start
            gc.collect()
            start = time.perf_counter()
            decode_step(*call)
            simulated = time.perf_counter() - start
            report = decode_step.last_report
            assert report is not None
            cycles, modeled_us = report.total_cycles, report.total_us
            del report
        gc.collect()
        start = time.perf_counter()
        want_hidden, want_logits = reference.decode_step(weights, tokens, positions, cos, sin, want_k, want_v)
        torch_seconds = time.perf_counter() - start
        start = time.perf_counter()
        exact = reference.decode_step(weights, tokens, positions, cos, sin, exact_k, exact_v, exact=True)
        exact_seconds = time.perf_counter() - start
    rows = FULL_BATCH * FULL_CACHE  # the one layer's worth of cache the layers share
    drift = StepDrift.of(
        ours=(hidden, logits, ours_k[:rows]),
        torch_bf16=(want_hidden, want_logits, want_k[:rows]),
        exact=(*exact, exact_k[:rows]),
    )
    ok = drift.ok
    print(
        f"  wall: random weights and caches {setup:6.1f} s   lower {lowered:6.1f} s   "
        f"simulate {simulated:7.1f} s"
    )
    print(
        f"  {cycles:,} modeled cycles = {modeled_us / 1e3:.1f} modeled ms per step = "
        f"{FULL_BATCH / (modeled_us / 1e6):,.0f} modeled tokens/s at batch {FULL_BATCH}"
    )
    print(
        f"  numbers against the exact step (reference.decode_step(exact=True), FP64 over the same BF16 "
        f"weights, {exact_seconds:.1f} s),\n  as far as plain torch's BF16 step ({torch_seconds:.1f} s) "
        f"is, at most {DRIFT_FACTOR:g}x:"
    )
    for line in drift.lines():
        print("    " + line)
    print(f"  {'OK' if ok else 'MISMATCH'}")
    print(f"  the process's anonymous memory peaked at {watch.peak_gb:.1f} GB (sampled each second)")
    print(f"  sim/torch = {simulated / torch_seconds:.2f}x (goal <= {STEP_GOAL:g}x)")
    model_layers = get_config("qwen3-32b").num_layers
    what = f"the whole step, {layers} layers" + (
        "" if layers == model_layers else f" (NOT the model's {model_layers})"
    )
    if by_layer:
        what += f", one program per layer ({layers + 2} programs, not decode_step's one)"
    record(Figure(STEP_NAME, simulated / torch_seconds, STEP_GOAL, "x", f"measured: {what}"))
    if by_layer:
        print("  timing-only: measured on decode_step only (run --full-step without --by-layer)")
        record(Figure(TIMING_ONLY_NAME, None, TIMING_ONLY_GOAL, "s", "not run: --by-layer"))
    elif has_timing_only():
        with memwatch.MemoryWatch(MEMORY_FLOOR_GB, what="the Qwen3-32B step, timing-only"):
            seconds, timed_cycles = timing_only_run(decode_step, call)
        same = (
            "the same modeled cycles"
            if timed_cycles == cycles
            else f"{timed_cycles:,} modeled cycles: DIFFERENT"
        )
        print(f"  timing-only (RunConfig(timing_only=True)): {seconds:.1f} s, {same}")
        ok = ok and timed_cycles == cycles
        record(Figure(TIMING_ONLY_NAME, seconds, TIMING_ONLY_GOAL, "s", f"measured: {what}"))
    else:
        print("  timing-only: not available in this tree")
        record(
            Figure(TIMING_ONLY_NAME, None, TIMING_ONLY_GOAL, "s", "timing-only: not available in this tree")
        )
    record(
        Figure(
            CHECK_NAME,
            None,
            None,
            "",
            f"{what}: from the exact step at most {DRIFT_FACTOR:g}x torch BF16's distance",
            ok=ok,
        )
    )
    if not ok:
        raise SystemExit(1)


@dataclass(frozen=True)
class StepDrift:
    """How far the simulated step (``ours``) and plain torch's BF16 step (``torch_bf16``) are from
    the exact step: each quantity's largest difference relative to its largest exact value.

    Both BF16 steps round where the kernels round (the norms' outputs, the attention's operands,
    the SwiGLU activation, the cache); a residual stream a hair apart rounds some of those values
    the other way, and the difference grows layer by layer in both. Against each other, two such
    steps 64 layers deep differ by a few percent; against the exact step, the simulator must be
    about as close as torch (at most ``DRIFT_FACTOR`` times torch's distance).
    """

    names: tuple[str, ...]
    ours: tuple[float, ...]
    torch_bf16: tuple[float, ...]
    between: tuple[float, ...]
    tokens: tuple[int, int, int]  # greedy tokens equal to the exact step's: ours, torch's; rows

    @staticmethod
    def of(
        ours: tuple[torch.Tensor, ...], torch_bf16: tuple[torch.Tensor, ...], exact: tuple[torch.Tensor, ...]
    ) -> StepDrift:
        """From (hidden, logits, cache rows) of each step."""
        want = exact[1].argmax(-1)
        return StepDrift(
            names=("hidden", "logits", "cache"),
            ours=tuple(relative(a, b) for a, b in zip(ours, exact, strict=True)),
            torch_bf16=tuple(relative(a, b) for a, b in zip(torch_bf16, exact, strict=True)),
            between=tuple(relative(a, b) for a, b in zip(ours, torch_bf16, strict=True)),
            tokens=(
                int((ours[1].argmax(-1) == want).sum()),
                int((torch_bf16[1].argmax(-1) == want).sum()),
                len(want),
            ),
        )

    @property
    def ok(self) -> bool:
        return all(
            mine <= DRIFT_FACTOR * theirs + DRIFT_FLOOR
            for mine, theirs in zip(self.ours, self.torch_bf16, strict=True)
        )

    def lines(self) -> list[str]:
        rows = [f"{'':8} {'sim-exact':>10} {'torch-exact':>12} {'sim/torch':>10} {'sim-torch':>10}"]
        for name, mine, theirs, between in zip(
            self.names, self.ours, self.torch_bf16, self.between, strict=True
        ):
            ratio = mine / theirs if theirs else math.inf
            rows.append(f"{name:8} {mine:10.1e} {theirs:12.1e} {ratio:9.2f}x {between:10.1e}")
        mine, theirs, total = self.tokens
        rows.append(f"greedy tokens as the exact step's: sim {mine} of {total}, torch {theirs} of {total}")
        return rows


def relative(value: torch.Tensor, exact: torch.Tensor) -> float:
    """The largest difference of ``value`` from ``exact``, relative to ``exact``'s largest magnitude."""
    exact = exact.double()
    return float((value.double() - exact).abs().max() / exact.abs().max())


@pl.jit
def embed_program(tokens: pl.Tensor, embed: pl.Tensor, x: pl.Out[pl.Tensor]):
    """decode_step's first launch as a program of its own: the residual stream of the tokens."""
    x = embed_tokens(tokens, embed, x)
    return x


@pl.jit
def head_program(
    x: pl.Tensor,
    final_norm: pl.Tensor,
    lm_head_w: pl.Tensor,
    hidden: pl.Out[pl.Tensor],
    logits: pl.Out[pl.Tensor],
    eps: pl.FP32,
):
    """decode_step's last two launches as a program of their own: final norm and LM head."""
    hidden = rmsnorm(x, final_norm, hidden, eps, 0)
    logits = lm_head(hidden, lm_head_w, logits, 0)
    return logits


def step_by_layer(config: Qwen3Config, call: tuple[Any, ...]) -> tuple[float, float, int, float]:
    """decode_step's work as ``layers + 2`` programs: the embedding, each ``decoder_layer``, the
    final norm and LM head, the same kernels over the same tensors (a program's run holds every
    launch until it ends; one program per layer holds one layer's). Returns (lowering seconds,
    simulating seconds, the programs' modeled cycles and microseconds summed: no overlap between
    one layer's last launch and the next one's first, which one program would model)."""
    tokens, positions, embed, *layer_weights = call[:14]
    final_norm, lm_head_w, cos, sin, k_cache, v_cache, hidden, logits, eps, scale = call[14:]
    x = torch.zeros(FULL_BATCH, config.hidden_size)
    programs: list[tuple[Any, tuple[Any, ...]]] = [(embed_program, (tokens, embed, x))]
    layers = config.num_layers
    for layer in range(layers):
        # The layer's rows of each stacked tensor, as layer 0 of a one-layer model: a layer index
        # is a specialised scalar, and 64 of them would lower the layer 64 times.
        own = [rows_of(stacked, layer, layers) for stacked in (*layer_weights, k_cache, v_cache)]
        args = (x, positions, *own[:-2], cos, sin, *own[-2:], 0, FULL_CACHE, eps, scale)
        programs.append((decoder_layer, args))
    programs.append((head_program, (x, final_norm, lm_head_w, hidden, logits, eps)))
    start = time.perf_counter()
    for program, args in (programs[0], programs[1], programs[-1]):  # the layers compile once
        program.compile(*args)
    lowered = time.perf_counter() - start
    gc.collect()
    cycles, modeled_us, simulated = 0, 0.0, 0.0
    for done, (program, args) in enumerate(programs, 1):
        start = time.perf_counter()
        program(*args)
        simulated += time.perf_counter() - start
        if program is decoder_layer and (done - 1) % 16 == 0:
            print(f"    ... {done - 1} of {layers} layers simulated, {simulated:.0f} s", flush=True)
        cycles += program.last_report.total_cycles
        modeled_us += program.last_report.total_us
    return lowered, simulated, cycles, modeled_us


def rows_of(stacked: torch.Tensor, layer: int, layers: int) -> torch.Tensor:
    """Layer ``layer``'s rows of a tensor stacking ``layers`` layers along its rows (a view)."""
    rows = stacked.shape[0] // layers
    return stacked[layer * rows : (layer + 1) * rows]


def weight_gb(config: Qwen3Config) -> float:
    """The BF16 gigabytes of ``config``'s layer weights."""
    per_layer = sum(math.prod(shape) for shape in layer_shapes(config).values())
    return per_layer * config.num_layers * 2 / 1e9


def cache_gb(config: Qwen3Config) -> float:
    """The BF16 gigabytes of the K and V caches at batch 16 and 4096 positions."""
    return 2 * config.num_layers * FULL_BATCH * FULL_CACHE * config.num_kv_heads * config.head_dim * 2 / 1e9


def tensor_parallel_layer(chip_counts: tuple[int, ...] = TP_CHIPS) -> None:
    """The Qwen3-32B layer of full_size_layer split over 1, 2, 4 and 8 chips (one rank each)."""
    config = get_config("qwen3-32b").with_layers(1)
    dtype = torch.bfloat16
    weights = Qwen3Weights.random(config, seed=0, dtype=dtype, vocab=False)
    generator = torch.Generator().manual_seed(1)
    k_cache, v_cache = random_caches(config, generator)
    positions = cache_positions()
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
    parser.add_argument(
        "--full-step",
        action="store_true",
        help="also the whole Qwen3-32B decode step, simulated and in plain torch (about 15 minutes): the "
        "acceptance figures measured instead of extrapolated from one layer",
    )
    parser.add_argument("--only-step", action="store_true", help="only the whole Qwen3-32B decode step")
    parser.add_argument(
        "--by-layer",
        action="store_true",
        help="the whole step as one program per layer (bounded memory; its ratio labelled so)",
    )
    parser.add_argument(
        "--step-layers",
        type=int,
        default=get_config("qwen3-32b").num_layers,
        help="layers of the whole step (default: the model's 64; fewer for a quick trial, labelled so)",
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    machine = f"{platform.machine()}, {os.cpu_count()} CPU(s), python {platform.python_version()}"
    print(f"Qwen3 benchmarks — {machine}; torch {torch.__version__} on {torch.get_num_threads()} thread(s)\n")
    if args.only_tp:
        tensor_parallel_layer()
        return
    if args.only_step:
        full_decode_step(args.step_layers, args.by_layer)
        print_summary()
        return
    tiny_decode_step()
    if args.skip_full:
        for name, goal, unit in ((STEP_NAME, STEP_GOAL, "x"), (TIMING_ONLY_NAME, TIMING_ONLY_GOAL, "s")):
            record(Figure(name, None, goal, unit, "not run (--skip-full)"))
    else:
        print()
        layer = full_size_layer()
        print()
        tensor_parallel_layer()
        print()
        if args.full_step:
            full_decode_step(args.step_layers, args.by_layer)
        else:
            record_layer_extrapolation(layer)
    print_summary()


if __name__ == "__main__":
    main()
