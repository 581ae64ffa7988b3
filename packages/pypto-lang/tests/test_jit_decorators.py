"""The ``@pl.jit`` decorators take a function and, for ``@pl.jit`` and ``@pl.jit.inline``,
``auto_scope=``: any other option (``@pl.jit.incore(optimizations=[...])``) or a non-function is a
``JitOptionError`` at the decorator's line, with a hint where the option goes;
``@pl.jit.incore()`` with empty parentheses is ``@pl.jit.incore``."""

import pytest
import torch
from lang_diagnostics import rendered

import pypto.language as pl
from pypto.ir import PyptoError
from pypto.language.errors import JitOptionError
from pypto.language.jit import JitFunction


@pytest.mark.parametrize(
    ("decorator", "name", "takes"),
    [
        (pl.jit, "pl.jit", "takes only auto_scope="),
        (pl.jit.incore, "pl.jit.incore", "takes only level="),
        (pl.jit.inline, "pl.jit.inline", "takes only auto_scope="),
        (pl.jit.opaque, "pl.jit.opaque", "takes no options"),
    ],
)
def test_an_option_to_a_decorator_is_an_error_at_its_line_with_a_hint(decorator, name, takes):
    with pytest.raises(JitOptionError) as info:
        decorator(optimizations=[pl.split(pl.SplitMode.UP_DOWN)], name_hint="k")  # the line
    err = info.value
    assert isinstance(err, PyptoError) and isinstance(err, TypeError)
    assert err.message == f"@{name} {takes}, got optimizations=, name_hint="
    shown = rendered(err)
    assert shown.header.startswith(f"{__file__}:") and "# the line" in shown.source  # the user's line
    assert 'pl.func_attr({"split": pl.SplitMode.UP_DOWN})' in err.hint and "pl.at(" in err.hint


def test_empty_parentheses_are_the_bare_decorator(backend, config):
    @pl.jit.incore()
    def doubled(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        out[:] = pl.add(a, a)
        return out

    @pl.jit()
    def entry(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        out = doubled(a, out)
        return out

    assert isinstance(doubled, JitFunction) and isinstance(entry, JitFunction)
    entry(torch.randn(32, 64), torch.zeros(32, 64), config=config)  # on the recording backend
    (program, _, _) = backend.calls[0]  # it compiled, its @pl.jit.incore() kernel a function of its own
    assert "doubled" in {fn.name for fn in program.functions.values()}


def test_decorating_what_is_no_function_is_an_error():
    with pytest.raises(JitOptionError, match=r"@pl\.jit\.incore decorates a Python function, got int"):
        pl.jit.incore(3)

    @pl.jit.opaque
    def twice(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        return out

    with pytest.raises(JitOptionError, match=r"got a @pl\.jit function") as info:
        pl.jit(twice)
    assert "once" in info.value.hint
