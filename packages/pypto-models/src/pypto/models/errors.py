"""The errors of the models' public API: input a model cannot use (a token id, a weight, a
configuration), raised at the user's line with a hint, as every PyPTO error is. Each is a
``ValueError`` too (``get_config``'s unknown name a ``KeyError``), as these inputs always were."""

from __future__ import annotations

import sys
from types import FrameType

from pypto.ir import PyptoError, SourceSpan
from pypto.ir.tracebacks import frame_span, is_internal


class ModelError(PyptoError, ValueError):
    """Input a model's API cannot use. Made with ``ModelError.here(message, hint)`` it points at the
    user's line that called into the model."""

    @classmethod
    def here(cls, message: str, hint: str | None = None) -> ModelError:
        return cls(message, user_line(), hint)


def user_line() -> SourceSpan | None:
    """The span of the user's call into the models (the first frame outside PyPTO and its
    models); None when a command line of PyPTO made the call."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module.startswith("pypto.cli") or (module.startswith("pypto.models") and module.endswith(".cli")):
            return None
        if not (module.startswith("pypto.models") or is_internal(frame)):
            return frame_span(frame)
        frame = frame.f_back
    return None


class WeightError(ModelError):
    """A checkpoint that does not fit the configuration: a missing or unexpected key, a wrong
    shape, a value that is no floating-point torch tensor."""


class ModelConfigError(ModelError):
    """A configuration the kernels cannot run: a ``config.json`` missing a field or holding a value
    of the wrong kind, heads that do not group, an unknown configuration name."""


class UnknownModelError(ModelConfigError, KeyError):
    """``get_config`` got a name it does not know (a ``KeyError`` too)."""


class TokenError(ModelError):
    """Token ids or a generation request the model cannot take: an id that is no integer or lies
    outside the vocabulary, a prompt of the wrong shape, a count of new tokens that is no
    non-negative integer."""
