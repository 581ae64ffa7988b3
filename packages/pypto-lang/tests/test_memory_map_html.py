"""``pypto.tools.memory_map``: each kernel's buffers drawn by address and lifetime, on one page."""

import warnings
from html.parser import HTMLParser

import pytest
from click.testing import CliRunner
from lang_kernels_explicit import explicit
from lang_kernels_seed import mixed

import pypto.language as pl
from pypto.passes import CompileWarning
from pypto.passes.allocate import tile_lifetimes
from pypto.runtime import RunConfig, get_target
from pypto.runtime.reports.memory_map import plan_of
from pypto.tools.memory_map import MemoryMapError, load_program, main, memory_map_html, statement_lines

A2A3 = RunConfig(platform="a2a3")


class Elements(HTMLParser):
    """Each start tag's attributes, and for each table row the text of its cells."""

    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.rows: list[tuple[dict[str, str | None], list[str]]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag == "tr":
            self.rows.append((dict(attrs), []))
        elif tag == "td":
            self._cell = []

    def handle_endtag(self, tag):
        if tag == "td" and self._cell is not None:
            self.rows[-1][1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def parsed(html: str) -> Elements:
    page = Elements()
    page.feed(html)
    page.close()
    return page


def compiled(kernel):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CompileWarning)  # the explicit kernel leaves pops unfreed on purpose
        return kernel.compile(config=A2A3)


@pl.jit
def mixed_512(
    a: pl.Tensor[[512, 256], pl.FP16],
    b: pl.Tensor[[256, 128], pl.FP16],
    bias: pl.Tensor[[512, 128], pl.FP32],
    out: pl.Out[pl.Tensor[[512, 128], pl.FP32]],
):
    """The seed kernel on 512 rows: its scope runs as a loop over 64-row blocks."""
    with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)], name_hint="mixed"):
        acc = pl.matmul(a, b, out_dtype=pl.FP32)
        out[:] = pl.add(acc, bias)
    return out


def loop_carried():
    @pl.jit
    def running_max(x: pl.Tensor[[128, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="running_max"):
            first = pl.load(x, [0, 0], [32, 64])
            for i, (mx,) in pl.range(1, 4, init_values=(first,)):
                mx = pl.yield_(pl.maximum(mx, pl.load(x, [i * 32, 0], [32, 64])))
            pl.store(mx, [0, 0], out)
        return out

    return running_max


@pytest.mark.parametrize(
    "kernel", [mixed, explicit, loop_carried()], ids=["seed-mixed", "explicit-rings", "carried"]
)
def test_every_buffer_of_every_plan_is_listed_and_drawn_at_its_address(kernel):
    program = compiled(kernel).lowered
    page = parsed(memory_map_html(program, get_target("a2a3")))
    rows = {(a["data-kernel"], a["data-buffer"]): cells for a, cells in page.rows if "data-buffer" in a}
    drawn = {
        (a["data-kernel"], a["data-buffer"]): a["data-address"]
        for tag, a in page.tags
        if tag == "g" and a.get("class") == "buffer"
    }
    kernels = [fn for fn in program.functions.values() if plan_of(fn) is not None]
    assert len(kernels) == len([a for tag, a in page.tags if tag == "section"])
    for fn in kernels:
        _, aliases = tile_lifetimes(fn.body)
        results = {result.name for result in aliases}
        for alloc in plan_of(fn).allocations.values():
            cells = rows[fn.name, alloc.name]
            assert cells[0].startswith(alloc.name) and cells[1] == alloc.space.name
            assert cells[2] == f"0x{alloc.offset:05x}" and cells[3] == str(alloc.size)
            if alloc.name not in results:  # a loop's result is drawn as the iter_arg it names
                assert drawn[fn.name, alloc.name] == f"0x{alloc.offset:05x}"
        assert {name for kernel_, name in drawn if kernel_ == fn.name} == set(
            plan_of(fn).allocations
        ) - results


def test_the_rings_are_drawn_at_the_bottom_of_their_space_as_reserved():
    page = parsed(memory_map_html(compiled(explicit).lowered, get_target("a2a3")))
    rings = [a["data-ring"] for tag, a in page.tags if tag == "g" and a.get("class") == "ring"]
    assert rings == [
        "[reserved] cross-core pipe ring (requested, 2 slot(s) of 16 KiB)",
        "[reserved] cross-core pipe ring (requested, 2 slot(s) of 16 KiB)",
    ]
    reserved = [cells for a, cells in page.rows if a.get("class") == "reserved"]
    assert [(cells[1], cells[2], cells[3]) for cells in reserved] == [
        ("Mat", "0x00000", "32768"),
        ("Vec", "0x00000", "32768"),
    ]
    seed = parsed(memory_map_html(compiled(mixed).lowered, get_target("a2a3")))
    assert [a["data-ring"] for tag, a in seed.tags if tag == "g" and a.get("class") == "ring"] == [
        "[reserved] cross-core pipe ring (automatic, 2 slot(s) of 64 KiB)"
    ]


def _buffers(page: Elements, kernel: str) -> dict[str, tuple[int, int]]:
    return {
        a["data-buffer"]: (int(a["data-first"]), int(a["data-last"]))
        for tag, a in page.tags
        if tag == "g" and a.get("class") == "buffer" and a["data-kernel"] == kernel
    }


def test_lifetimes_run_from_the_definition_to_the_last_use_and_through_loops():
    program = compiled(mixed_512).lowered
    aic = program.functions["mixed_aic"]
    lines = [line.text for line in statement_lines(aic.body)]
    row = {text.split(" = ")[0]: i for i, text in enumerate(lines)}
    loop = next(i for i, text in enumerate(lines) if text.startswith("for "))
    page = parsed(memory_map_html(program, get_target("a2a3")))
    lives = _buffers(page, "mixed_aic")
    assert lives["b_mat"] == (row["b_mat"], row["b_right"])  # dies at the move that reads it
    assert lives["b_right"] == (row["b_right"], len(lines) - 1)  # read in the loop: live to its end
    # The row loop is pipelined: a tile defined in it has a slot per stage, each in use at some
    # iteration, so its buffer lives through the whole loop.
    assert row["a_left"] > loop and lives["a_left"] == (loop, len(lines) - 1)
    assert "a_left (2 slots of 32768, picked by r)" in memory_map_html(program, get_target("a2a3"))
    # The loads issued ahead share one buffer of a slot per iteration in flight.
    assert lives["a_mat_next"] == (loop, len(lines) - 1) and lives["a_mat_first0"] == (
        row["a_mat_first0"],
        loop,
    )
    listing = [a for tag, a in page.tags if tag == "div" and a.get("class") == "stmt"]
    assert len(listing) == len(lines) + len(statement_lines(program.functions["mixed_aiv"].body))


def test_a_carried_tile_lives_through_the_whole_loop():
    program = compiled(loop_carried()).lowered
    (fn,) = [fn for fn in program.functions.values() if plan_of(fn) is not None]
    lines = [line.text for line in statement_lines(fn.body)]
    loop = next(i for i, text in enumerate(lines) if text.startswith("for "))
    lives = _buffers(parsed(memory_map_html(program, get_target("a2a3"))), fn.name)
    (carried,) = [name for name, (first, _) in lives.items() if first == loop]
    last_in_loop = max(i for i, line in enumerate(statement_lines(fn.body)) if line.depth > 0)
    assert lives[carried][1] >= last_in_loop


def test_the_page_of_a_compiled_program_needs_no_target_and_fetches_nothing():
    html = memory_map_html(compiled(mixed))
    assert html.startswith("<!DOCTYPE html>") and "on target <code>a2a3</code>" in html
    page = parsed(html)
    assert not [a for tag, a in page.tags if tag in ("script", "link", "img") and ("src" in a or "href" in a)]
    assert "https://" not in html


def test_a_dump_and_an_output_directory_read_back_with_their_plans(tmp_path):
    dumps = tmp_path / "dumps"
    program = mixed.compile(
        config=RunConfig(platform="a2a3", dump_passes=dumps, save_kernels_dir=tmp_path / "out")
    )
    after = next(dumps.glob("*_after_AllocateMemory.py"))
    for source in (after, program.output_dir):
        read = load_program(source)
        assert {fn.name: plan_of(fn) for fn in read.functions.values() if plan_of(fn)} == {
            fn.name: plan_of(fn) for fn in program.lowered.functions.values() if plan_of(fn)
        }


def test_a_dump_before_allocate_memory_is_an_error_naming_the_dump_to_give(tmp_path):
    mixed.compile(config=RunConfig(platform="a2a3", dump_passes=tmp_path))
    before = next(tmp_path.glob("*_after_StampTfree.py"))
    after = next(tmp_path.glob("*_after_AllocateMemory.py"))
    with pytest.raises(MemoryMapError) as info:
        load_program(before)
    assert (
        info.value.message
        == f"{before} holds no memory plan: it was written before AllocateMemory placed the tiles"
    )
    assert info.value.hint == f"give {after} (or a later pass's dump)"
    with pytest.raises(MemoryMapError, match=r"is a directory without program\.py"):
        load_program(tmp_path)


def test_the_command_writes_the_page_and_reports_errors_without_a_traceback(tmp_path):
    mixed.compile(config=RunConfig(platform="a2a3", dump_passes=tmp_path / "d"))
    after = next((tmp_path / "d").glob("*_after_AllocateMemory.py"))
    out = tmp_path / "map.html"
    runner = CliRunner()
    result = runner.invoke(main, [str(after), "-o", str(out), "-p", "a2a3"])
    assert result.exit_code == 0, result.output
    assert 'data-buffer="bias_vec"' in out.read_text()
    before = next((tmp_path / "d").glob("*_after_ExpandMixedKernel.py"))
    result = runner.invoke(main, [str(before), "-o", str(out)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "holds no memory plan" in result.output and f"hint: give {after}" in result.output
    help_text = runner.invoke(main, ["-h"]).output
    assert (
        "[default: memory_map.html]" in help_text and "python -m pypto.tools.memory_map dumps/" in help_text
    )
