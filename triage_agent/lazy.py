"""A heavy library imported on its first use, not when the module naming it is imported.

pandas (and pyarrow under it) is ~0.5-2.6 s of imports, more than a small run's whole read; most commands and the
console scan need none of it until a frame is built, and `triage mcp` must answer `initialize` before it. A module
names such a library as

    if TYPE_CHECKING:
        import pandas as pd
    else:
        pd = lazy.module("pandas")

so type checking sees the real module, and at run time the first `pd.<name>` imports pandas (once; later lookups
are the real module's attributes, cached here). A test holds each command's import set.
"""

from __future__ import annotations

import importlib
import types
from typing import Any


class _Lazy(types.ModuleType):
    """Stands for a module until an attribute is read, then imports it and keeps what was read."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # dunders (`__path__`, `__spec__`...) asked by import machinery and copy
            raise AttributeError(name)
        value = getattr(importlib.import_module(self.__name__), name)
        setattr(self, name, value)
        return value


def module(name: str) -> Any:
    """A stand-in for module `name` that imports it on the first attribute read."""
    return _Lazy(name)
