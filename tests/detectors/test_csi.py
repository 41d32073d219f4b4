"""abstain.detectors.CSI and SupCSI: the heuristic scores of eqs. 6-8 against their direct
transcription (tests/reference/detectors_ref.py), their base scores, JSON and bad input."""

from __future__ import annotations

import numpy as np
import pytest

from abstain import NotFittedError, load_json
from abstain.combine import csi_statistic
from abstain.detectors import CSI, SupCSI
from tests.reference import detectors_ref as ref


def _outputs(n: int, rng: np.random.Generator, T: int = 4, p: int = 5, shift: float = 0.0):
    proj = rng.normal(size=(T, n, p)) + 2.0 + shift
    logits = rng.normal(size=(T, n, T)) + 3.0 * np.eye(T)[:, None, :]
    return {"projections": proj, "logits": logits}


@pytest.mark.parametrize("seed", range(5))
def test_csi_is_its_equations(seed: int) -> None:
    rng = np.random.default_rng(seed)
    T = int(rng.integers(1, 5))
    train, new = _outputs(30, rng, T), _outputs(12, rng, T, shift=float(rng.normal()))
    det = CSI(shifts=tuple(range(T)), block=7).fit_outputs(train)
    want = ref.csi(train["projections"], train["logits"], new["projections"], new["logits"])
    np.testing.assert_allclose(det.score_outputs(new), want, rtol=1e-10)
    # the same combination as combine.csi_statistic of the raw quantities
    B = -det.base_scores(new["projections"], new["logits"])
    Bt = -det.base_scores(train["projections"], train["logits"])
    got = csi_statistic(B[:, :T], B[:, T:2 * T], B[:, 2 * T:], norm_train=Bt[:, T:2 * T],
                        shift_train=Bt[:, 2 * T:])
    np.testing.assert_allclose(det.score_outputs(new), got, rtol=1e-10)
    assert det.names_[:2] == ["cos_0", "cos_90"][:min(T, 2)] + ([] if T > 1 else ["norm_0"])


def test_csi_ranks_far_inputs_higher_and_its_base_scores_point_the_same_way() -> None:
    rng = np.random.default_rng(7)
    det = CSI().fit_outputs(_outputs(200, rng))
    inl, out = _outputs(100, rng), _outputs(100, rng, shift=-2.0)  # near the origin
    assert np.median(det.score_outputs(out)) > np.median(det.score_outputs(inl))
    b_in = det.base_scores(inl["projections"], inl["logits"])
    b_out = det.base_scores(out["projections"], out["logits"])
    assert b_in.shape == (100, 12) and len(det.names_) == 12
    norm = slice(4, 8)  # smaller projections far away: a higher negated norm
    assert np.all(b_out[:, norm].mean(0) > b_in[:, norm].mean(0))


@pytest.mark.parametrize("seed", range(4))
def test_supcsi_is_its_equation(seed: int) -> None:
    rng = np.random.default_rng(seed)
    T, K = int(rng.integers(1, 5)), int(rng.integers(1, 4))
    logits = rng.normal(size=(T, 9, K * T)) * 3
    det = SupCSI(shifts=tuple(range(T))).fit(logits)
    assert (det.n_shifts_, det.n_classes_) == (T, K)
    np.testing.assert_allclose(det.score(logits), ref.supcsi(logits, T), rtol=1e-12)
    np.testing.assert_array_equal(det.score_outputs({"logits": logits}), det.score(logits))


def test_json_round_trip_and_a_disagreeing_document_is_refused() -> None:
    rng = np.random.default_rng(2)
    train, new = _outputs(20, rng), _outputs(5, rng)
    for det, args in ((CSI().fit_outputs(train), (new["projections"], new["logits"])),
                      (SupCSI().fit(train["logits"]), (new["logits"],))):
        back = load_json(det.to_json())
        np.testing.assert_array_equal(back.score(*args), det.score(*args))
        doc = det.to_json().replace('"n_shifts_": 4', '"n_shifts_": 3')
        with pytest.raises(ValueError, match="n_shifts_"):
            load_json(doc)


def test_bad_input_is_refused() -> None:
    rng = np.random.default_rng(3)
    train = _outputs(10, rng)
    with pytest.raises(NotFittedError):
        CSI().score(train["projections"], train["logits"])
    with pytest.raises(NotFittedError):
        SupCSI().score(train["logits"])
    with pytest.raises(ValueError, match="logits must have 4 columns on the last axis"):
        CSI().fit(train["projections"], train["logits"][:, :, :3])
    zero = train["projections"].copy()
    zero[1, 2] = 0.0
    with pytest.raises(ValueError, match="projections must be non-zero"):
        CSI().fit(zero, train["logits"])
    with pytest.raises(ValueError, match="must have shape \\(n_shifts, n, d\\)"):
        CSI().fit(train["projections"][0], train["logits"])
    with pytest.raises(ValueError, match="logits must have the rows of projections"):
        CSI().fit(train["projections"], train["logits"][:, :5])
    with pytest.raises(ValueError, match="must have 2 shifts on axis 0"):
        CSI(shifts=(0, 2)).fit(train["projections"], train["logits"])
    with pytest.raises(ValueError, match="outputs must be a dict with a 'projections' entry"):
        CSI().fit_outputs({"logits": train["logits"]})
    with pytest.raises(ValueError, match=r"logits must have K \* 4 columns"):
        SupCSI().fit(rng.normal(size=(4, 3, 6)))
    nan = train["logits"].copy()
    nan[0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="logits must be finite"):
        SupCSI().fit(nan)


@pytest.mark.parametrize("scale", [1e160, 1e-170])
def test_csi_and_the_norm_score_do_not_depend_on_the_units_of_the_projections(scale):
    # np.linalg.norm overflowed near 1e160 (NaN scores, a bank of zeros its own document
    # refused) and underflowed near 1e-170 (a "zero row" refused, cosines of -1)
    from abstain.detectors import ShiftedBaseScores

    rng = np.random.default_rng(1)
    out, test = _outputs(40, rng), _outputs(6, rng, shift=1.0)
    Z, L = out["projections"], out["logits"]
    Zt, Lt = test["projections"], test["logits"]
    ref = CSI().fit(Z, L).score(Zt, Lt)
    scaled = CSI().fit(Z * scale, L)
    np.testing.assert_allclose(scaled.score(Zt * scale, Lt), ref, rtol=1e-12)
    assert np.array_equal(load_json(scaled.to_json()).score(Zt * scale, Lt),
                          scaled.score(Zt * scale, Lt))
    norm = ShiftedBaseScores(kinds=("norm",)).fit(Z * scale, np.arange(40) % 2)
    np.testing.assert_allclose(norm.score(Zt * scale),
                               -np.linalg.norm(Zt, axis=2).T * scale, rtol=1e-12)
