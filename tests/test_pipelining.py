"""pl.pipeline(stage=k): a loop's tiles get k storage slots, so that a core's pipes overlap
consecutive iterations (the next load on MTE2 while the vector unit computes this one). Numbers do
not change, the modeled time does; stages that do not fit are a performance hint, not an error."""

import torch

import pypto.language as pl
from pypto.ir import print_ir, structural_diff
from pypto.runtime import RunConfig

N = 16  # tiles of [64, 128] FP32 (32 KB) streamed through one vector core


@pl.jit
def single_buffered(x: pl.Tensor[[N * 64, 128], pl.FP32], out: pl.Out[pl.Tensor[[N * 64, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="stream"):
        for i in pl.range(N):
            t = pl.load(x, [i * 64, 0], [64, 128])
            pl.store(pl.exp(t), [i * 64, 0], out)
    return out


@pl.jit
def double_buffered(x: pl.Tensor[[N * 64, 128], pl.FP32], out: pl.Out[pl.Tensor[[N * 64, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="stream"):
        for i in pl.pipeline(N, stage=2):
            t = pl.load(x, [i * 64, 0], [64, 128])
            pl.store(pl.exp(t), [i * 64, 0], out)
    return out


@pl.jit
def four_stages_of_big_tiles(
    x: pl.Tensor[[8 * 128, 256], pl.FP32], out: pl.Out[pl.Tensor[[8 * 128, 256], pl.FP32]]
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="big"):
        for i in pl.pipeline(8, stage=4):  # 2 x 128 KB a stage: not even two stages fit in Vec
            t = pl.load(x, [i * 128, 0], [128, 256])
            pl.store(pl.exp(t), [i * 128, 0], out)
    return out


def streamed(kernel, x=None):
    x = torch.randn(N * 64, 128) if x is None else x
    out = torch.zeros(N * 64, 128)
    kernel(x, out)
    return x, out, kernel.last_report


def overlapping(report, core, first, second):
    """Pairs of (first-pipe slice, second-pipe slice) of ``core`` that run at the same time."""
    slices = [s for s in report.timeline if s.core == core and s.cycles > 0 and not s.name.startswith("wait")]
    a = [s for s in slices if s.pipe == first]
    b = [s for s in slices if s.pipe == second]
    return [(p, q) for p in a for q in b if p.start < q.end and q.start < p.end]


def test_a_two_stage_pipeline_overlaps_loads_with_compute_and_runs_faster_with_the_same_numbers():
    x, plain, plain_report = streamed(single_buffered)
    _, piped, piped_report = streamed(double_buffered, x)
    assert torch.equal(plain, piped)
    torch.testing.assert_close(piped, torch.exp(x))
    # One buffer: the next load waits until the vector unit has read the last one (and MTE3 has
    # stored it). Two: the load of tile i+1 runs while tile i is computed.
    assert piped_report.total_cycles < 0.7 * plain_report.total_cycles
    assert overlapping(piped_report, "cg0.AIV0", "MTE2", "VECTOR")
    loads = [s for s in piped_report.timeline if s.core == "cg0.AIV0" and s.name == "tile.load"]
    # The loads run one iteration ahead: the first before the loop, the last iteration's again.
    assert len(loads) == N + 1


def test_the_trace_has_a_thread_per_pipe_where_the_overlap_shows():
    from pypto.runtime.reports.profiling import chrome_trace

    _, _, report = streamed(double_buffered)
    trace = chrome_trace(report)["traceEvents"]
    threads = {
        (e["pid"], e["tid"]): e["args"]["name"]
        for e in trace
        if e.get("ph") == "M" and e["name"] == "thread_name"
    }
    by_thread: dict[str, list[tuple[float, float, str]]] = {}
    for e in trace:
        if e.get("ph") == "X" and (e["pid"], e["tid"]) in threads:
            by_thread.setdefault(threads[e["pid"], e["tid"]], []).append(
                (e["ts"], e["ts"] + e["dur"], e["name"])
            )
    mte2 = next(v for k, v in by_thread.items() if k.endswith("MTE2") and "AIV" in k)
    vector = next(v for k, v in by_thread.items() if k.endswith("VECTOR") and "AIV" in k)
    loads = [(a, b) for a, b, name in mte2 if name == "tile.load"]
    exps = [(a, b) for a, b, name in vector if name == "tile.exp"]
    assert any(a < d and c < b for a, b in loads for c, d in exps)


def test_the_memory_plan_gives_a_pipelined_loop_s_tiles_a_slot_per_stage_and_prints_back():
    lowered = double_buffered.lower()
    text = print_ir(lowered)
    assert "in pl.pipeline(0, 16, 1, stage=2" in text
    assert "x 2 slots by i" in text  # the listing's note: which slot a tile takes
    assert structural_diff(lowered, pl.parse(text)) is None
    plain = print_ir(single_buffered.lower())
    assert "slots" not in plain


def test_stages_that_do_not_fit_are_a_hint_naming_the_loop_and_the_numbers_still_hold(tmp_path):
    x = torch.randn(8 * 128, 256)
    out = torch.zeros(8 * 128, 256)
    four_stages_of_big_tiles(x, out, config=RunConfig(save_kernels_dir=str(tmp_path)))
    torch.testing.assert_close(out, torch.exp(x))
    hints = four_stages_of_big_tiles.last_report.hints
    assert len(hints) == 1, hints
    hint = hints[0]
    assert hint.startswith("pipelining asked for 4 stages, 1 fit in Vec (the loop at ")
    assert "test_pipelining.py:" in hint and "bytes per stage" in hint
    assert "performance hint: pipelining asked for 4 stages" in four_stages_of_big_tiles.last_report.summary()
    assert "pipelining asked for 4 stages" in (tmp_path / "report" / "perf_hints.log").read_text()


def test_the_row_loops_the_compiler_makes_are_pipelined_without_hints():
    @pl.jit
    def rows(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="rows"):
            out[:] = pl.exp(pl.add(x, x))
        return out

    x = torch.randn(4096, 512)
    out = torch.zeros(4096, 512)
    rows(x, out)
    torch.testing.assert_close(out, torch.exp(x + x))
    assert "pl.pipeline(0, 4096, " in print_ir(rows.lower(x, out))
    assert rows.last_report.hints == []


@pl.jit
def cube_then_bias(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)], name_hint="mm"):
        acc = pl.matmul(a, b, out_dtype=pl.FP32)
        out[:] = pl.add(acc, bias)
    return out


def test_a_vector_kernel_loads_a_read_only_tensor_before_it_pops_the_cube_s_tile():
    a, b = torch.randn(512, 512).half(), torch.randn(512, 64).half()
    bias, out = torch.randn(512, 64), torch.zeros(512, 64)
    cube_then_bias(a, b, bias, out)
    torch.testing.assert_close(out, a.float() @ b.float() + bias, rtol=1e-2, atol=1e-2)
    text = print_ir(cube_then_bias.lower(a, b, bias, out))
    aiv = text[text.index("def mm_aiv(") :]
    assert aiv.index("pl.tile.load(bias") < aiv.index("pl.tile.tpop_from_aic(")
    # ... so that the vector core finishes soon after the cube core's last push
    report = cube_then_bias.last_report
    aic_end = max(s.end for s in report.timeline if s.core == "cg0.AIC")
    aiv_end = max(s.end for s in report.timeline if s.core == "cg0.AIV0")
    assert aiv_end - aic_end < 1000


@pl.jit
def slow_lanes(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)], name_hint="slow"):
        acc = pl.matmul(a, b, out_dtype=pl.FP32)
        out[:] = pl.exp(pl.neg(pl.exp(pl.neg(pl.exp(pl.neg(pl.abs(acc)))))))
    return out


def test_a_push_waiting_for_a_free_slot_holds_its_pipe_while_the_cube_core_loads_on():
    a, b = torch.randn(1024, 256).half(), torch.randn(256, 128).half()
    out = torch.zeros(1024, 128)
    slow_lanes(a, b, out)
    acc = a.float() @ b.float()
    torch.testing.assert_close(out, torch.exp(-torch.exp(-torch.exp(-acc.abs()))), rtol=1e-3, atol=1e-3)
    report = slow_lanes.last_report
    aic = [s for s in report.timeline if s.core == "cg0.AIC"]
    waits = [s for s in aic if s.name.startswith("wait for a free slot") and s.cycles > 0]
    assert waits and all(s.pipe == "FIXPIPE" for s in waits)  # the sending pipe waits
    loads = [s for s in aic if s.name == "tile.load"]
    # The scalar unit is not held: the loads of later rows run during the push's wait.
    assert any(w.start < load.start < w.end for w in waits for load in loads)


def streaming_32_rows(stages: int):
    """load -> exp -> store over N tiles of [32, 128] FP32 in a ``stage=stages`` loop."""
    hint = "stream" + str(stages)

    @pl.jit
    def stream(x: pl.Tensor[[N * 32, 128], pl.FP32], out: pl.Out[pl.Tensor[[N * 32, 128], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint=hint):
            for i in pl.pipeline(N, stage=stages):
                t = pl.load(x, [i * 32, 0], [32, 128])
                pl.store(pl.exp(t), [i * 32, 0], out)
        return out

    return stream


three_stages, two_stages_of_32_rows = streaming_32_rows(3), streaming_32_rows(2)


def test_a_pipelined_loop_loads_stage_minus_one_tiles_ahead_into_one_rotating_buffer():
    lowered = three_stages.lower()
    kernel = next(fn for fn in lowered.functions.values() if fn.name == "stream3")
    (group,) = kernel.attrs["prefetched"]
    assert len(group["first"]) == len(group["ahead"]) == 2  # stage 3: two loads in flight
    plan = kernel.attrs["memory_plan"]
    tiles = [plan.of(name) for name in [*group["first"], *group["ahead"], group["next"]]]
    # One buffer of three slots: iteration n reads slot n % 3 while slots n+1 and n+2 are loading.
    assert len({(a.space, a.offset) for a in tiles if a.slots == 3}) == 1
    base, size = tiles[2].offset, tiles[2].size
    assert [a.offset - base for a in tiles[:2]] == [0, size]  # before the loop: iterations 0 and 1
    # At i = 5 the loop reads slot 5 % 3 (ahead0), carries slot 6 % 3 and loads into slot 7 % 3.
    assert [a.slot_offset(5) - base for a in tiles[2:]] == [2 * size, 0, size]
    assert size == 32 * 128 * 4
    text = print_ir(lowered)
    assert "pl.minimum(i + 2, 15)" in text  # the last two iterations load the last tile again
    assert structural_diff(lowered, pl.parse(text)) is None
    x = torch.randn(N * 32, 128)
    out = torch.zeros(N * 32, 128)
    three_stages(x, out)
    torch.testing.assert_close(out, torch.exp(x))
    two_stages_of_32_rows(x, out)
    assert three_stages.last_report.total_cycles < two_stages_of_32_rows.last_report.total_cycles
