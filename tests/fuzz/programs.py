"""Hypothesis strategies that generate whole ``pl`` programs and their torch references.

Each strategy draws a :class:`Program`: the text of a module holding a ``@pl.jit`` ``kernel``
and a torch ``reference`` that computes what the kernel's outputs must hold, plus the call's
inputs and what the generator knows of the program (``EXPECT``):

- ``valid``: every op is used the way docs/language.md and docs/mixed-kernels.md describe, the
  sizes fit the budgets with room to spare: the program must run and match torch;
- ``invalid``: one mutation breaks a rule (a shape or dtype mismatch, a bad offset, a scalar
  out of its dtype's range, a pipe that cannot work): the program must raise a ``PyptoError``;
- ``either``: the rules leave room (near a memory budget, a deep ring, a split the docs allow to
  be rejected, a float op on an integer tile): it may raise a ``PyptoError``, and if it runs it
  must match torch.

Families: elementwise and reduction chains on whole tensors in a scope, the same chains on
tiles in row-block loops with partial last tiles, matmul + epilogue scopes under a random split
mode and ring depth, and explicit ``split_aiv`` regions with hand-written pipes.

Values carry an interval of what they can hold, so the chains stay clear of integer overflow,
float overflow and the edges of log/sqrt/div (torch and the simulator would agree there, but
the tolerance could not); an op whose operand could leave its domain gets ``abs(x) + 1``.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass, field, replace

from hypothesis import strategies as st

from pypto.ir import MemorySpace
from pypto.ir.targets import get_target

# ---------------------------------------------------------------- dtypes


@dataclass(frozen=True)
class DType:
    """A pl dtype as the generator needs it."""

    name: str  # pl.<name>
    torch: str  # torch.<torch>
    size: int  # bytes
    is_float: bool
    limit: float  # largest magnitude the chains may reach
    rtol: float
    atol: float

    @property
    def pl(self) -> str:
        return f"pl.{self.name}"


DTYPES = {
    d.name: d
    for d in (
        DType("FP32", "float32", 4, True, 1e30, 1e-4, 1e-4),
        DType("FP16", "float16", 2, True, 6e4, 1e-2, 1e-2),
        DType("BF16", "bfloat16", 2, True, 1e30, 4e-2, 4e-2),
        DType("INT32", "int32", 4, False, 2**31 - 1, 0.0, 0.0),
        DType("INT16", "int16", 2, False, 2**15 - 1, 0.0, 0.0),
        DType("INT8", "int8", 1, False, 127, 0.0, 0.0),
    )
}
FLOATS = ("FP32", "FP16", "BF16")
INTS = ("INT32", "INT16", "INT8")
INT_RANGE = {"INT32": (-(2**31), 2**31 - 1), "INT16": (-(2**15), 2**15 - 1), "INT8": (-128, 127)}

VEC_BUDGET = get_target("a2a3").usable(MemorySpace.Vec)  # a2a3 Vec bytes
COMFORTABLE = 120000  # tiles below this many Vec bytes surely fit
SPLIT_MODES = ("UP_DOWN", "LEFT_RIGHT", "NONE")

PRELUDE = '''\
import torch

import pypto.language as pl


def _fits(c, x):
    """An integer scalar must fit an integer operand's dtype: else the program is invalid. A whole
    float with an integer operand is that integer (the DSL's rule)."""
    if isinstance(c, float) and c.is_integer() and not x.dtype.is_floating_point:
        c = int(c)
    if isinstance(c, int) and not x.dtype.is_floating_point:
        info = torch.iinfo(x.dtype)
        if not info.min <= c <= info.max:
            raise OverflowError(f"{c} does not fit {x.dtype}")
    return c


def _div(a, b):
    """pl.div: true division of floats; integers divide truncating toward zero, as in C."""
    if not a.is_floating_point():
        return torch.div(a, b, rounding_mode="trunc")
    return torch.div(a, b)


_ROUND = {
    "round": lambda v: torch.sign(v) * torch.floor(torch.abs(v) + 0.5),
    "rint": torch.round,
    "floor": torch.floor,
    "ceil": torch.ceil,
    "trunc": torch.trunc,
}


def _cast(x, dtype, mode):
    """pl.cast: float -> int rounds by mode, anything else converts like torch."""
    if x.is_floating_point() and not dtype.is_floating_point:
        return _ROUND[mode](x.double()).to(dtype)
    return x.to(dtype)


def _into(out, value, rows=None):
    """What an output holds after the kernel writes value (into its first rows)."""
    want = out.to(torch.promote_types(out.dtype, value.dtype))
    if rows is None:
        want[...] = value
    else:
        want[:rows] = value[:rows]
    return want
'''


# ---------------------------------------------------------------- the program


@dataclass
class Program:
    """A generated program: everything needed to write its module."""

    family: str
    params: list[str] = field(default_factory=list)  # the kernel's parameter declarations
    args: list[str] = field(default_factory=list)  # their names, in order
    inputs: list[tuple] = field(default_factory=list)  # (name, shape, torch dtype, dist, scale, seed)
    outputs: list[tuple] = field(default_factory=list)  # (name, shape, torch dtype)
    scalars: dict[str, object] = field(default_factory=dict)
    body: list[str] = field(default_factory=list)  # kernel body lines, 4-space relative indent
    ref: list[str] = field(default_factory=list)  # reference body lines
    returns: list[str] = field(default_factory=list)
    expect: str = "valid"
    why: list[str] = field(default_factory=list)
    rtol: float = 0.0
    atol: float = 0.0

    def source(self) -> str:
        lines = [PRELUDE, "", "@pl.jit", "def kernel("]
        lines += [f"    {p}," for p in self.params]
        lines.append("):")
        lines += [f"    {line}" for line in self.body]
        lines.append(f"    return {', '.join(self.returns)}")
        lines += ["", "", f"def reference({', '.join(self.args)}):"]
        if self.expect == "invalid":  # nothing to compare: the program must be rejected
            lines.append(f"    raise ValueError({self.why[-1]!r})")
        lines += [f"    {line}" for line in self.ref]
        lines += ["", ""]
        lines.append(f"INPUTS = {self.inputs!r}")
        lines.append(f"OUTPUTS = {self.outputs!r}")
        lines.append(f"SCALARS = {self.scalars!r}")
        lines.append(f"ARGS = {self.args!r}")
        lines.append(f"EXPECT = {self.expect!r}")
        lines.append(f"WHY = {'; '.join(self.why)!r}")
        lines.append(f"RTOL, ATOL = {self.rtol!r}, {self.atol!r}")
        return "\n".join(lines) + "\n"

    def __repr__(self) -> str:
        return f"<{self.family} program, EXPECT={self.expect}>\n{self.source()}"

    def _repr_pretty_(self, printer, cycle) -> None:  # how hypothesis prints a falsifying example
        printer.text(repr(self))

    def mark(self, level: str, reason: str) -> None:
        """Record what the generator knows: ``invalid`` wins over ``either`` over ``valid``."""
        order = ("valid", "either", "invalid")
        if order.index(level) > order.index(self.expect):
            self.expect = level
        self.why.append(f"{level}: {reason}")

    def tolerate(self, dtype: str) -> None:
        d = DTYPES[dtype]
        self.rtol, self.atol = max(self.rtol, d.rtol), max(self.atol, d.atol)

    def add_input(self, name: str, shape: list[int], dtype: str, dist: str, scale: float, seed: int) -> None:
        self.params.append(f"{name}: pl.Tensor[{shape}, {DTYPES[dtype].pl}]")
        self.args.append(name)
        self.inputs.append((name, shape, DTYPES[dtype].torch, dist, scale, seed))
        self.tolerate(dtype)

    def add_output(self, name: str, shape: list[int], dtype: str) -> None:
        self.params.append(f"{name}: pl.Out[pl.Tensor[{shape}, {DTYPES[dtype].pl}]]")
        self.args.append(name)
        self.outputs.append((name, shape, DTYPES[dtype].torch))
        self.returns.append(name)

    def file_name(self) -> str:
        """Named by content: the same program is the same file, so a replay sees the same spans."""
        digest = hashlib.sha1(self.source().encode()).hexdigest()[:12]
        return f"gen_{self.family}_{digest}.py"


# ---------------------------------------------------------------- values and chains


@dataclass(frozen=True)
class Value:
    """A named value of a chain: ``kind`` is ``full`` ([R, C]), ``row`` ([R, 1]) or ``col``
    ([1, C]); ``dtype`` is pl's (no promotion); ``lo``/``hi`` bound what it holds."""

    name: str
    kind: str
    dtype: str
    lo: float
    hi: float
    torch_float: bool = False  # torch computes a float here although pl's dtype is an integer
    row_max_of: str = ""  # a row_max of this value (the softmax shift stays <= 0)
    everywhere: bool = False  # a reduction of a padded tile: valid over the whole tile


def _fits(dtype: str, lo: float, hi: float) -> bool:
    limit = DTYPES[dtype].limit
    return math.isfinite(lo) and math.isfinite(hi) and -limit <= lo and hi <= limit


def _mul_bounds(a: tuple[float, float], b: tuple[float, float]) -> tuple[float, float]:
    products = [x * y for x in a for y in b]
    return min(products), max(products)


def _away_from_zero(v: Value) -> bool:
    return v.lo >= 0.25 or v.hi <= -0.25


class Chain:
    """Builds a chain of ops over named values, in pl and in torch at once.

    ``level`` is ``tensor`` (whole tensors inside a scope) or ``tile`` (tiles inside one row
    block); ``partial`` says the tile level's tiles may hold fewer valid elements than their
    shape, so reductions pad first; ``tmp`` maps a dtype to the scratch tile's name.
    """

    def __init__(self, program: Program, level: str, rows: int, cols: int, partial: bool = False):
        self.p = program
        self.level = level
        self.rows, self.cols = rows, cols  # the valid extent reductions run over
        self.partial = partial
        self.values: list[Value] = []
        self.pl_lines: list[str] = []
        self.ref_lines: list[str] = []
        self.tmps: dict[str, str] = {}
        self.count = 0
        self.row_ops = self.col_ops = self.col_broadcasts = False
        self.pending: list[tuple[str, str]] = []  # a step's judgements, kept if it binds

    def note(self, level: str, reason: str) -> None:
        """Judge the program for the step being built (forgotten if the step is dropped)."""
        self.pending.append((level, reason))

    def fresh(self) -> str:
        self.count += 1
        return f"v{self.count}"

    def bind(self, value: Value, pl_expr: str, ref_expr: str) -> Value:
        for level, reason in self.pending:
            self.p.mark(level, reason)
        self.pending.clear()
        self.pl_lines.append(f"{value.name} = {pl_expr}")
        self.ref_lines.append(f"{value.name} = {ref_expr}")
        self.values.append(value)
        return value

    def tmp(self, dtype: str) -> str:
        if dtype not in self.tmps:
            self.tmps[dtype] = f"tmp_{dtype.lower()}"
        return self.tmps[dtype]

    def padded(self, v: Value, pad: str) -> str:
        return f"pl.fillpad({v.name}, pad_value=pl.PadValue.{pad})" if self.partial else v.name


def _safe_positive(v: Value) -> tuple[str, str, float, float]:
    """``abs(v) + 1``: a positive operand for log / sqrt / rsqrt / recip / div."""
    top = max(abs(v.lo), abs(v.hi)) + 1
    one = "1.0" if DTYPES[v.dtype].is_float else "1"
    return f"pl.add(pl.abs({v.name}), {one})", f"(torch.abs({v.name}) + {one})", 1.0, top


UNARY_SAFE = ("neg", "abs", "relu")
UNARY_FLOAT = ("exp", "log", "sqrt", "rsqrt", "recip")
TORCH_UNARY = {
    "neg": "torch.neg",
    "abs": "torch.abs",
    "relu": "torch.relu",
    "exp": "torch.exp",
    "log": "torch.log",
    "sqrt": "torch.sqrt",
    "rsqrt": "torch.rsqrt",
    "recip": "torch.reciprocal",
}
BINARY = ("add", "sub", "mul", "div", "maximum", "minimum")
TORCH_BINARY = {
    "add": "torch.add",
    "sub": "torch.sub",
    "mul": "torch.mul",
    "div": "_div",
    "maximum": "torch.maximum",
    "minimum": "torch.minimum",
}
OPERATOR = {"add": "+", "sub": "-", "mul": "*", "div": "/"}
ROW_REDUCE = {"row_sum": ("sum", "zero"), "row_max": ("amax", "min"), "row_min": ("amin", "max")}
COL_REDUCE = {"col_sum": ("sum", "zero"), "col_max": ("amax", "min")}
ROW_EXPAND = {"row_expand_add": "+", "row_expand_sub": "-", "row_expand_mul": "*", "row_expand_div": "/"}
ROUNDINGS = ("round", "rint", "floor", "ceil", "trunc")


def _unary_bounds(op: str, v: Value) -> tuple[float, float]:
    lo, hi = v.lo, v.hi
    if op == "neg":
        return -hi, -lo
    if op == "abs":
        return (0.0 if lo <= 0 <= hi else min(abs(lo), abs(hi))), max(abs(lo), abs(hi))
    if op == "relu":
        return max(lo, 0.0), max(hi, 0.0)
    if op == "exp":
        return math.exp(lo), math.exp(hi)
    if op == "log":
        return math.log(lo), math.log(hi)
    if op == "sqrt":
        return math.sqrt(lo), math.sqrt(hi)
    if op == "rsqrt":
        return 1 / math.sqrt(hi), 1 / math.sqrt(lo)
    return 1 / hi, 1 / lo  # recip of an operand away from zero


def _binary_bounds(op: str, a: tuple[float, float], b: tuple[float, float]) -> tuple[float, float]:
    if op == "add":
        return a[0] + b[0], a[1] + b[1]
    if op == "sub":
        return a[0] - b[1], a[1] - b[0]
    if op == "mul":
        return _mul_bounds(a, b)
    if op == "div":
        return _mul_bounds(a, (1 / b[1], 1 / b[0]))
    if op == "maximum":
        return max(a[0], b[0]), max(a[1], b[1])
    return min(a[0], b[0]), min(a[1], b[1])


@st.composite
def unary_step(draw, chain: Chain) -> Value | None:
    v = draw(st.sampled_from(chain.values))
    d = DTYPES[v.dtype]
    ops = list(UNARY_SAFE) + list(UNARY_FLOAT)
    op = draw(st.sampled_from(ops))
    operand_pl, operand_ref, lo, hi = v.name, v.name, v.lo, v.hi
    if op in UNARY_FLOAT and not d.is_float:
        chain.note("either", f"pl.{op} on an {v.dtype} value (torch computes floats)")
    if (op in ("log", "rsqrt", "recip") and v.lo < 0.25) or (op == "sqrt" and v.lo < 0):
        operand_pl, operand_ref, lo, hi = _safe_positive(v)
    if op == "exp" and hi > 10:
        return None
    if op == "neg" and not d.is_float and -v.lo > d.limit:
        return None
    if op == "abs" and not d.is_float and max(-v.lo, v.hi) > d.limit:
        return None
    lo2, hi2 = _unary_bounds(op, replace(v, lo=lo, hi=hi))
    if not _fits(v.dtype, lo2, hi2):
        return None
    name = chain.fresh()
    torch_float = v.torch_float or op in UNARY_FLOAT
    out = Value(name, v.kind, v.dtype, lo2, hi2, torch_float, everywhere=v.everywhere)
    return chain.bind(out, f"pl.{op}({operand_pl})", f"{TORCH_UNARY[op]}({operand_ref})")


@st.composite
def binary_step(draw, chain: Chain) -> Value | None:
    a = draw(st.sampled_from(chain.values))
    partners = [b for b in chain.values if b.kind == a.kind and b.dtype == a.dtype]
    b = draw(st.sampled_from(partners))
    op = draw(st.sampled_from(BINARY))
    rhs_pl, rhs_ref, blo, bhi = b.name, b.name, b.lo, b.hi
    if op == "div" and not _away_from_zero(b):
        rhs_pl, rhs_ref, blo, bhi = _safe_positive(b)
    lo, hi = _binary_bounds(op, (a.lo, a.hi), (blo, bhi))
    if not _fits(a.dtype, lo, hi):
        return None
    if op in OPERATOR and draw(st.booleans()):
        pl_expr = f"{a.name} {OPERATOR[op]} {rhs_pl}"
    else:
        pl_expr = f"pl.{op}({a.name}, {rhs_pl})"
    torch_float = a.torch_float or b.torch_float
    out = Value(chain.fresh(), a.kind, a.dtype, lo, hi, torch_float, everywhere=a.everywhere)
    return chain.bind(out, pl_expr, f"{TORCH_BINARY[op]}({a.name}, {rhs_ref})")


def _scalar_choices(dtype: str) -> list[tuple[object, str]]:
    """(constant, what it is): in range, float on an integer, out of range."""
    if DTYPES[dtype].is_float:
        fine = [0.5, 2.0, -1.5, 3.0, 0.25, 1, 2, -3]
        big = [70000.0, 1e5] if dtype == "FP16" else [1e39]
        return [(c, "ok") for c in fine] + [(c, "overflow") for c in big] + [(0.0, "zero")]
    lo, hi = INT_RANGE[dtype]
    fine = [1, 2, 3, -2, 5, 0]
    return (
        [(c, "ok") for c in fine]
        + [(c, "float") for c in (2.5, 0.5, 2.0, -1.5)]
        + [(hi + 1, "range"), (lo - 1, "range"), (hi + 173, "range")]
    )


@st.composite
def scalar_step(draw, chain: Chain) -> Value | None:
    v = draw(st.sampled_from(chain.values))
    op = draw(st.sampled_from(("add", "sub", "mul", "div")))
    c, what = draw(st.sampled_from(_scalar_choices(v.dtype)))
    d = DTYPES[v.dtype]
    if what == "range":
        chain.note("invalid", f"the scalar {c} does not fit {v.dtype}")
        lo, hi = v.lo, v.hi
    else:
        if what == "float":
            chain.note("either", f"a float scalar {c} with an {v.dtype} value")
        if what == "overflow":
            chain.note("either", f"the scalar {c} overflows {v.dtype}")
        if what == "zero" and op == "div":
            chain.note("either", "division by the scalar 0.0")
        if what in ("overflow", "zero"):
            lo, hi = -math.inf, math.inf
        else:
            cb = (float(c), float(c))
            lo, hi = _binary_bounds(op, (v.lo, v.hi), cb) if not (op == "div" and c == 0) else (0, 0)
            if not _fits(v.dtype, lo, hi):
                return None
    ref_c = f"_fits({c!r}, {v.name})"
    if op in OPERATOR and draw(st.booleans()):
        pl_expr = f"{v.name} {OPERATOR[op]} {c!r}"
    else:
        pl_expr = f"pl.{op}({v.name}, {c!r})"
    # A whole float on an integer value is that integer (the DSL's rule); a fractional one is not.
    torch_float = v.torch_float or (isinstance(c, float) and not c.is_integer())
    if what in ("overflow", "zero"):
        lo, hi = -d.limit, d.limit  # nothing below may rely on the bounds
    out = Value(chain.fresh(), v.kind, v.dtype, lo, hi, torch_float, everywhere=v.everywhere)
    return chain.bind(out, pl_expr, f"{TORCH_BINARY[op]}({v.name}, {ref_c})")


@st.composite
def row_reduce_step(draw, chain: Chain) -> Value | None:
    fulls = [v for v in chain.values if v.kind == "full"]
    if not fulls:
        return None
    v = draw(st.sampled_from(fulls))
    op = draw(st.sampled_from(sorted(ROW_REDUCE)))
    method, pad = ROW_REDUCE[op]
    lo, hi = (v.lo * chain.cols, v.hi * chain.cols) if op == "row_sum" else (v.lo, v.hi)
    lo, hi = min(lo, v.lo), max(hi, v.hi)
    if not _fits(v.dtype, lo, hi):
        return None
    chain.row_ops = True
    arg = chain.padded(v, pad)
    pl_expr = f"pl.{op}({arg}, {chain.tmp(v.dtype)})" if chain.level == "tile" else f"pl.{op}({arg})"
    row_max_of = v.name if op == "row_max" else ""
    out = Value(chain.fresh(), "row", v.dtype, lo, hi, v.torch_float, row_max_of, chain.partial)
    return chain.bind(out, pl_expr, f"{v.name}.{method}(1, keepdim=True)")


@st.composite
def col_reduce_step(draw, chain: Chain) -> Value | None:
    fulls = [v for v in chain.values if v.kind == "full"]
    if not fulls:
        return None
    v = draw(st.sampled_from(fulls))
    op = draw(st.sampled_from(sorted(COL_REDUCE)))
    method, pad = COL_REDUCE[op]
    lo, hi = (v.lo * chain.rows, v.hi * chain.rows) if op == "col_sum" else (v.lo, v.hi)
    lo, hi = min(lo, v.lo), max(hi, v.hi)
    if not _fits(v.dtype, lo, hi):
        return None
    chain.col_ops = True
    out = Value(chain.fresh(), "col", v.dtype, lo, hi, v.torch_float, everywhere=chain.partial)
    return chain.bind(out, f"pl.{op}({chain.padded(v, pad)})", f"{v.name}.{method}(0, keepdim=True)")


@st.composite
def expand_step(draw, chain: Chain) -> Value | None:
    pairs = [
        (x, vec)
        for x in chain.values
        if x.kind == "full"
        for vec in chain.values
        if vec.kind in ("row", "col") and vec.dtype == x.dtype
    ]
    if not pairs:
        return None
    x, vec = draw(st.sampled_from(pairs))
    if vec.kind == "row":
        chain.row_ops = True
        op = draw(st.sampled_from(sorted(ROW_EXPAND)))
        sign = ROW_EXPAND[op]
        vname, vlo, vhi = vec.name, vec.lo, vec.hi
        vref = vec.name
        if sign == "/" and not _away_from_zero(vec):
            return None
        if op == "row_expand_sub" and vec.row_max_of == x.name:
            lo, hi = x.lo - x.hi, 0.0  # x - row_max(x) <= 0: the softmax shift
        else:
            binop = {"+": "add", "-": "sub", "*": "mul", "/": "div"}[sign]
            lo, hi = _binary_bounds(binop, (x.lo, x.hi), (vlo, vhi))
        if not _fits(x.dtype, lo, hi):
            return None
        torch_float = x.torch_float or vec.torch_float
        out = Value(chain.fresh(), "full", x.dtype, lo, hi, torch_float)
        ref = f"_div({x.name}, {vref})" if sign == "/" else f"({x.name} {sign} {vref})"
        return chain.bind(out, f"pl.{op}({x.name}, {vname})", ref)
    chain.col_broadcasts = True
    if draw(st.booleans()):
        lo, hi = _mul_bounds((x.lo, x.hi), (vec.lo, vec.hi))
        if not _fits(x.dtype, lo, hi):
            return None
        out = Value(chain.fresh(), "full", x.dtype, lo, hi, x.torch_float or vec.torch_float)
        return chain.bind(out, f"pl.col_expand_mul({x.name}, {vec.name})", f"({x.name} * {vec.name})")
    out = Value(chain.fresh(), "full", x.dtype, vec.lo, vec.hi, vec.torch_float)
    return chain.bind(
        out, f"pl.col_expand({x.name}, {vec.name})", f"{vec.name}.expand({x.name}.shape).clone()"
    )


@st.composite
def cast_step(draw, chain: Chain) -> Value | None:
    v = draw(st.sampled_from(chain.values))
    target = draw(st.sampled_from([d for d in DTYPES if d != v.dtype]))
    mode = draw(st.sampled_from(ROUNDINGS))
    src, dst = DTYPES[v.dtype], DTYPES[target]
    lo, hi = v.lo, v.hi
    if not dst.is_float:
        lo, hi = math.floor(lo), math.ceil(hi)
        rng = INT_RANGE[target]
        if not (rng[0] <= lo and hi <= rng[1]):
            return None
        if src.is_float and len(chain.values) > 1:
            chain.p.atol = max(chain.p.atol, 1.0)  # an ulp upstream may round to the next integer
    if not _fits(target, lo, hi):
        return None
    if v.torch_float and not dst.is_float:
        chain.note("either", "a cast of a value pl keeps as an integer and torch as a float")
    chain.p.tolerate(target)
    out = Value(
        chain.fresh(), v.kind, target, lo, hi, v.torch_float and dst.is_float, everywhere=v.everywhere
    )
    return chain.bind(
        out, f'pl.cast({v.name}, {dst.pl}, mode="{mode}")', f'_cast({v.name}, torch.{dst.torch}, "{mode}")'
    )


@st.composite
def chain_steps(draw, chain: Chain, steps: int, allow_col_reduce: bool) -> None:
    """Append ``steps`` ops to ``chain`` (a step whose bounds do not fit is dropped)."""
    makers = [unary_step, binary_step, scalar_step, row_reduce_step, expand_step, cast_step]
    weights = [3, 4, 3, 2, 2, 1]
    if allow_col_reduce:
        makers.append(col_reduce_step)
        weights.append(1)
    pool = [m for m, w in zip(makers, weights, strict=True) for _ in range(w)]
    for _ in range(steps):
        maker = draw(st.sampled_from(pool))
        draw(maker(chain))
        chain.pending.clear()  # a dropped step leaves no judgement behind


# ---------------------------------------------------------------- family 1: tensor chains

ROW_EXTENTS = (1, 2, 3, 7, 16, 31, 32, 33, 64, 100, 127, 128, 129, 200, 256, 257, 384, 512, 1000)
COL_EXTENTS = (1, 3, 8, 15, 16, 17, 32, 48, 63, 64, 100, 128, 130, 256, 500, 512, 1024, 2048, 4096)
HUGE_COLS = (16384, 50000, 65536)
MAX_ELEMENTS = 1 << 18


def _input_dist(dtype: str) -> tuple[str, float]:
    return ("normal", 1.0) if DTYPES[dtype].is_float else ("int", 8.0)


def _bounds(dist: str, scale: float) -> tuple[float, float]:
    if dist == "int":
        return -scale, scale
    if dist == "positive":
        return 0.5, 0.5 + scale
    return -3 * scale, 3 * scale


@st.composite
def extents(draw) -> tuple[int, int]:
    rows = draw(st.sampled_from(ROW_EXTENTS))
    if rows <= 4 and draw(st.integers(0, 9)) == 9:
        return rows, draw(st.sampled_from(HUGE_COLS))  # a single row over the Vec budget
    cols = draw(st.sampled_from([c for c in COL_EXTENTS if rows * c <= MAX_ELEMENTS]))
    return rows, cols


def _vector_inputs(draw, p: Program, chain: Chain, dtype: str, rows: int, cols: int) -> None:
    """x0..xk [R, C], maybe a row vector r0 [R, 1] and a column vector g0 [1, C]."""
    count = draw(st.integers(1, 3))
    for k in range(count):
        dist, scale = _input_dist(dtype)
        if k > 0 and DTYPES[dtype].is_float and draw(st.booleans()):
            dist = "positive"
        p.add_input(f"x{k}", [rows, cols], dtype, dist, scale, draw(st.integers(0, 2**16)))
        chain.values.append(Value(f"x{k}", "full", dtype, *_bounds(dist, scale)))
    for kind, shape, name in (("row", [rows, 1], "rowv"), ("col", [1, cols], "colv")):
        if draw(st.integers(0, 3)) == 3:  # hypothesis shrinks towards 0: towards fewer inputs
            dist, scale = _input_dist(dtype)
            p.add_input(name, shape, dtype, dist, scale, draw(st.integers(0, 2**16)))
            chain.values.append(Value(name, kind, dtype, *_bounds(dist, scale)))


def _shape_of(kind: str, rows: int, cols: int) -> list[int]:
    return {"full": [rows, cols], "row": [rows, 1], "col": [1, cols]}[kind]


@st.composite
def _outputs_for(draw, chain: Chain, storable=lambda v: True) -> list[Value]:
    """One or two chain results to write out (the last storable one always)."""
    candidates = [v for v in chain.values if storable(v)]
    results = [candidates[-1]]
    computed = [v for v in candidates[:-1] if v.name.startswith("v")]
    if computed and draw(st.booleans()):
        results.append(draw(st.sampled_from(computed)))
    return results


def _live_bytes(chain: Chain, extent: int, tile_rows: int, tile_cols: int) -> int:
    """A pessimistic Vec footprint: every value of the chain live at once."""
    per_kind = {"full": tile_rows * tile_cols, "row": tile_rows, "col": tile_cols}
    total = sum(per_kind[v.kind] * DTYPES[v.dtype].size for v in chain.values)
    return total + sum(tile_rows * tile_cols * DTYPES[d].size for d in chain.tmps)


MUTATIONS = ("out_dtype", "out_shape", "operand_dtype", "operand_shape", "wrong_vector")


@st.composite
def _mutation(draw) -> str | None:
    return draw(st.sampled_from(MUTATIONS)) if draw(st.integers(0, 5)) == 5 else None


def _mutate_operands(draw, p: Program, chain: Chain, mutation: str, rows: int, cols: int, level: str) -> None:
    """An elementwise op whose operands differ in dtype or shape, or a broadcast of the wrong vector."""
    a = draw(st.sampled_from([v for v in chain.values if v.kind == "full"]))
    name = chain.fresh()
    # A [R, 1] column and a [1, C] row broadcast against each other's shape when R or C is 1, and a
    # [1, C] row is an [R, 1] one when R == C == 1: those "mutations" would be valid programs, so
    # they change the dtype instead.
    if (mutation == "operand_shape" and 1 in (rows, cols)) or (
        mutation == "wrong_vector" and rows == cols == 1
    ):
        mutation = "operand_dtype"
    if mutation == "operand_dtype":
        other = draw(st.sampled_from([d for d in DTYPES if d != a.dtype]))
        chain.pl_lines.append(
            f'{name} = pl.add({a.name}, pl.cast({a.name}, {DTYPES[other].pl}, mode="round"))'
        )
        p.mark("invalid", f"pl.add of {a.dtype} and {other}")
    elif mutation == "operand_shape":
        # A [R, C] value with a [R, 1] or [1, C] vector broadcasts (docs/language.md); a [R, 1] column
        # with a [1, C] row does not (the DSL has no outer broadcast).
        vec, row = chain.fresh(), chain.fresh()
        if level == "tensor":
            chain.pl_lines.append(f"{vec} = pl.row_sum({a.name})")
        else:
            chain.pl_lines.append(f"{vec} = pl.row_sum({chain.padded(a, 'zero')}, {chain.tmp(a.dtype)})")
        chain.pl_lines.append(f"{row} = pl.col_sum({chain.padded(a, 'zero')})")
        chain.pl_lines.append(f"{name} = pl.mul({vec}, {row})")
        p.mark("invalid", "an elementwise op of a [R, 1] and a [1, C] operand")
    else:
        vec = chain.fresh()
        chain.pl_lines.append(f"{vec} = pl.col_sum({chain.padded(a, 'zero')})")
        chain.pl_lines.append(f"{name} = pl.row_expand_add({a.name}, {vec})")
        p.mark("invalid", "pl.row_expand_add with a [1, C] vector")
    chain.values.append(Value(name, "full", a.dtype, a.lo, a.hi))


@st.composite
def tensor_programs(draw) -> Program:
    """Family 1: a chain of whole-tensor ops in one scope, written with ``out[:] = v``."""
    p = Program("tensor")
    rows, cols = draw(extents())
    dtype = draw(st.sampled_from(FLOATS + INTS))
    chain = Chain(p, "tensor", rows, cols)
    _vector_inputs(draw, p, chain, dtype, rows, cols)
    draw(chain_steps(chain, draw(st.integers(1, 6)), allow_col_reduce=True))
    mutation = draw(_mutation())
    if mutation in ("operand_dtype", "operand_shape", "wrong_vector"):
        _mutate_operands(draw, p, chain, mutation, rows, cols, "tensor")
    results = draw(_outputs_for(chain))
    split = draw(st.sampled_from((None, None, None, *SPLIT_MODES)))
    options = f", optimizations=[pl.split(pl.SplitMode.{split})]" if split else ""
    p.body.append(f'with pl.at(level=pl.Level.CORE_GROUP{options}, name_hint="chain"):')
    p.body += [f"    {line}" for line in chain.pl_lines]
    p.ref += chain.ref_lines
    wants = []
    for k, v in enumerate(results):
        shape = _shape_of(v.kind, rows, cols)
        out_dtype = v.dtype
        if mutation == "out_dtype" and k == 0:
            out_dtype = draw(st.sampled_from([d for d in DTYPES if d != v.dtype]))
            p.mark("invalid", f"writes a {v.dtype} value into a {out_dtype} tensor")
        if mutation == "out_shape" and k == 0:
            shape = [shape[0], shape[1] + 1]
            p.mark("invalid", f"writes a {_shape_of(v.kind, rows, cols)} value into a {shape} tensor")
        p.add_output(f"out{k}", shape, out_dtype)
        p.body.append(f"    out{k}[:] = {v.name}")
        wants.append(f'"out{k}": _into(out{k}, {v.name})')
    p.ref.append(f"return {{{', '.join(wants)}}}")
    _judge_tensor_budget(p, chain, rows, cols)
    _judge_split(p, chain, split, rows, cols, tuple(results))
    return p


def _judge_tensor_budget(p: Program, chain: Chain, rows: int, cols: int) -> None:
    """Row-local chains run in row blocks; a column reduction makes its region run whole."""
    tile_rows = rows if chain.col_ops else 1
    if _live_bytes(chain, rows, tile_rows, cols) > COMFORTABLE:
        p.mark("either", "the tiles may not fit the Vec budget")


def _judge_split(
    p: Program, chain: Chain, split: str | None, rows: int, cols: int, stored: tuple[Value, ...] = ()
) -> None:
    """docs/compiler.md: under LEFT_RIGHT row reductions and broadcasts need the whole row;
    under UP_DOWN column reductions need the whole column; an extent of 1 does not split, so a
    computed [R, 1] value under LEFT_RIGHT or [1, C] value under UP_DOWN may be rejected. A
    [1, C] operand of a column broadcast under UP_DOWN is not split: both lanes read it whole."""
    thin = {v.kind for v in chain.values if v.name.startswith("v")} | {v.kind for v in stored}
    if split == "LEFT_RIGHT" and (chain.row_ops or cols == 1 or "row" in thin):
        p.mark("either", "pl.split(LEFT_RIGHT) of a chain with row ops or one column")
    if split == "UP_DOWN" and (chain.col_ops or rows == 1 or "col" in thin):
        p.mark("either", "pl.split(UP_DOWN) of a chain with column ops or one row")


# ---------------------------------------------------------------- family 2: tile row blocks

TILE_ROWS = (1, 4, 8, 16, 32, 64, 128)
TILE_COL_EXTENTS = (1, 5, 16, 31, 32, 64, 100, 128, 255, 256, 1000)
TILE_ROW_EXTENTS = (1, 3, 16, 32, 37, 64, 100, 128, 129, 200, 300)
TILE_MUTATIONS = (
    "out_dtype",
    "operand_dtype",
    "operand_shape",
    "wrong_vector",
    "bad_offset",
    "load_rank",
    "load_offsets",
    "overhang",
    "bad_mode",
    "tmp_shape",
)


def _round_up(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


@dataclass
class Blocks:
    """The loop of a tile program: ``form`` is ``static`` (``pl.range(nb)``), ``scalar_n``
    (``pl.range(0, n, block)`` with ``n`` a scalar parameter) or ``single`` (one tile, no loop)."""

    form: str
    rows: int  # the tensors' rows
    cols: int
    block: int  # tile rows
    tile_cols: int  # >= cols: a wider tile is partial in its columns
    used_rows: int  # rows the kernel covers (n for scalar_n)

    @property
    def partial_rows(self) -> bool:
        return self.used_rows % self.block != 0

    @property
    def partial(self) -> bool:
        return self.partial_rows or self.tile_cols > self.cols

    def storable(self, v: Value) -> bool:
        """A store writes a tile's valid region: a reduction of a padded tile is valid over the
        whole tile, which hangs over the tensor when the block is partial along that axis."""
        if not v.everywhere:
            return True
        return not (self.partial_rows if v.kind == "row" else self.tile_cols > self.cols)

    def head(self) -> list[str]:
        """The loop header and the ``rows`` of the current block; the body indents by 4."""
        if self.form == "single":
            return ["if True:", "    r0 = 0", f"    rows = {self.used_rows}"]
        if self.form == "static":
            nb = -(-self.rows // self.block)
            return [
                f"for i in pl.range({nb}):",
                f"    r0 = i * {self.block}",
                f"    rows = pl.minimum({self.block}, {self.rows} - r0)",
            ]
        return [f"for r0 in pl.range(0, n, {self.block}):", f"    rows = pl.minimum({self.block}, n - r0)"]


@st.composite
def blocks(draw) -> Blocks:
    rows = draw(st.sampled_from(TILE_ROW_EXTENTS))
    cols = draw(st.sampled_from(TILE_COL_EXTENTS))
    form = draw(st.sampled_from(("static", "static", "scalar_n", "single")))
    block = draw(st.sampled_from(TILE_ROWS))
    tile_cols = _round_up(cols, draw(st.sampled_from((8, 16, 64)))) if draw(st.booleans()) else cols
    used = rows
    if form == "single":
        block = max(block, rows)
    if form == "scalar_n":
        used = draw(st.integers(1, rows))
    return Blocks(form, rows, cols, block, tile_cols, used)


def _load_line(v: Value, b: Blocks) -> str:
    """A value's load for one block: ``[r0, 0]`` (``[0, 0]`` for a column vector), the valid
    shape the block's rows and the tensor's columns when the tile is partial."""
    shape = _shape_of(v.kind, b.block, b.tile_cols)
    valid = None
    if v.kind == "full" and b.partial:
        valid = f"[rows, {b.cols}]"
    elif v.kind == "row" and b.partial_rows:
        valid = "[rows, 1]"
    elif v.kind == "col" and b.tile_cols > b.cols:
        valid = f"[1, {b.cols}]"
    offset = "[0, 0]" if v.kind == "col" else "[r0, 0]"
    extra = f", valid_shape={valid}" if valid else ""
    return f"{v.name}_t = pl.load({v.name}, {offset}, {shape}{extra})"


@st.composite
def tile_programs(draw) -> Program:
    """Family 2: tiles loaded block by block: ``pl.load``/``pl.store`` in a ``pl.range`` loop,
    the last block partial (``valid_shape=`` with ``pl.minimum``), ``pl.fillpad`` before each
    reduction, optionally a tile wider than the tensor and a row count ``n`` passed in."""
    p = Program("tile")
    b = draw(blocks())
    dtype = draw(st.sampled_from(FLOATS + INTS))
    tensors = Chain(p, "tensor", b.rows, b.cols)
    _vector_inputs(draw, p, tensors, dtype, b.rows, b.cols)
    if b.form == "scalar_n":
        p.params.append("n: pl.Scalar[pl.INDEX]")
        p.args.append("n")
        p.scalars["n"] = b.used_rows
    tile_rows = b.used_rows if b.form == "single" else b.block
    chain = Chain(p, "tile", tile_rows, b.cols, b.partial)
    chain.values = [replace(v, name=f"{v.name}_t") for v in tensors.values]
    draw(chain_steps(chain, draw(st.integers(1, 5)), allow_col_reduce=b.form == "single"))
    mutation = draw(st.sampled_from((None,) * 5 + TILE_MUTATIONS))
    if mutation in ("operand_dtype", "operand_shape", "wrong_vector"):
        _mutate_operands(draw, p, chain, mutation, tile_rows, b.tile_cols, "tile")  # the tiles' shape
    results = draw(_outputs_for(chain, b.storable))

    before = [_load_line(v, b) for v in tensors.values if v.kind == "col"]  # loaded once
    tmp_cols = b.tile_cols + 8 if mutation == "tmp_shape" and chain.tmps else b.tile_cols
    if tmp_cols != b.tile_cols:
        p.mark("invalid", "a reduction's scratch tile shaped unlike its operand")
    before += [
        f"{tmp} = pl.create_tile([{b.block}, {tmp_cols}], {DTYPES[dt].pl})" for dt, tmp in chain.tmps.items()
    ]
    if mutation == "load_rank":
        before.append(f"bad = pl.load(x0, [0, 0], [{b.block}])")
        p.mark("invalid", "pl.load with a rank-1 shape of a 2-D tensor")
    if mutation == "load_offsets":
        before.append(f"bad = pl.load(x0, [0], [{b.block}, {b.tile_cols}])")
        p.mark("invalid", "pl.load with one offset for a 2-D tensor")
    if mutation == "overhang":
        before.append(f"bad = pl.load(x0, [{b.rows - 1}, 0], [{max(b.block, 2)}, {b.cols}])")
        p.mark("invalid", "a full-shape load hanging over the end of the tensor without valid_shape")
    inner = [_load_line(v, b) for v in tensors.values if v.kind != "col"] + chain.pl_lines
    if mutation == "bad_mode":
        inner.append(f'bad = pl.cast({chain.values[0].name}, pl.FP32, mode="nearest")')
        p.mark("invalid", 'pl.cast with mode="nearest"')
    wants = []
    for k, v in enumerate(results):
        out_dtype = v.dtype
        offset = "[0, 0]" if v.kind == "col" else "[r0, 0]"
        if mutation == "out_dtype" and k == 0:
            out_dtype = draw(st.sampled_from([d for d in DTYPES if d != v.dtype]))
            p.mark("invalid", f"stores a {v.dtype} tile into a {out_dtype} tensor")
        if mutation == "bad_offset" and k == 0:
            offset = f"[{b.rows}, 0]" if v.kind != "col" else "[1, 0]"
            p.mark("invalid", f"stores at {offset}, past the end of the tensor")
        p.add_output(f"out{k}", _shape_of(v.kind, b.rows, b.cols), out_dtype)
        inner.append(f"pl.store({v.name}, {offset}, out{k})")
        limit = "" if v.kind == "col" else f", {b.used_rows}"
        wants.append(f'"out{k}": _into(out{k}, {v.name}{limit})')

    p.body.append('with pl.at(level=pl.Level.CORE_GROUP, name_hint="blocks"):')
    p.body += [f"    {line}" for line in before + b.head()]
    p.body += [f"        {line}" for line in inner]
    for v in tensors.values:
        rows = "" if v.kind == "col" else f"[:{b.used_rows}]"
        p.ref.append(f"{v.name}_t = {v.name}{rows}")
    p.ref += chain.ref_lines
    p.ref.append(f"return {{{', '.join(wants)}}}")
    if _live_bytes(chain, b.block, b.block, b.tile_cols) + 32 * len(chain.values) > COMFORTABLE:
        p.mark("either", "the tiles may not fit the Vec budget")
    biggest = b.block * b.tile_cols * max(DTYPES[v.dtype].size for v in chain.values)
    if biggest > VEC_BUDGET:
        p.mark("invalid", f"one tile takes {biggest} bytes, more than Vec holds")
    return p


# ---------------------------------------------------------------- family 3: matmul + epilogue

MM_M = (1, 16, 32, 63, 64, 100, 127, 128, 200, 256)
MM_K = (16, 32, 64, 100, 128, 256, 512)
MM_N = (16, 32, 63, 64, 100, 128, 256, 300)


@st.composite
def mixed_programs(draw) -> Program:
    """Family 3: ``acc = pl.matmul(a, b)`` then a vector epilogue in one scope, under
    ``pl.split(mode)`` and ``pl.cross_core_slot(slot_num=1..5)``."""
    p = Program("mixed")
    m, k, n = draw(st.sampled_from(MM_M)), draw(st.sampled_from(MM_K)), draw(st.sampled_from(MM_N))
    in_dtype = draw(st.sampled_from(("FP16", "FP16", "BF16", "FP32", "INT8")))
    integer = in_dtype == "INT8"
    acc_dtype = "INT32" if integer else "FP32"
    if integer:
        p.add_input("a", [m, k], in_dtype, "int", 3.0, draw(st.integers(0, 2**16)))
        p.add_input("b", [k, n], in_dtype, "int", 3.0, draw(st.integers(0, 2**16)))
        bound = 9.0 * k
    else:
        p.add_input("a", [m, k], in_dtype, "normal", 1.0 / math.sqrt(k), draw(st.integers(0, 2**16)))
        p.add_input("b", [k, n], in_dtype, "normal", 1.0, draw(st.integers(0, 2**16)))
        p.tolerate("FP16")  # fp32 accumulation of any inputs, against a double reference
        bound = 9.0 * math.sqrt(k)
    mode = draw(st.sampled_from(SPLIT_MODES))
    slots = draw(st.sampled_from((None, 1, 2, 2, 3, 4, 5)))
    options = [f"pl.split(pl.SplitMode.{mode})"]
    if slots is not None:
        options.append(f"pl.cross_core_slot(slot_num={slots})")
    a_ref, b_ref = ("a.long()", "b.long()") if integer else ("a.double()", "b.double()")
    lines = []
    a_name = "a"
    if not integer and draw(st.integers(0, 5)) == 5:  # vector work the cube then reads
        lines.append("a_scaled = pl.mul(a, 0.5)")
        a_name, a_ref = "a_scaled", f"({a_ref} * 0.5)"
        if (mode == "UP_DOWN" and m % 2) or (mode == "LEFT_RIGHT" and k % 2):
            p.mark("either", "an odd extent gathered back to the cube")
    keyword = draw(st.sampled_from(("", f", out_dtype={DTYPES[acc_dtype].pl}")))
    if not keyword and draw(st.booleans()):
        lines.append(f"acc = {a_name} @ b")
    else:
        lines.append(f"acc = pl.matmul({a_name}, b{keyword})")
    chain = Chain(p, "tensor", m, n)
    chain.ref_lines.append(f"acc = ({a_ref} @ {b_ref}).to(torch.{DTYPES[acc_dtype].torch})")
    chain.values.append(Value("acc", "full", acc_dtype, -bound, bound))
    dist, scale = _input_dist(acc_dtype)
    p.add_input("bias", [m, n], acc_dtype, dist, scale, draw(st.integers(0, 2**16)))
    chain.values.append(Value("bias", "full", acc_dtype, *_bounds(dist, scale)))
    if draw(st.booleans()):
        p.add_input("gamma", [1, n], acc_dtype, dist, scale, draw(st.integers(0, 2**16)))
        chain.values.append(Value("gamma", "col", acc_dtype, *_bounds(dist, scale)))
    draw(chain_steps(chain, draw(st.integers(1, 4)), allow_col_reduce=draw(st.integers(0, 4)) == 4))
    computed = [
        v
        for v in chain.values
        if v.kind == "full" and v.name.startswith("v") and _depends_on(chain, v.name, "acc")
    ]
    if not computed:
        acc = chain.values[0]
        computed = [chain.bind(replace(acc, name=chain.fresh(), lo=0.0), "pl.relu(acc)", "torch.relu(acc)")]
    result = computed[-1]
    lines += chain.pl_lines
    out_dtype = result.dtype
    if draw(st.integers(0, 7)) == 7:
        out_dtype = draw(st.sampled_from([d for d in DTYPES if d != result.dtype]))
        p.mark("invalid", f"writes a {result.dtype} value into a {out_dtype} tensor")
    p.add_output("out", [m, n], out_dtype)
    lines.append(f"out[:] = {result.name}")
    p.body += [
        "with pl.at(",
        "    level=pl.Level.CORE_GROUP,",
        f"    optimizations=[{', '.join(options)}],",
        '    name_hint="mixed",',
        "):",
    ]
    p.body += [f"    {line}" for line in lines]
    p.ref += chain.ref_lines
    p.ref.append(f'return {{"out": _into(out, {result.name})}}')
    _judge_mixed(p, chain, mode, slots, m, k, n, in_dtype)
    return p


def _depends_on(chain: Chain, name: str, root: str) -> bool:
    """Whether the chain's value ``name`` is computed from ``root`` (so the cube's work is used)."""
    uses: dict[str, set[str]] = {}
    for line in chain.pl_lines:
        target, _, expr = line.partition(" = ")
        uses[target] = set(re.findall(r"[A-Za-z_]\w*", expr))
    todo, seen = [name], set()
    while todo:
        current = todo.pop()
        if current == root:
            return True
        if current not in seen:
            seen.add(current)
            todo += uses.get(current, ())
    return False


def _judge_mixed(
    p: Program, chain: Chain, mode: str, slots: int | None, m: int, k: int, n: int, in_dtype: str
) -> None:
    """What docs/mixed-kernels.md and docs/compiler.md allow to fail."""
    if slots is not None and slots > 2:
        p.mark("either", f"slot_num={slots}: a ring deeper than the default may not fit Vec")
    if (mode == "UP_DOWN" and m == 1) or (mode == "LEFT_RIGHT" and n == 1):
        p.mark("either", "an extent of 1 along the split axis")
    _judge_split(p, chain, mode if mode != "NONE" else None, m, n)
    if n * 128 * 4 > 131072:
        p.mark("either", "a 128-row block of the result does not fit L0C and is not written straight out")
    if k * n * DTYPES[in_dtype].size > 262144:
        p.mark("either", "the right operand may not fit L1")
    # A column reduction makes the region run whole (the matmul's whole result crosses), as in a
    # tensor chain, unless its result is only stored; the ring holds slot_num crossing tiles.
    tile_rows = m if chain.col_ops else 1
    if _live_bytes(chain, m, tile_rows, n) * 2 > COMFORTABLE:
        p.mark("either", "the epilogue's tiles and the ring may not fit Vec")


# ---------------------------------------------------------------- family 4: explicit split_aiv

PIPE_EXTENTS = (16, 32, 64, 128)
EPILOGUES = {
    "relu": ("pl.relu({x})", "torch.relu({x})"),
    "bias": ("pl.add({x}, {share})", "({x} + {bias})"),
    "scale": ("pl.mul(pl.add({x}, {share}), 0.5)", "(({x} + {bias}) * 0.5)"),
    "exp_neg": ("pl.exp(pl.neg(pl.abs({x})))", "torch.exp(-torch.abs({x}))"),
}
RAW_MUTATIONS = (
    "pop_shape",
    "pop_dtype",
    "slot_size_small",
    "slot_num_high",
    "no_tfree",
    "cube_in_region",
    "vector_outside",
    "lanes_3",
    "dir_mask",
)
BOUNDARY_MUTATIONS = ("cube_in_region", "vector_outside", "lanes_3")


def _epilogue(epilogue: str, x: str, share: str, x_ref: str) -> tuple[str, str]:
    pl_form, ref_form = EPILOGUES[epilogue]
    return pl_form.format(x=x, share=share), ref_form.format(x=x_ref, bias="bias")


def _lane_region(mode: str, mutation: str | None, p: Program) -> str:
    if mutation == "lanes_3":
        p.mark("invalid", "pl.split_aiv(3)")
    return f"for lane in pl.split_aiv({3 if mutation == 'lanes_3' else 2}, mode=pl.SplitMode.{mode}):"


@st.composite
def pipe_programs(draw) -> Program:
    """Family 4: explicit ``for lane in pl.split_aiv(2, mode=...)`` regions. ``raw``: the cube
    streams ``tiles`` products ``a_i @ b`` with ``pl.tpush_to_aiv``; each lane pops its half,
    adds its own share of ``bias`` (per-lane addressing), stores and frees the slot.
    ``boundary``: a vector prologue gathered to the cube with ``pl.aic_gather`` inside its region,
    the product sharded back with ``pl.aiv_shard`` inside the next."""
    p = Program("pipes")
    m, n, k = (draw(st.sampled_from(PIPE_EXTENTS)) for _ in range(3))
    mode = draw(st.sampled_from(("UP_DOWN", "LEFT_RIGHT")))
    dtype = draw(st.sampled_from(("FP16", "BF16")))
    epilogue = draw(st.sampled_from(sorted(EPILOGUES)))
    form = draw(st.sampled_from(("raw", "raw", "boundary")))
    tiles = draw(st.integers(1, 4)) if form == "raw" else 1
    mutations = RAW_MUTATIONS if form == "raw" else BOUNDARY_MUTATIONS
    mutation = draw(st.sampled_from((None,) * 6 + mutations))
    half = [m // 2, n] if mode == "UP_DOWN" else [m, n // 2]
    lane_row, lane_col = (f"lane * {half[0]}", "0") if mode == "UP_DOWN" else ("0", f"lane * {half[1]}")
    p.add_input("a", [tiles * m, k], dtype, "normal", 1.0 / math.sqrt(k), draw(st.integers(0, 2**16)))
    p.add_input("b", [k, n], dtype, "normal", 1.0, draw(st.integers(0, 2**16)))
    p.add_input("bias", [tiles * m, n], "FP32", "normal", 1.0, draw(st.integers(0, 2**16)))
    p.add_output("out", [tiles * m, n], "FP32")
    p.tolerate("FP16")
    split = f"split=pl.SplitMode.{mode}"
    body = ['with pl.at(level=pl.Level.CORE_GROUP, name_hint="pipes"):']
    if form == "boundary":
        a_half = [m // 2, k] if mode == "UP_DOWN" else [m, k // 2]
        a_off = f"[lane * {m // 2}, 0]" if mode == "UP_DOWN" else f"[0, lane * {k // 2}]"
        store, ref = _epilogue(epilogue, "prod", "share", "acc")
        region = [
            f"    {_lane_region(mode, mutation, p)}",
            f"        act_half = pl.relu(pl.load(a, {a_off}, {a_half}))",
        ]
        if mutation == "cube_in_region":
            region.append(
                f"        junk = pl.matmul(pl.move(pl.load(a, [0, 0], [{m}, {k}], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left), pl.move(pl.load(b, [0, 0], [{k}, {n}], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right))"
            )
            p.mark("invalid", "a cube op inside a split_aiv region")
        region.append("        act = pl.aic_gather(act_half)")  # joined for the cube, after the region
        body += region
        if mutation == "vector_outside":
            body.append("    act = pl.relu(act)")
            p.mark("invalid", "a vector op outside every split_aiv region")
        body += [
            f"    b_l1 = pl.load(b, [0, 0], [{k}, {n}], target_memory=pl.Mem.Mat)",
            "    acc = pl.matmul(pl.move(act, target_memory=pl.Mem.Left), pl.move(b_l1, target_memory=pl.Mem.Right))",
            f"    for lane in pl.split_aiv(2, mode=pl.SplitMode.{mode}):",
            "        prod = pl.aiv_shard(acc)",
            f"        share = pl.load(bias, [{lane_row}, {lane_col}], {half})",
            f"        pl.store({store}, [{lane_row}, {lane_col}], out)",
        ]
        p.ref += [
            "acc = (torch.relu(a).double() @ b.double()).float()",
            f"return {{'out': _into(out, {ref})}}",
        ]
        p.body = body
        return p
    slots = 9 if mutation == "slot_num_high" else draw(st.integers(1, 5))
    if mutation == "slot_num_high":
        p.mark("invalid", "slot_num=9: more slots than the hardware has")
    # A slot holds what one lane pops; the full product is twice that, and valid too.
    slot_size = m * n * 4 // draw(st.sampled_from((1, 2)))
    if mutation == "slot_size_small":
        slot_size = m * n * 4 // 4
        p.mark("invalid", "slot_size smaller than the half tile each lane pops")
    ring = slots * slot_size
    if ring > VEC_BUDGET:
        p.mark("invalid", f"a {ring}-byte ring cannot fit Vec")
    elif ring + 3 * half[0] * half[1] * 4 > COMFORTABLE:
        p.mark("either", "the ring and the lane tiles may not fit Vec")
    dir_mask = 2 if mutation == "dir_mask" else 1
    if mutation == "dir_mask":
        p.mark("invalid", "the AIV side sets up only vector->cube while the cube pushes to it")
    body += [
        f"    pl.aic_initialize_pipe(dir_mask=1, slot_size={slot_size}, slot_num={slots})",
        f"    b_right = pl.move(pl.load(b, [0, 0], [{k}, {n}], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)",
        f"    for i in pl.range({tiles}):",
        f"        a_left = pl.move(pl.load(a, [i * {m}, 0], [{m}, {k}], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)",
        f"        pl.tpush_to_aiv(pl.matmul(a_left, b_right), {split})",
    ]
    if mutation == "vector_outside":
        body.append(f"    junk = pl.relu(pl.load(bias, [0, 0], {half}))")
        p.mark("invalid", "a vector op outside every split_aiv region")
    pop_shape = [m, n] if mutation == "pop_shape" else half
    if mutation == "pop_shape":
        p.mark("invalid", "each lane pops the full tile instead of its half")
    pop_dtype = "pl.FP16" if mutation == "pop_dtype" else "pl.FP32"
    if mutation == "pop_dtype":
        p.mark("invalid", "the pop's dtype differs from the pushed tile's")
    row0 = f"j * {m} + {lane_row}" if mode == "UP_DOWN" else f"j * {m}"
    store, ref = _epilogue(epilogue, "half", "share", "prod")
    body += [
        f"    {_lane_region(mode, mutation, p)}",
        f"        pl.aiv_initialize_pipe(dir_mask={dir_mask}, slot_size={slot_size}, slot_num={slots})",
        f"        for j in pl.range({tiles}):",
        f"            half = pl.tpop_from_aic(shape={pop_shape}, dtype={pop_dtype}, {split})",
        f"            share = pl.load(bias, [{row0}, {lane_col}], {half})",
        f"            pl.store({store}, [{row0}, {lane_col}], out)",
    ]
    if mutation == "cube_in_region":
        body.append("            junk = pl.matmul(a_left, b_right)")
        p.mark("invalid", "a cube op inside a split_aiv region")
    if mutation != "no_tfree":
        body.append("            pl.tfree_to_aic(half)")
    elif tiles > slots:
        p.mark("invalid", f"{tiles} pushes into {slots} slots that are never freed: a deadlock")
    else:  # nothing blocks; the simulator may still report the slots left popped at the end
        p.mark("either", "pops never freed, in a ring deep enough for every push")
    p.body = body
    p.ref += [
        f"prod = torch.cat([a[i * {m}:(i + 1) * {m}].double() @ b.double() for i in range({tiles})]).float()",
        f"return {{'out': _into(out, {ref})}}",
    ]
    return p


FAMILIES = {
    "tensor": tensor_programs,
    "tile": tile_programs,
    "mixed": mixed_programs,
    "pipes": pipe_programs,
}
