"""Generated programs (issue #9): every program raises a PyptoError with a span, or matches torch.

Four families of programs (tests/fuzz/programs.py) are drawn by hypothesis, written to files and
judged by tests/fuzz/harness.py. By default each family runs a small, derandomized sample so the
suite stays fast and reproducible. ``PYPTO_FUZZ_EXAMPLES=N`` selects the ``fuzz`` profile: N
programs per family, a fresh random seed each run, every distinct failure shrunk and reported
(``nox -s fuzz`` runs it with enough programs for >= 5000 in total).
"""

import os

import harness
import programs
import pytest
from hypothesis import HealthCheck, given, settings

FUZZ_EXAMPLES = int(os.environ.get("PYPTO_FUZZ_EXAMPLES", "0"))
CI_EXAMPLES = 100  # per family: about 20 s for all four when they pass

_SLOW_IS_FINE = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
settings.register_profile(
    "ci",
    max_examples=CI_EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    report_multiple_bugs=False,
    suppress_health_check=_SLOW_IS_FINE,
)
settings.register_profile(
    "fuzz",
    max_examples=max(FUZZ_EXAMPLES, 1),
    deadline=None,  # each program has its own alarm (harness.TIMEOUT_SECONDS)
    database=None,
    report_multiple_bugs=True,
    suppress_health_check=_SLOW_IS_FINE,
    print_blob=True,
)
PROFILE = settings.get_profile("fuzz" if FUZZ_EXAMPLES else "ci")


@pytest.fixture(scope="module")
def program_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("generated")


def judge(program: programs.Program, directory) -> None:
    path = directory / program.file_name()
    path.write_text(program.source())
    harness.judge(path)


@PROFILE
@given(program=programs.tensor_programs())
def test_tensor_chains_in_a_scope(program_dir, program):
    judge(program, program_dir)


@PROFILE
@given(program=programs.tile_programs())
def test_tile_chains_in_row_block_loops(program_dir, program):
    judge(program, program_dir)


@PROFILE
@given(program=programs.mixed_programs())
def test_matmul_and_epilogue_under_a_split(program_dir, program):
    judge(program, program_dir)


@PROFILE
@given(program=programs.pipe_programs())
def test_explicit_split_aiv_regions_and_pipes(program_dir, program):
    judge(program, program_dir)
