"""The compile-side options of PyPTO's manual ("Compiling", "Runtime DFX"), on the a2a3 simulator:
ir.compile's seventeen parameters, memory_planner, diagnostic_phase / disabled_diagnostics,
enable_chip_swimlane levels (and enable_l2_swimlane), distributed_config."""

import inspect
import json
import warnings

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.ir import DiagnosticCheck, DiagnosticPhase, MemoryPlanner
from pypto.passes import CompileWarning
from pypto.runtime import RunConfig
from pypto.runtime.settings import ConfigError

MANUAL_PARAMETERS = [
    "program", "output_dir", "strategy", "dump_passes", "backend_type", "platform", "skip_ptoas",
    "verification_level", "memory_planner", "diagnostic_phase", "disabled_diagnostics", "profiling",
    "distributed_config", "analyze_auto_scopes_for_deps", "enable_pypto_l0c_double_buffer",
    "emit_source_loc", "dump_ptoas_passes",
]  # fmt: skip


@pl.jit
def scaled(a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="scale"):
        out[:] = pl.add(pl.mul(a, 2.0), 1.0)
    return out


@pl.jit
def big_stages(x: pl.Tensor[[8 * 128, 256], pl.FP32], out: pl.Out[pl.Tensor[[8 * 128, 256], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="big"):
        for i in pl.pipeline(8, stage=4):  # four stages of 128 KB tiles do not fit in Vec
            t = pl.load(x, [i * 128, 0], [128, 256])
            pl.store(pl.exp(t), [i * 128, 0], out)
    return out


# Four tiles through a two-slot pipe whose pops are never freed: the UnfreedPipeTile warning.
@pl.jit
def leaky(
    a: pl.Tensor[[512, 128], pl.FP16],
    b: pl.Tensor[[128, 128], pl.FP16],
    out: pl.Out[pl.Tensor[[512, 128], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="leaky"):
        pl.aic_initialize_pipe(dir_mask=1, slot_size=65536, slot_num=2)
        b_right = pl.move(
            pl.load(b, [0, 0], [128, 128], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right
        )
        for i in pl.range(4):
            a_l1 = pl.load(a, [i * 128, 0], [128, 128], target_memory=pl.Mem.Mat)
            pl.tpush_to_aiv(
                pl.matmul(pl.move(a_l1, target_memory=pl.Mem.Left), b_right), split=pl.SplitMode.UP_DOWN
            )
        for lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
            pl.aiv_initialize_pipe(dir_mask=1, slot_size=65536, slot_num=2)
            for j in pl.range(4):
                half = pl.tpop_from_aic(shape=[64, 128], dtype=pl.FP32, split=pl.SplitMode.UP_DOWN)
                pl.store(pl.relu(half), [j * 128 + lane * 64, 0], out)
    return out


@pytest.fixture(autouse=True)
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PYPTO_PROG_BUILD_DIR", raising=False)
    monkeypatch.setenv("PYPTO_CACHE", "off")
    for kernel in (scaled, big_stages, leaky):
        kernel.cache_clear()
    return tmp_path


def test_ir_compile_takes_the_seventeen_parameters_of_the_manual():
    assert set(inspect.signature(ir.compile).parameters) == set(MANUAL_PARAMETERS)
    defaults = inspect.signature(ir.compile).parameters
    assert defaults["dump_passes"].default is True and defaults["distributed_config"].default is None


def test_ir_compile_writes_to_a_timestamped_directory_by_default(workdir, monkeypatch):
    compiled = ir.compile(scaled.parse(), dump_passes=False)
    assert (
        compiled.output_dir.parent == workdir / "build_output"
        or compiled.output_dir.parent.name == "build_output"
    )
    stamp = compiled.output_dir.name.removeprefix("scaled_")
    assert len(stamp) == 15 and stamp[8] == "_" and stamp.replace("_", "").isdigit()
    monkeypatch.setenv("PYPTO_PROG_BUILD_DIR", str(workdir / "elsewhere"))
    again = ir.compile(scaled.parse(), dump_passes=False)
    assert again.output_dir.parent == workdir / "elsewhere"
    assert (again.output_dir / "program.py").is_file()
    third = ir.compile(scaled.parse())  # dump_passes defaults to True: the dumps are beside
    assert any((third.output_dir / "passes_dump").glob("*_after_AllocateMemory.py"))


def test_the_codegen_switches_are_checked_and_change_no_artifact(workdir):
    plain = ir.compile(scaled.parse(), output_dir=workdir / "plain", dump_passes=False)
    switched = ir.compile(
        scaled.parse(),
        output_dir=workdir / "switched",
        dump_passes=False,
        skip_ptoas=True,
        dump_ptoas_passes=True,
        emit_source_loc=True,
        enable_pypto_l0c_double_buffer=False,
        analyze_auto_scopes_for_deps=True,
    )
    for name in ("program.py", "ptoas/scale.pto", "memory_map.txt"):
        assert (plain.output_dir / name).read_text() == (switched.output_dir / name).read_text()
    for name in ("skip_ptoas", "emit_source_loc", "analyze_auto_scopes_for_deps"):
        with pytest.raises(ConfigError, match=name) as info:
            ir.compile(scaled.parse(), **{name: "yes"})
        assert info.value.span is not None and info.value.span.file == __file__


def test_analyze_auto_scopes_for_deps_leaves_the_runtime_edges_as_they_are():
    x = torch.randn(64, 128)
    runs = []
    for flag in (False, True):
        out = torch.zeros(64, 128)
        scaled(x, out, config=RunConfig(analyze_auto_scopes_for_deps=flag))
        runs.append([(e.src, e.dst) for e in scaled.last_report.edges])
        torch.testing.assert_close(out, x * 2 + 1)
    assert runs[0] == runs[1]


def test_ir_compile_says_what_to_pass_instead_of_a_jit_kernel():
    with pytest.raises(ConfigError, match="takes a Program, got JitFunction") as info:
        ir.compile(scaled)
    assert "kernel.compile" in info.value.hint


def test_distributed_config_takes_a_distributed_config_only():
    with pytest.raises(ConfigError, match="takes a DistributedConfig") as info:
        RunConfig(distributed_config={"world_size": 2})
    assert info.value.span.file == __file__
    with pytest.raises(ConfigError, match="DistributedConfig"):
        ir.compile(scaled.parse(), distributed_config=object())


def test_memory_planner_ptoas_leaves_the_addresses_out_of_the_pass_dumps(workdir):
    x = torch.randn(64, 128)
    compiled = ir.compile(scaled.parse(), output_dir=workdir / "ptoas", memory_planner=MemoryPlanner.PTOAS)
    dumps = sorted(p.name for p in (compiled.output_dir / "passes_dump").iterdir())
    assert not any("AllocateMemory" in name for name in dumps)
    assert "memory_plan" not in "".join((compiled.output_dir / "passes_dump" / d).read_text() for d in dumps)
    planned = ir.compile(scaled.parse(), output_dir=workdir / "pypto", memory_planner=MemoryPlanner.PYPTO)
    # The addresses are placed at emission instead: the same plan, and the program runs.
    assert (
        compiled.lowered.function("scale").attrs["memory_plan"]
        == planned.lowered.function("scale").attrs["memory_plan"]
    )
    out = torch.zeros(64, 128)
    compiled(x, out)
    torch.testing.assert_close(out, x * 2 + 1)


def test_memory_planner_dsa_rp_places_as_the_planner_here_does():
    dsa = ir.compile(scaled.parse(), dump_passes=False, memory_planner=MemoryPlanner.DSA_RP)
    plain = ir.compile(scaled.parse(), dump_passes=False)
    assert (
        dsa.lowered.function("scale").attrs["memory_plan"]
        == plain.lowered.function("scale").attrs["memory_plan"]
    )
    with pytest.raises(ConfigError, match="MemoryPlanner"):
        RunConfig(memory_planner="PTOAS")


def test_diagnostic_phase_none_and_disabled_diagnostics_silence_the_perf_hint(workdir):
    x = torch.randn(8 * 128, 256)
    for config, count in (
        (RunConfig(), 1),
        (RunConfig(diagnostic_phase=DiagnosticPhase.NONE), 0),
        (RunConfig(disabled_diagnostics={DiagnosticCheck.PipelineStagesCut}), 0),
        (RunConfig(disabled_diagnostics=[DiagnosticCheck.UnfreedPipeTile]), 1),
        (RunConfig(diagnostic_phase=DiagnosticPhase.PostPass), 1),
    ):
        out = torch.zeros(8 * 128, 256)
        big_stages(x, out, config=config)
        assert len(big_stages.last_report.hints) == count, config
        torch.testing.assert_close(out, torch.exp(x))
    with pytest.raises(ConfigError, match="DiagnosticCheck"):
        RunConfig(disabled_diagnostics=["PipelineStagesCut"])


def test_disabled_diagnostics_silences_the_unfreed_pipe_warning():
    with pytest.warns(CompileWarning, match="not freed on every path"):
        leaky.lower(config=RunConfig())
    leaky.cache_clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        leaky.lower(config=RunConfig(disabled_diagnostics=DiagnosticCheck.UnfreedPipeTile))
        leaky.cache_clear()
        leaky.lower(config=RunConfig(diagnostic_phase=DiagnosticPhase.NONE))


# ---------------------------------------------------------------- swimlane levels


def _records(workdir, level):
    x = torch.randn(64, 128)
    scaled(
        x, torch.zeros(64, 128), config=RunConfig(enable_chip_swimlane=level, save_kernels_dir=workdir / "o")
    )
    return json.loads((workdir / "o" / "dfx_outputs" / "chip_swimlane_records.json").read_text())


def test_each_swimlane_level_adds_to_the_one_below(workdir):
    one, two, three, four = (_records(workdir, level) for level in (1, 2, 3, 4))
    assert [r["level"] for r in (one, two, three, four)] == [1, 2, 3, 4]
    assert "dispatch_us" not in one["records"][0] and "start_us" in one["records"][0]
    record = two["records"][0]
    assert record["dispatch_cycle"] <= record["start_cycle"] <= record["end_cycle"] <= record["finish_cycle"]
    assert "scheduler_phases" not in two and "scheduler_phases" in three
    assert "orchestrator_phases" not in three and four["orchestrator_phases"]
    assert _records(workdir, True)["level"] == 4


def test_a_swimlane_level_out_of_range_is_an_error():
    for bad in (5, -1, "4", 2.0):
        with pytest.raises(ConfigError, match="level 0-4") as info:
            RunConfig(enable_chip_swimlane=bad)
        assert info.value.span.file == __file__


def test_enable_l2_swimlane_is_the_former_name_and_warns():
    with pytest.warns(DeprecationWarning, match="enable_chip_swimlane"):
        config = RunConfig(enable_l2_swimlane=True)
    assert config.enable_chip_swimlane == 4 and config.enable_l2_swimlane == 4
    with pytest.raises(ConfigError, match="both"):
        RunConfig(enable_l2_swimlane=2, enable_chip_swimlane=2)
    with pytest.warns(DeprecationWarning):
        config.enable_l2_swimlane = 1
    assert config.enable_chip_swimlane == 1
