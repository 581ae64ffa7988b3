from pypto.ir import MemoryBudgetError, ParseError, PyptoError, SourceSpan, TypeCheckError


def test_error_renders_location_source_line_caret_and_hint(tmp_path):
    src = tmp_path / "kernel.py"
    src.write_text("def f(a, b):\n    return a + b\n")
    err = ParseError("something is off", SourceSpan(str(src), 2, 11, 16), hint="fix it")
    text = str(err)
    lines = text.splitlines()
    assert lines[0] == f"{src}:2:12: error: something is off"
    assert lines[1] == "    2 |     return a + b"
    assert lines[2] == "      |            ^^^^^"
    assert lines[3] == "hint: fix it"


def test_error_without_a_readable_file_still_names_the_place():
    err = TypeCheckError("bad operand", SourceSpan("<missing>", 3, 0))
    assert str(err) == "<missing>:3:1: error: bad operand"
    assert err.message == "bad operand"


def test_budget_errors_are_value_errors_and_type_errors_are_type_errors():
    assert issubclass(MemoryBudgetError, ValueError) and issubclass(MemoryBudgetError, PyptoError)
    assert issubclass(TypeCheckError, TypeError)


def test_with_span_fills_a_missing_span_only():
    first, second = SourceSpan("a.py", 1), SourceSpan("b.py", 2)
    err = PyptoError("x").with_span(first).with_span(second)
    assert err.span is first
