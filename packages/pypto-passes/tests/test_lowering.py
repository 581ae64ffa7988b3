"""The default pipeline, end to end on hand-built programs, as golden IR text."""

import passes_irbuild as irbuild
import pytest
from passes_golden import check_golden

from pypto.ir import FunctionKind, print_ir
from pypto.passes import DEFAULT_PIPELINE, build_pass, lower


def test_staged_seed_program_lowers_to_an_aic_and_an_aiv_kernel():
    lowered = lower(irbuild.staged_program(), irbuild.TARGET)
    kinds = {fn.name: fn.kind for fn in lowered.functions}
    assert kinds == {
        "staged": FunctionKind.Orchestration,
        "cube_only": FunctionKind.AIC,
        "vector_only": FunctionKind.AIV,
    }
    check_golden("staged_128.txt", print_ir(lowered))


def test_long_operands_stream_through_the_kernel_in_row_blocks():
    lowered = lower(irbuild.staged_program(4096), irbuild.TARGET)
    check_golden("staged_4096.txt", print_ir(lowered))


def test_dump_passes_writes_one_file_per_pass(tmp_path):
    lower(irbuild.staged_program(), irbuild.TARGET, dump_dir=tmp_path)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == [f"{i:02d}_after_{name}.py" for i, name in enumerate(DEFAULT_PIPELINE, start=1)]
    assert "pl.tile.matmul" in (tmp_path / names[-1]).read_text()


def test_unknown_pass_names_the_known_ones():
    with pytest.raises(ValueError, match="unknown pass 'Nope'; known passes: OutlineScopes"):
        build_pass("Nope")
