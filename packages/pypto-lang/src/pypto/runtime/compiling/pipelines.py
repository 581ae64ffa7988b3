"""Which passes a compile runs: ``RunConfig.pipeline`` if given, else the pipeline the platform's
backend asks for (its ``pipeline`` attribute), else the default pipeline.

Pipeline strings name built-in passes and the passes plugins register
(``pypto_register_passes``); plugins load only when a name is not a built-in pass's.

>>> pipeline_of(RunConfig(pipeline="outline-scopes,tile-matmul{k_block=128}"))  # doctest: +SKIP
"""

from __future__ import annotations

import linecache
from collections.abc import Sequence
from typing import Protocol

from pypto.ir import PlatformError, SourceSpan
from pypto.passes import PassRegistry, PassSpec, Pipeline, PipelineError, parse_text, resolve
from pypto.passes.pipeline import placed
from pypto.runtime.platforms.registry import registry


class Configured(Protocol):
    """What :func:`pipeline_of` reads of a ``RunConfig`` (named so this module needs no import of
    the config module, which imports it)."""

    @property
    def parsed_pipeline(self) -> Pipeline | None: ...

    @property
    def platform(self) -> object: ...


# How far below a ``RunConfig(`` line its pipeline string is looked for.
_CALL_LINES = 20


def pass_registry(specs: Sequence[PassSpec] = ()) -> PassRegistry:
    """The passes ``specs`` are looked up in: the built-in ones when they name only those (no
    plugin loads), else the built-in ones and every plugin's."""
    built_in = PassRegistry()
    if all(built_in.find(spec.name.text) is not None for spec in specs):
        return built_in
    return registry().passes()


def parse_user_pipeline(text: str, at: SourceSpan | None = None) -> Pipeline:
    """The pipeline ``text`` names; a :class:`PipelineError` points into ``text`` at ``at`` (where
    its first character is in a file), or has no span."""
    try:
        specs = parse_text(text)
        return resolve(specs, pass_registry(specs))
    except PipelineError as err:
        raise placed(err, text, at) from None


def literal_start(call: SourceSpan | None, text: str) -> SourceSpan | None:
    """Where the string literal ``text`` starts in the user's ``RunConfig(...)`` call at ``call``
    (its first character inside the quotes), or None when the call does not spell it (a variable,
    escapes)."""
    if call is None:
        return None
    for line in range(call.line, call.line + _CALL_LINES):
        source = linecache.getline(call.file, line)
        if not source:
            return None
        start = call.col if line == call.line else 0
        for quote in ('"', "'"):
            found = source.find(f"{quote}{text}{quote}", start)
            if found >= 0:
                return SourceSpan(call.file, line, found + 1)
    return None


COMMAND_LINE = "--passes"  # the name errors give a pipeline string from the command line


def command_line_start(text: str) -> SourceSpan:
    """The span of a pipeline string given on the command line: the string is made the one line
    of a pseudo-file named ``--passes``, so an error shows it with a caret under the mistake."""
    linecache.cache[COMMAND_LINE] = (len(text), None, [text + "\n"], COMMAND_LINE)
    return SourceSpan(COMMAND_LINE, 1, 0)


def pipeline_of(config: Configured) -> Pipeline:
    """The pipeline compiling under ``config`` runs; a backend's pipeline that cannot be used is a
    PlatformError naming the plugin."""
    if config.parsed_pipeline is not None:
        return config.parsed_pipeline
    wanted = registry().pipeline(str(config.platform))
    if wanted is None:
        return Pipeline.default()
    text, origin = wanted
    try:
        return parse_user_pipeline(text)
    except PipelineError as err:
        raise PlatformError(
            f"platform {config.platform!r} of {origin} asks for the pipeline {text!r}, which cannot be "
            f"used: {err.message}",
            hint=f"{err.hint}, in the backend's pipeline; or choose the passes with RunConfig(pipeline=...)",
        ) from None
