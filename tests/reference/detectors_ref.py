"""Direct re-derivations of the OOD detectors, written from each paper's formula.

Plain loops over samples and classes, ``math`` functions and explicit matrix inverses
(no ``logsumexp``, no partitioning, no eigendecomposition shared with the library):

* MSP / ODIN: ``max_k exp(l_k / T) / sum_j exp(l_j / T)``, with the largest logit
  subtracted first so that the exponentials do not overflow;
* Energy: ``T * log(sum_k exp(l_k / T))``;
* GEN: the probabilities sorted in decreasing order, then ``sum_{j <= M} p^g (1-p)^g``;
* ReAct: ``min(f, c)`` entry by entry, then the energy of ``W f + b``;
* KNN: every distance, sorted, the k-th taken;
* ViM: the principal subspace from an SVD of the centred features, the residual norm
  as ``sqrt(|x - u|^2 - |P (x - u)|^2)``;
* Mahalanobis: ``inv`` of the pooled covariance, the distance to every class mean.
"""

from __future__ import annotations

import decimal
import math

import numpy as np


def softmax_row(row, T=1.0):
    m = max(row)
    e = [math.exp((v - m) / T) for v in row]
    s = sum(e)
    return [v / s for v in e]


def msp(logits, T=1.0):
    return np.array([-max(softmax_row(list(r), T)) for r in logits])


def energy(logits, T=1.0):
    out = []
    for r in logits:
        m = max(r)
        out.append(-(m + T * math.log(sum(math.exp((v - m) / T) for v in r))))
    return np.array(out)


def gen(logits, gamma=0.1, top_m=100):
    """In 60-digit decimal arithmetic: a probability that rounds to 1 in float64 keeps its
    ``1 - p``, and one below the float range its term."""
    out = []
    with decimal.localcontext() as ctx:
        ctx.prec = 60
        g = decimal.Decimal(gamma)
        for r in logits:
            e = [decimal.Decimal(float(v)).exp() for v in r]
            total = sum(e)
            # p_k and 1 - p_k, the latter as the sum of the other terms over the total
            pq = [(e[k] / total, sum(e[:k] + e[k + 1:], decimal.Decimal(0)) / total)
                  for k in sorted(range(len(e)), key=lambda k: -e[k])[:top_m]]
            out.append(float(sum((p * q) ** g if q > 0 else decimal.Decimal(0)
                                 for p, q in pq)))
    return np.array(out)


def react(features, train, W, b, percentile=90.0, T=1.0):
    c = float(np.percentile(np.asarray(train).ravel(), percentile))
    logits = []
    for f in features:
        clipped = [min(v, c) for v in f]
        logits.append([sum(W[k][j] * clipped[j] for j in range(len(f))) + b[k]
                       for k in range(len(W))])
    return energy(logits, T)


def knn(features, train, k, normalize=True):
    def prep(v):
        v = np.asarray(v, dtype=float)
        return v / math.sqrt(sum(x * x for x in v)) if normalize else v

    bank = [prep(t) for t in train]
    out = []
    for f in features:
        q = prep(f)
        d = sorted(math.sqrt(sum((a - c) ** 2 for a, c in zip(q, t, strict=True))) for t in bank)
        out.append(d[k - 1])
    return np.array(out)


def vim(features, train, W, b, dim):
    W, b, train = np.asarray(W), np.asarray(b), np.asarray(train)
    u = -np.linalg.pinv(W) @ b
    C = train - u
    _, _, vt = np.linalg.svd(C, full_matrices=False)
    P = vt[:dim]                     # principal directions, one per row

    def resid(x):
        c = np.asarray(x) - u
        return math.sqrt(max(float(c @ c) - float(np.sum((P @ c) ** 2)), 0.0))

    alpha = np.mean([max(row) for row in train @ W.T + b]) / np.mean([resid(x) for x in train])
    out = []
    for x in features:
        logits = list(np.asarray(x) @ W.T + b)
        m = max(logits)
        lse = m + math.log(sum(math.exp(v - m) for v in logits))
        out.append(alpha * resid(x) - lse)
    return np.array(out)


def mahalanobis(features, train, labels):
    train, labels = np.asarray(train), np.asarray(labels)
    classes = sorted(set(labels.tolist()))
    means = {c: train[labels == c].mean(axis=0) for c in classes}
    S = np.zeros((train.shape[1], train.shape[1]))
    for x, y in zip(train, labels, strict=True):
        d = x - means[y]
        S += np.outer(d, d)
    P = np.linalg.inv(S / len(train))
    out = []
    for x in features:
        out.append(min(float((x - means[c]) @ P @ (x - means[c])) for c in classes))
    return np.array(out)


def csi(train_proj, train_logits, proj, logits):
    """CSI's score, eqs. 3-7 of the score-combining paper, written row by row and negated:
    ``-sum_j [lambda_con_j cos_j norm_j + lambda_shift_j shift_j]`` with the weights of eq. 7
    from the training inputs."""
    T = len(train_proj)

    def norm(v):
        return math.sqrt(sum(float(a) * float(a) for a in v))

    lam_con = [len(train_proj[j]) / sum(norm(z) for z in train_proj[j]) for j in range(T)]
    lam_shift = [len(train_logits[j]) / sum(float(row[j]) for row in train_logits[j])
                 for j in range(T)]
    out = []
    for i in range(len(proj[0])):
        total = 0.0
        for j in range(T):
            z = proj[j][i]
            cos = max(float(np.dot(z, t)) / (norm(z) * norm(t)) for t in train_proj[j])
            total += lam_con[j] * cos * norm(z) + lam_shift[j] * float(logits[j][i][j])
        out.append(-total)
    return np.array(out)


def supcsi(logits, n_shifts):
    """SupCSI's score, eq. 8, negated: ``-max_k softmax(mean_j l[k T + j](R_j x))_k``."""
    T = n_shifts
    K = len(logits[0][0]) // T
    out = []
    for i in range(len(logits[0])):
        mean = [sum(float(logits[j][i][k * T + j]) for j in range(T)) / T for k in range(K)]
        m = max(mean)
        out.append(-1.0 / sum(math.exp(v - m) for v in mean))
    return np.array(out)
