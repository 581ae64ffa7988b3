"""The RunConfig fields PyPTO code passes: each checked, each with its meaning on this backend."""

import dataclasses

import pytest
from lang_platforms import A2A3_LIKE, RecordingBackend

from pypto.backend import BackendType, UnsupportedBackendError, backend_type_of, platforms_of
from pypto.ir import VerificationLevel
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
    assert config.dump_dir("k") == tmp_path / "out" / "passes"


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
