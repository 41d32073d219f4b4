"""The JSON codec of every fitted object.

Non-finite floats are written as the strings ``"nan"``, ``"inf"`` and ``"-inf"`` so that a
file is standard JSON; arrays are written as base64 of little-endian float64.
"""

from __future__ import annotations

import base64
import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

#: Format tags of the documents written by ``to_json``.
RULE_FORMAT = "abstain.rule/1"
OOD_FORMAT = "abstain.ood/1"
SCORE_FORMAT = "abstain.score/1"
DETECTOR_FORMAT = "abstain.detector/1"
DOUBLE_SCORE_FORMAT = "abstain.double-score/1"
BASE_SCORES_FORMAT = "abstain.base-scores/1"
COMBINE_FORMAT = "abstain.combine/1"
SVOR_FORMAT = "abstain.svor/1"


def encode_value(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [encode_value(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def decode_value(value: Any) -> Any:
    if isinstance(value, list):
        return [decode_value(v) for v in value]
    if value in ("nan", "inf", "-inf"):
        return float(value)
    return value


def encode_array(a: NDArray[Any]) -> dict[str, Any]:
    arr = np.ascontiguousarray(a, dtype="<f8")
    return {"shape": list(arr.shape), "float64_le_base64": base64.b64encode(arr.tobytes()).decode()}


def decode_array(doc: Any, name: str) -> NDArray[np.float64]:
    if not isinstance(doc, dict) or set(doc) != {"shape", "float64_le_base64"}:
        raise ValueError(f"fitted array {name!r} in the file is malformed.")
    shape = tuple(int(v) for v in doc["shape"])
    raw = base64.b64decode(doc["float64_le_base64"], validate=True)
    if len(raw) != 8 * math.prod(shape):
        raise ValueError(f"fitted array {name!r} has {len(raw)} bytes for shape {shape}.")
    return np.frombuffer(raw, dtype="<f8").reshape(shape).astype(np.float64)
