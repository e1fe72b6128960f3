"""Which stored weight dtypes a checkpoint may use.

Every export and the numpy reference compute in float32, so any floating type (float16,
bfloat16, float32, float64) is converted. An integer, bool, complex or object tensor in a weight
slot is not a model: casting random int64 "weights" to float gave a constant-output model whose
parity check passed (the reference read the same cast values) and convert exited 0. Such a
tensor is refused by name instead, and so is a NaN or infinite value (a file damaged in place).
"""

from __future__ import annotations

import numpy as np

from albert_edge.errors import CheckpointError

#: Floating types numpy cannot name but TensorFlow (ml_dtypes) and torch store weights in.
_EXTRA_FLOAT_NAMES = frozenset({"bfloat16"})


def is_float_dtype(dtype: np.dtype) -> bool:
    """True for float16/32/64 and bfloat16; False for int, uint, bool, complex, object, strings."""
    dtype = np.dtype(dtype)
    return bool(np.issubdtype(dtype, np.floating)) or dtype.name in _EXTRA_FLOAT_NAMES


def float32_weight(array: np.ndarray, name: str, source: str) -> np.ndarray:
    """``array`` as float32, or CheckpointError naming the variable and its dtype if it is not floating."""
    array = np.asarray(array)
    if not is_float_dtype(array.dtype):
        raise CheckpointError(f"{source}: variable {name} is stored as {array.dtype.name}, expected a floating "
                              "type (float16, bfloat16, float32 or float64)")
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported below, as one line
        out = array.astype(np.float32, copy=False)
    finite = np.isfinite(out)
    if not finite.all():
        # A NaN/inf weight makes every output NaN/inf, and NaN fails no comparison, so parity "passed"
        # with max |dlogit| 0. float64 values beyond float32's range become inf here, so they count too.
        bad = int(out.size - np.count_nonzero(finite))
        raise CheckpointError(f"{source}: variable {name} holds {bad} NaN or infinite value(s)"
                              + (" once converted to float32" if array.dtype != np.float32 else "")
                              + "; a trained model has none")
    return out
