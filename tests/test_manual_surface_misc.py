"""More of PyPTO's language surface (issue #35 items 6 and 7), on a2a3sim against torch: element
reads (``pl.read(t, flat_index)``, ``a[i, j]`` of tensors and tiles), a lone ``@pl.function`` in
``pl.parse`` / ``pl.loads`` and its serialization, outlined scopes named ``<function>_incore_<n>``
and ``as_python(concise=True)``, ``pl.tile.transpose_view``, ``pl.create_tensor`` in a ``pl.at``
scope; and bad input: a tfree through the wrong pipe, an endless ``while`` at run time, the one
integer quotient that overflows."""

import subprocess
import sys
import textwrap

import pytest
import torch

import pypto.ir
import pypto.language as pl
from pypto.ir import Function, FunctionKind, LoopLimitError, ParseError, TensorType
from pypto.runtime import RunConfig, run

SIM = RunConfig(platform="a2a3sim")


def rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


# ---------------------------------------------------------------- element reads


@pl.jit
def element_reads(
    t: pl.Tensor[[4, 8], pl.INT32],
    x: pl.Tensor[[64, 64], pl.FP32],
    out: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        flat = pl.read(t, 9)  # row-major: t[1, 1]
        indexed = t[2, 3]  # one element, as pl.tensor.read
        tile = pl.load(x, [0, 0], [64, 64])
        picked = tile[5, 7] + pl.tile.read(tile, [6, 8])  # elements of a tile
        scale = pl.cast(flat + indexed, pl.FP32) + picked
        pl.store(pl.mul(tile, scale), [0, 0], out)
    return out


def test_element_reads_of_tensors_and_tiles_by_offsets_and_by_flat_index():
    t, x, out = torch.arange(32, dtype=torch.int32).reshape(4, 8), rand(64, 64), torch.zeros(64, 64)
    element_reads(t, x, out, config=SIM)
    torch.testing.assert_close(out, x * (9 + 19 + x[5, 7] + x[6, 8]))


# ---------------------------------------------------------------- pl.parse of a lone function

LONE = """
@pl.function
def vector_add(x: pl.Tensor[[128], pl.FP32], y: pl.Tensor[[128], pl.FP32]) -> pl.Tensor[[128], pl.FP32]:
    result: pl.Tensor[[128], pl.FP32] = pl.add(x, y)
    return result
"""


def test_a_lone_function_parses_as_an_opaque_function_with_tensor_ops_anywhere():
    fn = pl.parse(LONE)
    assert isinstance(fn, Function) and fn.kind is FunctionKind.Opaque and fn.name == "vector_add"
    assert fn.return_types == (TensorType((128,), pl.FP32),)
    assert "def vector_add(" in fn.as_python()


def test_pl_loads_reads_a_file_and_serialize_round_trips(tmp_path):
    path = tmp_path / "kernel.py"
    path.write_text("import pypto.language as pl\n" + LONE)
    fn = pl.loads(path)
    data = pypto.ir.serialize(fn)
    restored = pypto.ir.deserialize(data)
    assert isinstance(data, bytes) and restored.name == "vector_add"
    assert restored.as_python() == fn.as_python()
    with pytest.raises(pypto.ir.SerializationError):
        pypto.ir.deserialize(b"not a program")


def test_text_that_is_not_one_function_is_an_error_a_syntax_error_is_a_syntax_error():
    with pytest.raises(ValueError, match=r"no @pl\.program class and no @pl\.function"):
        pl.parse("x = 42\n")
    with pytest.raises(ParseError, match="holds 2 functions"):
        pl.parse(LONE + LONE.replace("vector_add", "other"))
    with pytest.raises(SyntaxError):
        pl.parse(LONE.replace("return result", "return result +"))


# ---------------------------------------------------------------- outlined names, concise printing


@pl.jit
def two_scopes(a: pl.Tensor, out: pl.Out[pl.Tensor], tmp: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        tmp[:] = pl.mul(a, 2.0)
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(tmp, a)
    return out, tmp


def test_scopes_without_a_name_hint_are_outlined_as_function_incore_n():
    a = rand(64, 128)
    program = two_scopes.lower(a, torch.zeros(64, 128), torch.zeros(64, 128))
    names = list(program.functions)
    assert "two_scopes_incore_0" in names and "two_scopes_incore_1" in names
    concise = program.as_python(concise=True)
    assert "def two_scopes_incore_0(" in concise
    assert "pl.Tile[" not in concise.split("def two_scopes_incore_0(")[1].split("):", 1)[1]
    assert "pl.Tile[" in program.as_python()


# ---------------------------------------------------------------- transpose_view, create_tensor in a scope


@pl.jit
def transposed_operand(
    a: pl.Tensor[[64, 128], pl.FP16],
    b: pl.Tensor[[64, 128], pl.FP16],
    out: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        a_l = pl.move(pl.load(a, [0, 0], [64, 128], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        b_t = pl.tile.transpose_view(pl.load(b, [0, 0], [64, 128], target_memory=pl.Mem.Mat))
        pl.store(pl.matmul(a_l, pl.move(b_t, target_memory=pl.Mem.Right)), [0, 0], out)
    return out


def test_transpose_view_gives_a_matmul_the_other_layout_of_its_operand():
    a, b = rand(64, 128).half(), rand(64, 128, seed=1).half()
    out = torch.zeros(64, 64)
    transposed_operand(a, b, out, config=SIM)
    torch.testing.assert_close(out, a.float() @ b.float().T, rtol=1e-2, atol=1e-2)


@pl.jit
def scratch_in_scope(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        tmp = pl.create_tensor([64, 64], dtype=pl.FP32)  # allocated by the orchestration
        tmp[:] = pl.add(a, a)
        out[:] = pl.mul(tmp, 2.0)
    return out


def test_create_tensor_in_a_scope_is_allocated_before_it():
    a, out = rand(64, 64), torch.zeros(64, 64)
    scratch_in_scope(a, out, config=SIM)
    torch.testing.assert_close(out, a * 4)
    entry = scratch_in_scope.parse(a, out).entry_function
    assert entry.body[0].value.op == "tensor.create"  # before the scope, in the orchestration


# ---------------------------------------------------------------- bad input


@pl.program
class WrongFreeId:
    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, a: pl.Tensor[[64, 64], pl.FP16], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        pl.aic_initialize_pipe(dir_mask=1, slot_size=16384, slot_num=2, id=0)
        pl.aic_initialize_pipe(dir_mask=1, slot_size=16384, slot_num=2, id=1)
        a_l = pl.move(pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        b_r = pl.move(pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        pl.tpush_to_aiv(pl.matmul(a_l, b_r), split=0, id=0)

    @pl.function(type=pl.FunctionType.AIV)
    def vector(self, a: pl.Tensor[[64, 64], pl.FP16], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        pl.aiv_initialize_pipe(dir_mask=1, slot_size=16384, slot_num=2, id=0)
        pl.aiv_initialize_pipe(dir_mask=1, slot_size=16384, slot_num=2, id=1)
        t: pl.Tile[[64, 64], pl.FP32] = pl.tpop_from_aic(split=0, id=0)
        pl.store(t, [0, 0], out)
        pl.tfree_to_aic(t, id=1)  # the wrong pipe

    @pl.function(type=pl.FunctionType.Group)
    def group(self, a: pl.Tensor[[64, 64], pl.FP16], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        self.cube(a, out)
        self.vector(a, out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[64, 64], pl.FP16], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        self.group(a, out)
        return out


def test_a_tfree_through_another_pipe_than_the_pop_is_a_pipe_error():
    from pypto_sim_a2a3.errors import PipeError

    with pytest.raises(PipeError) as info:
        run(WrongFreeId, rand(64, 64).half(), torch.zeros(64, 64))
    assert "tfree_to_aic(id=1) frees a tile popped at" in info.value.message
    assert "from another pipe" in info.value.message
    assert "give tfree the pop's id=" in info.value.hint


@pl.jit
def counts_up(
    x: pl.Tensor[[16, 16], pl.FP32], n: pl.Tensor[[1], pl.INT32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]
):
    with pl.at(level=pl.Level.CORE_GROUP):
        i = pl.read(n, [0])
        while i >= 0:  # endless: counts up from a non-negative start
            i = i + 1
        pl.store(pl.load(x, [0, 0], [16, 16]), [0, 0], out)
    return out


def test_a_while_loop_that_never_ends_at_run_time_stops_at_the_iteration_limit(monkeypatch):
    monkeypatch.setenv("PYPTO_MAX_WHILE_ITERATIONS", "500")
    with pytest.raises(LoopLimitError) as info:
        counts_up(rand(16, 16), torch.tensor([0], dtype=torch.int32), torch.zeros(16, 16), config=SIM)
    assert info.value.message.startswith("this while loop ran 500 iterations and its condition still holds")
    with open(__file__) as source:
        loop = next(n for n, line in enumerate(source, 1) if "# endless: counts up" in line)
    assert info.value.span.line == loop
    assert "PYPTO_MAX_WHILE_ITERATIONS" in info.value.hint


def test_the_lowest_int32_divided_by_minus_one_wraps_and_never_crashes(tmp_path):
    script = textwrap.dedent(
        """
        import torch
        import pypto.language as pl
        from pypto.runtime import RunConfig

        @pl.jit
        def quotient(x: pl.Tensor[[16, 16], pl.INT32], y: pl.Tensor[[16, 16], pl.INT32],
                     out: pl.Out[pl.Tensor[[16, 16], pl.INT32]]):
            with pl.at(level=pl.Level.CORE_GROUP):
                out[:] = pl.div(x, y)
            return out

        x = torch.full((16, 16), -2**31, dtype=torch.int32)
        out = torch.zeros(16, 16, dtype=torch.int32)
        quotient(x, torch.full((16, 16), -1, dtype=torch.int32), out, config=RunConfig(platform="a2a3sim"))
        print(int(out[0, 0]))
        """
    )
    path = tmp_path / "quotient.py"
    path.write_text(script)
    result = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(-(2**31))
