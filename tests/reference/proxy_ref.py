"""Held-out-class splits by hand: :meth:`LeaveClassesOut.split` on the rows put in an order of
their contents (the bytes of each row of the logits, then of the features, then the label),
mapped back to row indices, as ``split_outputs`` promises."""

from __future__ import annotations

import numpy as np


def _row_bytes(arr):
    flat = np.ascontiguousarray(np.asarray(arr).reshape(len(arr), -1))
    return [flat[i].tobytes() for i in range(flat.shape[0])]


def content_splits(proxy, outputs, y):
    """The splits of ``proxy`` (a LeaveClassesOut) drawn on the rows sorted by content."""
    y = np.asarray(y)
    classes = np.unique(y)
    code = np.searchsorted(classes, y)
    keys = [[] for _ in range(y.size)]
    for f in ("logits", "features"):
        if f in outputs:
            for i, b in enumerate(_row_bytes(outputs[f])):
                keys[i].append(b)
    canon = np.array(sorted(range(y.size), key=lambda i: (*keys[i], int(code[i]), i)))
    out = []
    for s in proxy.split(y[canon]):
        out.append(s._replace(fit=np.sort(canon[s.fit]), inliers=np.sort(canon[s.inliers]),
                              outliers=np.sort(canon[s.outliers])))
    return out
