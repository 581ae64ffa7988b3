"""Pipeline strings: ``"outline-scopes,tile-matmul{k_block=128},allocate"``, their typed options,
and every mistake as a PipelineError with a hint and, given where the string sits, a span."""

import dataclasses
from dataclasses import dataclass
from enum import Enum
from typing import ClassVar

import pytest

from pypto.ir import Program, SourceSpan, SplitMode
from pypto.passes import (
    BUILT_IN_PASSES,
    DEFAULT_PIPELINE,
    PassContext,
    PassRegistrationError,
    PassRegistry,
    Pipeline,
    PipelineError,
    build_pass,
    option,
    parse_pipeline,
)


class Mode(Enum):
    FAST = "fast"
    CAREFUL = "careful"


@dataclass(frozen=True)
class Tune:
    """A pass with an option of every kind a pipeline string can give."""

    name: ClassVar[str] = "Tune"
    pipeline_name: ClassVar[str] = "tune"
    count: int = option(2, help="how many", minimum=1)
    ratio: float = 0.5
    flag: bool = False
    label: str = "plain"
    mode: Mode = Mode.FAST
    split: SplitMode = SplitMode.NONE
    limit: int | None = None

    def run(self, program: Program, ctx: PassContext) -> Program:
        return program


@pytest.fixture
def passes() -> PassRegistry:
    found = PassRegistry()
    found.register(Tune, origin="the test")
    return found


# ---------------------------------------------------------------- good strings


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        (
            "outline-scopes,tile-matmul{k_block=128},allocate",
            "outline-scopes,tile-matmul{k_block=128},allocate",
        ),
        ("OutlineScopes,AutoTileMatmul{k_block=128}", "outline-scopes,tile-matmul{k_block=128}"),
        ("  outline-scopes , tile-matmul { k_block = 64 } ", "outline-scopes,tile-matmul{k_block=64}"),
        ("tile-matmul{k-block=64}", "tile-matmul{k_block=64}"),
        ("tile-matmul{k_block=none}", "tile-matmul"),  # an option at its default is left out
        ("tensor-to-tile{max_block_rows=64}", "tensor-to-tile{max_block_rows=64}"),
        ("outline-scopes,\n  allocate", "outline-scopes,allocate"),
        ("", ""),
        ("   ", ""),
    ],
)
def test_a_pipeline_string_names_its_passes_and_options(text, canonical):
    assert str(parse_pipeline(text)) == canonical


def test_every_pass_of_the_default_pipeline_can_be_named_in_a_string():
    default = Pipeline.default()
    assert [step.entry.name for step in default] == list(DEFAULT_PIPELINE)
    assert parse_pipeline(str(default)) == default
    assert [type(p).__name__ for p in default.build()] == list(DEFAULT_PIPELINE)


def test_options_reach_the_pass_typed(passes):
    text = "tune{count=3 ratio=2 flag=TRUE, label='a, b' mode=careful split=up-down limit=7}"
    (built,) = parse_pipeline(text, passes).build()
    assert built == Tune(
        count=3, ratio=2.0, flag=True, label="a, b", mode=Mode.CAREFUL, split=SplitMode.UP_DOWN, limit=7
    )
    assert type(built.ratio) is float and type(built.count) is int and type(built.limit) is int
    (k_blocked,) = parse_pipeline("tile-matmul{k_block=128}").build()
    assert k_blocked.k_block == 128 and type(k_blocked.k_block) is int


def test_the_canonical_string_reads_back_as_the_same_pipeline(passes):
    pipeline = parse_pipeline('tune{label="x y" mode=CAREFUL flag=true},allocate', passes)
    assert str(pipeline) == 'tune{flag=true label="x y" mode=careful},allocate'
    assert parse_pipeline(str(pipeline), passes) == pipeline


def test_a_built_in_pass_is_imported_only_when_it_is_built_or_given_options():
    """`pypto passes` and RunConfig(pipeline=...) name passes without importing them."""
    pipeline = parse_pipeline("outline-scopes,allocate")
    assert all(isinstance(step.entry.implementation, str) for step in pipeline)


# ---------------------------------------------------------------- mistakes


AT = SourceSpan("kernel.py", 7, 30)  # where the string starts in its file

# (string, the message begins, the hint contains, the text under the caret)
BAD = [
    (
        "tile-matmull",
        "unknown pass 'tile-matmull'; known passes: OutlineScopes (outline-scopes), ",
        "did you mean tile-matmul?",
        "tile-matmull",
    ),
    ("outline-scopes,allocat", "unknown pass 'allocat'", "did you mean allocate?", "allocat"),
    ("frobnicate", "unknown pass 'frobnicate'", "name one of the known passes", "frobnicate"),
    (
        "tile-matmul{k_blok=128}",
        "pass 'tile-matmul' has no option 'k_blok'; its options: k_block: int | None = none",
        "did you mean k_block=?",
        "k_blok",
    ),
    (
        "tensor-to-tile{rows=4}",
        "pass 'tensor-to-tile' has no option 'rows'; its options: max_block_rows: int = 128",
        "use one of its options: max_block_rows",
        "rows",
    ),
    ("allocate{x=1}", "pass 'allocate' has no option 'x': it takes no options", "write allocate alone", "x"),
    (
        "tile-matmul{k_block=big}",
        "option k_block of 'tile-matmul' takes an integer >= 1 (or none), got 'big'",
        "write k_block=64",
        "big",
    ),
    (
        "tile-matmul{k_block=0}",
        "option k_block of 'tile-matmul' takes an integer >= 1 (or none), got '0'",
        "write k_block=64",
        "0",
    ),
    (
        "tile-matmul{k_block=1.5}",
        "option k_block of 'tile-matmul' takes an integer >= 1 (or none)",
        "k_block=64",
        "1.5",
    ),
    (
        "tensor-to-tile{max_block_rows=none}",
        "option max_block_rows of 'tensor-to-tile' takes an integer >= 1, got 'none'",
        "write max_block_rows=128",
        "none",
    ),
    (
        "tile-matmul{k_block=128",
        "unbalanced '{': the options of 'tile-matmul' are never closed",
        "tile-matmul{k_block=128}",
        "{",
    ),
    ("tile-matmul{k_block=128}}", "unbalanced '}': no '{' opens it", "remove it", "}"),
    ("tile-matmul},allocate", "unbalanced '}': no '{' opens it", "remove it", "}"),
    (
        "tile-matmul{k_block=1}{k_block=2}",
        "a second '{' after the options of 'tile-matmul'",
        "one '{...}'",
        "{",
    ),
    ("tile-matmul{k_block={1}}", "'{' inside the options of 'tile-matmul'", "do not nest", "{"),
    ("{k_block=1}", "options '{...}' with no pass name before them", "after a pass", "{"),
    (
        "tile-matmul{k_block}",
        "option k_block of 'tile-matmul' has no value",
        "write k_block=VALUE",
        "k_block",
    ),
    (
        "tile-matmul{k_block=8,allocate",
        "option allocate of 'tile-matmul' has no value",
        "close the options of 'tile-matmul' with '}' before it",
        "allocate",
    ),
    (
        "tile-matmul{k_block=}",
        "option k_block of 'tile-matmul' has no value",
        "write k_block=VALUE",
        "k_block",
    ),
    (
        "tile-matmul{=1}",
        "'=' inside the options of 'tile-matmul': expected key=value",
        "{key=value key2=value2}",
        "=",
    ),
    (
        "tile-matmul{k_block=1 k_block=2}",
        "option k_block of 'tile-matmul' is given twice",
        "keep one",
        "k_block",
    ),
    ("tile-matmul{k_block='1}", "a quoted value is never closed", "close it with '", "'1}"),
    ("outline-scopes,,allocate", "two ',' in a row: a pass name is missing", "remove the extra ','", ","),
    (",allocate", "the pipeline starts with ','", "remove the extra ','", ","),
    ("outline-scopes,", "the pipeline ends with ','", "remove the last ','", ","),
    (
        "outline-scopes allocate",
        "'allocate' after pass 'outline-scopes': passes are separated by ','",
        "write outline-scopes,allocate",
        "allocate",
    ),
    ("outline-scopes;allocate", "';' after pass 'outline-scopes'", "outline-scopes,;", ";"),
]


@pytest.mark.parametrize(("text", "message", "hint", "underlined"), BAD, ids=[row[0] for row in BAD])
def test_a_mistake_is_an_error_with_a_hint_at_its_place_in_the_string(text, message, hint, underlined):
    with pytest.raises(PipelineError) as info:
        parse_pipeline(text, at=AT)
    err = info.value
    assert err.message.startswith(message), err.message
    assert err.hint and hint in err.hint, err.hint
    assert err.span.file == "kernel.py" and err.span.line == 7
    start, end = err.span.col - AT.col, err.span.end_col - AT.col
    assert text[start:end] == underlined
    assert isinstance(err, ValueError)


def test_without_a_place_an_error_has_no_span_but_keeps_its_offsets():
    with pytest.raises(PipelineError) as info:
        parse_pipeline("outline-scopes,tile-matmul{k_blok=1}")
    assert info.value.span is None and (info.value.start, info.value.end) == (27, 33)


def test_a_mistake_after_a_line_break_points_at_the_start_of_the_string():
    with pytest.raises(PipelineError) as info:
        parse_pipeline("outline-scopes,\nallocat", at=AT)
    assert info.value.span == AT


@pytest.mark.parametrize(
    ("text", "message", "hint"),
    [
        ("tune{count=x}", "option count of 'tune' takes an integer >= 1, got 'x'", "write count=2"),
        ("tune{ratio=fast}", "option ratio of 'tune' takes a number, got 'fast'", "write ratio=0.5"),
        ("tune{flag=yes}", "option flag of 'tune' takes true or false, got 'yes'", "write flag=false"),
        (
            "tune{mode=slow}",
            "option mode of 'tune' takes one of fast, careful, got 'slow'",
            "write mode=fast",
        ),
        (
            "tune{limit=lots}",
            "option limit of 'tune' takes an integer (or none), got 'lots'",
            "write limit=64",
        ),
    ],
)
def test_a_bad_value_names_the_type_the_option_takes(passes, text, message, hint):
    with pytest.raises(PipelineError) as info:
        parse_pipeline(text, passes)
    assert info.value.message == message and info.value.hint == hint


def test_an_unknown_option_lists_each_option_with_its_type_and_default(passes):
    with pytest.raises(PipelineError) as info:
        parse_pipeline("tune{cuont=1}", passes)
    assert info.value.message == (
        "pass 'tune' has no option 'cuont'; its options: count: int = 2, ratio: float = 0.5, "
        "flag: bool = false, label: str = plain, mode: Mode = fast, split: SplitMode = none, "
        "limit: int | None = none"
    )
    assert info.value.hint == "did you mean count=?"


def test_an_unknown_pass_lists_the_registered_ones_too(passes):
    with pytest.raises(PipelineError) as info:
        parse_pipeline("tuen", passes)
    assert info.value.message.endswith("DeriveTaskDependencies (task-deps), Tune (tune)")
    assert info.value.hint == "did you mean tune?"


# ---------------------------------------------------------------- build_pass


def test_build_pass_takes_either_name_and_typed_options():
    assert build_pass("tile-matmul", k_block=64).k_block == 64
    assert build_pass("AutoTileMatmul").k_block is None


@pytest.mark.parametrize(
    ("name", "options", "message"),
    [
        ("tile-matmul", {"k_blok": 64}, "pass 'tile-matmul' has no option 'k_blok'"),
        (
            "tile-matmul",
            {"k_block": "64"},
            "option k_block of 'tile-matmul' takes an integer >= 1 (or none), got '64'",
        ),
        (
            "tile-matmul",
            {"k_block": True},
            "option k_block of 'tile-matmul' takes an integer >= 1 (or none), got True",
        ),
        (
            "tensor-to-tile",
            {"max_block_rows": 0},
            "option max_block_rows of 'tensor-to-tile' takes an integer >= 1, got 0",
        ),
    ],
)
def test_build_pass_checks_its_options(name, options, message):
    with pytest.raises(PipelineError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        build_pass(name, **options)


# ---------------------------------------------------------------- the registry


def test_each_built_in_declaration_agrees_with_its_class():
    """The light declaration (read without importing) and the class attributes say the same."""
    for entry in BUILT_IN_PASSES:
        cls = entry.load()
        assert (cls.name, cls.pipeline_name) == (entry.name, entry.pipeline_name)
        assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen
        assert "name" not in {f.name for f in dataclasses.fields(cls)}  # a class attribute, no option
        entry.options()  # every option has a type a pipeline string can give, and a default
    names = [e.name for e in BUILT_IN_PASSES] + [e.pipeline_name for e in BUILT_IN_PASSES]
    assert len(set(names)) == len(names)


def test_a_pass_with_no_pipeline_name_is_named_in_kebab_case():
    @dataclass(frozen=True)
    class FuseAddsIntoFMA:
        name: ClassVar[str] = "FuseAddsIntoFMA"

        def run(self, program, ctx):
            return program

    registry = PassRegistry()
    assert registry.register(FuseAddsIntoFMA, "the test").pipeline_name == "fuse-adds-into-fma"
    assert registry.find("fuse-adds-into-fma").load() is FuseAddsIntoFMA


def _pass_class(**attrs):
    return type("Custom", (), {"run": lambda self, program, ctx: program, **attrs})


@pytest.mark.parametrize(
    ("cls", "message"),
    [
        (Tune, "two passes are named 'Tune': Tune from the test, and "),
        (_pass_class(name="Other", pipeline_name="tune"), "two passes are named 'tune': Tune from the test"),
        (
            _pass_class(name="AllocateMemory"),
            "two passes are named 'AllocateMemory': AllocateMemory from pypto-passes",
        ),
        (_pass_class(name="Fresh", pipeline_name="allocate"), "two passes are named 'allocate'"),
        (_pass_class(), "pass class Custom from the test has no usable name (got None)"),
        (_pass_class(name="has space"), "pass class Custom from the test has no usable name"),
        (
            _pass_class(name="Ok", pipeline_name="no{braces}"),
            "pass Ok from the test has an unusable pipeline_name",
        ),
        (Tune(), "the test registered a Tune object, which is not a pass class"),
        (type("NoRun", (), {"name": "NoRun"}), "the test registered NoRun, which is not a pass class"),
    ],
)
def test_a_pass_that_cannot_be_registered_is_an_error_with_a_hint(passes, cls, message):
    with pytest.raises(PassRegistrationError) as info:
        passes.register(cls, "the test")
    assert info.value.message.startswith(message) and info.value.hint


def test_an_option_of_a_type_no_string_can_give_or_with_no_default_is_refused():
    @dataclass(frozen=True)
    class Shapes:
        name: ClassVar[str] = "Shapes"
        shape: tuple[int, int] = (1, 1)

        def run(self, program, ctx):
            return program

    @dataclass(frozen=True)
    class Needy:
        name: ClassVar[str] = "Needy"
        count: int

        def run(self, program, ctx):
            return program

    with pytest.raises(PassRegistrationError, match="option 'shape' of Shapes is annotated"):
        PassRegistry().register(Shapes, "the test")
    with pytest.raises(PassRegistrationError, match="option 'count' of Needy has no default"):
        PassRegistry().register(Needy, "the test")
