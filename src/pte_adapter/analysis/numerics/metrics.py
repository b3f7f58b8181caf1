"""How far one tensor is from another: the numbers of a numeric-gap row.

`reference` is the signal (the reference program's output, or the ETRecord graph's), `values` what
this program computed; both float64, the same shape. With ExecuTorch's Inspector's definitions
(`devtools/inspector/numerical_comparator/`, 1.5.1):

- `mse`: mean of (reference - values)^2;
- `l1`: the Inspector's L1, the *sum* of |reference - values| (not a mean);
- `snr_db`: 10 log10(mean(reference^2) / mse): `inf` when the two are equal (no noise, also
  when both are all zeros, where the Inspector's 0/0 gives NaN);
- and as the Inspector does, a tensor holding NaN has every NaN read as 0 and every infinity as
  the largest finite float64 before comparing (torch's `nan_to_num`); one without NaN is compared
  as it is.

Beyond the Inspector: `mean_abs` (mean of |reference - values|, the mean absolute error),
`max_abs` (the largest |reference - values|), `cosine` (cosine similarity of the two as vectors;
None when either is all zeros), and the counts of NaN and infinite values on each side, which a
row reports ("a row with NaN or Inf values says so").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pte_adapter.analysis.numerics.values import Array


@dataclass(frozen=True)
class Metrics:
    mse: float
    l1: float  # sum of absolute differences (the Inspector's L1)
    mean_abs: float
    snr_db: float  # inf: no noise; nan: no signal and no noise; -inf: noise, no signal
    max_abs: float
    cosine: float | None
    elements: int
    nan: int  # NaN values in this program's tensor
    inf: int
    reference_nan: int
    reference_inf: int

    @property
    def non_finite(self) -> bool:
        return bool(self.nan or self.inf or self.reference_nan or self.reference_inf)


@dataclass(frozen=True)
class ValueStats:
    """One tensor on its own (a row with nothing to compare it with)."""

    elements: int
    minimum: float | None  # None: no finite value
    maximum: float | None
    mean: float | None
    nan: int
    inf: int


def _inspector_view(x: Array) -> Array:
    import numpy as np

    return np.nan_to_num(x) if bool(np.isnan(x).any()) else x


def _counts(x: Array) -> tuple[int, int]:
    import numpy as np

    return int(np.isnan(x).sum()), int(np.isinf(x).sum())


def compare(reference: Array, values: Array) -> Metrics:
    """The gap between two arrays of the same shape (module docstring)."""
    import numpy as np

    a, b = _inspector_view(reference), _inspector_view(values)
    with np.errstate(all="ignore"):
        diff = a - b
        n = diff.size
        mse = float(np.mean(np.square(diff))) if n else 0.0
        absolute = np.abs(diff)
        l1 = float(absolute.sum())
        mean_abs = float(absolute.mean()) if n else 0.0
        max_abs = float(absolute.max()) if n else 0.0
        power = float(np.mean(np.square(a))) if n else 0.0
        snr = _snr_db(power, mse)
        norms = float(np.linalg.norm(a)) * float(np.linalg.norm(b))
        cosine = float(np.dot(a.ravel(), b.ravel()) / norms) if norms > 0 else None
    nan, inf = _counts(values)
    rnan, rinf = _counts(reference)
    return Metrics(mse, l1, mean_abs, snr, max_abs, cosine, n, nan, inf, rnan, rinf)


def _snr_db(power: float, noise: float) -> float:
    """10 log10(power / noise), as float64 division gives it (-inf without signal, NaN from NaN);
    `inf` when there is no noise, also for two all-zero tensors (the Inspector's 0/0 is NaN: two
    equal tensors have no gap)."""
    import numpy as np

    if noise == 0:
        return math.inf
    with np.errstate(all="ignore"):
        return float(10 * np.log10(np.float64(power) / np.float64(noise)))


def stats(values: Array) -> ValueStats:
    import numpy as np

    finite = values[np.isfinite(values)]
    nan, inf = _counts(values)
    if finite.size == 0:
        return ValueStats(int(values.size), None, None, None, nan, inf)
    with np.errstate(all="ignore"):  # a mean of huge finite values may overflow to inf
        mean = float(finite.mean())
    return ValueStats(int(values.size), float(finite.min()), float(finite.max()), mean, nan, inf)
