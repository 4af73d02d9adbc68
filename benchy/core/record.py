"""The result file's value types and the base of every object in it (pure, no torch).

A type that benchy keeps in memory and writes to the result file is declared once, as a frozen :class:`Record`:
built, encoded and decoded as it is (:mod:`benchy.results.model` composes the file); the documentation's key
tables come from its hints and bounds.
"""

from __future__ import annotations

import enum
from typing import Annotated, ClassVar, List, Optional

from msgspec import Meta, Struct

MAX_MAGNITUDE = 1e30  # no figure benchy writes comes near it; beyond, statistics overflow (x**4 past 1e308)

Number = Annotated[float, Meta(ge=-MAX_MAGNITUDE, le=MAX_MAGNITUDE)]
Count = Annotated[int, Meta(ge=0)]
Index = Count
UnixTime = Annotated[float, Meta(ge=0, le=1e11, extra={"what": "Unix seconds"})]  # up to the year 5138
Seconds = Annotated[float, Meta(ge=0, le=1e9, extra={"what": "seconds"})]  # a duration: up to some 31 years
Fraction = Annotated[float, Meta(ge=0, le=1)]
Triple = Annotated[List[Optional[Number]], Meta(min_length=3, max_length=3)]
Pair = Annotated[List[Optional[Number]], Meta(min_length=2, max_length=2)]
Numbers = List[Optional[Number]]


class Mode(str, enum.Enum):
    """A trial kind; the value is the name printed in output lines and JSON keys."""

    IO = "IO"
    SYNTHETIC = "SYNTHETIC"
    FULL = "FULL"


class Record(Struct, frozen=True):
    """An object of the result file: frozen; ``what`` and ``plural`` name it in the documentation and in the
    reader's errors; keys it does not declare are left to the document."""

    what: ClassVar[str] = "an object"
    plural: ClassVar[str] = "objects"
