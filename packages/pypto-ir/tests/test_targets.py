"""Targets are data: one TOML file per chip, read by pypto.ir.targets into a Target."""

import textwrap

import pytest

from pypto.ir import MemorySpace, PlatformError
from pypto.ir.targets import get_target, load_target, parse_target, target_names

SMALL = textwrap.dedent(
    """\
    name = "tiny"
    core_groups = 2
    aic_per_group = 1
    aiv_per_group = 1
    clock_mhz = 1000
    data_paths = [["DDR", "Vec"], ["Vec", "DDR"]]

    [memory]
    Vec = { capacity = 4096, usable = 2048, core = "AIV" }

    [calibration]
    load = [[1000, 200], [3000, 300]]

    [cost]
    vector_bytes_per_cycle = 32
    """
)


def test_a2a3_is_a_built_in_target_read_once():
    assert "a2a3" in target_names()
    a2a3 = get_target("a2a3")
    assert a2a3 is get_target("a2a3")
    assert a2a3.name == "a2a3"
    assert a2a3.usable(MemorySpace.Vec) <= a2a3.spec(MemorySpace.Vec).capacity
    assert a2a3.spaces_of("AIV") == (MemorySpace.Vec,)


def test_a_file_describes_a_second_target(tmp_path):
    path = tmp_path / "tiny.toml"
    path.write_text(SMALL)
    tiny = load_target(path)
    assert (tiny.name, tiny.core_groups, tiny.aiv_per_group, tiny.clock_mhz) == ("tiny", 2, 1, 1000)
    assert tiny.spec(MemorySpace.Vec).capacity == 4096 and tiny.usable(MemorySpace.Vec) == 2048
    assert tiny.spec(MemorySpace.Vec).alignment == 32  # the default
    assert tiny.is_legal_path(MemorySpace.DDR, MemorySpace.Vec)
    assert not tiny.is_legal_path(MemorySpace.DDR, MemorySpace.Mat)
    assert (tiny.max_pipe_slots, tiny.default_slot_num) == (8, 2)


def test_calibration_points_give_a_line_through_both():
    tiny = parse_target(SMALL)
    assert tiny.cost["load_bytes_per_cycle"] == 20  # 2000 bytes more in 100 cycles more
    assert tiny.cost["load_latency_cycles"] == 150  # 200 cycles for 1000 bytes: 150 + 1000 / 20
    for nbytes, cycles in tiny.calibration["load"]:
        assert tiny.cost["load_latency_cycles"] + nbytes / tiny.cost["load_bytes_per_cycle"] == cycles


def test_an_unknown_built_in_target_lists_the_known_ones():
    with pytest.raises(PlatformError) as info:
        get_target("tpu")
    assert info.value.message.startswith("no built-in target 'tpu'; the built-in targets are a2a3")
    assert "load_target" in info.value.hint


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (("core_groups = 2\n", ""), "target file tiny.toml lacks core_groups"),
        (("clock_mhz", "clock_mhs"), "target file tiny.toml lacks clock_mhz"),
        (("[cost]", "[costs]"), "target file tiny.toml has unknown key(s) costs; known: name, "),
        (('["Vec", "DDR"]', '["Vec", "HBM"]'), "target file tiny.toml names memory space 'HBM'; the spaces"),
        (("usable = 2048, ", ""), "target file tiny.toml lacks memory.Vec.usable"),
        (("[3000, 300]", "[3000, 200]"), "calibration.load: the two points must differ"),
        (
            ("[[1000, 200], [3000, 300]]", "[[1000, 200]]"),
            "calibration.load must be two [bytes, cycles] points",
        ),
        (("name = ", "name == "), "target file tiny.toml is not valid TOML: "),
    ],
)
def test_a_bad_target_file_says_what_is_wrong(change, problem):
    with pytest.raises(PlatformError) as info:
        parse_target(SMALL.replace(*change), "tiny.toml")
    assert problem in info.value.message
    assert "docs/ir.md" in info.value.hint
