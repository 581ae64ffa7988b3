"""What a user sees for each mistake: the message, their line, a caret, and a hint."""

import importlib.util
import textwrap
import uuid

import pytest
import torch

from pypto.ir import MemoryBudgetError, ParseError, PyptoError, TypeCheckError, UnsupportedDtypeError

HEADER = "import pypto.language as pl\n\n\n"


def load_kernel(tmp_path, body: str, name: str = "kernel"):
    """Write ``body`` as a module file and return its ``name`` attribute (a @pl.jit function)."""
    path = tmp_path / f"user_{uuid.uuid4().hex}.py"
    path.write_text(HEADER + textwrap.dedent(body))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name), str(path)


def rendered(err: PyptoError) -> list[str]:
    return str(err).splitlines()


def test_missing_annotation(tmp_path):
    kernel, path = load_kernel(
        tmp_path,
        """\
        @pl.jit
        def kernel(a, out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
            with pl.at(level=pl.Level.CORE_GROUP):
                out[:] = pl.add(a, a)
            return out
        """,
    )
    with pytest.raises(ParseError) as info:
        kernel.lower()
    lines = rendered(info.value)
    assert lines[0] == f"{path}:5:12: error: Parameter 'a' missing type annotation"
    assert lines[1] == "    5 | def kernel(a, out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):"
    assert lines[2] == "      |            ^"
    assert lines[3].startswith("hint: ")


def test_tensor_op_outside_any_scope(tmp_path):
    kernel, path = load_kernel(
        tmp_path,
        """\
        @pl.jit
        def kernel(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
            out[:] = pl.add(a, a)
            return out
        """,
    )
    with pytest.raises(ParseError) as info:
        kernel.lower()
    lines = rendered(info.value)
    assert lines[0].startswith(f"{path}:6:")
    assert "pl.add" in lines[0] and "pl.at(level=pl.Level.CORE_GROUP)" in str(info.value)
    assert lines[1] == "    6 |     out[:] = pl.add(a, a)"
    assert "^" in lines[2]


def test_operand_shape_mismatch(tmp_path):
    kernel, path = load_kernel(
        tmp_path,
        """\
        @pl.jit
        def kernel(a: pl.Tensor[[128, 64], pl.FP32], b: pl.Tensor[[64, 64], pl.FP32],
                   out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
            with pl.at(level=pl.Level.CORE_GROUP):
                out[:] = pl.add(a, b)
            return out
        """,
    )
    with pytest.raises(TypeCheckError) as info:
        kernel.lower()
    lines = rendered(info.value)
    assert lines[0] == (
        f"{path}:8:18: error: pl.add: operand shape mismatch: "
        "Tensor[[128, 64], FP32] vs Tensor[[64, 64], FP32]"
    )
    assert lines[1] == "    8 |         out[:] = pl.add(a, b)"
    assert lines[2] == "      |                  ^^^^^^^^^^^^"


def test_unsupported_torch_dtype(tmp_path):
    kernel, _ = load_kernel(
        tmp_path,
        """\
        @pl.jit
        def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
            with pl.at(level=pl.Level.CORE_GROUP):
                out[:] = pl.add(a, a)
            return out
        """,
    )
    with pytest.raises(UnsupportedDtypeError) as info:
        kernel(torch.zeros(4, 4, dtype=torch.float64), torch.zeros(4, 4, dtype=torch.float64))
    assert isinstance(info.value, TypeError)
    assert "torch.float64" in str(info.value) and "torch.float16" in str(info.value)


def test_plain_range_in_a_kernel(tmp_path):
    kernel, path = load_kernel(
        tmp_path,
        """\
        @pl.jit
        def kernel(a: pl.Tensor[[256, 64], pl.FP32], out: pl.Out[pl.Tensor[[256, 64], pl.FP32]]):
            with pl.at(level=pl.Level.CORE_GROUP):
                for i in range(4):
                    t = pl.load(a, [i * 64, 0], [64, 64])
                    pl.store(t, [i * 64, 0], out)
            return out
        """,
    )
    with pytest.raises(ParseError) as info:
        kernel.lower()
    lines = rendered(info.value)
    assert lines[0].startswith(f"{path}:7:")
    assert lines[1] == "    7 |         for i in range(4):"
    assert "pl.range" in str(info.value)


def test_on_chip_buffer_over_budget(tmp_path):
    kernel, path = load_kernel(
        tmp_path,
        """\
        @pl.jit
        def kernel(a: pl.Tensor[[256, 256], pl.FP32], out: pl.Out[pl.Tensor[[256, 256], pl.FP32]]):
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="too_big"):
                t = pl.load(a, [0, 0], [256, 256])
                pl.store(t, [0, 0], out)
            return out
        """,
    )
    with pytest.raises(MemoryBudgetError) as info:
        kernel(torch.zeros(256, 256), torch.zeros(256, 256))
    lines = rendered(info.value)
    assert lines[0] == (
        f"{path}:6:10: error: Function 'too_big': Vec buffer usage (262144 bytes) "
        "exceeds platform limit (188416 bytes)"
    )
    assert lines[1] == '    6 |     with pl.at(level=pl.Level.CORE_GROUP, name_hint="too_big"):'
    assert lines[-1].startswith("hint: ")


SPLIT_HEADER = """\
@pl.jit
def kernel(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)], name_hint="k"):
"""


def test_a_cube_tile_of_extent_1_sent_to_the_split_lanes_is_reported_at_the_line_that_made_it(tmp_path):
    kernel, path = load_kernel(
        tmp_path,
        SPLIT_HEADER
        + """\
        acc = pl.matmul(a, b, out_dtype=pl.FP32)
        out[:] = pl.relu(acc)
    return out
""",
    )
    a, b = torch.zeros(1, 64, dtype=torch.float16), torch.zeros(64, 128, dtype=torch.float16)
    with pytest.raises(ParseError) as info:
        kernel.lower(a, b, torch.zeros(1, 128))
    lines = rendered(info.value)
    assert lines[0] == (
        f"{path}:7:15: error: pl.split(pl.SplitMode.UP_DOWN) cannot split tile 'acc' along dim 0 (rows): "
        "its extent 1 leaves nothing for AIV lane 1"
    )
    assert lines[1] == "    7 |         acc = pl.matmul(a, b, out_dtype=pl.FP32)"
    assert lines[2] == "      |               " + "^" * len("pl.matmul(a, b, out_dtype=pl.FP32)")
    assert lines[3] == (
        "hint: use pl.split(pl.SplitMode.LEFT_RIGHT), which splits this scope, "
        "or the explicit pl.split_aiv region form"
    )


def test_a_vector_op_the_split_cannot_halve_is_reported_at_its_line(tmp_path):
    kernel, path = load_kernel(
        tmp_path,
        SPLIT_HEADER
        + """\
        acc = pl.matmul(a, b, out_dtype=pl.FP32)
        out[:] = pl.col_sum(acc)
    return out
""",
    )
    a, b = torch.zeros(64, 64, dtype=torch.float16), torch.zeros(64, 128, dtype=torch.float16)
    with pytest.raises(ParseError) as info:
        kernel.lower(a, b, torch.zeros(1, 128))
    lines = rendered(info.value)
    assert lines[0] == (
        f"{path}:8:18: error: split rejected: the body mixes split and plain full-width vector ops "
        "(pl.col_sum at line 8 needs every row, which pl.split(pl.SplitMode.UP_DOWN) halves)"
    )
    assert lines[1] == "    8 |         out[:] = pl.col_sum(acc)"
    assert lines[2] == "      |                  " + "^" * len("pl.col_sum(acc)")
    assert lines[3].startswith("hint: use pl.split(pl.SplitMode.LEFT_RIGHT)")
