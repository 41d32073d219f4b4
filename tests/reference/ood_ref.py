"""Brute-force references for the OOD selectors and metrics (Franc, Prusa, Paplham 2023).

Written from the definitions with plain loops over samples (no sorting):

* a rule on a score is ``c_i = 1 if s_i < t, nu if s_i == t, 0 if s_i > t``; TPR, FPR,
  selective risk and precision are the sums of section 3.2 / 3.3 of the paper;
* the best rule on one score is an exhaustive search over every observed threshold
  ``t`` and every ``nu`` in {0, 1, the values where a constraint holds with equality}
  (the risk is monotone in ``nu``, so these ends contain the optimum);
* the best double-score rule is that search over every direction where two score
  pairs tie (the exact normal of their difference), one direction inside every
  interval between consecutive such angles, and the angles 0 and pi;
* the linear program of Appendix A.5 over all selective functions ``c in [0, 1]^n``.

Use small integer-valued scores so that the projected scores tie exactly, or
:func:`best_ratio_2d_exact`, which does all of it in rational arithmetic on any floats and
masses.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np
from scipy.optimize import linprog


def rule_stats(s, is_ood, losses, t, nu):
    """(ID accepted, OOD accepted, ID loss accepted) of the rule (t, nu), by a loop."""
    i = o = loss = 0.0
    for k in range(len(s)):
        c = 1.0 if s[k] < t else (nu if s[k] == t else 0.0)
        if is_ood[k]:
            o += c
        else:
            i += c
            loss += c * losses[k]
    return i, o, loss


def _candidates(s, is_ood, losses, a, b, kk):
    """Rules (t, nu) worth checking for constraints I >= a, O - kk I <= b."""
    for t in sorted(set(s)):
        nus = {0.0, 1.0}
        i0, o0, l0 = rule_stats(s, is_ood, losses, t, 0.0)
        i1, o1, l1 = rule_stats(s, is_ood, losses, t, 1.0)
        di, do = i1 - i0, o1 - o0
        if di:
            nus.add((a - i0) / di)
        if do - kk * di:
            nus.add((b - (o0 - kk * i0)) / (do - kk * di))
        for nu in nus:
            if 0.0 <= nu <= 1.0:
                yield t, nu


def best_ratio_1d(s, is_ood, losses, a, b, kk=0.0, tol=1e-9):
    """Minimal selective risk over rules with I >= a and O - kk * I <= b (masses); None if none."""
    best = None
    for t, nu in _candidates(s, is_ood, losses, a, b, kk):
        i, o, loss = rule_stats(s, is_ood, losses, t, nu)
        if i <= 0 or i < a - tol or o - kk * i > b + tol:
            continue
        r = loss / i
        if best is None or r < best[0] - tol:
            best = (r, i, o)
    return best


def best_linear_1d(s, is_ood, losses, slopes):
    """Minimal ``slope_i I + slope_o O + slope_l L`` over deterministic rules (and reject-all)."""
    si, so, sl = slopes
    best = 0.0  # reject everything
    for t in set(s):
        i, o, loss = rule_stats(s, is_ood, losses, t, 1.0)
        best = min(best, si * i + so * o + sl * loss)
    return best


def directions(scores2):
    """Weight vectors covering every order of ``scores2 @ w`` for angles in [0, pi]."""
    pts = [tuple(p) for p in np.unique(np.asarray(scores2), axis=0)]
    crit = {}
    for p in pts:
        for q in pts:
            dr, dg = q[0] - p[0], q[1] - p[1]
            if dr == 0:
                continue
            w = (dg, -dr) if -dr > 0 else (-dg, dr)
            crit[math.atan2(w[1], w[0])] = w
    out = [(1.0, 0.0), (-1.0, 0.0)] + list(crit.values())
    angles = [0.0] + sorted(crit) + [math.pi]
    for a0, a1 in zip(angles[:-1], angles[1:], strict=False):
        mid = 0.5 * (a0 + a1)
        out.append((math.cos(mid), math.sin(mid)))
    return out


def project(scores2, w):
    return [float(r) * w[0] + float(g) * w[1] for r, g in np.asarray(scores2)]


def best_ratio_2d(scores2, is_ood, losses, a, b, kk=0.0):
    best = None
    for w in directions(scores2):
        r = best_ratio_1d(project(scores2, w), is_ood, losses, a, b, kk)
        if r is not None and (best is None or r[0] < best[0]):
            best = r
    return best


def _exact_directions(pts):
    """Rational weight vectors covering every order of ``pts @ w`` for angles in [0, pi]:
    the normal of every pair's difference (sorted by angle with exact cross products), one
    positive combination of each two consecutive ones, and the angles 0 and pi."""
    crit = []
    for i, p in enumerate(pts):
        for q in pts[i + 1:]:
            dr, dg = q[0] - p[0], q[1] - p[1]
            if dr != 0:
                crit.append((dg, -dr) if -dr > 0 else (-dg, dr))

    def by_angle(u, v):
        c = u[0] * v[1] - u[1] * v[0]
        return -1 if c > 0 else (1 if c < 0 else 0)

    crit.sort(key=functools.cmp_to_key(by_angle))
    seq = [(Fraction(1), Fraction(0))]
    for w in crit:
        if by_angle(seq[-1], w) != 0:
            seq.append(w)
    seq.append((Fraction(-1), Fraction(0)))
    between = []
    for u, v in zip(seq[:-1], seq[1:], strict=True):
        nu, nv = u[0] ** 2 + u[1] ** 2, v[0] ** 2 + v[1] ** 2  # any positive weights do
        between.append((u[0] * nv + v[0] * nu, u[1] * nv + v[1] * nu))
    return seq + between


def best_ratio_2d_exact(points, masses, a, b, kk, tol_i=0.0, tol_o=0.0, directions=None):
    """:func:`best_ratio_2d` on distinct ``points`` (m, 2) with (ID, OOD, loss) ``masses``
    (m, 3), all in rational arithmetic: minimal ``L / I`` over rules with
    ``I >= a - tol_i`` and ``O - kk I <= b + tol_o``, as (risk, I, O); None if none.
    ``directions``: the weight vectors searched (default: one of every order)."""
    pts = [tuple(Fraction(float(v)) for v in p) for p in np.asarray(points)]
    xs = [tuple(Fraction(float(v)) for v in row[:3]) for row in np.asarray(masses)]
    a, b, kk = Fraction(a), Fraction(b), Fraction(kk)
    tol_i, tol_o = Fraction(tol_i), Fraction(tol_o)
    best = None
    dirs = _exact_directions(pts) if directions is None else [
        tuple(Fraction(v) for v in w) for w in directions]
    for w in dirs:
        proj = [p[0] * w[0] + p[1] * w[1] for p in pts]
        for t in set(proj):
            below = [sum(x[c] for x, s in zip(xs, proj, strict=True) if s < t) for c in range(3)]
            group = [sum(x[c] for x, s in zip(xs, proj, strict=True) if s == t) for c in range(3)]
            (i0, o0, l0), (di, do, dl) = below, group
            nus = {Fraction(0), Fraction(1)}
            if di:
                nus.add((a - i0) / di)
            if do - kk * di:
                nus.add((b - (o0 - kk * i0)) / (do - kk * di))
            for nu in nus:
                i, o, loss = i0 + nu * di, o0 + nu * do, l0 + nu * dl
                if not 0 <= nu <= 1 or i <= 0 or i < a - tol_i or o - kk * i > b + tol_o:
                    continue
                if best is None or loss / i < best[0]:
                    best = (loss / i, i, o)
    return None if best is None else tuple(float(v) for v in best)


def best_linear_2d(scores2, is_ood, losses, slopes):
    return min(best_linear_1d(project(scores2, w), is_ood, losses, slopes)
               for w in directions(scores2))


def lp_bounded_tpr_fpr(is_ood, losses, tpr, fpr):
    """Appendix A.5, eq. (21): min (1/tpr) sum R c s.t. sum pI c = tpr, sum pO c <= fpr.

    Over every selective function on the sample (one variable per row); a lower bound
    on the risk of any rule. Returns the optimum, or None when infeasible.
    """
    is_ood = np.asarray(is_ood, dtype=bool)
    n_i, n_o = (~is_ood).sum(), is_ood.sum()
    p_i = np.where(is_ood, 0.0, 1.0 / n_i)
    p_o = np.where(is_ood, 1.0 / n_o, 0.0)
    risk = np.where(is_ood, 0.0, np.asarray(losses, float) / n_i)
    res = linprog(risk / tpr, A_ub=[p_o], b_ub=[fpr], A_eq=[p_i], b_eq=[tpr],
                  bounds=[(0.0, 1.0)] * len(is_ood), method="highs")
    return res.fun if res.status == 0 else None


# ----------------------------------------------------------------------------- metrics
def auroc_ref(is_ood, scores):
    """P(s_ID < s_OOD) + P(tie) / 2 by a double loop."""
    ids = [s for s, o in zip(scores, is_ood, strict=False) if not o]
    oods = [s for s, o in zip(scores, is_ood, strict=False) if o]
    tot = sum(1.0 if a < b else (0.5 if a == b else 0.0) for a in ids for b in oods)
    return tot / (len(ids) * len(oods))


def average_precision_ref(positive, scores_low_first):
    """sum over distinct thresholds t of (R(t) - R(prev)) * P(t), accepting s <= t."""
    n_pos = sum(positive)
    ap, prev_r = 0.0, 0.0
    for t in sorted(set(scores_low_first)):
        acc = [p for p, s in zip(positive, scores_low_first, strict=False) if s <= t]
        r = sum(acc) / n_pos
        ap += (r - prev_r) * (sum(acc) / len(acc))
        prev_r = r
    return ap


def rate_at_ref(s, is_ood, target_tpr):
    """Expected FPR of the randomised rule with TPR exactly target_tpr (search over rules)."""
    n_i = sum(1 for o in is_ood if not o)
    n_o = len(is_ood) - n_i
    for t in sorted(set(s)):
        i0, o0, _ = rule_stats(s, is_ood, [0.0] * len(s), t, 0.0)
        i1, o1, _ = rule_stats(s, is_ood, [0.0] * len(s), t, 1.0)
        if i1 >= target_tpr * n_i - 1e-12:
            nu = (target_tpr * n_i - i0) / (i1 - i0) if i1 > i0 else 1.0
            return (o0 + nu * (o1 - o0)) / n_o
    return 1.0


# ------------------------------------------------ envelope of a two-score method's curves
def half_circle_directions(scores2, n_dense=0):
    """:func:`directions` without the angle pi (the half-circle ``[0, pi)`` of the grid), and
    ``n_dense`` more angles ``k pi / n_dense``: a dense scan beside every order."""
    out = [w for w in directions(scores2) if w != (-1.0, 0.0)]
    return out + [(math.cos(k * math.pi / n_dense), math.sin(k * math.pi / n_dense))
                  for k in range(n_dense)]


def curve_segments(p, is_ood, gain):
    """The segments ``(O0, G0, O1, G1)`` of one score's curve: for every observed threshold
    t, the rule (t, 0) to the rule (t, 1), OOD and gain masses summed by a loop."""
    out = []
    for t in sorted(set(p)):
        ends = []
        for nu in (0.0, 1.0):
            o = g = 0.0
            for k in range(len(p)):
                c = 1.0 if p[k] < t else (nu if p[k] == t else 0.0)
                if is_ood[k]:
                    o += c
                else:
                    g += c * gain[k]
            ends.append((o, g))
        out.append((*ends[0], *ends[1]))
    return out


def envelope_segments(scores2, is_ood, gain, n_dense=0):
    """Every segment of every direction of :func:`half_circle_directions`."""
    segs = set()
    for w in half_circle_directions(scores2, n_dense):
        segs.update(curve_segments(project(scores2, w), is_ood, gain))
    return sorted(segs)


def envelope_value_ref(segs, x, total):
    """Largest gain of a segment at OOD mass x (a vertical one counts with its top)."""
    if x >= max(s[2] for s in segs):
        return total
    best = -math.inf
    for o0, g0, o1, g1 in segs:
        if o0 <= x <= o1:
            best = max(best, g1 if o1 == o0 else g0 + (x - o0) / (o1 - o0) * (g1 - g0))
    return best


def envelope_area_ref(segs):
    """Area under the envelope: between consecutive segment ends and pairwise crossings the
    maximum is one line, so each piece is its width times the value at its middle."""
    slanted = [s for s in segs if s[2] > s[0]]
    xs = {s[0] for s in slanted} | {s[2] for s in slanted}
    for i, (a0, b0, a1, b1) in enumerate(slanted):
        for c0, d0, c1, d1 in slanted[i + 1:]:
            s1, s2 = (b1 - b0) / (a1 - a0), (d1 - d0) / (c1 - c0)
            if s1 != s2:
                x = (d0 - c0 * s2 - b0 + a0 * s1) / (s1 - s2)
                if max(a0, c0) < x < min(a1, c1):
                    xs.add(x)
    xs = sorted(xs)
    area = 0.0
    for x0, x1 in zip(xs[:-1], xs[1:], strict=False):
        mid = 0.5 * (x0 + x1)
        vals = [g0 + (mid - o0) / (o1 - o0) * (g1 - g0)
                for o0, g0, o1, g1 in slanted if o0 <= mid <= o1]
        area += (x1 - x0) * max(vals)
    return area


def best_fpr_at_tpr_ref(scores2, is_ood, target_tpr, n_dense=0):
    """Least FPR of a rule with TPR exactly ``target_tpr`` over every direction."""
    return min(rate_at_ref(project(scores2, w), is_ood, target_tpr)
               for w in half_circle_directions(scores2, n_dense))


def best_precision_ref(scores2, is_ood, recall, prior, n_dense=0):
    """Largest precision ``(1 - pi) TPR / ((1 - pi) TPR + pi FPR)`` of a rule (t, nu) with
    TPR >= ``recall`` over every direction; nu in {0, 1, the nu where TPR = recall} (the
    precision is monotone in nu)."""
    n_i = sum(1 for o in is_ood if not o)
    n_o = len(is_ood) - n_i
    zeros = [0.0] * len(is_ood)
    best = 0.0
    for w in half_circle_directions(scores2, n_dense):
        p = project(scores2, w)
        for t in sorted(set(p)):
            i0, o0, _ = rule_stats(p, is_ood, zeros, t, 0.0)
            i1, o1, _ = rule_stats(p, is_ood, zeros, t, 1.0)
            nus = [0.0, 1.0]
            if i1 > i0:
                nus.append(min(max((recall * n_i - i0) / (i1 - i0), 0.0), 1.0))
            for nu in nus:
                i, o = i0 + nu * (i1 - i0), o0 + nu * (o1 - o0)
                if i >= recall * n_i - 1e-9 and i > 0:
                    tp, fp = (1 - prior) * i / n_i, prior * o / n_o
                    best = max(best, tp / (tp + fp))
    return best
