"""The disk cache of compiled programs: keys, hits across JIT objects, corrupted entries, and the
pickling of every IR class it relies on."""

import dataclasses
import pickle
import warnings

import pytest
from lang_kernels_explicit import explicit
from lang_kernels_seed import mixed, staged

import pypto.ir as ir
import pypto.language as pl
from pypto.ir import nodes
from pypto.passes import CompileWarning
from pypto.runtime import RunConfig, compile_program
from pypto.runtime.compiling import compiled
from pypto.runtime.compiling.cache import CacheWarning, ProgramCache, _Fingerprint, cache_key

X = pl.Tensor[[64, 64], pl.FP32]


@pytest.fixture
def cache_dir(tmp_path, monkeypatch, backend):
    """A fresh cache directory, the cache on, the recording ``testsim`` backend registered."""
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("PYPTO_CACHE", raising=False)
    return tmp_path / "cache"


def on_testsim():
    return RunConfig(platform="testsim")


def make_add(scale: float):
    """Two kernels with the same source that differ only in a closure constant."""

    @pl.jit
    def add(a: X, out: pl.Out[X]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="add"):
            out[:] = pl.mul(pl.add(a, a), scale)
        return out

    return add


def fingerprint(value) -> str:
    return _Fingerprint().add(value).digest.hexdigest()


def ir_classes(value, seen=None) -> set[type]:
    """Every dataclass type reachable from ``value``."""
    seen = set() if seen is None else seen
    found: set[type] = set()
    if id(value) in seen:
        return found
    seen.add(id(value))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        found.add(type(value))
        for field in dataclasses.fields(value):
            found |= ir_classes(getattr(value, field.name), seen)
    elif isinstance(value, (tuple, list, set, frozenset)):
        for item in value:
            found |= ir_classes(item, seen)
    elif isinstance(value, dict) or hasattr(value, "items"):
        for key, item in value.items():
            found |= ir_classes(key, seen) | ir_classes(item, seen)
    return found


@pl.jit
def branchy(a: X, b: X, out: pl.Out[X]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(4):
            if i < 2:
                out[i * 16 : i * 16 + 16, :] = pl.load(a, [i * 16, 0], [16, 64])
            else:  # a tile placed by hand: a MemRefSlot on its Assign
                t: pl.Tile[[16, 64], pl.FP32, pl.MemRef("ub", slots=2)[i % 2], pl.Mem.Vec] = pl.load(
                    b, [i * 16, 0], [16, 64]
                )
                out[i * 16 : i * 16 + 16, :] = t
    return out


@pl.jit
def flowy(a: X, n: pl.Tensor[[4], pl.INT32], out: pl.Out[X]):
    """A while loop, break, continue and values leaving an if: the nodes of control flow."""
    with pl.at(level=pl.Level.CORE_GROUP):
        limit = pl.read(n, [0])
        acc = pl.load(a, [0, 0], [16, 64])
        for (k,) in pl.while_(init_values=(0,)):
            pl.cond(k < limit)
            k = k + 1
        for i in pl.range(1, 4):
            if i == k:
                continue
            if i > limit:
                break
            if i < 2:  # noqa: SIM108 (an If with results)
                t = pl.exp(pl.load(a, [i * 16, 0], [16, 64]))
            else:
                t = pl.load(a, [i * 16, 0], [16, 64])
            acc = pl.add(acc, t)
        out[0:16, :] = acc
    return out


ROWS = pl.dynamic("ROWS")


@pl.jit
def dynamic_rows(
    a: pl.Tensor[[ROWS, 64], pl.FP32],
    out: pl.Out[pl.Tensor[[ROWS, 64], pl.FP32]],
    both: pl.Out[pl.Tensor[[ROWS * 2, 64], pl.FP32]],  # an extent computed from ROWS (a DimExpr)
):
    with pl.at(level=pl.Level.CORE_GROUP):
        for r in pl.range(0, pl.tensor.dim(a, 0), 16):
            t = pl.load(a, [r, 0], [16, 64], valid_shape=[pl.min(16, ROWS - r), 64])
            pl.store(pl.exp(t), [r, 0], out)
            pl.store(t, [r + ROWS, 0], both)
    return out


@pl.program
class WithAttrs:
    @pl.function(type=pl.FunctionType.InCore)
    def double(self, a: X, out: pl.Out[X]):
        pl.func_attr({"scaled": a, "factor": 2})  # a bare name is a parameter (an ir.ParamRef)
        out[:] = pl.mul(pl.load(a, [0, 0], [64, 64]), 2.0)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: X, out: pl.Out[X]):
        return self.double(a, out)


@pytest.mark.filterwarnings("ignore::pypto.passes.CompileWarning")
def test_every_ir_class_round_trips_through_pickle(backend):
    programs = [WithAttrs, compile_program(WithAttrs, on_testsim()).lowered]
    for kernel in (mixed, staged, explicit, branchy, flowy, dynamic_rows):
        programs += [kernel.parse(), kernel.lower(config=on_testsim())]
    seen: set[type] = set()
    for program in programs:
        copy = pickle.loads(pickle.dumps(program))
        assert fingerprint(copy) == fingerprint(program)  # same values, same sharing of Vars
        assert ir.print_ir(copy) == ir.print_ir(program)
        seen |= ir_classes(program)
    node_classes = {
        cls
        for cls in vars(nodes).values()
        if isinstance(cls, type) and dataclasses.is_dataclass(cls) and cls.__module__ == nodes.__name__
    }
    needed = node_classes | {ir.MemoryPlan, ir.Allocation, ir.Reservation, ir.TileType, ir.TensorType}
    assert needed <= seen, f"not exercised: {sorted(c.__name__ for c in needed - seen)}"


def test_the_fingerprint_keeps_distinct_vars_apart():
    x, y = ir.Var("t", ir.INDEX), ir.Var("t", ir.INDEX)
    assert fingerprint((x, x)) != fingerprint((x, y))


def test_the_key_covers_closure_constants_platform_options_and_pipeline(cache_dir, backend):
    target = backend.target
    double, triple = make_add(2.0).parse(), make_add(3.0).parse()
    base = cache_key(double, target, on_testsim(), "p")
    assert base == cache_key(make_add(2.0).parse(), target, on_testsim(), "p")
    assert base != cache_key(triple, target, on_testsim(), "p")
    assert base != cache_key(double, target, RunConfig(platform="other"), "p")
    assert base != cache_key(double, target, RunConfig(platform="testsim", options={"x": 1}), "p")
    assert base != cache_key(double, target, RunConfig(platform="testsim", pipeline=["OutlineScopes"]), "p")
    assert base != cache_key(double, target, on_testsim(), "plugin 'p' (distribution p 0.2)")
    assert base != cache_key(double, dataclasses.replace(target, max_pipe_slots=4), on_testsim(), "p")


def test_an_empty_pipeline_is_not_the_default_one(cache_dir, backend):
    """A program compiled with no passes must never be served to a run of the default pipeline."""
    target, program = backend.target, make_add(2.0).parse()
    unlowered = cache_key(program, target, RunConfig(platform="testsim", pipeline=()), "p")
    assert unlowered != cache_key(program, target, RunConfig(platform="testsim"), "p")


def test_a_second_compile_comes_from_the_disk(cache_dir, monkeypatch):
    lowered = []
    lower_program = compiled.lower_program
    monkeypatch.setattr(compiled, "lower_program", lambda *args: lowered.append(args) or lower_program(*args))
    first = make_add(2.0).compile(config=on_testsim())
    second = make_add(2.0).compile(config=on_testsim())  # a new JIT object: its memory cache is empty
    assert (first.cache, second.cache) == ("miss", "hit")
    assert len(lowered) == 1  # the hit ran no pass
    assert ir.print_ir(second.lowered) == ir.print_ir(first.lowered)
    (entry,) = ProgramCache(cache_dir).entries()
    assert (entry.kernel, entry.platform, entry.hits) == ("add", "testsim", 1)
    assert entry.last_hit_seconds is not None  # the index recorded the hit


def test_a_closure_constant_change_compiles_again(cache_dir):
    make_add(2.0).compile(config=on_testsim())
    assert make_add(3.0).compile(config=on_testsim()).cache == "miss"
    assert len(ProgramCache(cache_dir).entries()) == 2


def test_a_corrupted_entry_is_compiled_again_with_a_warning(cache_dir):
    make_add(2.0).compile(config=on_testsim())
    (path,) = (cache_dir / "compiled").glob("*.pickle")
    path.write_bytes(b"\x80\x05 not a pickle")
    with pytest.warns(CacheWarning, match="is corrupted .*; compiling again"):
        again = make_add(2.0).compile(config=on_testsim())
    assert again.cache == "miss"
    assert make_add(2.0).compile(config=on_testsim()).cache == "hit"


def test_an_entry_holding_something_else_counts_as_corrupted(cache_dir):
    make_add(2.0).compile(config=on_testsim())
    (path,) = (cache_dir / "compiled").glob("*.pickle")
    path.write_bytes(pickle.dumps({"not": "an entry"}))
    with pytest.warns(CacheWarning, match="it holds a dict, not a CacheEntry"):
        assert make_add(2.0).compile(config=on_testsim()).cache == "miss"


def test_writes_leave_no_temporary_files(cache_dir):
    make_add(2.0).compile(config=on_testsim())
    names = sorted(p.suffix for p in (cache_dir / "compiled").iterdir())
    assert names == [".json", ".pickle"]


def test_an_unwritable_cache_directory_is_a_warning_not_an_error(tmp_path, monkeypatch, backend):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(blocker))
    with pytest.warns(CacheWarning, match="cannot write compile cache entry"):
        assert make_add(2.0).compile(config=on_testsim()).cache == "miss"


def test_the_cache_can_be_switched_off(cache_dir, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE", "off")
    assert make_add(2.0).compile(config=on_testsim()).cache == "off"
    assert not (cache_dir / "compiled").exists()


def test_pass_dumps_bypass_the_cache(cache_dir, tmp_path):
    make_add(2.0).compile(config=on_testsim())
    dumped = make_add(2.0).compile(config=RunConfig(platform="testsim", dump_passes=tmp_path / "dumps"))
    assert dumped.cache == "off"
    assert sorted(p.name for p in (tmp_path / "dumps").iterdir())[0] == "01_after_OutlineScopes.py"


def test_compile_warnings_are_given_again_on_a_hit(cache_dir):
    recorded = []
    for _ in range(2):
        explicit.cache_clear()  # the in-memory cache would hide the disk cache
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            compiled = explicit.compile(config=on_testsim())
        messages = [str(w.message) for w in caught if issubclass(w.category, CompileWarning)]
        recorded.append((compiled.cache, messages))
    (first, first_messages), (second, second_messages) = recorded
    assert (first, second) == ("miss", "hit")
    assert first_messages and second_messages == first_messages


@pytest.mark.parametrize(
    ("index", "problem"),
    [
        (None, "is missing"),
        ("{not json", "is not valid JSON"),
        ('["a", "list"]', "holds a list, not an object"),
        ('{"kernel": "add", "platform": "testsim"}', "has no 'compile_seconds'"),
        (
            '{"kernel": 3, "platform": "testsim", "compile_seconds": 0.1, "created": 1.0, "hits": 0,'
            ' "last_hit_seconds": null}',
            "has kernel = 3",
        ),
    ],
    ids=["missing", "not json", "not an object", "a field missing", "a field of the wrong type"],
)
def test_an_entry_whose_index_is_lost_or_corrupt_is_warned_and_a_hit_writes_it_again(
    cache_dir, index, problem
):
    make_add(2.0).compile(config=on_testsim())
    (meta,) = (cache_dir / "compiled").glob("*.json")
    meta.unlink() if index is None else meta.write_text(index)
    with pytest.warns(CacheWarning) as caught:
        assert ProgramCache(cache_dir).entries() == []
    (warning,) = caught
    assert f"is not listed: its index {meta} {problem}" in str(warning.message)
    assert make_add(2.0).compile(config=on_testsim()).cache == "hit"
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        (entry,) = ProgramCache(cache_dir).entries()
    assert (entry.kernel, entry.platform, entry.hits) == ("add", "testsim", 1)
