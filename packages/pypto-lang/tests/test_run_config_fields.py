"""The RunConfig fields PyPTO code passes: each checked, each with its meaning on this backend."""

import dataclasses

import pytest
from lang_platforms import A2A3_LIKE, RecordingBackend

from pypto.backend import BackendType, UnsupportedBackendError, backend_type_of, platforms_of
from pypto.ir import OptimizationStrategy, VerificationLevel
from pypto.runtime import RunConfig, UnknownOptionError, hookimpl, register_plugin
from pypto.runtime import VerificationLevel as RuntimeLevel
from pypto.runtime.settings import ConfigError, command_line


class _BackendOnly:
    """A plugin registering one backend (of a chip family the tests' a2a3 plugin has none of)."""

    def __init__(self, backend: RecordingBackend) -> None:
        self.backend = backend

    @hookimpl
    def pypto_register_backends(self, register):
        register(self.backend)


def test_an_unknown_field_is_a_type_error_naming_the_known_ones():
    with pytest.raises(TypeError) as info:
        RunConfig(enable_swimlane=True)
    err = info.value
    assert isinstance(err, UnknownOptionError) and isinstance(err, ConfigError)
    assert "save_kernels_dir" in err.message and "verification_level" in err.message
    assert err.hint == "did you mean enable_chip_swimlane=?"
    assert err.span is not None


def test_backend_type_ascend910b_is_the_a2a3_family(backend):
    assert backend_type_of("a2a3") is BackendType.Ascend910B
    assert backend_type_of("testsim") is BackendType.Ascend910B  # its target is the a2a3 chip
    assert platforms_of(BackendType.Ascend910B) == ["a2a3", "testsim"]


def test_backend_type_picks_the_session_default_of_its_family(backend):
    with command_line(platform="testsim"):
        assert RunConfig(backend_type=BackendType.Ascend910B).platform == "testsim"


def test_backend_type_picks_a_platform_of_its_family_when_the_default_is_not(backend):
    with command_line(platform="nowhere"):
        assert RunConfig(backend_type=BackendType.Ascend910B).platform == "a2a3"


def test_ascend950_is_not_supported_by_the_installed_backends(backend):
    with pytest.raises(UnsupportedBackendError) as info:
        RunConfig(backend_type=BackendType.Ascend950)
    assert info.value.message == (
        "BackendType.Ascend950 (A5) is not supported by the installed backends (platforms: a2a3, testsim)"
    )
    assert "BackendType.Ascend910B" in (info.value.hint or "")
    assert info.value.span is not None


def test_a_backend_type_contradicting_the_platform_is_an_error(backend):
    with pytest.raises(UnsupportedBackendError):
        RunConfig(platform="testsim", backend_type=BackendType.Ascend950)
    assert RunConfig(platform="testsim", backend_type=BackendType.Ascend910B).platform == "testsim"
    a5 = RecordingBackend(name="a5sim", target=dataclasses.replace(A2A3_LIKE, name="a5"))
    register_plugin(_BackendOnly(a5), name="a5-plugin")
    assert RunConfig(backend_type=BackendType.Ascend950).platform == "a5sim"
    with pytest.raises(ConfigError) as info:
        RunConfig(platform="testsim", backend_type=BackendType.Ascend950)
    assert info.value.message == (
        "RunConfig(platform='testsim') is a A2/A3 platform (BackendType.Ascend910B), "
        "but backend_type is BackendType.Ascend950"
    )
    assert info.value.hint == "give one of them, or a platform of that backend type: a5sim"


def test_device_id_must_name_a_device_of_the_platform(backend):
    assert RunConfig(platform="testsim", device_id=0).device_id == 0
    with pytest.raises(ConfigError, match="testsim has 1 device") as info:
        RunConfig(platform="testsim", device_id=3)
    assert "device_id=0" in (info.value.hint or "")
    with pytest.raises(ConfigError, match="an int >= 0"):
        RunConfig(platform="testsim", device_id=-1)


def test_a_backend_declares_how_many_devices_it_has(backend):
    backend.device_count = 4  # type: ignore[attr-defined]
    assert RunConfig(platform="testsim", device_id=3).device_id == 3


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("codegen_only", "yes"),
        ("save_kernels", 1),
        ("device_id", "0"),
        ("backend_type", "Ascend910B"),
        ("verification_level", "ROUNDTRIP"),
        ("enable_pmu", None),
    ],
)
def test_each_field_takes_its_kind(field, value):
    with pytest.raises(ConfigError, match=f"RunConfig.{field} takes"):
        RunConfig(**{field: value})


def test_save_kernels_dir_implies_save_kernels_and_holds_the_pass_dumps(tmp_path):
    config = RunConfig(save_kernels_dir=tmp_path / "out", dump_passes=True)
    assert config.save_kernels is True
    assert config.dump_dir("k") == tmp_path / "out" / "passes_dump"


def test_verification_level_is_one_enum_in_ir_and_runtime():
    assert RuntimeLevel is VerificationLevel
    assert RunConfig().verification_level is VerificationLevel.BASIC
    assert [level.name for level in VerificationLevel] == ["NONE", "BASIC", "ROUNDTRIP"]


def test_fields_that_do_not_change_the_compiled_program_keep_the_cache_key(backend, tmp_path):
    with command_line(platform="testsim"):
        _same_key(tmp_path)


def _same_key(tmp_path):
    plain = RunConfig().cache_key()
    for options in (
        {"device_id": 0, "codegen_only": True},
        {"save_kernels_dir": tmp_path, "enable_dep_gen": True, "enable_pmu": True},
        {"enable_scope_stats": True, "verification_level": VerificationLevel.NONE},
        {"backend_type": BackendType.Ascend910B},
        {"ring_task_window": 64, "ring_heap": [1 << 20, 0, 0, 1 << 30], "ring_dep_pool": 4096},
        {"aicpu_thread_num": 4, "rtol": 1e-2, "strategy": OptimizationStrategy.Default},
    ):
        assert RunConfig(**options).cache_key() == plain


def test_verification_level_none_runs_no_verifier_between_passes(backend, monkeypatch, tmp_path):
    import pypto.language as pl
    from pypto.passes import manager

    @pl.jit
    def copy(a: pl.Tensor[[8, 8], pl.FP32], out: pl.Out[pl.Tensor[[8, 8], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.add(a, a)
        return out

    checked: list[object] = []
    monkeypatch.setattr(manager, "verify_program", checked.append)
    monkeypatch.setenv("PYPTO_CACHE", "off")
    copy.compile(config=RunConfig(platform="testsim", verification_level=VerificationLevel.NONE))
    assert checked == []
    copy.compile(
        config=RunConfig(platform="testsim", verification_level=VerificationLevel.BASIC, options={"x": 1})
    )
    assert len(checked) > 1  # before the first pass and after each


@pytest.mark.parametrize(
    ("field", "value", "sizes"),
    [
        ("ring_task_window", 64, (64, 64, 64, 64)),
        ("ring_task_window", [8192, 16384, 131072, 524288], (8192, 16384, 131072, 524288)),
        ("ring_task_window", [0, 4, 0, 0], (0, 4, 0, 0)),
        ("ring_heap", 1 << 20, (1 << 20,) * 4),
        ("ring_heap", (1024, 0, 0, 1 << 30), (1024, 0, 0, 1 << 30)),
        ("ring_dep_pool", [4, 5, 2**31 - 1, 0], (4, 5, 2**31 - 1, 0)),
        ("ring_dep_pool", 0, (0, 0, 0, 0)),
    ],
)
def test_a_ring_field_takes_an_int_or_four_per_ring_sizes(field, value, sizes, monkeypatch):
    for env in ("PTO2_RING_TASK_WINDOW", "PTO2_RING_HEAP", "PTO2_RING_DEP_POOL"):
        monkeypatch.delenv(env, raising=False)
    assert RunConfig(**{field: value}).ring_sizes()[field] == sizes


@pytest.mark.parametrize(
    ("field", "value", "message", "hint"),
    [
        (
            "ring_task_window",
            100,
            "RunConfig.ring_task_window must be a power of two >= 4 (task slots per ring), got 100",
            "ring_task_window=1024",
        ),
        (
            "ring_task_window",
            2,
            "must be a power of two >= 4 (task slots per ring), got 2",
            "ring_task_window=1024",
        ),
        (
            "ring_heap",
            64,
            "RunConfig.ring_heap must be a power of two >= 1024 (bytes per ring), got 64",
            "ring_heap counts bytes, not buffers",
        ),
        (
            "ring_heap",
            [1024, 0, 1000, 0],
            "RunConfig.ring_heap[2] must be a power of two >= 1024 (bytes per ring), got 1000",
            "ring_heap=1048576",
        ),
        (
            "ring_dep_pool",
            3,
            "RunConfig.ring_dep_pool must be in [4, 2147483647] (dependency-edge entries per ring), got 3",
            "ring_dep_pool=4096",
        ),
        (
            "ring_dep_pool",
            2**31,
            "must be in [4, 2147483647] (dependency-edge entries per ring), got 2147483648",
            "ring_dep_pool=4096",
        ),
        (
            "ring_task_window",
            [64, 64, 64],
            "RunConfig.ring_task_window takes an int or a list of exactly 4 ints (rings 0..3), got a list of 3",
            "ring_task_window=[1024, 0, 0, 0]",
        ),
        (
            "ring_task_window",
            -8,
            "must be a power of two >= 4 (task slots per ring), got -8",
            "ring_task_window=1024",
        ),
        (
            "ring_heap",
            True,
            "RunConfig.ring_heap takes an int or a list of 4 ints, got bool True",
            "ring_heap=1048576",
        ),
        (
            "ring_heap",
            "1M",
            "RunConfig.ring_heap takes an int or a list of 4 ints, got str '1M'",
            "ring_heap=1048576",
        ),
        (
            "ring_dep_pool",
            [4.0, 0, 0, 0],
            "RunConfig.ring_dep_pool takes an int or a list of 4 ints, got list",
            "ring_dep_pool=4096",
        ),
    ],
)
def test_a_bad_ring_size_is_an_error_at_the_call_with_a_hint(field, value, message, hint):
    with pytest.raises(ConfigError) as info:
        RunConfig(**{field: value})
    err = info.value
    assert message in err.message and hint in (err.hint or "")
    assert err.span is not None and err.span.file == __file__


@pytest.mark.parametrize("value", [0, -1, True, 2.0, "4"])
def test_aicpu_thread_num_is_an_int_of_at_least_one(value):
    with pytest.raises(ConfigError, match=r"RunConfig\.aicpu_thread_num takes an int >= 1") as info:
        RunConfig(aicpu_thread_num=value)
    assert info.value.hint == "write it like RunConfig(aicpu_thread_num=4)"
    assert RunConfig(aicpu_thread_num=6).aicpu_thread_num == 6


def test_the_ring_environment_variables_size_what_the_config_leaves_unset(monkeypatch):
    monkeypatch.setenv("PTO2_RING_TASK_WINDOW", "128")
    monkeypatch.setenv("PTO2_RING_HEAP", "0,2048,0,0")
    sizes = RunConfig(ring_task_window=[0, 64, 0, 0]).ring_sizes()
    assert sizes["ring_task_window"] == (128, 64, 128, 128)  # the config's entry wins
    assert sizes["ring_heap"] == (0, 2048, 0, 0)
    monkeypatch.setenv("PTO2_RING_DEP_POOL", "lots")
    with pytest.raises(ConfigError, match="PTO2_RING_DEP_POOL='lots' is not a size"):
        RunConfig().ring_sizes()
    monkeypatch.setenv("PTO2_RING_DEP_POOL", "2")
    with pytest.raises(ConfigError, match=r"PTO2_RING_DEP_POOL must be in \[4, 2147483647\]"):
        RunConfig().ring_sizes()


def test_the_strategy_is_an_optimization_strategy():
    assert RunConfig(strategy=OptimizationStrategy.Default).strategy is OptimizationStrategy.Default
    with pytest.raises(ConfigError) as info:
        RunConfig(strategy="Default")
    assert info.value.message == "RunConfig.strategy takes a pypto.ir.OptimizationStrategy, got str 'Default'"
    assert info.value.hint == "write it like RunConfig(strategy=OptimizationStrategy.Default)"


def test_the_run_time_fields_reach_the_backend_and_do_not_recompile(backend, monkeypatch):
    import torch

    import pypto.language as pl

    @pl.jit
    def copy(a: pl.Tensor[[8, 8], pl.FP32], out: pl.Out[pl.Tensor[[8, 8], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.add(a, a)
        return out

    monkeypatch.setenv("PYPTO_CACHE", "off")
    for env in ("PTO2_RING_TASK_WINDOW", "PTO2_RING_HEAP", "PTO2_RING_DEP_POOL"):
        monkeypatch.delenv(env, raising=False)
    a, out = torch.ones(8, 8), torch.zeros(8, 8)
    copy(a, out, config=RunConfig(platform="testsim"))
    sized = RunConfig(
        platform="testsim",
        ring_task_window=64,
        ring_heap=[0, 1 << 20, 0, 0],
        ring_dep_pool=256,
        aicpu_thread_num=4,
    )
    copy(a, out, config=sized)
    assert copy.cache_info().misses == 1  # the same compiled program ran twice
    first, second = (options for _, _, options in backend.calls)
    assert first["ring_task_window"] == (0, 0, 0, 0) and first["aicpu_thread_num"] is None
    assert second["ring_task_window"] == (64, 64, 64, 64)
    assert second["ring_heap"] == (0, 1 << 20, 0, 0) and second["ring_dep_pool"] == (256,) * 4
    assert second["aicpu_thread_num"] == 4
