"""A pass's options: the fields of its dataclass, typed, read from a pipeline string.

``tile-matmul{k_block=128}`` sets ``AutoTileMatmul.k_block`` to the int 128: a value is parsed
by its field's type (``int``, ``float``, ``bool``, ``str``, an ``Enum``, or one of those ``| None``).
:func:`option` declares a field with a one-line help and, for numbers, a minimum::

    @dataclass(frozen=True)
    class AutoTileMatmul:
        name: ClassVar[str] = "AutoTileMatmul"
        pipeline_name: ClassVar[str] = "tile-matmul"
        k_block: int | None = option(None, help="the K block", minimum=1)
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from dataclasses import dataclass
from enum import Enum
from typing import Any

_HELP, _MINIMUM = "pypto.help", "pypto.minimum"
_INT = re.compile(r"^[+-]?[0-9]+$")
_FLOAT = re.compile(r"^[+-]?([0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)([eE][+-]?[0-9]+)?$")
_BOOLS = {"true": True, "false": False}
_NONE = "none"
_BARE = re.compile(r"^[A-Za-z0-9_.:/+-]+$")  # a str value written without quotes
SCALARS: tuple[type, ...] = (bool, int, float, str)
_EXAMPLES: dict[type, str] = {bool: "true", int: "64", float: "0.5", str: "name"}


def option(default: Any, *, help: str = "", minimum: float | None = None) -> Any:
    """A pass option: a dataclass field with a one-line ``help`` (shown by ``pypto passes --all``)
    and, for a number, the least value it takes: ``k_block: int | None = option(None, minimum=1)``."""
    metadata = {_HELP: help, _MINIMUM: minimum}
    return dataclasses.field(default=default, metadata=metadata)


class BadValue(ValueError):
    """A value an option cannot take; ``expected`` says what it takes, ``example`` shows one."""

    def __init__(self, expected: str, example: str) -> None:
        super().__init__(expected)
        self.expected = expected
        self.example = example


@dataclass(frozen=True)
class PassOption:
    """One option of a pass: its field's name, type, default, help and minimum."""

    name: str
    kind: type
    optional: bool
    default: Any
    help: str = ""
    minimum: float | None = None

    def type_name(self) -> str:
        """``int``, ``int | None``, ``SplitMode``."""
        name = self.kind.__name__
        return f"{name} | None" if self.optional else name

    def describe(self) -> str:
        """``k_block: int | None = none``."""
        return f"{self.name}: {self.type_name()} = {render(self.default)}"

    def expected(self) -> str:
        """What the option takes, in words: ``an integer >= 1 (or none)``."""
        if issubclass(self.kind, Enum):
            words = f"one of {', '.join(m.name.lower() for m in self.kind)}"
        else:
            words = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}[self.kind]
        if self.minimum is not None and self.kind in (int, float):
            words += f" >= {render(self.minimum)}"
        return f"{words} (or none)" if self.optional else words

    def example(self) -> str:
        """A value the option takes, as written in a pipeline string."""
        if self.default is not None:
            return render(self.default)
        if issubclass(self.kind, Enum):
            return next(iter(self.kind)).name.lower()
        if self.kind is int and self.minimum is not None:
            return str(max(int(self.minimum), int(_EXAMPLES[int])))
        return _EXAMPLES[self.kind]

    def parse(self, text: str) -> Any:
        """The value ``text`` (as written after ``=``) stands for; a :class:`BadValue` if none."""
        if self.optional and text.lower() == _NONE:
            return None
        value = self._scalar(text)
        self.check(value)
        return value

    def check(self, value: Any) -> None:
        """``value`` is of the option's type and not below its minimum; else a :class:`BadValue`."""
        if value is None and self.optional:
            return
        bad = BadValue(self.expected(), self.example())
        if isinstance(value, bool) and self.kind is not bool:
            raise bad
        number = (int, float) if self.kind is float else self.kind
        if not isinstance(value, number):
            raise bad
        if self.minimum is not None and isinstance(value, (int, float)) and value < self.minimum:
            raise bad

    def _scalar(self, text: str) -> Any:
        bad = BadValue(self.expected(), self.example())
        if self.kind is str:
            return text
        if self.kind is bool:
            if text.lower() not in _BOOLS:
                raise bad
            return _BOOLS[text.lower()]
        if self.kind is int:
            if not _INT.match(text):
                raise bad
            return int(text)
        if self.kind is float:
            if not _FLOAT.match(text):
                raise bad
            return float(text)
        if not issubclass(self.kind, Enum):
            raise bad
        members = {m.name.lower(): m for m in self.kind}  # by member name, in any case
        member = members.get(text.lower().replace("-", "_"))
        if member is None:
            raise bad
        return member


def render(value: Any) -> str:
    """``value`` as a pipeline string writes it: ``128``, ``true``, ``none``, ``up_down``, ``"a b"``."""
    if value is None:
        return _NONE
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Enum):
        return value.name.lower()
    if isinstance(value, str):
        if _BARE.match(value) and value.lower() != _NONE:
            return value
        return f"'{value}'" if '"' in value else f'"{value}"'
    return repr(value)


def pass_options(cls: type) -> tuple[PassOption, ...]:
    """The options of pass class ``cls``: its dataclass fields that ``__init__`` takes (none for a
    class that is not a dataclass). A field whose type a pipeline string cannot give, or that has
    no default, is a ``TypeError`` naming it."""
    if not dataclasses.is_dataclass(cls):
        return ()
    hints = typing.get_type_hints(cls)
    found = []
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        kind, optional = _option_type(hints.get(f.name), f.name, cls)
        if f.default is dataclasses.MISSING:
            raise TypeError(f"option {f.name!r} of {cls.__name__} has no default; every pass option has one")
        default = f.default
        found.append(
            PassOption(f.name, kind, optional, default, f.metadata.get(_HELP, ""), f.metadata.get(_MINIMUM))
        )
    return tuple(found)


def _option_type(hint: Any, name: str, cls: type) -> tuple[type, bool]:
    """``(int, True)`` for ``int | None``; a ``TypeError`` for a type no pipeline string can give."""
    args = typing.get_args(hint)
    optional = typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in args
    if optional:
        rest = [a for a in args if a is not type(None)]
        hint = rest[0] if len(rest) == 1 else None
    if isinstance(hint, type) and (hint in SCALARS or issubclass(hint, Enum)):
        return hint, optional
    raise TypeError(
        f"option {name!r} of {cls.__name__} is annotated {hint!r}; a pass option is an int, float, "
        "bool, str or Enum, or one of those | None"
    )
