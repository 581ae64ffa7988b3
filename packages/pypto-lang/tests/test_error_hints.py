"""Regression guard: every user-facing error the parser, the ``pl`` surface and the op table raise
carries a hint.

The guard reads the source of those modules and finds each place that builds an error: a
``PyptoError`` subclass constructed directly, ``self.error(node, message, hint)`` /
``parser.error(...)`` of the parser, ``ctx.fail(message, hint)`` of an op builder, and
``_fail(op, message, span, hint)`` of a type rule. A site that passes no hint (or passes None)
fails the test, naming the file and line. Errors that are the compiler's own invariants, never a
user's mistake, are listed in ``INTERNAL`` with the reason.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
from lang_diagnostics import line_of

import pypto.ir.ops
import pypto.language as pl
import pypto.language.parser
import pypto.runtime
from pypto.ir import OPS, PyptoError, TypeCheckError
from pypto.language.advice import ADVICE

LANGUAGE = Path(inspect.getfile(pl)).parent
CHECKED_FILES = (
    *sorted((LANGUAGE / "parser").glob("*.py")),
    *(LANGUAGE / name for name in ("annotations.py", "options.py", "builtins.py", "kernel.py", "jit.py")),
    *sorted(Path(inspect.getfile(pypto.ir.ops)).parent.glob("*.py")),
)

# Where the hint goes in each error-building helper: the index of the positional argument.
HELPER_HINT_POSITION = {"error": 2, "fail": 1, "_fail": 3}
CONSTRUCTOR_HINT_POSITION = 2  # PyptoError(message, span, hint)

# (file name, enclosing function path) -> why the error there is not a user's mistake.
INTERNAL = {
    ("spec.py", "get_op"): "the parser only builds ops of the table; an unknown name is a compiler bug",
    ("rules.py", "given"): "a `call` takes its type from the code that builds it; inferring one is a bug",
}


def _error_classes() -> set[str]:
    found: set[str] = set()
    pending = [PyptoError]
    while pending:
        cls = pending.pop()
        found.add(cls.__name__)
        pending.extend(cls.__subclasses__())
    return found


@dataclass(frozen=True)
class Site:
    """A place that builds an error: file, line, enclosing function path (``_given.infer``), the call."""

    file: str
    line: int
    function: str
    text: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line} (in {self.function}): {self.text}"


def _called_name(call: ast.Call) -> tuple[str | None, bool]:
    """The callee's name and whether it is an attribute (``self.error``) rather than a bare name."""
    if isinstance(call.func, ast.Name):
        return call.func.id, False
    if isinstance(call.func, ast.Attribute):
        return call.func.attr, True
    return None, False


def _hint_position(call: ast.Call, classes: set[str]) -> int | None:
    """Where ``call`` takes its hint, if it builds an error; None for any other call."""
    name, is_attribute = _called_name(call)
    if name in classes:
        return CONSTRUCTOR_HINT_POSITION
    if name in ("error", "fail") and is_attribute:
        return HELPER_HINT_POSITION[name]
    if name == "fail" and not is_attribute:  # the op rules' fail(op, message, span, hint)
        return HELPER_HINT_POSITION["_fail"]
    return None


def _has_hint(call: ast.Call, position: int) -> bool:
    """A hint given as text, or as an advice key the front end words (``advice="..."``)."""
    given = [k.value for k in call.keywords if k.arg == "hint"]
    if len(call.args) > position:
        given.append(call.args[position])
    if _advice_key(call) in ADVICE:
        return True
    advice = next((k.value for k in call.keywords if k.arg == "advice"), None)
    if advice is not None and not isinstance(advice, ast.Constant):
        return True  # the one place that passes a rule's advice on to the error (rules.fail)
    return any(not (isinstance(v, ast.Constant) and v.value is None) for v in given)


def _advice_key(call: ast.Call) -> str | None:
    key = next((k.value for k in call.keywords if k.arg == "advice"), None)
    return key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else None


def _advice_keys_raised() -> set[str]:
    """Every advice key the op rules raise (``fail(..., advice="...")``)."""
    keys: set[str] = set()
    for path in Path(inspect.getfile(pypto.ir.ops)).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and (key := _advice_key(node)) is not None:
                keys.add(key)
    return keys


def test_every_problem_a_type_rule_names_has_advice_and_every_advice_a_problem():
    """The IR's type rules name problems; the front end words each fix (pypto.language.advice)."""
    raised = _advice_keys_raised()
    assert len(raised) > 40  # the walk finds them (a broken walk would find none)
    assert raised - ADVICE.keys() == set()
    assert ADVICE.keys() - raised == set()


def test_an_advised_error_renders_the_front_ends_hint():
    from pypto.ir.dtypes import DataType
    from pypto.ir.nodes import Var
    from pypto.ir.ops import make_call
    from pypto.ir.types import MemorySpace, TileType

    a = Var("a", TileType((8, 8), DataType.FP32, MemorySpace.Vec))
    b = Var("b", TileType((8, 8), DataType.FP16, MemorySpace.Vec))
    with pytest.raises(TypeCheckError) as info:
        make_call("tile.add", (a, b))
    assert info.value.advice == ("binary.dtype_mismatch", {})
    assert info.value.hint == "PyPTO has no implicit promotion: convert one side with pl.cast(x, dtype)"
    assert "hint: PyPTO has no implicit promotion" in str(info.value)


def error_sites(source: str, file: str, classes: set[str]) -> tuple[list[Site], list[Site]]:
    """All error-building calls of ``source``, and those of them without a hint."""
    sites: list[Site] = []
    missing: list[Site] = []

    def walk(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = function
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inner = child.name if function == "<module>" else f"{function}.{child.name}"
            if isinstance(child, ast.Call):
                position = _hint_position(child, classes)
                if position is not None:
                    site = Site(file, child.lineno, function, ast.unparse(child)[:120])
                    sites.append(site)
                    if not _has_hint(child, position):
                        missing.append(site)
            walk(child, inner)

    walk(ast.parse(source), "<module>")
    return sites, missing


def test_every_user_facing_error_in_the_parser_surface_and_op_table_has_a_hint():
    classes = _error_classes()
    all_sites: list[Site] = []
    unhinted: list[Site] = []
    for path in CHECKED_FILES:
        sites, missing = error_sites(path.read_text(), path.name, classes)
        all_sites += sites
        unhinted += [s for s in missing if (s.file, s.function) not in INTERNAL]
    # The walk finds the raise sites it guards (a broken walk would find none and pass).
    assert len(all_sites) > 200
    assert not unhinted, "errors without a hint:\n" + "\n".join(map(str, unhinted))


def test_each_allowed_site_exists_and_raises_a_compiler_invariant_error():
    """An allow-list entry whose site went away could silently cover a new one; and the allowed
    sites raise VerificationError, the class for the compiler's own invariants."""
    classes = _error_classes()
    allowed = []
    for path in CHECKED_FILES:
        _, missing = error_sites(path.read_text(), path.name, classes)
        allowed += [s for s in missing if (s.file, s.function) in INTERNAL]
    assert {(s.file, s.function) for s in allowed} == set(INTERNAL)
    assert all(s.text.startswith("VerificationError(") for s in allowed), allowed


def test_the_guard_finds_each_kind_of_unhinted_error():
    """Each form of error building, written without a hint, is reported (the guard can fail)."""
    source = textwrap.dedent(
        """
        def rule(op, span):
            raise fail(op, "bad", span)

        def builder(ctx):
            raise ctx.fail("bad")

        class P:
            def visit(self, node):
                raise self.error(node, "bad")

        def direct(span):
            raise ParseError("bad", span)

        def given_none(span):
            raise TypeCheckError("bad", span, hint=None)

        def _given(op):
            def infer(args):
                raise fail(op, "nested", None)

        def hinted(ctx, span, node, self):
            raise fail("op", "bad", span, "fix")
            raise ctx.fail("bad", hint="fix")
            raise self.error(node, "bad", "fix")
            raise ParseError("bad", span, "fix")
        """
    )
    sites, missing = error_sites(source, "snippet.py", _error_classes())
    assert [s.function for s in missing] == [
        "rule",
        "builder",
        "P.visit",
        "direct",
        "given_none",
        "_given.infer",
    ]
    assert len(sites) == 10


def test_a_type_error_without_a_hint_gets_the_ops_dsl_signature(monkeypatch):
    """The fallback for a type rule that gives no hint (an op added later): the parser attaches
    the signature of the pl function the user called."""

    def unhinted_rule(spec, args, attrs, span):
        raise TypeCheckError("pl.row_max: a rule added later refuses this", span)

    rule = dataclasses.replace(OPS["tile.row_max"], rule=unhinted_rule)
    monkeypatch.setitem(OPS, "tile.row_max", rule)

    @pl.jit
    def reduced(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 1], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [0, 0], [64, 64])
            out[:] = pl.row_max(x, pl.create_tile([64, 64], pl.FP32))  # the call
        return out

    with pytest.raises(TypeCheckError) as info:
        reduced.parse()
    assert info.value.message == "pl.row_max: a rule added later refuses this"
    assert info.value.hint == "signature: pl.row_max(x, tmp_tile=None)"
    assert info.value.span.line == line_of(__file__, "out[:] = pl.row_max(x, pl.create_tile(")


def test_a_hint_the_type_rule_gives_is_kept():
    @pl.jit
    def mismatched(a: pl.Tensor[[64, 64], pl.FP32], b: pl.Tensor[[32, 64], pl.FP32]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.add(a, b)

    with pytest.raises(TypeCheckError) as info:
        mismatched.parse()
    assert info.value.hint == "both operands of an elementwise op must have the same shape"
