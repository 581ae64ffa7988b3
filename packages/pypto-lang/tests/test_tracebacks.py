"""A raised PyptoError ends its traceback on the user's kernel line, with no exception chain."""

import traceback

import pytest
from lang_diagnostics import line_of

import pypto.language as pl
from pypto.ir import ParseError


def test_the_last_frame_is_the_users_line_and_nothing_is_chained():
    @pl.jit
    def faulty(a: pl.Tensor[[8, 8], pl.FP32]):
        b = unknown_thing  # noqa: F821 - the error under test
        return b

    with pytest.raises(ParseError) as info:
        faulty.parse()
    last = traceback.extract_tb(info.value.__traceback__)[-1]
    assert (last.filename, last.lineno, last.name) == (
        __file__,
        line_of(__file__, "b = unknown_thing"),
        "faulty",
    )
    assert last.line == "b = unknown_thing  # noqa: F821 - the error under test"
    assert info.value.__cause__ is None and info.value.__suppress_context__
    printed = "".join(traceback.format_exception(info.value))
    assert "During handling" not in printed and "direct cause" not in printed
    assert "pypto/language/parser" not in printed
