"""The bench's acceptance machinery (benchmarks/acceptance.py, benchmarks/aliased.py) and the matmul
kernels it times, checked for what they compute and print; no figure is timed here."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

BENCHMARKS = Path(__file__).parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import acceptance  # noqa: E402
import aliased  # noqa: E402
from acceptance import Figure  # noqa: E402


def test_a_figure_over_its_goal_is_not_met_and_one_at_it_is() -> None:
    over = Figure("sim / eager", 3.2, 3.0, "x", "measured")
    at = Figure("sim / eager", 3.0, 3.0, "x", "measured")
    assert (over.met, at.met) == (False, True)
    assert over.verdict() == "NOT met" and at.verdict() == "met"
    assert over.value_text() == "3.20x" and over.goal_text() == "<= 3x"


def test_an_unmeasured_figure_and_a_check_say_so() -> None:
    missing = Figure("timing-only", None, 60.0, "s", "not available in this tree")
    assert missing.met is None and missing.verdict() == "not measured" and missing.value_text() == "-"
    failed = Figure("numbers against torch", None, None, "", "one layer", ok=False)
    assert failed.met is False and failed.value_text() == "MISMATCH"


def test_recorded_figures_reach_the_run_file_and_the_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "figures.jsonl"
    monkeypatch.setenv(acceptance.FIGURES_ENV, str(path))
    acceptance.record(Figure("start-up", 1.25, 1.3, "x", "fastest of 7"))
    acceptance.record(Figure("step", 5.0, 2.0, "x", "one layer x 64"))
    assert [json.loads(line)["name"] for line in path.read_text().splitlines()] == ["start-up", "step"]
    table = acceptance.summary(acceptance.load(path))
    assert "start-up" in table and "1.25x" in table and "NOT met" in table
    assert "1 of 2 figures meet their goal" in table
    capsys.readouterr()
    acceptance.print_summary()  # the run prints one table at its end, not each script
    assert capsys.readouterr().out == ""


def test_repeated_blocks_are_one_memory() -> None:
    if not aliased.available():
        pytest.skip("aliasing memory needs Linux")
    block = torch.arange(4096, dtype=torch.float32).reshape(2, 2048)  # 16 KiB: whole pages
    whole = aliased.repeated(block, 3)
    assert whole.shape == (6, 2048) and whole.is_contiguous()
    assert torch.equal(whole[4:6], block)
    whole[2, 5] = -1.0  # written through the second block, seen by all three
    assert whole[0, 5] == whole[4, 5] == -1.0


def test_a_block_of_part_of_a_page_is_refused() -> None:
    with pytest.raises(ValueError, match="whole number"):
        aliased.repeated(torch.zeros(3, 5), 2)


@pytest.mark.parametrize("kernel", ["spmd_tiles_matmul", "grid_matmul"])
def test_the_acceptance_matmuls_compute_a_at_b(kernel: str) -> None:
    """The two forms of the exact-size matmuls, at a size whose 12 output tiles leave half of the
    24 blocks idle and with K looped three times."""
    bench = pytest.importorskip("bench")
    torch.manual_seed(0)
    a, b = torch.randn(512, 384).half(), torch.randn(384, 384).half()
    out = torch.zeros(512, 384)
    getattr(bench, kernel)(a, b, out)
    torch.testing.assert_close(out, a.float() @ b.float(), rtol=1e-2, atol=1e-2)
