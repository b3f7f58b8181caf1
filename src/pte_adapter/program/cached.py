"""`cached`: a property computed on first use and stored on the instance.

`functools.cached_property` does the same, but in Python 3.11 takes a lock on every first use (one
per tensor, partition ... on a large program: a percent of a conversion). What it guards against,
two threads computing one value at once, is harmless here: every cached value is a pure function of
fields that do not change, and the second result simply replaces the first. It imports nothing of
the project; the analysis and the views above `program/` use it too."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar, overload

_T = TypeVar("_T")


class cached(Generic[_T]):
    def __init__(self, compute: Callable[[Any], _T]) -> None:
        self.compute = compute
        self.name = compute.__name__
        self.__doc__ = compute.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> cached[_T]: ...
    @overload
    def __get__(self, obj: object, owner: type | None = None) -> _T: ...
    def __get__(self, obj: object | None, owner: type | None = None) -> _T | cached[_T]:
        if obj is None:
            return self
        # A non-data descriptor: once the value is in the instance's dict, it is found there and
        # this is not called again.
        value = obj.__dict__[self.name] = self.compute(obj)
        return value
