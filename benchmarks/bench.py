"""PyPTO benchmarks, measured in one run and printed as ratios (absolute figures alongside).

    nox -s bench            # or: python benchmarks/bench.py

1. compile time of the seed kernel: cold (the first compile in this process, after the one-off
   plugin discovery, which is timed apart) and warm (again, after clearing the compile cache);
   the disk cache is off, so both compile;
2. start-up: a whole process running examples/beginner/01_hello_world.py against one that only
   imports torch;
3. the overhead of a cached call (on a backend that runs nothing) against a run on a2a3sim;
4. the a2a3sim simulator's wall time against plain torch eager doing the same math: the seed kernel
   at four sizes and fp16 matmuls of about 1024^3 and 2048^3 over the 24 core groups; under the
   seed kernel, the floor of an engine that computes one op at a time (its tile ops as bare torch
   calls); fp16 matmuls of exactly 1024^3 and 2048^3 written two ways, a 24-block ``pl.spmd`` whose
   blocks take every 24th 128x128 output tile and a ``pl.parallel`` grid of 128x128 output tiles
   (a ``pl.at`` scope each, K looped in 128-steps), issue #38's acceptance figures; every
   simulated result is checked against torch;
5. modeled cycles against the roofline bound for the mixed and the staged seed kernel at M=4096;
6. the same for fp16 matmuls spread over the 24 core groups (a block of M/24 rows each: per
   block, its kernel's roofline; per launch, the whole run against one block's MACs, task
   dispatch included), and a streaming exp kernel under pl.pipeline(stage=2) against one buffer.

The acceptance figures of issue #38 (start-up, the seed kernel at M=4096 and 16384, the four
exact-size matmuls) are printed against their goals as they are measured and in a table at the
end (benchmarks/acceptance.py; ``nox -s bench`` prints one table for this script and qwen3.py).

Wall-clock figures depend on the machine and its load; modeled figures do not. Each timed series
starts after a full collection of the cyclic collector, so that it does not pay for the garbage of
the figures before it (as a process that measured only that figure would not). Torch runs on one
thread here, for the simulator and the eager baseline alike, so that the two compare fairly.
"""

from __future__ import annotations

import gc
import importlib.util
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from acceptance import Figure, print_summary, record

import pypto.language as pl
from pypto.ir import Program, RunReport
from pypto.runtime import RunConfig, hookimpl
from pypto.runtime.platforms.registry import get_target, register_plugin
from pypto_sim_a2a3 import A2A3_TARGET

ROOT = Path(__file__).parents[1]
EXAMPLE = ROOT / "examples" / "advanced" / "03_mixed_kernel.py"
HELLO = ROOT / "examples" / "beginner" / "01_hello_world.py"
STARTUP_RUNS = 7  # processes of each kind, alternating; the fastest of each counts
K, N = 256, 128
SIZES = (128, 1024, 4096, 16384)  # rows M of the seed kernel
FLOOR_SIZES = (1024, 4096, 16384)  # ... whose row tiles stream through a loop (the sizes the goal names)
CUBES = (1024, 2048)  # fp16 N x N x N matmuls over the 24 core groups, against eager
TILE = 128  # the output tiles of the exact-size matmuls (and their K steps)
SEED_GOAL_SIZES = (4096, 16384)  # the seed kernel's sizes issue #38 names
SIM_GOAL = 3.0  # simulator wall time against torch eager, at most
STARTUP_GOAL = 1.3  # a hello-world process against `python -c "import torch"`, at most
MODEL_M = 4096
REPEATS = 20
CALL_REPEATS = 200  # a cached call's overhead is small: measure it many times


def load_example(path: Path = EXAMPLE) -> Any:
    """The module of an example script (its ``main()`` not run)."""
    spec = importlib.util.spec_from_file_location(f"example_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def seed_args(m: int) -> tuple[torch.Tensor, ...]:
    """``a``, ``b``, ``bias``, ``out`` of the seed kernel with ``m`` rows."""
    torch.manual_seed(0)
    return (
        torch.randn(m, K, dtype=torch.float16),
        torch.randn(K, N, dtype=torch.float16),
        torch.randn(m, N),
        torch.zeros(m, N),
    )


def median_seconds(fn: Callable[[], object], repeats: int = REPEATS) -> float:
    """The median wall time of ``repeats`` calls of ``fn``, after a full collection: the garbage
    an earlier figure left is not collected inside this one (each call's own collections are)."""
    gc.collect()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def compile_times(kernel: Any, args: tuple[torch.Tensor, ...]) -> tuple[float, float, float]:
    """(plugin discovery, cold, warm) seconds: the first lookup of the platform, then the first
    and a later compile of ``kernel`` for ``args``."""
    start = time.perf_counter()
    get_target("a2a3sim")
    discovery = time.perf_counter() - start
    start = time.perf_counter()
    kernel.compile(*args)
    cold = time.perf_counter() - start

    def again() -> None:
        kernel.cache_clear()
        kernel.compile(*args)

    return discovery, cold, median_seconds(again)


def startup_seconds() -> tuple[float, float]:
    """(``python -c "import torch"``, ``python examples/beginner/01_hello_world.py``): the fastest
    of STARTUP_RUNS whole processes each, run alternately (the disk cache off: each compiles)."""

    def once(command: list[str]) -> float:
        start = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
        return time.perf_counter() - start

    torch_only, hello = [], []
    for _ in range(STARTUP_RUNS):
        torch_only.append(once([sys.executable, "-c", "import torch"]))
        hello.append(once([sys.executable, str(HELLO)]))
    return min(torch_only), min(hello)


class NullBackend:
    """A backend that runs nothing: a cached call on it costs only the front end's dispatch
    (specialization, cache lookup, argument checks)."""

    name = "a2a3null"
    target = A2A3_TARGET

    def run(self, program: Program, args: Sequence[Any], options: Mapping[str, Any]) -> RunReport:
        return RunReport(self.name, self.target.clock_mhz)


class NullPlugin:
    """Registers :class:`NullBackend` in-process."""

    @hookimpl
    def pypto_register_backends(self, register: Callable[[Any], None]) -> None:
        register(NullBackend())


def call_overhead(kernel: Any, args: tuple[torch.Tensor, ...]) -> tuple[float, float]:
    """(overhead, run) seconds: a cached call on a backend that does nothing, and a run on a2a3sim."""
    register_plugin(NullPlugin())
    null = RunConfig(platform=NullBackend.name)
    kernel(*args, config=null)
    compiled = kernel.compile(*args)
    overhead = median_seconds(lambda: kernel(*args, config=null), CALL_REPEATS)
    return overhead, median_seconds(lambda: compiled.run(*args))


def _repeats(seconds: float) -> int:
    """Runs for a median: REPEATS, fewer for a run that takes long (at least 3)."""
    return max(3, min(REPEATS, int(2.0 / max(seconds, 1e-9))))


def simulator_against_eager(kernel: Any, m: int) -> tuple[float, float]:
    """(simulator, torch eager) seconds for ``out = a @ b + bias`` with ``m`` rows."""
    a, b, bias, out = seed_args(m)
    compiled = kernel.compile(a, b, bias, out)
    start = time.perf_counter()
    compiled.run(a, b, bias, out)  # the first run loads the program's launch plans
    repeats = _repeats(time.perf_counter() - start)
    sim = median_seconds(lambda: compiled.run(a, b, bias, out), repeats)
    torch.testing.assert_close(out, a.float() @ b.float() + bias, rtol=1e-3, atol=1e-3)
    eager = median_seconds(lambda: torch.add(a.float() @ b.float(), bias, out=out))
    return sim, eager


def bare_tile_ops(kernel: Any, m: int) -> float:
    """Seconds for the seed kernel's tile ops as bare torch calls, one call per op the lowered kernel
    runs (no costs, checks or timeline): the floor of any engine that computes one op at a time.
    It mirrors the lowering of the mixed kernel (UP_DOWN): the cube loads, moves and multiplies a
    [64, 256] row tile of ``a`` and pushes the [64, 128] product, each vector lane loads its [32,
    128] of ``bias``, adds and stores; a check of the lowered text stops it if that changes."""
    a, b, bias, out = seed_args(m)
    lowered = str(kernel.lower(a, b, bias, out))
    for part in (f"pl.pipeline(0, {m}, 64", "shape=[64, 256]", "shape=[32, 128]", "pl.tile.add("):
        if part not in lowered:
            raise SystemExit(f"bare_tile_ops mirrors a lowering with {part!r}, which changed: update it")
    mat, left = torch.empty(4, 64, K, dtype=torch.float16), torch.empty(2, 64, K, dtype=torch.float16)
    right, acc = torch.empty(K, N, dtype=torch.float16), torch.empty(4, 64, N)
    ring, vec, added = torch.empty(2, 2, 32, N), torch.empty(2, 3, 32, N), torch.empty(2, 4, 32, N)

    def ops() -> None:
        right.copy_(b)  # load b, move it to Right
        for i, r in enumerate(range(0, m, 64)):
            mat[i % 4].copy_(a[r : r + 64])  # tile.load
            left[i % 2].copy_(mat[i % 4])  # tile.move
            torch.matmul(left[i % 2].float(), right.float(), out=acc[i % 4])  # tile.matmul
            ring[i % 2].copy_(acc[i % 4].view(2, 32, N))  # tpush_to_aiv: a half for each lane
            for lane in range(2):
                rows = slice(r + 32 * lane, r + 32 * lane + 32)
                vec[lane, i % 3].copy_(bias[rows])  # tile.load
                torch.add(ring[i % 2, lane], vec[lane, i % 3], out=added[lane, i % 4])  # tpop, tile.add
                out[rows].copy_(added[lane, i % 4])  # tile.store

    ops()
    torch.testing.assert_close(out, a.float() @ b.float() + bias)  # the same math as the kernel's
    return median_seconds(ops)


def cube_rows(n: int) -> int:
    """The rows of the "n^3" matmul: n rounded up so that each of the 24 groups gets a block of a
    multiple of 16 rows (1024 -> 1152, 2048 -> 2304)."""
    return -(-n // (GROUPS * 16)) * GROUPS * 16


def cube_against_eager(n: int) -> tuple[float, float]:
    """(simulator, torch eager) seconds for an fp16 ``m`` x ``n`` x ``n`` matmul (``m`` =
    :func:`cube_rows`) over the 24 core groups, one block of rows each, and for ``a.float() @
    b.float()``."""
    return matmul_against_eager(chip_matmul(cube_rows(n)), cube_rows(n), n)


def matmul_against_eager(kernel: Any, m: int, n: int) -> tuple[float, float]:
    """(simulator, torch eager) seconds for ``kernel`` computing an fp16 ``m`` x ``n`` x ``n``
    matmul into FP32, and for ``a.float() @ b.float()``; the simulated result is checked first."""
    torch.manual_seed(0)
    a, b, out = torch.randn(m, n).half(), torch.randn(n, n).half(), torch.zeros(m, n)
    compiled = kernel.compile(a, b, out)
    start = time.perf_counter()
    compiled.run(a, b, out)
    repeats = _repeats(time.perf_counter() - start)
    sim = median_seconds(lambda: compiled.run(a, b, out), repeats)
    torch.testing.assert_close(out, a.float() @ b.float(), rtol=1e-2, atol=1e-2)
    eager = median_seconds(lambda: torch.matmul(a.float(), b.float(), out=out))
    return sim, eager


@pl.jit
def spmd_tiles_matmul(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    """``out = a @ b`` on the 24 core groups: block ``g`` computes the 128x128 output tiles g,
    g + 24, g + 48, ... (row-major), each one ``pl.matmul`` over the whole of K (the compiler
    tiles K). Any multiple of 128 works, whether or not the tiles divide among the 24 blocks."""
    m, _ = a.shape
    _, n = b.shape
    cols = n // TILE
    for g in pl.spmd(GROUPS, name_hint="spmd_tiles"):
        for t in pl.range(g, (m // TILE) * cols, GROUPS):
            r0 = (t // cols) * TILE
            c0 = (t % cols) * TILE
            out[r0 : r0 + TILE, c0 : c0 + TILE] = pl.matmul(
                a[r0 : r0 + TILE, :], b[:, c0 : c0 + TILE], out_dtype=pl.FP32
            )
    return out


@pl.jit
def grid_matmul(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    """``out = a @ b`` as a user writes it first: a ``pl.parallel`` grid over the 128x128 output
    tiles, a ``pl.at`` scope per tile (a task each), the K loop in 128-steps inside with
    ``pl.matmul_acc``."""
    m, k = a.shape
    _, n = b.shape
    for i in pl.parallel(m // TILE):
        for j in pl.parallel(n // TILE):
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="grid_tile"):
                r0 = i * TILE
                c0 = j * TILE
                acc = pl.matmul(a[r0 : r0 + TILE, 0:TILE], b[0:TILE, c0 : c0 + TILE], out_dtype=pl.FP32)
                for kk in pl.range(1, k // TILE):
                    k0 = kk * TILE
                    acc = pl.matmul_acc(
                        acc, a[r0 : r0 + TILE, k0 : k0 + TILE], b[k0 : k0 + TILE, c0 : c0 + TILE]
                    )
                out[r0 : r0 + TILE, c0 : c0 + TILE] = acc
    return out


def modeled_report(kernel: Any) -> RunReport:
    """The report of one run of ``kernel`` at M=MODEL_M."""
    kernel(*seed_args(MODEL_M))
    return kernel.last_report


def roofline_lines(report: RunReport) -> list[str]:
    """Modeled cycles against the roofline bound, per kernel of the program and in total."""
    lines = [
        f"    {line.kernel:<12} {line.cycles:>8} modeled cycles / {line.bound_cycles:>8.0f} "
        f"{line.bound} bound = {line.ratio:.2f}x"
        for line in report.roofline()
    ]
    bound = sum(line.bound_cycles for line in report.roofline())
    lines.append(
        f"    {'program':<12} {report.total_cycles:>8} modeled cycles / {bound:>8.0f} summed bounds"
        f" = {report.total_cycles / bound:.2f}x (overlap {report.overlap:.0%})"
    )
    return lines


CHIP_SHAPES = ((3072, 1024, 1024), (6144, 1024, 1024), (3072, 2048, 2048))  # M, K, N
GROUPS = 24
STREAM_TILES = 16


def chip_matmul(m: int) -> Any:
    """``out = a @ b``, one block of ``m / 24`` rows per core group."""
    rows = m // GROUPS

    @pl.jit
    def chip_mm(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        for i in pl.spmd(GROUPS, name_hint="chip_mm"):
            block = a[i * rows : i * rows + rows, :]
            out[i * rows : i * rows + rows, :] = pl.matmul(block, b, out_dtype=pl.FP32)
        return out

    return chip_mm


def streaming(stages: int) -> Any:
    """load -> exp -> store over STREAM_TILES tiles of [64, 128] FP32, ``stages`` buffers per tile."""

    @pl.jit
    def stream(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="stream"):
            for i in pl.pipeline(STREAM_TILES, stage=stages):
                t = pl.load(x, [i * 64, 0], [64, 128])
                pl.store(pl.exp(t), [i * 64, 0], out)
        return out

    return stream


def chip_matmul_report(m: int, k: int, n: int) -> RunReport:
    a, b = torch.randn(m, k).half(), torch.randn(k, n).half()
    out = torch.zeros(m, n)
    kernel = chip_matmul(m)
    kernel(a, b, out)
    torch.testing.assert_close(out, a.float() @ b.float(), rtol=1e-2, atol=1e-2)
    report: RunReport = kernel.last_report
    return report


def streaming_cycles(stages: int) -> int:
    x = torch.randn(STREAM_TILES * 64, 128)
    out = torch.zeros(STREAM_TILES * 64, 128)
    kernel = streaming(stages)
    kernel(x, out)
    torch.testing.assert_close(out, torch.exp(x))
    return kernel.last_report.total_cycles


def main() -> None:
    torch.set_num_threads(1)
    os.environ["PYPTO_CACHE"] = "off"  # compile figures time compiling, not the disk cache
    example = load_example()
    mixed, staged = example.mixed_kernel(pl.SplitMode.UP_DOWN), example.staged_matmul_bias
    machine = f"{platform.machine()}, {os.cpu_count()} CPU(s), python {platform.python_version()}"
    print(f"PyPTO benchmarks — {machine}")
    print(f"torch {torch.__version__} on {torch.get_num_threads()} thread(s)\n")

    torch_only, hello = startup_seconds()
    print(f"start-up: a whole process (fastest of {STARTUP_RUNS})")
    print(
        f"  import torch {torch_only:.2f} s   hello world {hello:.2f} s   "
        f"hello/torch = {hello / torch_only:.2f}x"
    )
    how = f"the fastest of {STARTUP_RUNS} processes each, alternating"
    record(Figure("start-up: hello world / import torch", hello / torch_only, STARTUP_GOAL, "x", how))

    discovery, cold, warm = compile_times(mixed, seed_args(128))
    print(f"plugin discovery (once per process) {discovery * 1e3:.1f} ms")
    print("compile, seed kernel (M=128)")
    print(f"  cold {cold * 1e3:8.1f} ms   warm {warm * 1e3:8.1f} ms   warm/cold = {warm / cold:.2f}")

    overhead, run = call_overhead(mixed, seed_args(128))
    print("cached call, seed kernel (M=128)")
    share = overhead / run
    print(f"  overhead {overhead * 1e6:6.0f} us   run {run * 1e3:8.2f} ms   overhead/run = {share:.1%}")

    print("a2a3sim wall time against torch eager (a @ b + bias)")
    for m in SIZES:
        sim, eager = simulator_against_eager(mixed, m)
        ratio = sim / eager
        print(f"  M={m:<5} sim {sim * 1e3:8.2f} ms   eager {eager * 1e3:7.3f} ms   sim/eager = {ratio:5.1f}x")
        if m in SEED_GOAL_SIZES:
            record(
                Figure(
                    f"seed kernel M={m}: sim / eager", ratio, SIM_GOAL, "x", "medians, checked against torch"
                )
            )
        if m not in FLOOR_SIZES:
            continue
        floor = bare_tile_ops(mixed, m)
        bare = f"its tile ops as bare torch calls {floor * 1e3:7.2f} ms"
        print(f"          {bare} = {floor / eager:4.1f}x eager")
    print("a2a3sim wall time against torch eager (fp16 matmuls over 24 core groups; a.float() @ b.float())")
    for n in CUBES:
        sim, eager = cube_against_eager(n)
        shape, ms = f"{cube_rows(n)}x{n}x{n}", f"sim {sim * 1e3:8.2f} ms   eager {eager * 1e3:7.3f} ms"
        print(f"  {shape:<14} {ms}   sim/eager = {sim / eager:5.1f}x")
    print("a2a3sim wall time against torch eager (fp16 matmuls of exactly n^3; a.float() @ b.float())")
    forms = {"24-block pl.spmd": spmd_tiles_matmul, "pl.parallel grid of 128x128 tiles": grid_matmul}
    for n in CUBES:
        for form, kernel in forms.items():
            sim, eager = matmul_against_eager(kernel, n, n)
            shape, ms = f"{n}^3 {form}", f"sim {sim * 1e3:8.2f} ms   eager {eager * 1e3:7.3f} ms"
            print(f"  {shape:<40} {ms}   sim/eager = {sim / eager:5.1f}x")
            name = f"fp16 matmul {n}^3, {form}: sim / eager"
            record(Figure(name, sim / eager, SIM_GOAL, "x", "medians, checked against torch"))

    print(f"modeled cycles against the roofline bound (M={MODEL_M}; modeled, not measured)")
    reports = {"mixed (UP_DOWN)": modeled_report(mixed), "staged": modeled_report(staged)}
    for name, report in reports.items():
        print(f"  {name}")
        for line in roofline_lines(report):
            print(line)
    speedup = reports["staged"].total_cycles / reports["mixed (UP_DOWN)"].total_cycles
    print(f"  staged/mixed = {speedup:.2f}x modeled cycles")
    print(f"  fp16 matmuls over {GROUPS} core groups, one block of M/{GROUPS} rows each")
    for m, k, n in CHIP_SHAPES:
        chip = chip_matmul_report(m, k, n)
        (line,) = chip.roofline()  # its cycles and its cube bound sum over the blocks
        launch = chip.total_cycles / (line.cube / GROUPS)  # with the dispatch of 24 tasks
        print(
            f"    {m}x{k}x{n:<5} a block {line.cycles / GROUPS:>8.0f} modeled cycles / "
            f"{line.bound_cycles / GROUPS:>7.0f} {line.bound} bound = {line.ratio:.2f}x; "
            f"the launch {chip.total_cycles:>7} / {line.cube / GROUPS:.0f} = {launch:.2f}x"
        )
    single, double = streaming_cycles(1), streaming_cycles(2)
    print(f"  streaming exp over {STREAM_TILES} tiles: one buffer {single}, pl.pipeline(stage=2) {double}")
    print(f"    stage=2 / one buffer = {double / single:.2f}x modeled cycles")
    print_summary()


if __name__ == "__main__":
    main()
