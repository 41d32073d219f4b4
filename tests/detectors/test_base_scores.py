"""Tests of abstain.detectors._base_scores against tests/reference/base_scores_ref.py."""

from __future__ import annotations

import numpy as np
import pytest

from abstain import load_json
from abstain.detectors import (
    BASE_SCORE_KINDS as KINDS,
)
from abstain.detectors import (
    CSI,
    ShiftedBaseScores,
    joint_labels,
    rotation_training_set,
    rotations,
)
from abstain.exceptions import NotFittedError
from tests.reference.base_scores_ref import base_scores_ref, rotate_ref

T, K, D = 2, 3, 4


def _data(seed=0, n=45, n_test=12):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % K
    centres = rng.normal(scale=3.0, size=(T, K, D))
    F = centres[:, y] + rng.normal(size=(T, n, D))
    Ft = rng.normal(scale=2.0, size=(T, n_test, D))
    Ft[:, ::3] = F[:, :n_test:3]  # exact duplicates of training rows: cos ties at 1
    Lt = rng.normal(scale=2.0, size=(T, n_test, K * T))
    return F, y, Ft, Lt


@pytest.mark.parametrize("kinds", [("cos", "norm", "shift", "supcsi", "supmah"),
                                   ("supocsvm",)])
def test_matches_reference(kinds):
    F, y, Ft, Lt = _data()
    bs = ShiftedBaseScores(kinds=kinds, shifts=(0, 1)).fit(F, y)
    gamma = 0.05
    if "supocsvm" in kinds:
        bs = ShiftedBaseScores(kinds=kinds, shifts=(0, 1), gamma=gamma, nu=0.2).fit(F, y)
    got = bs.score(Ft, Lt)
    want = base_scores_ref(F, y, Ft, Lt, kinds=kinds, nu=0.2, gamma=gamma)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
    assert bs.names_ == [f"{k}_{a}" for k in kinds for a in (0, 90)]


def test_gamma_scale_matches_sklearn():
    F, y, Ft, _ = _data(1)
    bs = ShiftedBaseScores(kinds=("supocsvm",), shifts=(0, 1)).fit(F, y)
    np.testing.assert_allclose(bs.score(Ft), base_scores_ref(F, y, Ft, None,
                               kinds=("supocsvm",), gamma="scale"), atol=1e-9)


def test_all_kinds_direction_on_toy_id_ood():
    rng = np.random.default_rng(2)
    n = 300
    y = np.arange(n) % K
    centres = 4.0 + 3.0 * rng.normal(size=(T, K, D))
    F = centres[:, y] + 0.5 * rng.normal(size=(T, n, D))
    yi = np.arange(60) % K
    F_id = centres[:, yi] + 0.5 * rng.normal(size=(T, 60, D))
    F_ood = 0.3 * rng.normal(size=(T, 60, D))  # small norm, far from every class
    W = rng.normal(size=(K * T, D))
    # logits that favour the true joint label of the ID rows: confident for ID
    L_id = np.zeros((T, 60, K * T))
    for j in range(T):
        L_id[j, np.arange(60), yi * T + j] = 8.0
    L_ood = np.einsum("tnd,cd->tnc", F_ood, W) * 0.1
    bs = ShiftedBaseScores(shifts=(0, 1), gamma=0.1).fit(F, y)
    assert bs.names_[:2] == ["cos_0", "cos_90"] and len(bs.names_) == len(KINDS) * T
    s_id, s_ood = bs.score(F_id, L_id), bs.score(F_ood, L_ood)
    assert np.all(np.median(s_ood, axis=0) > np.median(s_id, axis=0))


def test_rotations_and_coding():
    rng = np.random.default_rng(3)
    X = rng.integers(0, 255, size=(3, 4, 4), dtype=np.uint8)
    R = rotations(X)
    assert R.shape == (4, 3, 4, 4) and R.dtype == np.uint8
    for j in range(4):
        for i in range(3):
            np.testing.assert_array_equal(R[j][i], rotate_ref(X[i], j))
    Xs = X
    Xj, yj = rotation_training_set(Xs, [2, 0, 1])
    for row in range(12):
        j, i = divmod(row, 3)
        np.testing.assert_array_equal(Xj[row], rotate_ref(Xs[i], j))
        assert yj[row] == [2, 0, 1][i] * 4 + j
    assert [a.tolist() for a in joint_labels([1], 4)] == [[4], [5], [6], [7]]


def test_supcsi_uses_own_rotation_columns():
    # eq. (25): rotation j reads logits k*T + j only
    F, y, _, _ = _data()
    bs = ShiftedBaseScores(kinds=("supcsi",), shifts=(0, 1)).fit(F, y)
    L = np.zeros((T, 1, K * T))
    L[0, 0, 0 * T + 0] = 50.0  # class 0 under rotation 0: confident for j=0
    L[1, 0, 0 * T + 0] = 50.0  # the wrong rotation's column for j=1: uninformative
    s = bs.score(F[:, :1], L)[0]
    assert s[0] == pytest.approx(-1.0) and s[1] == pytest.approx(-1.0 / K)


def test_json_round_trip():
    F, y, Ft, Lt = _data(4)
    bs = ShiftedBaseScores(shifts=(0, 1), gamma=0.1, svm_max_samples=10).fit(F, y)
    again = load_json(bs.to_json())
    np.testing.assert_array_equal(again.score(Ft, Lt), bs.score(Ft, Lt))
    assert again.names_ == bs.names_ and again.get_params() == {
        **bs.get_params(), "kinds": list(bs.kinds), "shifts": [0, 1]}
    with pytest.raises(ValueError, match="^format must be 'abstain/1'"):
        load_json('{"format": "x"}')


def test_a_refit_with_other_kinds_keeps_nothing_of_the_first_and_no_global_draws():
    """A refit with fewer kinds kept the first fit's arrays (its JSON then failed to load:
    "fitted.means_ must be absent"); and the one-class SVMs drew their libsvm seed from
    NumPy's global generator, moving a user's ``np.random`` stream."""
    F, y, _, _ = _data(3)
    det = ShiftedBaseScores(shifts=(0, 1)).fit(F, y)
    det.set_params(kinds=("cos",)).fit(F, y)
    fresh = ShiftedBaseScores(kinds=("cos",), shifts=(0, 1)).fit(F, y)
    assert det.to_json() == fresh.to_json()
    load_json(det.to_json())
    before = np.random.get_state()  # noqa: NPY002  (the global stream a user may draw from)
    ShiftedBaseScores(kinds=("supocsvm",), shifts=(0, 1), random_state=0).fit(F, y)
    after = np.random.get_state()  # noqa: NPY002
    assert after[2] == before[2] and np.array_equal(after[1], before[1])


def test_bad_input():
    F, y, Ft, Lt = _data()
    with pytest.raises(NotFittedError):
        ShiftedBaseScores().score(Ft, Lt)
    with pytest.raises(ValueError, match="kinds must be distinct names"):
        ShiftedBaseScores(kinds=("cos", "nope")).fit(F, y)
    with pytest.raises(ValueError, match="features must have 4 shifts"):
        ShiftedBaseScores().fit(F, y)
    with pytest.raises(ValueError, match=r"features must have shape \(n_shifts, n, d\)"):
        ShiftedBaseScores(shifts=(0,)).fit(F[0], y)
    with pytest.raises(ValueError, match="y must have length 45"):
        ShiftedBaseScores(shifts=(0, 1)).fit(F, y[:-1])
    with pytest.raises(ValueError, match="y must use every class"):
        ShiftedBaseScores(shifts=(0, 1), kinds=("norm",)).fit(F, np.where(y == 1, 2, y))
    with pytest.raises(ValueError, match="features must be finite"):
        ShiftedBaseScores(shifts=(0, 1)).fit(np.where(F > 2, np.nan, F), y)
    with pytest.raises(ValueError, match="shifts must be distinct modulo 4"):
        ShiftedBaseScores(shifts=(0, 4)).fit(F, y)
    with pytest.raises(ValueError, match="nu must be in"):
        ShiftedBaseScores(shifts=(0, 1), nu=0.0, kinds=("supocsvm",)).fit(F, y)
    bs = ShiftedBaseScores(shifts=(0, 1), kinds=("supcsi", "norm")).fit(F, y)
    with pytest.raises(ValueError, match="logits are needed"):
        bs.score(Ft)
    with pytest.raises(ValueError, match="logits must have 6 columns"):
        bs.score(Ft, Lt[:, :, :5])
    with pytest.raises(ValueError, match="features must have 4 columns"):
        bs.score(Ft[:, :, :3], Lt)
    with pytest.raises(ValueError, match="at least 2 training rows per class"):
        ShiftedBaseScores(shifts=(0, 1), kinds=("supmah",)).fit(F[:, :4], y[:4])
    flat = F.copy()
    flat[..., 0] = 1.0  # one feature without spread: a singular covariance without a ridge
    with pytest.raises(ValueError, match="covariance of class 0 under shift 0 is singular"):
        ShiftedBaseScores(shifts=(0, 1), kinds=("supmah",), ridge=0.0).fit(flat, y)
    # no spread at all: no ridge (relative to the spread) helps, and the message says so
    with pytest.raises(ValueError, match="class 0 under shift 0 are all equal .no spread."):
        ShiftedBaseScores(shifts=(0, 1), kinds=("supmah",)).fit(np.ones_like(F), y)
    with pytest.raises(ValueError, match="norm 0"):
        ShiftedBaseScores(shifts=(0, 1), kinds=("cos",)).fit(np.zeros_like(F), y)
    with pytest.raises(ValueError, match="images must have shape"):
        rotations(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="square images"):
        rotations(np.zeros((2, 3, 4)))
    assert rotations(np.zeros((2, 3, 4)), shifts=(0, 2)).shape == (2, 2, 3, 4)
    with pytest.raises(ValueError, match="labels must have length 2"):
        rotation_training_set(np.zeros((2, 3, 3)), [0, 1, 0])


def test_shift_share_and_supcsi_mean_do_not_cancel_or_overflow():
    # -(lse(own) - lse(all)) cancelled to 0 for a confident head ([50, 0]: 1.9e-22) and for
    # logits of 1e17 and more (log 2 for two equal ones); SupCSI's mean overflowed to NaN
    from abstain.detectors import SupCSI
    from abstain.detectors._logits import neg_log_share

    np.testing.assert_allclose(neg_log_share(np.array([[50.0]]), np.array([[0.0]])),
                               [np.log1p(np.exp(-50.0))], rtol=1e-14)
    for big in (1e17, 1e300):
        assert neg_log_share(np.array([[big]]), np.array([[big]]))[0] == np.log(2.0)
        assert neg_log_share(np.array([[big, big]]), np.array([[big, big, big, big]]))[0] == \
            pytest.approx(np.log(3.0), rel=1e-15)
    L = np.full((4, 1, 8), 1e308)  # T = 4 shifts, K = 2 classes
    fitted = SupCSI().fit(np.random.default_rng(0).normal(size=(4, 20, 8)))
    assert fitted.score(L).tolist() == [-0.5]


def test_csi_weights_near_the_float_limits():
    # the mean of shift logits of 1e308 overflowed (weight 0: the shift term dropped); a
    # subnormal mean gave an infinite weight and a document load_json refused
    import base64
    import json

    from abstain.detectors import CSI

    rng = np.random.default_rng(0)
    Z = rng.normal(size=(2, 6, 3))
    L = np.ones((2, 6, 2))
    L[0, :, 0] = 1e308
    fit = CSI(shifts=(0, 1)).fit(Z, L)
    assert fit.lambda_shift_[0] == pytest.approx(1e-308, rel=1e-12, abs=0.0)
    L[0, :, 0] = 1e-310
    with pytest.raises(ValueError, match=r"^eq\. 7's weights 1 / mean .* must be finite"):
        CSI(shifts=(0, 1)).fit(Z, L)
    L[0, :, 0] = 2.0
    doc = json.loads(CSI(shifts=(0, 1)).fit(Z, L).to_json())
    doc["fitted"]["lambda_shift_"]["float64_le_base64"] = base64.b64encode(
        np.zeros(2).astype("<f8").tobytes()).decode()
    with pytest.raises(ValueError, match=r"fitted\.lambda_shift_ must hold non-zero weights"):
        load_json(json.dumps(doc))


def test_supocsvm_distances_that_overflow_are_refused_not_nan():
    # a support vector near 1e308 made |q|^2 - 2 q.sv + |sv|^2 inf - inf: the whole supocsvm
    # column came back NaN
    import base64
    import json

    rng = np.random.default_rng(0)
    y = np.arange(60) % 3
    F = 3 + rng.normal(size=(2, 60, 5))
    F[:, np.arange(60), y] += 2
    det = ShiftedBaseScores(kinds=("supocsvm",), shifts=(0, 2)).fit(F, y)
    doc = json.loads(det.to_json())
    support = doc["fitted"]["svm_"][0][0]["support"]
    sv = np.frombuffer(base64.b64decode(support["float64_le_base64"])).copy()
    sv[0] = 1e308
    support["float64_le_base64"] = base64.b64encode(sv.tobytes()).decode()
    with pytest.raises(ValueError, match=r"^supocsvm: the squared distances between the "
                       r"features and the support vectors overflow float64"):
        load_json(json.dumps(doc)).score(F[:, :4])
    far = F[:, :4].copy()
    far[:, 0, 0] = 1e300  # a feature far from every support vector: a kernel of 0, no error
    assert np.isfinite(det.score(far)).all()


def test_a_zero_feature_has_cosine_0_as_in_csi():
    # ReLU features of a new input that are all zero refused the whole batch ("norm 0"),
    # where CSI scores such a projection with cosine 0
    rng = np.random.default_rng(0)
    F = np.abs(rng.normal(size=(4, 30, 5)))
    y = np.repeat([0, 1, 2], 10)
    test = np.abs(rng.normal(size=(4, 3, 5)))
    test[:, 1] = 0.0
    det = ShiftedBaseScores(kinds=("cos", "norm")).fit(F, y)
    got = det.score(test)
    np.testing.assert_array_equal(got[1, :4], 0.0)  # -max cosine of no direction
    np.testing.assert_array_equal(got[[0, 2]], det.score(test[:, [0, 2]]))
    csi = CSI().fit(F, rng.normal(size=(4, 30, 4)))
    cos, _, _ = csi._raw(test, rng.normal(size=(4, 3, 4)))
    np.testing.assert_array_equal(cos[1], 0.0)


def test_supocsvm_distances_whose_cross_term_overflows_are_refused():
    # 2 q.sv beyond float64 made the squared distance -inf, clamped to 0: a kernel of 1
    # (the true one 0.055) with a warning alone, then none
    from abstain.detectors._base import ocsvm_decision

    sv, q = np.array([[1.2e154, 0.0]]), np.array([[1.0e154, 0.5e154]])
    part = {"support": sv, "dual_coef": np.array([1.0]), "gamma": 1e-307, "rho": 0.0}
    with np.errstate(all="raise"), pytest.raises(
            ValueError, match=r"^supocsvm: the squared distances between the features and "
                              r"the support vectors overflow float64"):
        ocsvm_decision(q, part, 16)

