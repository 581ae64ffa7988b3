"""The pl namespaces come from the op registry: every op written ``pl.<name>(...)`` is a pl name
with its spec's signature and doc, and the names users wrote before the registry drove them stay."""

import inspect
import pydoc

import pytest

import pypto.language as pl
from pypto.ir.ops import OPS, Level
from pypto.language.builtins import Builtin
from pypto.language.dslops import dsl_function, dsl_functions, is_dsl_function

# Every op name pl offered when the lists were kept by hand; a registry change that drops one
# breaks user programs.
EARLIER_TOP_LEVEL = [
    "abs",
    "add",
    "aic_gather",
    "aic_initialize_pipe",
    "aiv_initialize_pipe",
    "aiv_shard",
    "assemble",
    "cast",
    "col_expand",
    "col_expand_mul",
    "col_max",
    "col_sum",
    "concat",
    "create_tensor",
    "create_tile",
    "div",
    "exp",
    "fillpad",
    "full",
    "gather_row",
    "get_block_idx",
    "get_block_num",
    "get_subblock_idx",
    "load",
    "log",
    "matmul",
    "matmul_acc",
    "maximum",
    "minimum",
    "move",
    "mul",
    "neg",
    "read",
    "recip",
    "relu",
    "reshape",
    "row_expand_add",
    "row_expand_div",
    "row_expand_mul",
    "row_expand_sub",
    "row_max",
    "row_min",
    "row_sum",
    "rsqrt",
    "slice",
    "sqrt",
    "store",
    "sub",
    "tfree_to_aic",
    "tfree_to_aiv",
    "tpop_from_aic",
    "tpop_from_aiv",
    "tpush_to_aic",
    "tpush_to_aiv",
]
EARLIER_TILE = [
    "load",
    "store",
    "move",
    "matmul",
    "matmul_acc",
    "cast",
    "concat",
    "assemble",
    "reshape",
    "slice",
    "fillpad",
    "full",
    "row_max",
    "row_sum",
    "row_min",
    "col_sum",
    "col_max",
    "row_expand_add",
    "row_expand_sub",
    "row_expand_mul",
    "row_expand_div",
    "col_expand",
    "col_expand_mul",
    "add",
    "sub",
    "mul",
    "div",
    "maximum",
    "minimum",
    "exp",
    "log",
    "sqrt",
    "rsqrt",
    "recip",
    "neg",
    "abs",
    "relu",
    "create",
]
EARLIER_TENSOR = [
    "matmul",
    "matmul_acc",
    "cast",
    "concat",
    "assemble",
    "reshape",
    "slice",
    "row_max",
    "row_sum",
    "row_min",
    "col_sum",
    "col_max",
    "row_expand_add",
    "row_expand_sub",
    "row_expand_mul",
    "row_expand_div",
    "col_expand",
    "col_expand_mul",
    "add",
    "sub",
    "mul",
    "div",
    "maximum",
    "minimum",
    "exp",
    "log",
    "sqrt",
    "rsqrt",
    "recip",
    "neg",
    "abs",
    "relu",
    "create",
]
EARLIER_SYSTEM = ["fence", "cacheinvalid", "syncall"]


def test_the_names_users_wrote_before_still_exist():
    assert all(isinstance(getattr(pl, name), Builtin) for name in EARLIER_TOP_LEVEL)
    assert all(getattr(pl.tile, name).level == "tile" for name in EARLIER_TILE)
    assert all(getattr(pl.tensor, name).level == "tensor" for name in EARLIER_TENSOR)
    assert all(getattr(pl.system, name).name == f"system.{name}" for name in EARLIER_SYSTEM)
    assert (pl.tile.create.name, pl.tensor.create.name) == ("create_tile", "create_tensor")


def test_every_op_written_as_a_pl_call_is_a_pl_name_at_each_of_its_levels():
    for spec in OPS.values():
        if not is_dsl_function(spec):
            continue
        *prefix, name = spec.dsl.split(".")
        assert getattr(pl.system if prefix else pl, name).name == spec.dsl
        if spec.level in (Level.TILE, Level.TENSOR):
            namespace = pl.tile if spec.level is Level.TILE else pl.tensor
            assert getattr(namespace, name).name == spec.dsl


def test_scalar_arithmetic_and_kernel_calls_are_not_pl_functions():
    """``scalar.add`` is written ``a + b`` and ``call`` by the kernel's name (their signatures)."""
    assert not is_dsl_function(OPS["scalar.add"]) and not is_dsl_function(OPS["call"])
    for name in ("truediv", "lt", "call"):
        with pytest.raises(AttributeError):
            getattr(pl, name)


def test_a_misspelled_op_is_an_attribute_error_naming_it():
    with pytest.raises(AttributeError, match="'expp'"):
        pl.expp  # noqa: B018
    with pytest.raises(AttributeError, match=r"pl\.tile has no op 'read'"):
        pl.tile.read  # noqa: B018


def test_dir_lists_the_ops_for_completion():
    names = set(dir(pl))
    assert {"add", "load", "tpush_to_aiv", "jit", "Tensor"} <= names
    assert "gather_row" in dir(pl.tile) and "syncall" in dir(pl.system)
    assert set(pl.__all__) >= set(EARLIER_TOP_LEVEL)


def test_an_ops_docstring_is_its_signature_and_doc_line_with_each_form():
    doc = pl.add.__doc__
    assert doc.startswith("pl.add(lhs, rhs): elementwise sum.")
    assert "pl.add(lhs, scalar)  ->  tile.adds: elementwise sum, with a scalar right operand" in doc
    assert pl.row_max.__doc__.startswith("pl.row_max(x, tmp=None): the maximum of each row")
    assert pl.tile.load.__doc__ == pl.load.__doc__
    assert pl.load.__doc__.startswith(
        "pl.load(tensor, offsets, shape, target_memory=pl.Mem.Vec, valid_shape=None): a tile read"
    )
    assert (
        pl.range.__doc__
        == "pl.range(stop) / range(start, stop, step=1): a sequential loop over an INDEX var."
    )


def test_help_and_inspect_show_the_dsl_signature():
    text = pydoc.render_doc(pl.cast, renderer=pydoc.plaintext)
    assert "pl.cast(x, dtype, mode=pl.CastMode.round): each element converted to dtype" in text
    assert str(inspect.signature(pl.fillpad)) == "(tile, pad_value=pl.PadValue.zero)"


def test_a_parameter_only_some_levels_take_is_optional():
    """Tiles reduce with a scratch tile, tensors without: one pl.row_max for both."""
    params = dsl_function("row_max").signature.parameters
    assert list(params) == ["x", "tmp"] and params["tmp"].default is None


def test_the_index_follows_the_registry():
    before = dsl_functions()
    assert dsl_functions() is before  # unchanged registry: nothing rebuilt
    assert set(before) >= {"add", "system.fence", "tpush_to_aiv"}
