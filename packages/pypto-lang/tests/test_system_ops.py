"""pl.system.fence / cacheinvalid / syncall: the cross-lane ordering sequence and its argument errors."""

import textwrap

import pytest
from lang_diagnostics import header, rendered

import pypto.language as pl
from pypto.ir import ParseError, PyptoError, TypeCheckError, print_ir

T64 = pl.Tensor[[64, 64], pl.FP32]
WS = pl.Tensor[[16], pl.INT32]
FILE = __file__


def scope_text(program) -> str:
    """The printed body of the entry's first scope."""
    lines = print_ir(program.entry_function.body[0]).splitlines()[1:]
    return textwrap.dedent("\n".join(lines)) + "\n"


def test_publish_fence_barrier_invalidate_parse_to_system_ops():
    @pl.jit
    def ordered(a: T64, ws: WS, out: pl.Out[T64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            mat = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
            acc = pl.matmul(pl.move(mat, target_memory=pl.Mem.Left), pl.move(mat, target_memory=pl.Mem.Right))
            pl.store(acc, [0, 0], out)  # the cube writes out ...
            pl.system.cacheinvalid(out, [0, 0], [64, 64])
            pl.system.fence()
            pl.system.syncall(mode="soft", gm_workspace=ws, used_cores=3)
            pl.system.syncall(core_type="aiv")
            for _lane in pl.split_aiv(2):
                pl.system.cacheinvalid()
                pl.store(pl.exp(pl.load(out, [0, 0], [64, 64])), [0, 0], out)  # ... the lanes read it
        return out

    assert scope_text(ordered.parse()) == textwrap.dedent(
        """\
        mat: pl.Tile[[64, 64], pl.FP32, pl.Mem.Mat] = pl.tile.load(a, [0, 0], shape=[64, 64], target_memory=pl.Mem.Mat)
        move: pl.Tile[[64, 64], pl.FP32, pl.Mem.Left] = pl.tile.move(mat, target_memory=pl.Mem.Left)
        move_1: pl.Tile[[64, 64], pl.FP32, pl.Mem.Right] = pl.tile.move(mat, target_memory=pl.Mem.Right)
        acc: pl.Tile[[64, 64], pl.FP32, pl.Mem.Acc] = pl.tile.matmul(move, move_1)
        pl.tile.store(acc, [0, 0], out)
        pl.system.cacheinvalid(out, [0, 0], shape=[64, 64])
        pl.system.fence()
        pl.system.syncall(gm_workspace=ws, mode='soft', used_cores=3)
        pl.system.syncall(core_type='aiv', mode='hard')
        for _lane in pl.split_aiv(2, mode=pl.SplitMode.NONE):
            pl.system.cacheinvalid()
            load: pl.Tile[[64, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(out, [0, 0], shape=[64, 64], target_memory=pl.Mem.Vec)
            exp: pl.Tile[[64, 64], pl.FP32, pl.Mem.Vec] = pl.tile.exp(load)
            pl.tile.store(exp, [0, 0], out)
        """
    )


@pytest.mark.parametrize(
    ("kernel", "message"),
    [
        ("bad_mode", 'pl.system.syncall: mode must be "hard" or "soft", got \'medium\''),
        (
            "soft_without_workspace",
            'pl.system.syncall: mode="soft" needs gm_workspace=, a zeroed INT32 tensor of at least 16 elements',
        ),
        (
            "small_workspace",
            "pl.system.syncall: gm_workspace must be an INT32 tensor of at least 16 elements, got Tensor[[8], INT32]",
        ),
        (
            "float_workspace",
            "pl.system.syncall: gm_workspace must be an INT32 tensor of at least 16 elements, got Tensor[[64, 64], FP32]",
        ),
        ("zero_cores", 'pl.system.syncall: mode="soft" needs used_cores= a positive int, got 0'),
        ("no_cores", 'pl.system.syncall: mode="soft" needs used_cores= a positive int, got None'),
    ],
)
def test_syncall_argument_errors_come_from_the_op_table_at_the_users_line(kernel, message):
    @pl.jit
    def bad_mode(a: T64, ws: WS):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.system.syncall(mode="medium")

    @pl.jit
    def soft_without_workspace(a: T64, ws: WS):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.system.syncall(mode="soft", used_cores=2)

    @pl.jit
    def small_workspace(a: T64, ws: pl.Tensor[[8], pl.INT32]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.system.syncall(mode="soft", gm_workspace=ws, used_cores=2)

    @pl.jit
    def float_workspace(a: T64, ws: WS):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.system.syncall(mode="soft", gm_workspace=a, used_cores=2)

    @pl.jit
    def zero_cores(a: T64, ws: WS):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.system.syncall(mode="soft", gm_workspace=ws, used_cores=0)

    @pl.jit
    def no_cores(a: T64, ws: WS):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.system.syncall(mode="soft", gm_workspace=ws)

    kernels = (bad_mode, soft_without_workspace, small_workspace, float_workspace, zero_cores, no_cores)
    with pytest.raises(TypeCheckError) as info:
        {k.name: k for k in kernels}[kernel].parse()
    shown = rendered(info.value)
    assert info.value.message == message
    assert shown.underlined.startswith("pl.system.syncall(") and shown.underlined.endswith(")")
    assert info.value.span.file == FILE


def test_an_unknown_syncall_keyword_is_named_with_the_signature():
    @pl.jit
    def typo(a: T64):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.system.syncall(mode="hard", cores=2)  # typo

    with pytest.raises(ParseError) as info:
        typo.parse()
    shown = rendered(info.value)
    message = "pl.system.syncall(): got an unexpected keyword argument 'cores'"
    assert shown.header == header(
        FILE, 'pl.system.syncall(mode="hard", cores=2)  # typo', "pl.system", message
    )
    assert shown.hint == (
        'signature: pl.system.syncall(core_type=None, mode="hard", gm_workspace=None, used_cores=None)'
    )


@pytest.mark.parametrize(
    ("kernel", "message"),
    [
        (
            "core_type",
            'pl.system.syncall: core_type must be "aic", "aiv" or "mix" (or "aic_only" / "aiv_only"), '
            "got the str 'all'",
        ),
        ("run_time_cores", "pl.system.syncall: used_cores= must be known at compile time, got Scalar[INDEX]"),
        ("tile_workspace", "pl.system.syncall: gm_workspace must be a tensor, got Tile[[16], INT32, Vec]"),
        ("fence_args", "pl.system.fence(): too many positional arguments"),
        (
            "partial_region",
            "pl.system.cacheinvalid: the region form takes a tensor, its offsets and the region's shape",
        ),
        (
            "rank",
            "pl.system.cacheinvalid: offsets and shape must each hold 2 entries, one per dim of Tensor[[64, 64], FP32]",
        ),
        (
            "region_of_a_tile",
            "pl.system.cacheinvalid: the invalidated value must be a tensor, got Tile[[16], INT32, Vec]",
        ),
        ("cache_kwarg", "pl.system.cacheinvalid(): got an unexpected keyword argument 'size'"),
    ],
)
def test_other_system_op_argument_errors(kernel, message):
    @pl.jit
    def core_type(a: T64):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.system.syncall(core_type="all")

    @pl.jit
    def run_time_cores(a: T64, ws: WS, n: pl.Scalar[pl.INDEX]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.system.syncall(mode="soft", gm_workspace=ws, used_cores=n)

    @pl.jit
    def tile_workspace(a: T64, ws: WS):
        with pl.at(level=pl.Level.CORE_GROUP):
            for _lane in pl.split_aiv(2):
                pl.system.syncall(mode="soft", gm_workspace=pl.load(ws, [0], [16]), used_cores=2)

    @pl.jit
    def fence_args(a: T64):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.system.fence(a)

    @pl.jit
    def partial_region(a: T64):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.system.cacheinvalid(a, [0, 0])

    @pl.jit
    def rank(a: T64):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.system.cacheinvalid(a, [0], [64])

    @pl.jit
    def region_of_a_tile(a: T64, ws: WS):
        with pl.at(level=pl.Level.CORE_GROUP):
            for _lane in pl.split_aiv(2):
                pl.system.cacheinvalid(pl.load(ws, [0], [16]), [0], [16])

    @pl.jit
    def cache_kwarg(a: T64):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.system.cacheinvalid(a, [0, 0], size=[64, 64])

    kernels = (
        core_type,
        run_time_cores,
        tile_workspace,
        fence_args,
        partial_region,
        rank,
        region_of_a_tile,
        cache_kwarg,
    )
    with pytest.raises(PyptoError) as info:
        {k.name: k for k in kernels}[kernel].parse()
    assert info.value.message == message
    assert rendered(info.value).underlined.startswith("pl.system.")


def test_system_ops_run_on_a_core_group():
    @pl.jit
    def unscoped_fence(a: T64):
        pl.system.fence()

    with pytest.raises(ParseError) as info:
        unscoped_fence.parse()
    assert info.value.message.startswith("pl.system.fence outside a pl.at scope")


def test_system_ops_called_as_python_say_where_they_belong():
    with pytest.raises(
        PyptoError, match=r"pl\.system\.syncall\(\) can only be used inside a @pl\.jit function"
    ):
        pl.system.syncall()
    assert pl.system.cacheinvalid.__doc__.startswith("pl.system.cacheinvalid(tensor=None")
