"""``RunConfig(enable_dump_args=0|1|2)`` on a2a3sim: which tensors each level dumps (the marks of
``pl.dump_tag`` and ``dumps=``), their values against torch at each step (what a task reads before
it runs, what it writes after), with tasks that overlap, an spmd task and an early-resolve task;
no modeled time spent; the files, the reader (``pypto.tools.dump_viewer``) and its errors."""

import json

import pytest
import torch
from click.testing import CliRunner

import pypto.language as pl
from pypto.ir import ParseError, PyptoError
from pypto.runtime import RunConfig, compile_program
from pypto.runtime.settings import ConfigError
from pypto.tools import dump_viewer
from pypto.tools.dump_viewer import ArgsDumpError, first_mismatch, load

R, C = 32, 64
T = pl.Tensor[[R, C], pl.FP32]
B = pl.Tensor[[4 * R, C], pl.FP32]


def rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


@pl.jit
def two_steps(x: T, out: pl.Out[T]):
    mid = pl.create_tensor([R, C], dtype=pl.FP32)
    pl.dump_tag(mid)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="scale"):
        mid[:] = pl.mul(x, 2.0)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="shift", dumps=[out]):
        out[:] = pl.add(mid, 1.0)
    return out


def run_two_steps(tmp_path, level):
    x, out = rand(R, C), torch.zeros(R, C)
    two_steps(x, out, config=RunConfig(enable_dump_args=level, save_kernels_dir=tmp_path / f"l{level}"))
    return x, out, two_steps.last_report


def keys(entries):
    return [(e.task_id, e.kernel, e.tensor_name, e.role, e.when) for e in entries]


def test_level_0_dumps_nothing_and_the_marks_are_inert(tmp_path):
    _, _, report = run_two_steps(tmp_path, 0)
    assert report.args_dump is None
    assert not (tmp_path / "l0" / "dfx_outputs" / "args_dump").exists()


def test_level_1_dumps_the_marked_tensors_only(tmp_path):
    x, out, report = run_two_steps(tmp_path, 1)
    entries = load(report.args_dump)
    assert keys(entries) == [
        (1, "scale", "mid", "output", "after"),
        (2, "shift", "mid", "input", "before"),
        (2, "shift", "out", "output", "after"),
    ]
    torch.testing.assert_close(entries[0].tensor, x * 2)
    torch.testing.assert_close(entries[2].tensor, out)


def test_level_2_dumps_every_tasks_inputs_before_and_outputs_after_equal_to_torch(tmp_path):
    x, out, report = run_two_steps(tmp_path, 2)
    torch.testing.assert_close(out, x * 2 + 1)
    assert report.args_dump == str(tmp_path / "l2" / "dfx_outputs" / "args_dump")
    entries = load(tmp_path / "l2")  # the output directory finds its dfx_outputs/args_dump
    assert keys(entries) == [
        (1, "scale", "x", "input", "before"),
        (1, "scale", "mid", "output", "after"),
        (2, "shift", "mid", "input", "before"),
        (2, "shift", "out", "output", "after"),
    ]
    expected = [x, x * 2, x * 2, x * 2 + 1]
    for entry, value in zip(entries, expected, strict=True):
        assert entry.shape == (R, C) and entry.dtype == "FP32"
        torch.testing.assert_close(entry.tensor, value)
    assert first_mismatch(entries, {"x": x, "mid": x * 2, "out": x * 2 + 1}) is None
    wrong = first_mismatch(entries, {"mid": x * 2, "out": x * 2})
    assert wrong is not None and wrong.entry.index == 3 and wrong.max_abs == pytest.approx(1.0)


def test_dumping_costs_no_modeled_time(tmp_path):
    cycles = {level: run_two_steps(tmp_path, level)[2] for level in (0, 1, 2)}
    assert cycles[0].total_cycles == cycles[1].total_cycles == cycles[2].total_cycles
    assert [(t.task_id, t.start_cycle, t.end_cycle) for t in cycles[0].tasks] == [
        (t.task_id, t.start_cycle, t.end_cycle) for t in cycles[2].tasks
    ]


@pl.program
class Overlapping:
    """Two independent tasks run together; a third reads and writes ``acc`` (inout); a fourth
    overwrites ``mid`` once the early-resolve task that wrote it has resolved."""

    @pl.function(type=pl.FunctionType.InCore)
    def scale(self, a: T, out: pl.Out[T]) -> T:
        return pl.store(pl.mul(pl.load(a, [0, 0], [R, C]), 3.0), [0, 0], out)

    @pl.function(type=pl.FunctionType.InCore)
    def accumulate(self, a: T, acc: pl.InOut[T]) -> T:
        return pl.store(pl.add(pl.load(acc, [0, 0], [R, C]), pl.load(a, [0, 0], [R, C])), [0, 0], acc)

    @pl.function(type=pl.FunctionType.InCore)
    def rows(self, x: B, out: pl.Out[B]) -> B:
        row = pl.tile.get_block_idx() * R
        return pl.store(pl.exp(pl.load(x, [row, 0], [R, C])), [row, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: T, b: T, acc: pl.InOut[T], mid: pl.Out[T], x: B, wide: pl.Out[B]) -> T:
        pl.dump_tag(acc)
        mid, _t1 = pl.submit(self.scale, a, mid, dumps=[mid], allow_early_resolve=True)
        acc, _t2 = pl.submit(self.scale, b, acc)  # no edge with the first: they overlap
        acc, _t3 = pl.submit(self.accumulate, mid, acc)
        mid, _t4 = pl.submit(self.scale, b, mid, dumps=[mid])  # waits for task 1 to resolve
        wide, _t5 = pl.spmd_submit(self.rows, x, wide, core_num=4, dumps=[wide])
        return acc


def test_values_are_what_each_task_saw_with_overlap_inout_early_resolve_and_blocks(tmp_path):
    a, b, x = rand(R, C, seed=1), rand(R, C, seed=2), rand(4 * R, C, seed=3)
    acc, mid, wide = torch.zeros(R, C), torch.zeros(R, C), torch.zeros(4 * R, C)
    compiled = compile_program(Overlapping, RunConfig(save_kernels_dir=tmp_path))
    compiled.run(a, b, acc, mid, x, wide, config=RunConfig(enable_dump_args=1, save_kernels_dir=tmp_path))
    starts = {t.task_id: t.start_cycle for t in compiled.last_report.tasks}
    ends = {t.task_id: t.end_cycle for t in compiled.last_report.tasks}
    assert starts[2] < ends[1]  # the first two tasks did overlap
    entries = load(compiled.last_report.args_dump)
    found = {(e.task_id, e.tensor_name, e.when): e for e in entries}
    assert set(found) == {
        (1, "mid", "after"),
        (2, "acc", "after"),
        (3, "acc", "before"),
        (3, "acc", "after"),
        (4, "mid", "after"),
        (5, "wide", "after"),
    }
    torch.testing.assert_close(found[1, "mid", "after"].tensor, a * 3)  # not task 4's b * 3
    torch.testing.assert_close(found[2, "acc", "after"].tensor, b * 3)
    torch.testing.assert_close(found[3, "acc", "before"].tensor, b * 3)
    torch.testing.assert_close(found[3, "acc", "after"].tensor, b * 3 + a * 3)
    assert found[3, "acc", "before"].role == "inout"
    torch.testing.assert_close(found[4, "mid", "after"].tensor, b * 3)
    assert found[5, "wide", "after"].blocks == 4
    torch.testing.assert_close(found[5, "wide", "after"].tensor, x.exp())
    torch.testing.assert_close(acc, b * 3 + a * 3)


def test_the_files_follow_the_documented_layout(tmp_path):
    _, _, report = run_two_steps(tmp_path, 1)
    folder = tmp_path / "l1" / "dfx_outputs" / "args_dump"
    assert report.args_dump == str(folder)
    index = json.loads((folder / "args_dump.json").read_text())
    assert index["format"] == "pypto-args-dump" and index["level"] == 1 and index["program"] == "two_steps"
    sizes = [(e["offset"], e["nbytes"]) for e in index["entries"]]
    assert sizes == [(0, R * C * 4), (R * C * 4, R * C * 4), (2 * R * C * 4, R * C * 4)]
    assert (folder / "args_dump.bin").stat().st_size == 3 * R * C * 4


def test_a_new_run_replaces_the_previous_dump(tmp_path):
    run_two_steps(tmp_path, 2)
    two_steps(
        rand(R, C), torch.zeros(R, C), config=RunConfig(enable_dump_args=1, save_kernels_dir=tmp_path / "l2")
    )
    assert len(load(tmp_path / "l2")) == 3


def test_the_viewer_lists_shows_and_compares(tmp_path):
    x, _, report = run_two_steps(tmp_path, 2)
    runner = CliRunner()
    listed = runner.invoke(dump_viewer.main, [str(tmp_path / "l2")])
    assert listed.exit_code == 0, listed.output
    lines = listed.output.splitlines()
    assert "4 entries" in lines[0]
    assert "task 1" in lines[1] and "scale" in lines[1] and "x (input, before)" in lines[1]
    assert "[32x64] FP32" in lines[4] and "out (output, after)" in lines[4]
    assert f"max {float((x * 2 + 1).max()):.6g}" in lines[4]
    shown = runner.invoke(dump_viewer.main, [report.args_dump, "--show", "1"])
    assert shown.exit_code == 0 and "mid (output, after)" in shown.output and "tensor([[" in shown.output
    torch.save({"mid": x * 2, "out": x * 2 + 2}, tmp_path / "ref.pt")
    compared = runner.invoke(dump_viewer.main, [str(tmp_path / "l2"), "--compare", str(tmp_path / "ref.pt")])
    assert compared.exit_code == 1
    assert "first disagreement: entry 3, task 2 shift: out (output, after)" in compared.output


def test_viewer_errors_name_the_problem_with_a_hint(tmp_path):
    with pytest.raises(ArgsDumpError) as info:
        load(tmp_path)
    assert "holds no argument dump" in info.value.message and "enable_dump_args" in info.value.hint
    _, _, report = run_two_steps(tmp_path, 1)
    index = tmp_path / "l1" / "dfx_outputs" / "args_dump" / "args_dump.json"
    index.write_text("{not json")
    with pytest.raises(ArgsDumpError, match="cannot be read as JSON"):
        load(report.args_dump)
    index.write_text(json.dumps({"format": "pypto-args-dump", "version": 1, "entries": [{"index": 0}]}))
    with pytest.raises(ArgsDumpError, match="entry 0 is damaged"):
        load(report.args_dump)
    out = CliRunner().invoke(dump_viewer.main, [str(tmp_path / "missing")])
    assert out.exit_code == 1 and "does not exist" in out.output and "hint:" in out.output
    assert issubclass(ArgsDumpError, PyptoError)


def test_a_cut_short_data_file_is_an_error_when_read(tmp_path):
    _, _, report = run_two_steps(tmp_path, 1)
    data = tmp_path / "l1" / "dfx_outputs" / "args_dump" / "args_dump.bin"
    data.write_bytes(data.read_bytes()[:100])
    entries = load(report.args_dump)
    with pytest.raises(ArgsDumpError, match="ends before entry 0"):
        _ = entries[0].tensor


@pytest.mark.parametrize("level", [3, -1, "1", 1.5, None])
def test_bad_enable_dump_args_is_a_config_error(level):
    with pytest.raises(ConfigError) as info:
        RunConfig(enable_dump_args=level)
    assert "enable_dump_args" in info.value.message and info.value.hint


def test_true_and_false_are_levels_1_and_0():
    assert RunConfig(enable_dump_args=True).enable_dump_args == 1
    assert RunConfig(enable_dump_args=False).enable_dump_args == 0
    assert RunConfig().enable_dump_args == 0


def parse_error(tmp_path, body: str) -> ParseError:
    """The ParseError of a ``@pl.jit`` kernel whose body starts with ``body`` (its line 4 on)."""
    source = f"""
@pl.jit
def k(x: T, out: pl.Out[T]):
{body}
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(x, 2.0)
    return out
"""
    path = tmp_path / "bad_dump.py"
    path.write_text(source)
    namespace = {"pl": pl, "T": T}
    exec(compile(source, str(path), "exec"), namespace)
    with pytest.raises(ParseError) as info:
        namespace["k"].lower(rand(R, C), torch.zeros(R, C))
    return info.value


@pytest.mark.parametrize(
    ("body", "message", "hint"),
    [
        ("    pl.dump_tag(3)", "pl.dump_tag takes a tensor, got the int 3", "a tensor parameter"),
        ("    pl.dump_tag(x, out)", "pl.dump_tag takes one tensor, got 2 argument(s)", "one tensor per call"),
        ("    pl.dump_tag(x[0:16, :])", "pl.dump_tag marks a tensor by its name", "v = x[0:16, :]"),
        ("    pl.dump_tag(nowhere)", "unknown name 'nowhere'", "define it"),
        ("    n = 4\n    pl.dump_tag(n)", "pl.dump_tag takes a tensor, got", "a tensor parameter"),
    ],
)
def test_bad_dump_tag_input_is_a_parse_error_at_the_line(tmp_path, body, message, hint):
    err = parse_error(tmp_path, body)
    assert message in err.message and hint in err.hint
    assert err.span.line == 4 + body.count("\n")


def test_dumps_on_a_scope_must_name_a_tensor_it_uses():
    @pl.jit
    def unused(x: T, out: pl.Out[T]):
        other = pl.create_tensor([R, C], dtype=pl.FP32)
        with pl.at(level=pl.Level.CORE_GROUP, dumps=[other]):  # the line
            out[:] = pl.mul(x, 2.0)
        return out

    with pytest.raises(ParseError) as info:
        unused.lower(rand(R, C), torch.zeros(R, C))
    assert info.value.message == "dumps= names other, which this pl.at scope does not use"
    assert "_incore" not in info.value.message and "reads or writes" in info.value.hint
    with open(__file__) as f:
        assert info.value.span.line == next(i for i, line in enumerate(f, 1) if "# the line" in line)


def test_a_tile_in_kernel_code_cannot_be_tagged(tmp_path):
    err = parse_error(
        tmp_path,
        "    with pl.at(level=pl.Level.CORE_GROUP):\n        t = pl.load(x, [0, 0], [32, 64])\n        pl.dump_tag(t)",
    )
    assert err.message.startswith("pl.dump_tag(t) marks a tensor where tasks are dispatched")
