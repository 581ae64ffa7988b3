"""Manual cross-core buffers: the consumer reserves its ring with ``pl.reserve_buffer``, the
producer names it with ``pl.import_peer_buffer``, the pipe setups tie pipes (``id=``) to them.

The worked example is the explicit form's: an embedding gather on the two AIV lanes (each lane
reads its half of the row indices at run time and gathers those rows) pushed vector->cube, and a
projection ``emb @ W^T`` on the AIC, launched from the orchestration with allow_early_resolve.
"""

import sys
from pathlib import Path

import pytest
import torch

import pypto.language as pl
from pypto.ir import (
    DeadlockError,
    MemoryBudgetError,
    PipeSetupError,
    print_ir,
    structural_diff,
)
from pypto.passes import CompileWarning
from pypto.runtime import RunConfig, compile_program, hookimpl, register_plugin, reset_registry, run
from pypto_sim_a2a3 import PipeError

ROWS, HALF, K, N, VOCAB = 64, 32, 512, 64, 256
SLOT = ROWS * K * 2  # one gathered [ROWS, K] FP16 tile: both lanes' halves
IDX = pl.Tensor[[ROWS], pl.INT32]
TABLE = pl.Tensor[[VOCAB, K], pl.FP16]
W = pl.Tensor[[N, K], pl.FP16]
OUT = pl.Tensor[[ROWS, N], pl.FP32]


@pl.program
class EmbedProject:
    """out = table[idx] @ w^T: the lanes gather, the cube projects."""

    @pl.function(type=pl.FunctionType.AIV)
    def gather(self, idx: IDX, table: TABLE, w: W, out: pl.Out[OUT]):
        ring = pl.import_peer_buffer(name="v2c_ring", peer_func="project")
        pl.aiv_initialize_pipe(dir_mask=2, slot_size=SLOT, v2c_consumer_buf=ring)
        lane = pl.get_subblock_idx()
        rows = pl.create_tile([HALF, K], pl.FP16)
        for r in pl.range(HALF):
            row = pl.cast(pl.read(idx, [lane * HALF + r]), pl.INDEX)
            rows = pl.gather_row(rows, table, [r, 0], [row, 0], [1, K])
        pl.tpush_to_aic(rows, split=pl.SplitMode.UP_DOWN)

    @pl.function(type=pl.FunctionType.AIC)
    def project(self, idx: IDX, table: TABLE, w: W, out: pl.Out[OUT]):
        ring = pl.reserve_buffer(name="v2c_ring", size=2 * SLOT)
        pl.aic_initialize_pipe(dir_mask=2, slot_size=SLOT, v2c_consumer_buf=ring)
        emb = pl.tpop_from_aiv(shape=[ROWS, K], dtype=pl.FP16, split=pl.SplitMode.UP_DOWN)
        w_mat = pl.load(w, [0, 0], [N, K], target_memory=pl.Mem.Mat)
        left = pl.move(emb, target_memory=pl.Mem.Left)
        acc = pl.matmul(left, pl.move(w_mat, target_memory=pl.Mem.Right), b_trans=True)
        pl.tfree_to_aiv(emb)
        pl.store(acc, [0, 0], out)

    @pl.function(type=pl.FunctionType.Group)
    def embed_project(self, idx: IDX, table: TABLE, w: W, out: pl.Out[OUT]):
        self.project(idx, table, w, out)
        self.gather(idx, table, w, out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, idx: IDX, table: TABLE, w: W, out: pl.Out[OUT]):
        # What pl.at(..., allow_early_resolve=True) around the launch writes in the program form.
        self.embed_project(idx, table, w, out, allow_early_resolve=True)
        return out


def embed_inputs():
    torch.manual_seed(0)
    idx = torch.randint(0, VOCAB, (ROWS,), dtype=torch.int32)
    table = torch.randn(VOCAB, K, dtype=torch.float16)
    w = torch.randn(N, K, dtype=torch.float16)
    return idx, table, w, torch.zeros(ROWS, N)


def test_embedding_gather_then_projection_through_a_reserved_buffer_matches_torch():
    idx, table, w, out = embed_inputs()
    run(EmbedProject, idx, table, w, out)
    want = table[idx.long()].float() @ w.float().T
    assert torch.allclose(out, want, rtol=1e-3, atol=1e-2)


def test_tiles_are_placed_above_the_reserved_buffer_and_the_setup_gets_its_depth():
    compiled = compile_program(EmbedProject, RunConfig())
    project = compiled.lowered.function("project")
    plan = project.attrs["memory_plan"]
    (ring,) = plan.reservations
    assert (ring.name, ring.base, ring.size, ring.slot_size) == ("v2c_ring", 0, 2 * SLOT, SLOT)
    mat = [a for a in plan.allocations.values() if a.space is pl.Mem.Mat]
    assert mat and min(a.offset for a in mat) >= 2 * SLOT
    text = print_ir(compiled.lowered)
    # The depth the buffer holds is written into both setups; the buffer's base into the reserve.
    assert "pl.system.reserve_buffer(name='v2c_ring', size=131072, base=0)" in text
    assert (
        "pl.system.aic_initialize_pipe(dir_mask=2, slot_size=65536, slot_num=2, v2c_consumer_buf='v2c_ring')"
        in text
    )
    assert (
        "pl.system.aiv_initialize_pipe(dir_mask=2, slot_size=65536, slot_num=2, v2c_consumer_buf='v2c_ring')"
        in text
    )


def test_the_source_program_prints_and_reads_back_equal():
    text = print_ir(EmbedProject)
    assert "pl.system.import_peer_buffer(name='v2c_ring', peer_func='project')" in text
    assert structural_diff(pl.parse(text), EmbedProject) is None


PARAMS = (
    "idx: pl.Tensor[[ROWS], pl.INT32], table: pl.Tensor[[VOCAB, K], pl.FP16], "
    "w: pl.Tensor[[N, K], pl.FP16], out: pl.Out[pl.Tensor[[ROWS, N], pl.FP32]]"
)


def line_of(text: str, err: Exception) -> str:
    """The source line of ``text`` an error's span points at."""
    return text.splitlines()[err.span.line - 1]


def source(cube: str, vector: str, group_args: str = "idx, table, w, out") -> str:
    """A program of one AIC and one AIV kernel with the bodies given (8-space indented)."""
    return f"""
import pypto.language as pl

ROWS = {ROWS}
HALF = {HALF}
K = {K}
N = {N}
VOCAB = {VOCAB}
SLOT = {SLOT}


@pl.program
class P:
    @pl.function(type=pl.FunctionType.AIV)
    def gather(self, {PARAMS}):
{vector}

    @pl.function(type=pl.FunctionType.AIC)
    def project(self, {PARAMS}):
{cube}

    @pl.function(type=pl.FunctionType.Group)
    def pair(self, {PARAMS}):
        self.project({group_args})
        self.gather({group_args})

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, {PARAMS}):
        self.pair(idx, table, w, out)
        return out
"""


def indent(text: str) -> str:
    return "\n".join("        " + line if line else line for line in text.strip("\n").splitlines())


GATHER = """
lane = pl.get_subblock_idx()
rows = pl.create_tile([HALF, K], pl.FP16)
for r in pl.range(HALF):
    row = pl.cast(pl.read(idx, [lane * HALF + r]), pl.INDEX)
    rows = pl.gather_row(rows, table, [r, 0], [row, 0], [1, K])
"""

PROJECT = """
w_mat = pl.load(w, [0, 0], [N, K], target_memory=pl.Mem.Mat)
acc = pl.matmul(pl.move(emb, target_memory=pl.Mem.Left), pl.move(w_mat, target_memory=pl.Mem.Right), b_trans=True)
pl.tfree_to_aiv(emb)
pl.store(acc, [0, 0], out)
"""


def embed_program(slot_num_buffer: int = 2, vector_setup: str = "", cube_setup: str = "") -> str:
    vector = (
        vector_setup
        or """
ring = pl.import_peer_buffer(name="v2c_ring")
pl.aiv_initialize_pipe(dir_mask=2, slot_size=SLOT, v2c_consumer_buf=ring)
"""
    )
    cube = (
        cube_setup
        or f"""
ring = pl.reserve_buffer(name="v2c_ring", size={slot_num_buffer} * SLOT)
pl.aic_initialize_pipe(dir_mask=2, slot_size=SLOT, v2c_consumer_buf=ring)
"""
    )
    pop = "emb = pl.tpop_from_aiv(shape=[ROWS, K], dtype=pl.FP16, split=pl.SplitMode.UP_DOWN)\n"
    push = "pl.tpush_to_aic(rows, split=pl.SplitMode.UP_DOWN)\n"
    return source(indent(cube + pop + PROJECT), indent(vector + GATHER + push))


def test_a_deep_ring_in_a_reserved_buffer_is_the_exact_mat_budget_error():
    text = embed_program(slot_num_buffer=8)
    program = pl.parse(text)
    with pytest.raises(MemoryBudgetError) as info:
        run(program, *embed_inputs())
    # 8 slots of 65536 bytes fill Mat (524288); the weight tile (65536) above them is over. The
    # slot_num sentence of the automatic ring is not there: this ring's depth is the buffer's.
    assert info.value.message == (
        "Function 'project': Mat buffer usage (589824 bytes) exceeds platform limit (524288 bytes)."
        " The first 524288 bytes of that space are reserved by system.reserve_buffer, so tiles are"
        " allocated above them — this is the cross-core pipe ring."
    )
    # It points at the setup that chose the depth, and says how deep the ring may be.
    assert "pl.aic_initialize_pipe(dir_mask=2" in line_of(text, info.value)
    assert info.value.hint.endswith("slot_num=7 fits (pl.reserve_buffer(name='v2c_ring', size=458752))")


def test_the_same_program_with_the_buffer_at_a_fixed_base_matches_torch_and_tiles_sit_above_it():
    cube = """
ring = pl.reserve_buffer(name="v2c_ring", size=2 * SLOT, base=8192)
pl.aic_initialize_pipe(dir_mask=2, slot_size=SLOT, v2c_consumer_buf=ring)
"""
    program = pl.parse(embed_program(cube_setup=cube))
    compiled = compile_program(program, RunConfig())
    plan = compiled.lowered.function("project").attrs["memory_plan"]
    mat = [a for a in plan.allocations.values() if a.space is pl.Mem.Mat]
    assert min(a.offset for a in mat) >= 8192 + 2 * SLOT
    idx, table, w, out = embed_inputs()
    compiled.run(idx, table, w, out)
    assert torch.allclose(out, table[idx.long()].float() @ w.float().T, rtol=1e-3, atol=1e-2)


@pytest.mark.parametrize(
    ("vector_setup", "cube_setup", "message", "line", "hint"),
    [
        (  # a push on a pipe id the kernel never set up
            'ring = pl.import_peer_buffer(name="v2c_ring")\n'
            "pl.aiv_initialize_pipe(dir_mask=2, slot_size=SLOT, v2c_consumer_buf=ring, id=1)\n",
            "",
            "tpush_to_aic(id=0) in kernel gather uses v2c pipe 0, which the kernel never initializes "
            "(it initializes id 1 of that direction)",
            "pl.tpush_to_aic(rows",
            "id=0",
        ),
        (  # the two sides disagree on the slot size
            'ring = pl.import_peer_buffer(name="v2c_ring")\n'
            "pl.aiv_initialize_pipe(dir_mask=2, slot_size=SLOT // 2, v2c_consumer_buf=ring)\n",
            "",
            "v2c pipe 0 of Group pair: gather sets slot_size=32768, but project sets slot_size=65536 at",
            "pl.aiv_initialize_pipe(",
            "same slot_size",
        ),
        (  # the buffer holds fewer slots than the setup asks for
            "",
            'ring = pl.reserve_buffer(name="v2c_ring", size=SLOT)\n'
            "pl.aic_initialize_pipe(dir_mask=2, slot_size=SLOT, slot_num=2, v2c_consumer_buf=ring)\n",
            "aic_initialize_pipe: the v2c ring of 2 x 65536 bytes does not fit buffer 'v2c_ring' of "
            "65536 bytes (reserved at",
            "pl.aic_initialize_pipe(",
            "reserve size >= slot_num * slot_size = 131072 bytes",
        ),
        (  # the producer imports a name no peer reserves
            'ring = pl.import_peer_buffer(name="c2v_ring")\n'
            "pl.aiv_initialize_pipe(dir_mask=2, slot_size=SLOT, v2c_consumer_buf=ring)\n",
            "",
            "import_peer_buffer(name='c2v_ring') in kernel gather: no kernel launched beside it in a Group "
            "reserves a buffer of that name (its peers reserve 'v2c_ring')",
            "pl.import_peer_buffer(",
            'pl.reserve_buffer(name="c2v_ring"',
        ),
    ],
    ids=["push-on-uninitialized-id", "slot-size-mismatch", "buffer-too-small", "import-without-reserve"],
)
def test_pipe_setup_mismatches_are_errors_at_the_users_line(vector_setup, cube_setup, message, line, hint):
    text = embed_program(vector_setup=vector_setup, cube_setup=cube_setup)
    with pytest.raises(PipeSetupError) as info:
        run(pl.parse(text), *embed_inputs())
    assert info.value.message.startswith(message)
    assert line in line_of(text, info.value)
    assert hint in info.value.hint


# Two pipes in one direction: pipe 0 carries the gathered rows, pipe 1 a second gather of the
# same table (by other indices); the cube holds both popped tiles before it frees either.
TWO_PIPES_VECTOR = """
emb_ring = pl.import_peer_buffer(name="emb_ring")
key_ring = pl.import_peer_buffer(name="key_ring")
pl.aiv_initialize_pipe(dir_mask=2, slot_size=SLOT, v2c_consumer_buf=emb_ring)
pl.aiv_initialize_pipe(dir_mask=2, slot_size=KEY_SLOT, v2c_consumer_buf=key_ring, id=1)
lane = pl.get_subblock_idx()
rows = pl.create_tile([HALF, K], pl.FP16)
keys = pl.create_tile([N // 2, K], pl.FP16)
for r in pl.range(HALF):
    rows = pl.gather_row(rows, table, [r, 0], [pl.cast(pl.read(idx, [lane * HALF + r]), pl.INDEX), 0], [1, K])
for r in pl.range(N // 2):
    keys = pl.gather_row(keys, table, [r, 0], [pl.cast(pl.read(idx, [ROWS - 1 - lane * (N // 2) - r]), pl.INDEX), 0], [1, K])
pl.tpush_to_aic(rows, split=pl.SplitMode.UP_DOWN)
pl.tpush_to_aic(keys, split=pl.SplitMode.UP_DOWN, id=1)
"""

TWO_PIPES_CUBE = """
emb_ring = pl.reserve_buffer(name="emb_ring", size=2 * SLOT)
key_ring = pl.reserve_buffer(name="key_ring", size=2 * KEY_SLOT)
pl.aic_initialize_pipe(dir_mask=2, slot_size=SLOT, v2c_consumer_buf=emb_ring)
pl.aic_initialize_pipe(dir_mask=2, slot_size=KEY_SLOT, v2c_consumer_buf=key_ring, id=1)
emb = pl.tpop_from_aiv(shape=[ROWS, K], dtype=pl.FP16, split=pl.SplitMode.UP_DOWN)
keys = pl.tpop_from_aiv(shape=[N, K], dtype=pl.FP16, split=pl.SplitMode.UP_DOWN, id=1)
acc = pl.matmul(pl.move(emb, target_memory=pl.Mem.Left), pl.move(keys, target_memory=pl.Mem.Right), b_trans=True)
pl.tfree_to_aiv(emb)
pl.tfree_to_aiv(keys, id=1)
pl.store(acc, [0, 0], out)
"""


def two_pipes(cube: str = TWO_PIPES_CUBE, vector: str = TWO_PIPES_VECTOR) -> str:
    return source(indent(cube), indent(vector)).replace("SLOT = ", f"KEY_SLOT = {N * K * 2}\nSLOT = ")


def test_two_pipes_with_ids_in_one_direction_match_torch():
    program = pl.parse(two_pipes())
    idx, table, w, out = embed_inputs()
    run(program, idx, table, w, out)
    emb = table[idx.long()].float()
    keys = table[idx.long().flip(0)[:N]].float()
    assert torch.allclose(out, emb @ keys.T, rtol=1e-3, atol=1e-1)
    compiled = compile_program(program, RunConfig())
    rings = compiled.lowered.function("project").attrs["memory_plan"].reservations
    # Both buffers packed from the bottom of Mat, one above the other.
    assert [(r.name, r.base) for r in rings] == [("emb_ring", 0), ("key_ring", 2 * SLOT)]


def test_a_missing_tfree_on_pipe_1_is_a_deadlock_naming_that_pipe():
    cube = TWO_PIPES_CUBE.replace("pl.tfree_to_aiv(keys, id=1)\n", "")
    text = two_pipes(cube=cube)
    with pytest.raises(DeadlockError) as info, pytest.warns(CompileWarning, match="keys popped by"):
        run(pl.parse(text), *embed_inputs())
    assert "pipe pair_v2c#1 is not drained" in info.value.message
    assert "keys = pl.tpop_from_aiv(" in line_of(text, info.value)


# Grouped pops on one pipe: the AIV pushes two row blocks, the AIC pops both, uses both, frees them.
GROUPED_VECTOR = """
ring = pl.import_peer_buffer(name="ring")
pl.aiv_initialize_pipe(dir_mask=2, slot_size=SLOT // 2, v2c_consumer_buf=ring)
lane = pl.get_subblock_idx()
for block in pl.range(2):
    rows = pl.create_tile([HALF // 2, K], pl.FP16)
    for r in pl.range(HALF // 2):
        at = block * HALF + lane * (HALF // 2) + r
        rows = pl.gather_row(rows, table, [r, 0], [pl.cast(pl.read(idx, [at]), pl.INDEX), 0], [1, K])
    pl.tpush_to_aic(rows, split=pl.SplitMode.UP_DOWN)
"""

GROUPED_CUBE = """
ring = pl.reserve_buffer(name="ring", size=SLOT)
pl.aic_initialize_pipe(dir_mask=2, slot_size=SLOT // 2, v2c_consumer_buf=ring)
top = pl.tpop_from_aiv(shape=[HALF, K], dtype=pl.FP16, split=pl.SplitMode.UP_DOWN)
bottom = pl.tpop_from_aiv(shape=[HALF, K], dtype=pl.FP16, split=pl.SplitMode.UP_DOWN)
w_mat = pl.load(w, [0, 0], [N, K], target_memory=pl.Mem.Mat)
w_right = pl.move(w_mat, target_memory=pl.Mem.Right)
acc_top = pl.matmul(pl.move(top, target_memory=pl.Mem.Left), w_right, b_trans=True)
acc_bottom = pl.matmul(pl.move(bottom, target_memory=pl.Mem.Left), w_right, b_trans=True)
FREES
pl.store(acc_top, [0, 0], out)
pl.store(acc_bottom, [HALF, 0], out)
"""


def test_two_pops_outstanding_then_freed_in_pop_order_match_torch():
    cube = GROUPED_CUBE.replace("FREES", "pl.tfree_to_aiv(top)\npl.tfree_to_aiv(bottom)")
    program = pl.parse(source(indent(cube), indent(GROUPED_VECTOR)))
    idx, table, w, out = embed_inputs()
    run(program, idx, table, w, out)
    assert torch.allclose(out, table[idx.long()].float() @ w.float().T, rtol=1e-3, atol=1e-2)


def test_freeing_out_of_pop_order_is_an_error_naming_both_pops():
    cube = GROUPED_CUBE.replace("FREES", "pl.tfree_to_aiv(bottom)\npl.tfree_to_aiv(top)")
    text = source(indent(cube), indent(GROUPED_VECTOR))
    with pytest.raises(PipeError) as info:
        run(pl.parse(text), *embed_inputs())
    assert info.value.message.startswith("tfree_to_aiv frees slot 1 of pipe pair_v2c (popped at <pl.parse-")
    assert "but slot 0 popped at <pl.parse-" in info.value.message
    assert "pl.tfree_to_aiv(bottom)" in line_of(text, info.value)
    assert "in the order they were popped" in info.value.hint


def test_overlapping_fixed_buffers_are_an_error_at_the_second():
    cube = """
ring = pl.reserve_buffer(name="v2c_ring", size=2 * SLOT, base=0)
spare = pl.reserve_buffer(name="spare", size=1024, base=SLOT)
pl.aic_initialize_pipe(dir_mask=2, slot_size=SLOT, v2c_consumer_buf=ring)
"""
    text = embed_program(cube_setup=cube)
    with pytest.raises(PipeSetupError) as info:
        run(pl.parse(text), *embed_inputs())
    assert (
        info.value.message
        == "reserve_buffer: 'spare' at base=65536 overlaps 'v2c_ring' (0..131072) in kernel project"
    )
    assert 'spare = pl.reserve_buffer(name="spare"' in line_of(text, info.value)
    assert "base=131072" in info.value.hint


def test_a_setup_without_slot_num_takes_the_default_depth():
    # PyPTO's slot_num=None: the ring is as deep as local_slot_num, else the target's default (2)
    cube = "pl.aic_initialize_pipe(dir_mask=2, slot_size=SLOT)\n"
    vector = "pl.aiv_initialize_pipe(dir_mask=2, slot_size=SLOT)\n"
    compiled = compile_program(pl.parse(embed_program(cube_setup=cube, vector_setup=vector)), RunConfig())
    text = print_ir(compiled.lowered)
    assert f"pl.system.aic_initialize_pipe(dir_mask=2, slot_size={SLOT}, slot_num=2)" in text


@pl.jit
def buffer_in_a_scope(x: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="scoped"):
        pl.reserve_buffer(name="ring", size=32768)
        out[:] = pl.exp(x)
    return out


def test_a_reserved_buffer_no_setup_of_its_pl_at_scope_names_is_an_error_at_it():
    # (A scope's setups that name a buffer give it its side: tests/test_crosscore_more.py.)
    with pytest.raises(PipeSetupError) as info:
        buffer_in_a_scope(torch.randn(64, 64), torch.zeros(64, 64))
    assert info.value.message == (
        "reserve_buffer(name='ring') in the pl.at scope scoped: no pipe setup of the scope names the "
        "buffer, so it has no side"
    )
    assert 'pl.reserve_buffer(name="ring"' in str(info.value)
    assert "c2v_consumer_buf=buf" in info.value.hint


TORCHREF = Path(__file__).resolve().parent.parent / "examples" / "plugins" / "pypto-backend-torchref" / "src"


class TorchRefPlugin:
    """The torchref example backend, registered from its source tree for this test."""

    @hookimpl
    def pypto_register_backends(self, register):
        sys.path.insert(0, str(TORCHREF))
        try:
            from pypto_backend_torchref import TorchRefBackend
        finally:
            sys.path.remove(str(TORCHREF))
        register(TorchRefBackend())


# The cube pops pipe 1 before pipe 0, the reverse of the lanes' push order: the pipes are apart.
POP_KEYS_FIRST = TWO_PIPES_CUBE.replace(
    "emb = pl.tpop_from_aiv(shape=[ROWS, K], dtype=pl.FP16, split=pl.SplitMode.UP_DOWN)\n"
    "keys = pl.tpop_from_aiv(shape=[N, K], dtype=pl.FP16, split=pl.SplitMode.UP_DOWN, id=1)\n",
    "keys = pl.tpop_from_aiv(shape=[N, K], dtype=pl.FP16, split=pl.SplitMode.UP_DOWN, id=1)\n"
    "emb = pl.tpop_from_aiv(shape=[ROWS, K], dtype=pl.FP16, split=pl.SplitMode.UP_DOWN)\n",
)


@pytest.mark.parametrize("platform", ["a2a3sim", "torchref"])
def test_pipes_of_one_direction_are_independent_queues_on_each_backend(platform, monkeypatch):
    assert POP_KEYS_FIRST != TWO_PIPES_CUBE
    monkeypatch.setenv("PYPTO_CACHE", "off")
    if platform == "torchref":
        reset_registry()
        register_plugin(TorchRefPlugin(), name="torchref-source")
    try:
        idx, table, w, out = embed_inputs()
        program = pl.parse(two_pipes(cube=POP_KEYS_FIRST))
        compile_program(program, RunConfig(platform=platform)).run(idx, table, w, out)
    finally:
        if platform == "torchref":
            reset_registry()
    emb, keys = table[idx.long()].float(), table[idx.long().flip(0)[:N]].float()
    assert torch.allclose(out, emb @ keys.T, rtol=1e-3, atol=1e-1)
