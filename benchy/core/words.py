"""Words beside their values (no torch): :class:`Said`, the line a value renders, :class:`Worded`, a code whose
members carry their words, and the number formatters a value's words use (:mod:`benchy.results.text.numbers` has
the others). A value may render its own words; nothing reads a sentence back (values carry the meaning,
``tests/test_layout.py``)."""

from __future__ import annotations

import enum
from typing import NamedTuple, Optional, Type, TypeVar


class Said(NamedTuple):
    """A line to print: a warning or information, and its text."""

    warning: bool
    text: str


W = TypeVar("W", bound="Worded")


class Worded(str, enum.Enum):
    """A code (the value) with its words: ``NAME = "code", "words"`` or ``"code", "words", "grounds"`` (a change and
    why it helps, said apart where a line has room for the change only); both may hold format fields that the value
    that holds the code fills in."""

    words: str
    grounds: str

    def __new__(cls: Type[W], code: str, words: str = "", grounds: str = "") -> W:
        member = str.__new__(cls, code)
        member._value_ = code
        member.words = words
        member.grounds = grounds
        return member


def with_grounds(change: str, grounds: str) -> str:
    """``change: grounds``, or the change alone where nothing more is said (an advice's words, a fix's)."""
    return f"{change}: {grounds}" if grounds else change


def flop(flops: float) -> str:
    """``1.23 GFLOP``: a FLOP count with its SI prefix."""
    for unit, scale in (("PFLOP", 1e15), ("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6), ("kFLOP", 1e3)):
        if flops >= scale:
            return f"{flops / scale:.4g} {unit}"
    return f"{flops:.4g} FLOP"


def flops_rate(flops_per_s: float) -> str:
    """``2.31 TFLOP/s``: a rate with its SI prefix."""
    return flop(flops_per_s) + "/s"


def spread(mean: Optional[float], half_width: Optional[float], digits: int = 3) -> str:
    """``123.456 +/- 7.890``, ``n/a`` for no interval."""
    hw = "n/a" if half_width is None else f"{half_width:.{digits}f}"
    return f"{mean:.{digits}f} +/- {hw}" if mean is not None else "n/a"
