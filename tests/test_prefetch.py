"""pl.prefetch: asynchronous GM -> L2 prefetch in kernels. A prefetch changes no number (a kernel
computes what torch does, with it or without it); a2a3sim models its time as a GM read on the
core's MTE2 queue that the scalar unit does not wait for until pl.prefetch.wait; the handles print
and parse back; misuse is an error at the user's line."""

import textwrap

import pytest
import torch

import pypto.language as pl
from pypto.ir import ParseError, PyptoError, TypeCheckError, VerificationError, structural_diff
from pypto.runtime import RunConfig, VerificationLevel, run
from pypto_sim_a2a3.errors import PrefetchError

N = 8192
R, C = 32, 512


def streamed(prefetching: str):
    """exp(exp(x)) of a [R, C] tile, and a flat table y prefetched: "none", "wait_first" (the wait
    right after the prefetch) or "overlapped" (the wait after the compute)."""

    @pl.jit
    def kernel(
        x: pl.Tensor[[R, C], pl.FP32], y: pl.Tensor[[1, N], pl.FP32], out: pl.Out[pl.Tensor[[R, C], pl.FP32]]
    ):
        with pl.at(level=pl.Level.CORE_GROUP):
            if prefetching != "none":
                ctx = pl.prefetch.make_context()
                evt = pl.prefetch.async_prefetch(y, ctx)
                session = pl.prefetch.session(ctx)
            if prefetching == "wait_first":
                pl.prefetch.wait(evt, session)
            t = pl.exp(pl.exp(pl.load(x, [0, 0], [R, C])))
            if prefetching == "overlapped":
                pl.prefetch.wait(evt, session)
            pl.store(t, [0, 0], out)
        return out

    return kernel


def test_a_kernel_computes_the_same_numbers_with_and_without_a_prefetch():
    torch.manual_seed(0)
    x, y = torch.randn(R, C) * 0.1, torch.randn(1, N)
    results = {}
    for mode in ("none", "wait_first", "overlapped"):
        out = torch.zeros(R, C)
        streamed(mode)(x, y, out)
        results[mode] = out
    torch.testing.assert_close(results["none"], torch.exp(torch.exp(x)))
    assert torch.equal(results["wait_first"], results["none"])
    assert torch.equal(results["overlapped"], results["none"])


def _cycles(mode: str) -> int:
    kernel = streamed(mode)
    kernel(torch.randn(R, C) * 0.1, torch.randn(1, N), torch.zeros(R, C))
    return kernel.last_report.total_cycles


def test_the_wait_blocks_until_the_prefetch_lands_and_compute_before_it_hides_it():
    none, first, overlapped = (_cycles(m) for m in ("none", "wait_first", "overlapped"))
    # Waiting at once costs about the modeled transfer of 32 KiB (a GM read: ~1400 latency + bytes).
    assert first - none > 1400
    # Compute between the prefetch and its wait hides most of that time.
    assert none <= overlapped < first
    assert overlapped - none < (first - none) / 2


def test_a_prefetch_in_a_mixed_kernel_runs_on_the_vector_lanes_and_changes_no_number():
    @pl.jit
    def mixed(
        a: pl.Tensor[[64, 64], pl.FP16],
        b: pl.Tensor[[64, 64], pl.FP16],
        y: pl.Tensor[[4096], pl.FP32],
        out: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
    ):
        with pl.at(level=pl.Level.CORE_GROUP):
            ctx = pl.prefetch.make_context()
            evt = pl.prefetch.async_prefetch(y, ctx)
            c = pl.matmul(a, b, out_dtype=pl.FP32)
            pl.prefetch.wait(evt, pl.prefetch.session(ctx))
            out[:] = pl.exp(c)
        return out

    torch.manual_seed(1)
    a, b = torch.randn(64, 64, dtype=torch.float16) * 0.1, torch.randn(64, 64, dtype=torch.float16) * 0.1
    out = torch.zeros(64, 64)
    mixed(a, b, torch.randn(4096), out)
    torch.testing.assert_close(out, torch.exp(a.float() @ b.float()), rtol=1e-3, atol=1e-3)


def test_a_row_view_made_outside_the_scope_prefetches_and_a_second_wait_returns_at_once():
    @pl.jit
    def rows(x: pl.Tensor[[4, 256], pl.FP32], out: pl.Out[pl.Tensor[[4, 256], pl.FP32]]):
        row = x[2:3, :]
        with pl.at(level=pl.Level.CORE_GROUP):
            ctx = pl.prefetch.make_context()
            session = pl.prefetch.session(ctx)
            evt = pl.prefetch.async_prefetch(row, ctx)
            pl.prefetch.wait(evt, session)
            pl.prefetch.wait(evt, session)
            out[:] = pl.add(x, 1.0)
        return out

    x, out = torch.randn(4, 256), torch.zeros(4, 256)
    rows(x, out)
    assert torch.equal(out, x + 1.0)


PROGRAM = """
import pypto.language as pl


@pl.program
class Prefetched:
    @pl.function(type=pl.FunctionType.InCore)
    def scale(self, x: pl.Tensor[[1, 4096], pl.FP32], out: pl.Out[pl.Tensor[[1, 4096], pl.FP32]]):
        ctx = pl.prefetch.make_context()
        evt = pl.prefetch.async_prefetch(x, ctx)
        session = pl.prefetch.session(ctx)
        landed = pl.prefetch.wait(evt, session)
        for i in pl.range(4):
            t = pl.load(x, [0, i * 1024], [1, 1024])
            pl.store(pl.mul(t, 2.0), [0, i * 1024], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[1, 4096], pl.FP32], out: pl.Out[pl.Tensor[[1, 4096], pl.FP32]]):
        out = self.scale(x, out)
        return out
"""


def _program(source: str, tmp_path, name: str = "prefetched.py"):
    path = tmp_path / name
    path.write_text(source)
    namespace: dict = {}
    exec(compile(source, str(path), "exec"), namespace)
    return namespace


def test_the_handles_print_as_annotations_and_the_program_parses_back_and_runs(tmp_path):
    program = _program(PROGRAM, tmp_path)["Prefetched"]
    text = program.as_python()
    assert "ctx: pl.PrefetchAsyncContext = pl.prefetch.make_context()" in text
    assert "evt: pl.AsyncEvent = pl.prefetch.async_prefetch(x, ctx)" in text
    assert "session: pl.AsyncSession = pl.prefetch.session(ctx)" in text
    assert "landed: pl.Scalar[pl.BOOL] = pl.prefetch.wait(evt, session)" in text
    again = pl.parse(text)
    assert structural_diff(program, again) is None
    assert again.as_python() == text
    x, out = torch.randn(1, 4096), torch.zeros(1, 4096)
    run(again, x, out, config=RunConfig(platform="a2a3sim"))
    assert torch.equal(out, x * 2.0)


def test_every_pass_dump_of_a_prefetching_program_round_trips(tmp_path):
    program = _program(PROGRAM, tmp_path)["Prefetched"]
    x, out = torch.randn(1, 4096), torch.zeros(1, 4096)
    run(program, x, out, config=RunConfig(platform="a2a3sim", verification_level=VerificationLevel.ROUNDTRIP))
    assert torch.equal(out, x * 2.0)


def _failure(tmp_path, body: str, error: type[PyptoError]) -> PyptoError:
    source = (
        "import pypto.language as pl\n\n\n@pl.jit\n"
        "def k(x: pl.Tensor[[4, 256], pl.FP32], y: pl.Tensor[[256], pl.FP32],"
        " out: pl.Out[pl.Tensor[[4, 256], pl.FP32]]):\n"
        + textwrap.indent(textwrap.dedent(body), "    ")
        + "    return out\n"
    )
    kernel = _program(source, tmp_path, "bad.py")["k"]
    with pytest.raises(error) as caught:
        kernel(torch.randn(4, 256), torch.randn(256), torch.zeros(4, 256))
    err = caught.value
    assert err.span is not None and err.span.file.endswith("bad.py") and err.hint
    return err


def test_a_source_of_several_rows_is_refused_at_the_prefetch(tmp_path):
    err = _failure(
        tmp_path,
        """
        with pl.at(level=pl.Level.CORE_GROUP):
            ctx = pl.prefetch.make_context()
            evt = pl.prefetch.async_prefetch(x, ctx)
            out[:] = pl.add(x, 1.0)
        """,
        TypeCheckError,
    )
    assert err.span.line == 9 and "flat contiguous region" in err.message and "[4, 256]" in err.message


def test_a_prefetch_outside_a_kernel_is_refused(tmp_path):
    err = _failure(
        tmp_path,
        """
        ctx = pl.prefetch.make_context()
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.add(x, 1.0)
        """,
        ParseError,
    )
    assert err.span.line == 7 and "outside a pl.at scope" in err.message and "pl.at" in err.hint


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ("pl.prefetch.async_prefetch(y, 3)", "ctx must be a handle, got the int 3"),
        ("pl.prefetch.async_prefetch(pl.load(y, [0], [64]), ctx)", "source must be a tensor"),
        ("pl.prefetch.wait(session, evt)", "the event must be the handle of type AsyncEvent"),
        ("pl.prefetch.wait(evt, ctx)", "the session must be the handle of type AsyncSession"),
        ("pl.prefetch.session(evt)", "ctx must be the handle of type PrefetchAsyncContext"),
        ("pl.prefetch.make_context(ctx)", "too many positional arguments"),
    ],
)
def test_wrong_argument_kinds_are_refused_at_the_call(tmp_path, call, message):
    err = _failure(
        tmp_path,
        f"""
        with pl.at(level=pl.Level.CORE_GROUP):
            ctx = pl.prefetch.make_context()
            evt = pl.prefetch.async_prefetch(y, ctx)
            session = pl.prefetch.session(ctx)
            bad = {call}
            out[:] = pl.add(x, 1.0)
        """,
        PyptoError,
    )
    assert err.span.line == 11 and message in err.message


def test_a_wait_in_the_session_of_another_context_is_an_error_at_the_wait(tmp_path):
    err = _failure(
        tmp_path,
        """
        with pl.at(level=pl.Level.CORE_GROUP):
            ctx = pl.prefetch.make_context()
            other = pl.prefetch.make_context()
            evt = pl.prefetch.async_prefetch(y, ctx)
            pl.prefetch.wait(evt, pl.prefetch.session(other))
            out[:] = pl.add(x, 1.0)
        """,
        PrefetchError,
    )
    assert err.span.line == 11 and "session of another" in err.message


def test_a_mistyped_handle_annotation_is_refused(tmp_path):
    err = _failure(
        tmp_path,
        """
        with pl.at(level=pl.Level.CORE_GROUP):
            ctx = pl.prefetch.make_context()
            evt: pl.AsyncSession = pl.prefetch.async_prefetch(y, ctx)
            out[:] = pl.add(x, 1.0)
        """,
        TypeCheckError,
    )
    assert "annotated pl.AsyncSession" in err.message and err.hint.endswith("pl.AsyncEvent")


def test_a_handle_is_no_kernel_parameter_and_no_operand_of_arithmetic(tmp_path):
    source = PROGRAM.replace(
        "def scale(self, x: pl.Tensor[[1, 4096], pl.FP32],",
        "def scale(self, c: pl.AsyncEvent, x: pl.Tensor[[1, 4096], pl.FP32],",
    )
    with pytest.raises(ParseError, match="a handle; kernel parameters are tensors or scalars"):
        _program(source, tmp_path)
    err = _failure(
        tmp_path,
        """
        with pl.at(level=pl.Level.CORE_GROUP):
            ctx = pl.prefetch.make_context()
            out[:] = pl.add(x, ctx)
        """,
        PyptoError,
    )
    assert "PrefetchAsyncContext" in err.message


def test_a_prefetch_in_a_hand_written_aic_kernel_is_refused(tmp_path):
    source = """
import pypto.language as pl


@pl.program
class OnCube:
    @pl.function(type=pl.FunctionType.AIC)
    def k(self, y: pl.Tensor[[1, 4096], pl.FP32]):
        ctx = pl.prefetch.make_context()
        evt = pl.prefetch.async_prefetch(y, ctx)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, y: pl.Tensor[[1, 4096], pl.FP32]):
        self.k(y)
"""
    program = _program(source, tmp_path, "oncube.py")["OnCube"]
    with pytest.raises(VerificationError, match=r"vector core \(AIV\) only") as err:
        run(program, torch.randn(1, 4096))
    assert err.value.span.line == 9 and "AIV function" in err.value.hint
