"""Direct re-derivations of the glrt-SupCSI+ base scores (paper section 3.4, eqs. 3-5, 25-27).

Plain loops over samples, shifts and classes, ``math`` functions, explicit inverses and
``slogdet``, and scikit-learn's ``OneClassSVM.decision_function`` itself; each value is
the paper's inlier score, negated at the end (higher = more OOD):

* cos: every cosine similarity to the training features of the same shift, the max;
* norm: ``sqrt(sum f^2)``;
* shift: ``log sum_k p_{k*T + j}`` with ``p`` the softmax over all ``K*T`` logits;
* supcsi: the softmax of the ``K`` logits ``l[k*T + j]``, the max (eq. 25);
* supmah: ``min_k [(f - mu)' inv(S) (f - mu) + log det S]`` with the class covariance
  ``S = mean (f - mu)(f - mu)' + ridge * trace(S)/d * I`` (eq. 27, not negated: the
  paper's score is minus this);
* supocsvm: ``max_k OneClassSVM(rbf, nu, gamma).fit(F_kj).decision_function`` (eq. 26).
"""

from __future__ import annotations

import math

import numpy as np


def rotate_ref(img, quarter_turns):
    """Counter-clockwise quarter turns by index arithmetic: out[r][c] = img[c][W-1-r]."""
    out = [list(r) for r in img]
    for _ in range(quarter_turns % 4):
        H, W = len(out), len(out[0])
        out = [[out[c][W - 1 - r] for c in range(H)] for r in range(W)]
    return np.array(out)


def base_scores_ref(F_train, y, F, L, *, kinds, ridge=1e-6, nu=0.1, gamma="scale"):
    T, _, d = F_train.shape
    K = int(max(y)) + 1
    n = F.shape[1]
    cols = []
    for kind in kinds:
        for j in range(T):
            col = []
            for i in range(n if kind != "supocsvm" else 0):
                f = F[j, i]
                if kind == "cos":
                    best = -2.0
                    for t in F_train[j]:
                        c = sum(a * b for a, b in zip(f, t, strict=True)) / (
                            math.sqrt(sum(a * a for a in f)) * math.sqrt(sum(b * b for b in t)))
                        best = max(best, c)
                    col.append(-best)
                elif kind == "norm":
                    col.append(-math.sqrt(sum(a * a for a in f)))
                elif kind in ("shift", "supcsi"):
                    row = list(L[j, i])
                    m = max(row)
                    e = [math.exp(v - m) for v in row]
                    if kind == "shift":
                        col.append(-math.log(sum(e[k * T + j] for k in range(K)) / sum(e)))
                    else:
                        own = [e[k * T + j] for k in range(K)]
                        col.append(-max(own) / sum(own))
                elif kind == "supmah":
                    best = math.inf
                    for k in range(K):
                        Fk = np.array([F_train[j, r] for r in range(len(y)) if y[r] == k])
                        mu = Fk.mean(axis=0)
                        S = sum(np.outer(r - mu, r - mu) for r in Fk) / len(Fk)
                        S = S + ridge * np.trace(S) / d * np.eye(d)
                        v = f - mu
                        best = min(best, float(v @ np.linalg.inv(S) @ v)
                                   + float(np.linalg.slogdet(S)[1]))
                    col.append(best)
                else:
                    raise ValueError(kind)
            if kind == "supocsvm":
                col = list(-ocsvm_ref(F_train[j], y, F[j], K, nu, gamma))
            cols.append(col)
    return np.array(cols, dtype=float).T


def ocsvm_ref(F_train, y, F, K, nu, gamma):
    from sklearn.svm import OneClassSVM

    y = np.asarray(y)
    return np.max([OneClassSVM(kernel="rbf", nu=nu, gamma=gamma).fit(F_train[y == k])
                   .decision_function(F) for k in range(K)], axis=0)
