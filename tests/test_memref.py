"""pl.MemRef(name, slots=n)[index]: tiles placed by hand in the slots of one allocation. The loop
stays sequential; slots taken by turns only remove the same-buffer hazard between iterations, so
the numbers do not change and the modeled time does. A bad placement is a MemRefError at the
user's line with a hint."""

import pytest
import torch

import pypto.language as pl
from pypto.ir import MemoryBudgetError, MemRefError, print_ir, structural_diff

N = 16  # tiles of [64, 128] FP32 (32 KB) streamed through one vector core


@pl.jit
def plain(x: pl.Tensor[[N * 64, 128], pl.FP32], out: pl.Out[pl.Tensor[[N * 64, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="stream"):
        for i in pl.range(N):
            t = pl.load(x, [i * 64, 0], [64, 128])
            pl.store(pl.exp(t), [i * 64, 0], out)
    return out


@pl.jit
def two_slots(x: pl.Tensor[[N * 64, 128], pl.FP32], out: pl.Out[pl.Tensor[[N * 64, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="stream"):
        for i in pl.range(N):
            t: pl.Tile[[64, 128], pl.FP32, pl.MemRef("ub", slots=2)[i % 2], pl.Mem.Vec] = pl.load(
                x, [i * 64, 0], [64, 128]
            )
            e: pl.Tile[[64, 128], pl.FP32, pl.MemRef("res", slots=2)[(i + 1) % 2], pl.Mem.Vec] = pl.exp(t)
            pl.store(e, [i * 64, 0], out)
    return out


@pl.jit
def one_slot(x: pl.Tensor[[N * 64, 128], pl.FP32], out: pl.Out[pl.Tensor[[N * 64, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="stream"):
        for i in pl.range(N):
            # One buffer for both, as the plain kernel's exp takes its operand's buffer.
            t: pl.Tile[[64, 128], pl.FP32, pl.MemRef("ub", slots=1)[i], pl.Mem.Vec] = pl.load(
                x, [i * 64, 0], [64, 128]
            )
            e: pl.Tile[[64, 128], pl.FP32, pl.MemRef("ub", slots=1)[0], pl.Mem.Vec] = pl.exp(t)
            pl.store(e, [i * 64, 0], out)
    return out


def streamed(kernel, x):
    out = torch.zeros(N * 64, 128)
    kernel(x, out)
    return out, kernel.last_report


def test_two_slots_give_the_same_numbers_as_torch_and_run_faster_than_one_buffer():
    x = torch.randn(N * 64, 128)
    plain_out, plain_report = streamed(plain, x)
    slotted_out, slotted_report = streamed(two_slots, x)
    torch.testing.assert_close(slotted_out, torch.exp(x))
    assert torch.equal(plain_out, slotted_out)
    # The load of tile i+1 fills the other slot while tile i is computed and stored.
    assert slotted_report.total_cycles < 0.7 * plain_report.total_cycles


def test_one_slot_is_the_plain_kernel_s_timing():
    x = torch.randn(N * 64, 128)
    plain_out, plain_report = streamed(plain, x)
    one_out, one_report = streamed(one_slot, x)
    assert torch.equal(plain_out, one_out)
    assert abs(one_report.total_cycles - plain_report.total_cycles) <= 0.03 * plain_report.total_cycles


def test_the_memref_prints_in_the_annotation_and_parses_back_before_and_after_lowering():
    parsed = two_slots.parse()
    text = print_ir(parsed)
    assert "pl.MemRef('ub', slots=2)[i % 2], pl.Mem.Vec]" in text
    assert "pl.MemRef('res', slots=2)[(i + 1) % 2]" in text
    assert structural_diff(parsed, pl.parse(text)) is None
    lowered = two_slots.lower()
    text = print_ir(lowered)
    assert structural_diff(lowered, pl.parse(text)) is None
    plan = lowered.function("stream").attrs["memory_plan"]
    t, e = plan.of("t"), plan.of("e")
    assert (t.slots, t.slot_var, t.size) == (2, "i", 64 * 128 * 4)
    assert [t.slot_offset(i) - t.offset for i in range(3)] == [0, t.size, 0]
    assert [e.slot_offset(i) - e.offset for i in range(3)] == [e.size, 0, e.size]
    assert e.offset >= t.end or t.offset >= e.end  # two names, two allocations


def test_a_changed_index_is_a_structural_difference():
    text = print_ir(two_slots.parse())
    changed = pl.parse(text.replace("[(i + 1) % 2]", "[i % 2]"))
    assert "memref" in (structural_diff(two_slots.parse(), changed) or "")


def test_affine_indices_normalize_and_constants_take_a_fixed_slot():
    @pl.jit
    def forms(x: pl.Tensor[[N * 64, 128], pl.FP32], out: pl.Out[pl.Tensor[[N * 64, 128], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="k"):
            for i in pl.range(0, N, 2):
                a: pl.Tile[[64, 128], pl.FP32, pl.MemRef("ub", slots=4)[(2 * i + 1) % 4], pl.Mem.Vec] = (
                    pl.load(x, [i * 64, 0], [64, 128])
                )
                pl.store(pl.exp(a), [i * 64, 0], out)
                b: pl.Tile[[64, 128], pl.FP32, pl.MemRef("ub", slots=4)[(i - 1) % 4], pl.Mem.Vec] = pl.load(
                    x, [(i + 1) * 64, 0], [64, 128]
                )
                pl.store(pl.exp(b), [(i + 1) * 64, 0], out)
                c: pl.Tile[[1, 128], pl.FP32, pl.MemRef("fixed", slots=2)[1], pl.Mem.Vec] = pl.load(
                    x, [0, 0], [1, 128]
                )
                pl.store(c, [0, 0], out)
        return out

    text = print_ir(forms.parse())
    assert "pl.MemRef('ub', slots=4)[(2 * i + 1) % 4]" in text
    assert "pl.MemRef('ub', slots=4)[(i + 3) % 4]" in text  # (i - 1) % 4
    assert "pl.MemRef('fixed', slots=2)[1]" in text
    lowered = forms.lower()
    assert structural_diff(lowered, pl.parse(print_ir(lowered))) is None
    plan = lowered.function("k").attrs["memory_plan"]
    a, b, c = plan.of("a"), plan.of("b"), plan.of("c")
    assert [(a.slot_offset(i) - a.offset) // a.size for i in (0, 2, 4)] == [1, 1, 1]
    assert [(b.slot_offset(i) - b.offset) // b.size for i in (0, 2, 4)] == [3, 1, 3]
    assert c.slots == 1 and c.offset % 512 == 0
    x = torch.randn(N * 64, 128)
    out = torch.zeros(N * 64, 128)
    forms(x, out)
    want = torch.exp(x)
    want[0] = x[0]
    torch.testing.assert_close(out, want)


def test_tiles_of_different_sizes_share_slots_of_the_largest():
    @pl.jit
    def mixed(x: pl.Tensor[[N * 64, 128], pl.FP32], out: pl.Out[pl.Tensor[[N * 64, 128], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="k"):
            for i in pl.range(N):
                t: pl.Tile[[64, 128], pl.FP32, pl.MemRef("ub", slots=2)[i % 2], pl.Mem.Vec] = pl.load(
                    x, [i * 64, 0], [64, 128]
                )
                h: pl.Tile[[32, 128], pl.FP32, pl.MemRef("ub", slots=2)[(i + 1) % 2], pl.Mem.Vec] = pl.load(
                    x, [i * 64, 0], [32, 128]
                )
                pl.store(pl.exp(t), [i * 64, 0], out)
                pl.store(h, [i * 64, 0], out)
        return out

    plan = mixed.lower().function("k").attrs["memory_plan"]
    t, h = plan.of("t"), plan.of("h")
    assert t.offset == h.offset and t.size == h.size == 64 * 128 * 4
    x = torch.randn(N * 64, 128)
    out = torch.zeros(N * 64, 128)
    mixed(x, out)
    want = torch.exp(x)
    for i in range(N):
        want[i * 64 : i * 64 + 32] = x[i * 64 : i * 64 + 32]
    torch.testing.assert_close(out, want)


# ---------------------------------------------------------------- errors


def _raises(kernel, error=MemRefError):
    x, out = torch.zeros(N * 64, 128), torch.zeros(N * 64, 128)
    with pytest.raises(error) as info:
        kernel.lower(x, out)
    err = info.value
    assert err.span is not None and err.hint
    return err


def _line_of(kernel, text):
    import inspect

    lines, first = inspect.getsourcelines(kernel.func if hasattr(kernel, "func") else kernel)
    return first + next(k for k, line in enumerate(lines) if text in line)


def test_an_index_out_of_range_is_an_error_at_the_line():
    @pl.jit
    def bad(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t: pl.Tile[[64, 128], pl.FP32, pl.MemRef("ub", slots=2)[2], pl.Mem.Vec] = pl.load(
                x, [0, 0], [64, 128]
            )
            pl.store(t, [0, 0], out)
        return out

    err = _raises(bad)
    assert "has no slot 2" in err.message and "0 to 1" in err.hint
    assert err.span.line == _line_of(bad, "[2], pl.Mem.Vec]")
    assert f":{err.span.line}:" in str(err) and "^" in str(err)


def test_a_non_affine_index_is_an_error():
    @pl.jit
    def bad(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(4):
                t: pl.Tile[[64, 128], pl.FP32, pl.MemRef("ub", slots=2)[(i * i) % 2], pl.Mem.Vec] = pl.load(
                    x, [i * 64, 0], [64, 128]
                )
                pl.store(t, [i * 64, 0], out)
        return out

    err = _raises(bad)
    assert "not a constant or an affine form" in err.message
    assert "i % 2" in err.hint
    assert err.span.line == _line_of(bad, "(i * i) % 2")


@pytest.mark.parametrize("index", ["(i // 2) % 2", "(i + j) % 2", "i % 3"])
def test_other_index_forms_are_errors(index):
    source = f"""
import pypto.language as pl

@pl.jit
def bad(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for j in pl.range(2):
            for i in pl.range(4):
                t: pl.Tile[[64, 128], pl.FP32, pl.MemRef("ub", slots=2)[{index}], pl.Mem.Vec] = pl.load(
                    x, [i * 64, 0], [64, 128]
                )
                pl.store(t, [i * 64, 0], out)
    return out
"""
    bad = _compiled(source, f"bad_index_{index}")
    err = _raises(bad)
    assert err.span.line == 9
    assert "i % 2" in err.hint or "slots" in err.hint


def _compiled(source, name):
    import linecache

    filename = f"<memref-{name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    scope: dict = {}
    exec(compile(source, filename, "exec"), scope)
    return scope["bad"]


def test_an_index_by_a_variable_that_is_not_a_loop_s_is_an_error():
    @pl.jit
    def bad(x: pl.Tensor, k: pl.Tensor[[1, 8], pl.INT32], out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(4):
                s = pl.read(k, [0, 0])  # a run-time scalar, not a loop's variable
                t: pl.Tile[[64, 128], pl.FP32, pl.MemRef("ub", slots=2)[s % 2], pl.Mem.Vec] = pl.load(
                    x, [i * 64, 0], [64, 128]
                )
                pl.store(t, [i * 64, 0], out)
        return out

    x, out = torch.zeros(N * 64, 128), torch.zeros(N * 64, 128)
    with pytest.raises(MemRefError) as info:
        bad.lower(x, torch.zeros(1, 8, dtype=torch.int32), out)
    err = info.value
    assert "not the variable of a loop" in err.message and "pl.range" in err.hint
    assert err.span.line == _line_of(bad, "[s % 2]")


def test_a_loop_outside_the_scope_does_not_index_a_memref():
    @pl.jit
    def bad(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        for i in pl.range(4):
            with pl.at(level=pl.Level.CORE_GROUP):
                t: pl.Tile[[64, 128], pl.FP32, pl.MemRef("ub", slots=2)[i % 2], pl.Mem.Vec] = pl.load(
                    x, [i * 64, 0], [64, 128]
                )
                pl.store(t, [i * 64, 0], out)
        return out

    err = _raises(bad)
    assert "not the variable of a loop" in err.message


def test_slots_that_differ_between_uses_of_a_name_are_an_error():
    @pl.jit
    def bad(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(4):
                t: pl.Tile[[64, 128], pl.FP32, pl.MemRef("ub", slots=2)[i % 2], pl.Mem.Vec] = pl.load(
                    x, [i * 64, 0], [64, 128]
                )
                e: pl.Tile[[64, 128], pl.FP32, pl.MemRef("ub", slots=3)[i % 3], pl.Mem.Vec] = pl.exp(t)
                pl.store(e, [i * 64, 0], out)
        return out

    err = _raises(bad)
    assert "slots=3 here but slots=2" in err.message and "same slots=" in err.hint
    assert err.span.line == _line_of(bad, "slots=3)[i % 3]")


def test_tiles_of_two_memory_spaces_under_one_name_are_an_error():
    @pl.jit
    def bad(
        a: pl.Tensor[[64, 64], pl.FP16],
        b: pl.Tensor[[64, 64], pl.FP16],
        out: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
    ):
        with pl.at(level=pl.Level.CORE_GROUP):
            m: pl.Tile[[64, 64], pl.FP16, pl.MemRef("buf", slots=2)[0], pl.Mem.Mat] = pl.load(
                a, [0, 0], [64, 64], target_memory=pl.Mem.Mat
            )
            lhs: pl.Tile[[64, 64], pl.FP16, pl.MemRef("buf", slots=2)[1], pl.Mem.Left] = pl.move(
                m, target_memory=pl.Mem.Left
            )
            rhs = pl.move(pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            out[:] = pl.matmul(lhs, rhs)
        return out

    a, b = torch.zeros(64, 64).half(), torch.zeros(64, 64).half()
    with pytest.raises(MemRefError) as info:
        bad.lower(a, b, torch.zeros(64, 64))
    err = info.value
    assert "one memory space" in err.message and "differently" in err.hint
    assert err.span.line == _line_of(bad, 'MemRef("buf", slots=2)[1]')


def test_slots_must_be_a_positive_int_and_an_annotation_needs_an_index():
    with pytest.raises(MemRefError, match="positive int"):
        pl.MemRef("ub", slots=0)

    @pl.jit
    def bad(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t: pl.Tile[[64, 128], pl.FP32, pl.MemRef("ub", slots=2), pl.Mem.Vec] = pl.load(
                x, [0, 0], [64, 128]
            )
            pl.store(t, [0, 0], out)
        return out

    err = _raises(bad)
    assert "needs an index" in err.message and "[i % 2]" in err.hint


def test_an_over_budget_memref_is_the_memory_budget_error():
    @pl.jit
    def big(x: pl.Tensor[[8 * 128, 256], pl.FP32], out: pl.Out[pl.Tensor[[8 * 128, 256], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="big"):
            for i in pl.range(8):  # 2 x 128 KB: more than Vec holds
                t: pl.Tile[[128, 256], pl.FP32, pl.MemRef("ub", slots=2)[i % 2], pl.Mem.Vec] = pl.load(
                    x, [i * 128, 0], [128, 256]
                )
                pl.store(pl.exp(t), [i * 128, 0], out)
        return out

    with pytest.raises(MemoryBudgetError) as info:
        big.lower()
    err = info.value
    assert "Vec buffer usage" in err.message
    assert "pl.MemRef('ub', slots=2) takes 2 x 131072 bytes" in err.hint


def test_a_pipelined_loop_does_not_re_slot_a_memref_tile():
    @pl.jit
    def piped(x: pl.Tensor[[N * 64, 128], pl.FP32], out: pl.Out[pl.Tensor[[N * 64, 128], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="k"):
            for i in pl.pipeline(N, stage=2):
                t: pl.Tile[[64, 128], pl.FP32, pl.MemRef("ub", slots=1)[0], pl.Mem.Vec] = pl.load(
                    x, [i * 64, 0], [64, 128]
                )
                pl.store(pl.exp(t), [i * 64, 0], out)
        return out

    plan = piped.lower().function("k").attrs["memory_plan"]
    assert plan.of("t").slots == 1
    assert plan.of("exp").slots == 2  # the loop's own tiles still take a slot per stage
