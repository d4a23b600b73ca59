"""A frame from named NumPy columns, built without pandas' checks of input it does not need to check.

`pd.DataFrame({name: array})` checks and converts every column (~0.3 ms for a 50-step run's 13 columns,
a tenth of a small run's load in a sweep). The columns here are 1-D arrays of one length that this
package made, so the frame is built by `DataFrame._from_arrays` without the integrity check: ~0.1 ms.
That constructor is pandas' own (used by `from_records`), unchanged from 1.x to 3.x; where it is missing,
the public constructor builds the same frame. A test holds the two to the same frames.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from triage_agent import lazy

if TYPE_CHECKING:
    import pandas as pd
else:
    pd = lazy.module("pandas")

_LABELS: dict[tuple[str, ...], pd.Index] = {}
MAX_LABELS = 256  # column sets kept: a sweep's runs mostly share one or a few


def _labels(names: tuple[str, ...]) -> pd.Index:
    """The column index for these names, made once per set of names: pandas infers its string type through
    pyarrow (~0.1-0.4 ms each time), and an Index is immutable, so frames can share it."""
    got = _LABELS.get(names)
    if got is None:
        if len(_LABELS) >= MAX_LABELS:
            _LABELS.clear()
        got = _LABELS[names] = pd.Index(list(names))
    return got


def _fast() -> Any:
    """pandas' constructor without the integrity check, or None where this pandas lacks it (looked up on use: pandas
    is imported with the first frame, not with this module)."""
    return getattr(pd.DataFrame, "_from_arrays", None)


def frame_of(columns: Mapping[str, np.ndarray]) -> pd.DataFrame:
    """The frame `pd.DataFrame(columns)` makes. Fast for 1-D arrays of numbers of one length; anything else goes
    to that constructor.
    The arrays are the frame's own afterwards: the caller keeps no reference it would write to."""
    arrays = list(columns.values())
    n = len(arrays[0]) if arrays else 0
    # numbers only: the public constructor infers a type for objects and strings, and converts other kinds
    fast = _fast()
    if fast is None or not arrays or not all(isinstance(a, np.ndarray) and a.ndim == 1 and len(a) == n
                                              and a.dtype.kind in "fiu" and a.dtype.isnative for a in arrays):
        plain: pd.DataFrame = pd.DataFrame(dict(columns))
        return plain
    frame = fast(arrays, columns=_labels(tuple(columns)), index=pd.RangeIndex(n), verify_integrity=False)
    assert isinstance(frame, pd.DataFrame)
    return frame
