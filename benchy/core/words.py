"""Words beside their values (no torch): :class:`Said`, the line a value renders, and :class:`Worded`, a code whose
members carry their words. A value may render its own words; nothing reads a sentence back (values carry the
meaning, ``tests/test_layout.py``)."""

from __future__ import annotations

import enum
from typing import NamedTuple, Type, TypeVar


class Said(NamedTuple):
    """A line to print: a warning or information, and its text."""

    warning: bool
    text: str


W = TypeVar("W", bound="Worded")


class Worded(str, enum.Enum):
    """A code (the value) with its words: ``NAME = "code", "words"``; words may hold format fields that the value
    that holds the code fills in."""

    words: str

    def __new__(cls: Type[W], code: str, words: str = "") -> W:
        member = str.__new__(cls, code)
        member._value_ = code
        member.words = words
        return member
