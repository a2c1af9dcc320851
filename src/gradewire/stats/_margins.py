"""Weights summed per value: the margins of weighted item types, without a type × value matrix.

Types are sorted by value once; for each weighting (a row) the weights of the types that
hold a value are then summed with one ``np.add.reduceat``. Only values some type holds get
a column, in increasing order.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["Margins"]

_Array = npt.NDArray[np.float64]


class Margins:
    """The weights per value of a code array (one code per type, or per entry).

    Attributes:
        values: The codes present, increasing: the columns of a call's result.
        column: For each entry, its value's column.
    """

    def __init__(self, codes: npt.NDArray[np.int64], entries: npt.NDArray[np.intp] | None = None):
        """Group ``codes``; ``entries`` names the type of each code (default: code i is type i)."""
        self._order = np.argsort(codes, kind="stable")
        ordered = codes[self._order]
        new = np.r_[True, ordered[1:] != ordered[:-1]][: ordered.size]
        self._starts = np.flatnonzero(new)
        self._types = self._order if entries is None else entries[self._order]
        self.values = ordered[self._starts]
        self.column = np.empty(codes.size, dtype=np.intp)
        self.column[self._order] = np.cumsum(new) - 1

    def __call__(self, weights: _Array) -> _Array:
        """Per row of ``weights`` (one weight per type), the weight of each present value."""
        return np.asarray(np.add.reduceat(weights[:, self._types], self._starts, axis=1))

    def full(self, weights: _Array, size: int) -> _Array:
        """The same over every code 0..size-1 (0 for the codes absent)."""
        out = np.zeros((weights.shape[0], size))
        out[:, self.values] = self(weights)
        return out
