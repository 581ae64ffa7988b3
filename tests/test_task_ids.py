"""Task ids as values: ``pl.TASK_ID`` is a dtype and ``pl.TaskId`` is ``pl.Scalar[pl.TASK_ID]``;
``pl.array.create(n, pl.TASK_ID)`` collects task ids (carried through loops, ``pl.parallel``
ones too), and ``deps=`` waits on task ids, whole arrays (every id they hold; a slot never
written names no task) and array elements, mixed in one list. Numbers against torch, the edges
of the run's task graph, and each misuse as an error at its line."""

import pytest
import torch

import pypto.language as pl
from pypto.ir import DataType, ParseError, ScalarType, TypeCheckError
from pypto.runtime import RunConfig, compile_program

N, TILE, COLS = 4, 32, 64
ROWS = N * TILE
T = pl.Tensor[[ROWS, COLS], pl.FP32]
SIM = RunConfig(platform="a2a3sim")


def line_of(text: str) -> int:
    with open(__file__) as f:
        return next(i for i, line in enumerate(f, 1) if text in line)


def rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def edges(report):
    return {(e.src, e.dst) for e in report.edges}


def test_task_id_is_a_dtype_and_task_id_annotation_is_a_scalar_of_it():
    assert pl.TASK_ID is DataType.TASK_ID
    assert pl.TaskId == pl.Scalar[pl.TASK_ID]
    assert not pl.TASK_ID.is_numeric and pl.INT32.is_numeric
    assert str(ScalarType(DataType.TASK_ID)) == "pl.TaskId"


# ---------------------------------------------------------------- fan-in through an array


@pl.jit
def fan_in(a: T, out: pl.Out[T]):
    scratch = pl.create_tensor([ROWS, COLS], pl.FP32, manual_dep=True)
    writers = pl.array.create(N, pl.TASK_ID)
    for i in pl.parallel(N):  # a pl.parallel loop carries the array its iterations write
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="band") as tid:
            t = pl.load(a, [i * TILE, 0], [TILE, COLS])
            pl.store(pl.mul(t, 2.0), [i * TILE, 0], scratch)
        writers[i] = tid
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="gather", deps=[writers]):
        for i in pl.range(N):
            pl.store(pl.add(pl.load(scratch, [i * TILE, 0], [TILE, COLS]), 1.0), [i * TILE, 0], out)
    return out


def test_deps_on_an_array_waits_for_every_task_it_holds():
    a, out = rand(ROWS, COLS), torch.zeros(ROWS, COLS)
    fan_in(a, out, config=SIM)
    torch.testing.assert_close(out, a * 2 + 1)
    report = fan_in.last_report
    assert edges(report) == {(k, N + 1) for k in range(1, N + 1)}  # only the declared ones
    assert all(e.declared for e in report.edges)
    gather = next(t for t in report.tasks if t.kernel == "gather")
    assert gather.start_cycle >= max(t.end_cycle for t in report.tasks if t.kernel == "band")


@pl.jit
def partly_written(a: T, out: pl.Out[T]):
    tids = pl.array.create(N, pl.TASK_ID)  # slots 1..3 are never written: they name no task
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="first") as first:
        out[:] = pl.mul(a, 3.0)
    tids[0] = first
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="second", deps=[tids]):
        out[0:TILE, :] = pl.neg(out[0:TILE, :])
    return out


def test_a_slot_never_written_waits_for_nothing():
    a, out = rand(ROWS, COLS, seed=1), torch.zeros(ROWS, COLS)
    partly_written(a, out, config=SIM)
    want = a * 3
    want[0:TILE] = -want[0:TILE]
    torch.testing.assert_close(out, want)
    assert {(e.src, e.dst, e.tensor) for e in partly_written.last_report.edges} == {(1, 2, None)}


@pl.jit
def mixed_deps(a: T, b: T, c: T, out: pl.Out[T]):
    x = pl.create_tensor([ROWS, COLS], pl.FP32, manual_dep=True)
    y = pl.create_tensor([ROWS, COLS], pl.FP32, manual_dep=True)
    z = pl.create_tensor([ROWS, COLS], pl.FP32, manual_dep=True)
    tids = pl.array.create(2, pl.TASK_ID)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="make_x") as tx:
        x[:] = pl.exp(a)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="make_y") as ty:
        y[:] = pl.exp(b)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="make_z") as tz:
        z[:] = pl.exp(c)
    tids[0] = ty
    tids[1] = tz
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="sum", deps=[tx, tids[1], tids]):
        out[:] = pl.add(pl.add(x, y), z)
    return out


def test_a_deps_list_mixes_task_ids_array_elements_and_arrays():
    a, b, c = rand(ROWS, COLS, seed=2), rand(ROWS, COLS, seed=3), rand(ROWS, COLS, seed=4)
    out = torch.zeros(ROWS, COLS)
    mixed_deps(a, b, c, out, config=SIM)
    torch.testing.assert_close(out, a.exp() + b.exp() + c.exp())
    assert edges(mixed_deps.last_report) == {(1, 4), (2, 4), (3, 4)}


@pl.jit
def comprehension(a: T, out: pl.Out[T]):
    scratch = pl.create_tensor([ROWS, COLS], pl.FP32, manual_dep=True)
    tids = pl.array.create(N, pl.TASK_ID)
    for i in pl.range(N):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="band", no_dep_args=[a]) as tid:
            pl.store(pl.exp(pl.load(a, [i * TILE, 0], [TILE, COLS])), [i * TILE, 0], scratch)
        tids[i] = tid
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="copy", deps=[tids[k] for k in range(N)]):
        out[:] = pl.add(scratch, 0.0)
    return out


def test_deps_takes_a_comprehension_over_a_compile_time_range():
    a, out = rand(ROWS, COLS, seed=5), torch.zeros(ROWS, COLS)
    comprehension(a, out, config=SIM)
    torch.testing.assert_close(out, a.exp())
    assert edges(comprehension.last_report) == {(k, N + 1) for k in range(1, N + 1)}


# ---------------------------------------------------------------- in a program, through loops


def phase_fence(joined: bool):
    """Two fan-out phases in a manual scope, the second gated on the first's whole task id array
    (directly, or through a pl.system.task_dummy join)."""

    @pl.program
    class PhaseFence:
        @pl.function(type=pl.FunctionType.InCore)
        def stripe(
            self,
            data: T,
            row: pl.Scalar[pl.INDEX],
            bias: pl.Scalar[pl.FP32],
            out: pl.Out[T],
        ) -> T:
            t = pl.load(data, [row, 0], [TILE, COLS])
            return pl.store(pl.add(t, bias), [row, 0], out)

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, data: T, out: pl.Out[T]) -> T:
            with pl.manual_scope():
                tids = pl.array.create(2, pl.TASK_ID)
                for phase, (prev,) in pl.range(2, init_values=(tids,)):
                    nxt = pl.array.create(2, pl.TASK_ID)
                    if joined:
                        gate = pl.system.task_dummy(deps=[prev])
                        for b in pl.parallel(2):
                            out, tid = pl.submit(
                                self.stripe, data, (phase * 2 + b) * TILE, 1.0, out, deps=[gate]
                            )
                            nxt[b] = tid
                    else:
                        for b in pl.parallel(2):
                            out, tid = pl.submit(
                                self.stripe, data, (phase * 2 + b) * TILE, 1.0, out, deps=[prev]
                            )
                            nxt[b] = tid
                    tids = pl.yield_(nxt)
            return out

    return PhaseFence


@pytest.mark.parametrize("joined", [False, True], ids=["array", "task_dummy"])
def test_a_phase_waits_for_the_whole_previous_phase(joined):
    compiled = compile_program(phase_fence(joined), SIM)
    data, out = rand(ROWS, COLS, seed=6), torch.zeros(ROWS, COLS)
    compiled.run(data, out)
    torch.testing.assert_close(out, data + 1)
    report = compiled.last_report
    ran = sorted({t.task_id for t in report.tasks})
    first, second = ran[:2], ran[2:]
    # through the join, its dependents wait for what it waited for
    assert edges(report) == {(p, q) for p in first for q in second}
    assert len(report.submitted) == (6 if joined else 4)  # the joins are submitted tasks too
    assert [t.blocks for t in report.submitted].count(0) == (2 if joined else 0)


def test_the_phase_fence_prints_as_pl_that_reads_back_equal():
    from pypto.ir import structural_diff

    for joined in (False, True):
        program = phase_fence(joined)
        text = program.as_python()
        assert "pl.array.create(size=2, dtype=pl.TASK_ID)" in text
        assert ("pl.system.task_dummy(deps=[prev])" in text) is joined
        assert structural_diff(pl.parse(text), program) is None


# ---------------------------------------------------------------- misuse


def parse_error(kernel, *args, error=ParseError):
    with pytest.raises(error) as info:
        kernel.lower(*args)
    return info.value


def tensors():
    return rand(ROWS, COLS), torch.zeros(ROWS, COLS)


def test_a_task_id_array_in_kernel_code_is_an_error():
    @pl.jit
    def bad(a: T, out: pl.Out[T]):
        with pl.at(level=pl.Level.CORE_GROUP):
            tids = pl.array.create(2, pl.TASK_ID)  # noqa: F841  (the line)
            out[:] = pl.exp(a)
        return out

    err = parse_error(bad, *tensors())
    assert "an array of task ids (pl.TASK_ID) belongs to the orchestration" in err.message
    assert err.span.line == line_of("tids = pl.array.create(2, pl.TASK_ID)  # noqa: F841  (the line)")


def test_arithmetic_on_a_task_id_is_a_type_error():
    @pl.jit
    def bad(a: T, out: pl.Out[T]):
        with pl.at(level=pl.Level.CORE_GROUP) as t0:
            out[:] = pl.exp(a)
        t1 = t0 + 1  # noqa: F841  (the line)
        return out

    err = parse_error(bad, *tensors(), error=TypeCheckError)
    assert "a task id (pl.TASK_ID) names a task; it is no number" in err.message
    assert err.span.line == line_of("t1 = t0 + 1  # noqa: F841  (the line)")
    assert "deps=[...]" in err.hint


def test_a_number_into_a_task_id_array_is_a_type_error():
    @pl.jit
    def bad(a: T, out: pl.Out[T]):
        tids = pl.array.create(2, pl.TASK_ID)
        tids[0] = 3  # the line
        with pl.at(level=pl.Level.CORE_GROUP, deps=[tids]):
            out[:] = pl.exp(a)
        return out

    err = parse_error(bad, *tensors(), error=TypeCheckError)
    assert "writes Scalar[INDEX] into an array of TASK_ID" in err.message
    assert err.span.line == line_of("tids[0] = 3  # the line")


def test_a_tensor_of_task_ids_is_an_error():
    with pytest.raises(ParseError) as info:
        pl.Tensor[[4], pl.TASK_ID]
    assert "pl.Tensor cannot hold task ids (pl.TASK_ID)" in info.value.message


def test_a_task_id_parameter_is_an_error():
    @pl.jit
    def bad(a: T, t: pl.TaskId, out: pl.Out[T]):
        return out

    with pytest.raises(ParseError) as info:
        bad.lower(*tensors())
    assert "parameter 't' is annotated as a task id" in info.value.message


def test_deps_of_a_number_array_is_an_error():
    @pl.jit
    def bad(a: T, out: pl.Out[T]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.exp(a)
        with pl.at(level=pl.Level.CORE_GROUP, deps=[a]):  # the line
            out[:] = pl.neg(out)
        return out

    err = parse_error(bad, *tensors())
    assert err.message.startswith("deps= entries must be a TaskId variable")
    assert err.span.line == line_of("deps=[a]):  # the line")
