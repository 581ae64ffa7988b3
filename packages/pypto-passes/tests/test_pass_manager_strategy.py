"""``pypto.ir.pass_manager``: the pass manager of an optimization strategy, as PyPTO code spells it."""

import passes_irbuild as irbuild
import pytest

from pypto.ir import print_ir
from pypto.passes import DEFAULT_PIPELINE, lower


def test_the_pass_manager_module_names_the_strategy_and_the_manager():
    import pypto.ir
    from pypto.ir.pass_manager import OptimizationStrategy, PassManager
    from pypto.passes import PassManager as PassesManager

    assert PassManager is PassesManager is pypto.ir.PassManager
    assert OptimizationStrategy is pypto.ir.OptimizationStrategy
    assert [s.name for s in OptimizationStrategy] == ["Default"]


def test_run_passes_returns_the_program_the_default_pipeline_makes():
    from pypto.ir.pass_manager import OptimizationStrategy, PassManager

    manager = PassManager.get_strategy(OptimizationStrategy.Default)
    transformed = manager.run_passes(irbuild.staged_program())
    assert print_ir(transformed) == print_ir(lower(irbuild.staged_program(), irbuild.TARGET))


def test_the_pass_names_are_the_default_pipelines_in_order():
    from pypto.ir.pass_manager import OptimizationStrategy, PassManager

    manager = PassManager.get_strategy(OptimizationStrategy.Default)
    assert manager.get_pass_names() == list(DEFAULT_PIPELINE)
    assert manager.pass_names == tuple(DEFAULT_PIPELINE)
    assert [p.name for p in manager.passes] == list(DEFAULT_PIPELINE)


def test_run_passes_dumps_each_pass_into_the_output_dir_with_the_prefix(tmp_path):
    from pypto.ir.pass_manager import OptimizationStrategy, PassManager

    manager = PassManager.get_strategy(OptimizationStrategy.Default)
    manager.run_passes(irbuild.staged_program(), dump_ir=True, output_dir=tmp_path, prefix="staged_")
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == [f"staged_{i:02d}_after_{name}.py" for i, name in enumerate(DEFAULT_PIPELINE, start=1)]
    # Dumping is per call: the manager itself keeps no dump instrument.
    again = tmp_path / "again"
    manager.run_passes(irbuild.staged_program(), output_dir=again)
    assert not again.exists()


def test_get_strategy_and_run_passes_reject_what_they_do_not_take():
    from pypto.ir.pass_manager import OptimizationStrategy, PassManager

    with pytest.raises(TypeError, match="OptimizationStrategy"):
        PassManager.get_strategy("Default")
    with pytest.raises(TypeError, match="Program"):
        PassManager.get_strategy(OptimizationStrategy.Default).run_passes("program")
