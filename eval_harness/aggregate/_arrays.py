"""The numpy array types that the modules of ``aggregate`` annotate with."""

import numpy as np
from numpy.typing import NDArray

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]
U64 = NDArray[np.uint64]
Bool = NDArray[np.bool_]


__all__ = ["F64", "I64", "U64", "Bool"]
