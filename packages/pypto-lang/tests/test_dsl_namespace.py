"""The pl namespaces come from the op registry: every op written ``pl.<name>(...)`` is a pl name
with its spec's signature and doc, and the names users wrote before the registry drove them stay."""

import inspect
import pydoc

import pytest

import pypto.language as pl
from pypto.ir.ops import OPS, Level
from pypto.ir.printer import print_ir
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
        assert getattr(getattr(pl, prefix[0]) if prefix else pl, name).name == spec.dsl
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
    with pytest.raises(AttributeError, match=r"pl\.tile has no op 'reed'"):
        pl.tile.reed  # noqa: B018


def test_dir_lists_the_ops_for_completion():
    names = set(dir(pl))
    assert {"add", "load", "tpush_to_aiv", "jit", "Tensor"} <= names
    assert "gather_row" in dir(pl.tile) and "syncall" in dir(pl.system)
    assert set(pl.__all__) >= set(EARLIER_TOP_LEVEL)


def test_an_ops_docstring_is_its_signature_and_doc_line_with_each_form():
    doc = pl.add.__doc__
    assert doc.startswith("pl.add(lhs, rhs): elementwise sum.")
    assert "pl.add(lhs, scalar)  ->  tile.adds: elementwise sum, with a scalar right operand" in doc
    assert pl.row_max.__doc__.startswith("pl.row_max(x, tmp_tile=None): the maximum of each row")
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
    assert str(inspect.signature(pl.fillpad)) == "(x, pad_value=pl.PadValue.zero)"


def test_a_parameter_only_some_levels_take_is_optional():
    """Tiles reduce with a scratch tile, tensors without: one pl.row_max for both."""
    params = dsl_function("row_max").signature.parameters
    assert list(params) == ["x", "tmp_tile"] and params["tmp_tile"].default is None


def test_the_index_follows_the_registry():
    before = dsl_functions()
    assert dsl_functions() is before  # unchanged registry: nothing rebuilt
    assert set(before) >= {"add", "system.fence", "tpush_to_aiv"}


# The calls docs/language.md shows users, parameter names included (keywords bind by them).
DOCUMENTED = [
    "pl.load(tensor, offsets, shape, target_memory=pl.Mem.Vec, valid_shape=None)",
    "pl.store(tile, offsets, tensor, shapes=None)",
    "pl.move(tile, target_memory)",
    "pl.create_tile(shape, dtype, target_memory=pl.Mem.Vec, tile_view=None)",
    "pl.create_tensor(shape, dtype, manual_dep=False)",
    "pl.full(shape, dtype, value)",
    "pl.assemble(target, value, offsets, atomic=pl.AtomicType.NONE)",
    "pl.slice(x, shape, offset, valid_shape=None, drop_dims=None, pad_value=None, clamp=False)",
    "pl.set_validshape(x, rows, cols=None)",
    "pl.reshape(x, shape)",
    "pl.concat(a, b)",
    "pl.cast(x, dtype, mode=pl.CastMode.round)",
    "pl.row_max(x, tmp_tile=None)",
    "pl.col_sum(x, tmp_tile=None)",
    "pl.row_expand_add(x, row_vec)",
    "pl.col_expand(x, col_vec)",
    "pl.col_expand_mul(x, col_vec)",
    "pl.fillpad(x, pad_value=pl.PadValue.zero)",
    "pl.matmul(a, b, out_dtype=None, a_trans=False, b_trans=False)",
    "pl.matmul_acc(acc, a, b)",
    "pl.gather_row(dst_tile, src_tensor, dst_offset, src_offset, shape, transpose=False, *, valid_shape=None)",
    "pl.read(tensor, offsets)",
    "pl.aic_initialize_pipe(c2v_consumer_buf=0, v2c_consumer_buf=0, *, dir_mask, slot_size, slot_num=None, "
    "local_slot_num=None, id=None)",
    "pl.tpush_to_aiv(tile, *, split=pl.SplitMode.NONE, lane_stride=None, id=None)",
    "pl.tpop_from_aic(*, shape=None, dtype=None, split=pl.SplitMode.NONE, lane_stride=None, id=None, "
    "valid_shape=None)",
    "pl.tfree_to_aic(tile, *, split=None, id=None)",
    "pl.system.sync_set(event_id=None, pipe=pl.PipeType.ALL, ffts_mode=None, core_type=None, event_id_dyn=None)",
    "pl.system.sync_wait(event_id=None, pipe=pl.PipeType.ALL, core_type=None, event_id_dyn=None)",
    "pl.system.set_ffts(workspace)",
    "pl.reserve_buffer(*, name, size, base=None)",
    "pl.import_peer_buffer(*, name, peer_func=None)",
    'pl.system.syncall(core_type=None, mode="hard", gm_workspace=None, used_cores=None)',
    "pl.system.cacheinvalid(tensor=None, offsets=None, shape=None)",
]


@pytest.mark.parametrize("text", DOCUMENTED)
def test_the_documented_calls_are_the_dsl_signatures(text):
    name = text.removeprefix("pl.").split("(")[0]
    assert dsl_function(name).text == text


def test_keywords_bind_by_the_documented_names():
    @pl.jit
    def kernel(a: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, offsets=[0, 0], shape=[16, 64])
            r = pl.row_sum(x, tmp_tile=pl.create_tile([16, 64], pl.FP32))
            y = pl.row_expand_sub(x, row_vec=r)
            rows = pl.gather_row(
                dst_tile=y, src_tensor=a, dst_offset=[0, 0], src_offset=[1, 0], shape=[1, 64]
            )
            both = pl.concat(a=pl.slice(rows, [16, 32], offset=[0, 0]), b=pl.slice(rows, [16, 32], [0, 32]))
            pl.store(pl.fillpad(x=both, pad_value=pl.PadValue.zero), [0, 0], out)
        return out

    text = print_ir(kernel.parse())
    assert "= pl.tile.row_expand_sub(x, " in text and "= pl.tile.concat(" in text
    assert "pl.tile.gather_row(y, a, [0, 0], [1, 0], shape=[1, 64])" in text
