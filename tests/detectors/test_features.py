"""abstain.detectors._features: ReAct, KNN, ViM and Mahalanobis against the direct
re-derivations in tests/reference/detectors_ref.py, their parameters and bad input."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from reference import detectors_ref as R

from abstain import NotFittedError, load_json
from abstain.detectors import KNN, Mahalanobis, ReAct, ViM

TOL = 1e-9
#: rtol, atol of a float32 score against the float64 reference
F32 = (1e-5, 1e-5)

try:
    import faiss  # noqa: F401

    BACKENDS = ["numpy", "faiss"]
except ImportError:  # faiss is an optional extra
    BACKENDS = ["numpy"]


# ------------------------------------------------------------- against the references


@pytest.mark.parametrize("percentile", [50.0, 90.0, 100.0])
def test_react_against_reference(percentile):
    rng = np.random.default_rng(3)
    train = np.maximum(rng.normal(0, 1, (50, 5)), 0)
    W, b = rng.normal(size=(3, 5)), rng.normal(size=3)
    test = np.maximum(rng.normal(0, 2, (20, 5)), 0)
    expected = R.react(test, train, W, b, percentile)
    det = ReAct(percentile=percentile, dtype="float64").fit(train, weight=W, bias=b)
    np.testing.assert_allclose(det.score(test), expected, rtol=1e-12, atol=TOL)
    det32 = ReAct(percentile=percentile).fit(train, weight=W, bias=b)
    assert det32.score(test).dtype == np.float64
    np.testing.assert_allclose(det32.score(test), expected, rtol=F32[0], atol=F32[1])


@pytest.mark.parametrize("normalize", [True, False])
@pytest.mark.parametrize("k", [1, 3, 10])
def test_knn_against_brute_force_with_ties(normalize, k):
    rng = np.random.default_rng(4)
    train = rng.integers(-2, 3, (25, 3)).astype(float)   # duplicates: tied distances
    test = rng.integers(-2, 3, (15, 3)).astype(float)
    train[np.all(train == 0, axis=1)] = 1.0
    test[np.all(test == 0, axis=1)] = 1.0
    expected = R.knn(test, train, k, normalize)
    det = KNN(k=k, normalize=normalize, block=4, dtype="float64").fit(train)
    np.testing.assert_allclose(det.score(test), expected, atol=1e-7)
    for backend in BACKENDS:
        # float32: |q|^2 + |t|^2 - 2 q.t loses ~1e-7 of |x|^2, i.e. ~1e-3 of a zero distance
        det32 = KNN(k=k, normalize=normalize, block=4, backend=backend).fit(train)
        np.testing.assert_allclose(det32.score(test), expected, atol=1e-3)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("normalize", [True, False])
def test_knn_float32_ranks_equal_the_exact_float64_ranks(backend, normalize):
    rng = np.random.default_rng(14)
    train, test = rng.normal(size=(300, 16)), rng.normal(size=(120, 16)) * 1.3
    exact = KNN(k=7, normalize=normalize, dtype="float64", backend="numpy").fit(train)
    fast = KNN(k=7, normalize=normalize, block=50, backend=backend).fit(train)
    np.testing.assert_array_equal(np.argsort(fast.score(test), kind="stable"),
                                  np.argsort(exact.score(test), kind="stable"))
    np.testing.assert_allclose(fast.score(test), exact.score(test), rtol=1e-5)


def test_knn_bank_size_is_a_seeded_subset():
    rng = np.random.default_rng(15)
    train, test = rng.normal(size=(200, 5)), rng.normal(size=(30, 5))
    det = KNN(k=3, bank_size=50, random_state=0, dtype="float64").fit(train)
    assert det.bank_.shape == (50, 5)
    again = KNN(k=3, bank_size=50, random_state=0, dtype="float64").fit(train)
    np.testing.assert_array_equal(det.bank_, again.bank_)
    # the bank is a subset of the (normalised) training rows, scored exactly on it
    # drawn from the rows in an order of their bytes (the same rows in another order give
    # the same bank)
    canon = np.array(sorted(range(200), key=lambda i: train[i].tobytes()))
    keep = np.sort(canon[np.random.default_rng(0).choice(200, size=50, replace=False)])
    np.testing.assert_allclose(det.score(test), R.knn(test, train[keep], 3), atol=1e-7)
    full = KNN(k=3, bank_size=500, dtype="float64").fit(train)
    assert full.bank_.shape == (200, 5)
    with pytest.raises(ValueError, match=r"k must be at most the number of bank rows \(2\)"):
        KNN(k=3, bank_size=2).fit(train)
    with pytest.raises(ValueError, match="bank_size must be an integer >= 1"):
        KNN(bank_size=0).fit(train)


@pytest.mark.parametrize(("dtype", "atol"), [("float64", 1e-12), ("float32", 1e-5)])
@pytest.mark.parametrize("backend", ["numpy", "auto"])
def test_knn_block_size_and_bank_order_do_not_matter(dtype, atol, backend):
    # in float32 the matrix product's rounding depends on the blocking and the bank's order
    rng = np.random.default_rng(5)
    train, test = rng.normal(size=(60, 4)), rng.normal(size=(33, 4))
    a = KNN(k=5, block=1, dtype=dtype, backend=backend).fit(train).score(test)
    b = KNN(k=5, block=1000, dtype=dtype, backend=backend).fit(
        train[rng.permutation(60)]).score(test)
    np.testing.assert_allclose(a, b, atol=atol)


@pytest.mark.parametrize("dim", [1, 3, 5])
def test_vim_against_reference(dim):
    rng = np.random.default_rng(6)
    train = rng.normal(size=(80, 6)) * [4, 3, 2, 1, 0.5, 0.2] + 1.0
    W, b = rng.normal(size=(4, 6)), rng.normal(size=4)
    test = rng.normal(size=(20, 6)) * 2
    expected = R.vim(test, train, W, b, dim)
    det = ViM(dim=dim, dtype="float64").fit(train, weight=W, bias=b)
    np.testing.assert_allclose(det.score(test), expected, rtol=1e-9, atol=1e-9)
    assert det.dim_ == dim and det.residual_basis_.shape == (6, 6 - dim)
    det32 = ViM(dim=dim).fit(train, weight=W, bias=b)
    np.testing.assert_allclose(det32.score(test), expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dim", [1, 3])
def test_vim_without_bias_against_reference(dim):
    """A last layer without bias puts the origin at zero: the reference's scores in both
    types."""
    rng = np.random.default_rng(16)
    train = rng.normal(size=(80, 6)) * [4, 3, 2, 1, 0.5, 0.2] + 1.0
    W = rng.normal(size=(4, 6))
    test = rng.normal(size=(20, 6)) * 2
    expected = R.vim(test, train, W, np.zeros(4), dim)
    det = ViM(dim=dim, dtype="float64").fit(train, weight=W)
    assert not det.origin_.any()
    np.testing.assert_allclose(det.score(test), expected, rtol=1e-9, atol=1e-9)
    det32 = ViM(dim=dim).fit(train.astype(np.float32), weight=W)
    np.testing.assert_allclose(det32.score(test), expected, rtol=1e-4, atol=1e-4)


def test_vim_default_dim():
    from abstain.detectors._features import _default_vim_dim

    assert [_default_vim_dim(d) for d in (2, 128, 512, 768, 2048)] == [1, 64, 256, 512, 1000]


def test_mahalanobis_against_explicit_inverse():
    rng = np.random.default_rng(7)
    y = rng.integers(0, 3, 90)
    train = rng.normal(size=(90, 4)) @ rng.normal(size=(4, 4)) + 3.0 * y[:, None]
    test = rng.normal(size=(25, 4)) * 3
    expected = R.mahalanobis(test, train, y)
    det = Mahalanobis(dtype="float64").fit(train, y)
    np.testing.assert_allclose(det.score(test), expected, rtol=1e-9)
    assert det.classes_ == [0, 1, 2]
    np.testing.assert_allclose(Mahalanobis().fit(train, y).score(test), expected, rtol=1e-4)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_mahalanobis_one_class_and_unsorted_labels_leave_the_features_as_they_were(dtype):
    """Each class's rows are centred in place in a class-ordered copy: with labels in any
    order, one class or a class of one row, the reference's scores, and the caller's
    features (already of the detector's type, so not converted) are left as they were."""
    rng = np.random.default_rng(17)
    train = (rng.normal(size=(60, 3)) * [3.0, 1.0, 0.5]).astype(dtype)
    test = rng.normal(size=(10, 3)) * 2
    for y in (np.zeros(60, dtype=int), rng.permutation(np.arange(60) % 4),
              np.r_[np.full(59, 7), 2]):
        before = train.copy()
        expected = R.mahalanobis(test, train.astype(np.float64), y)
        det = Mahalanobis(dtype=dtype).fit(train, y)
        np.testing.assert_array_equal(train, before)
        rtol = 1e-9 if dtype == "float64" else 1e-4
        np.testing.assert_allclose(det.score(test), expected, rtol=rtol)


def test_mahalanobis_singular_covariance_uses_the_pseudo_inverse():
    rng = np.random.default_rng(8)
    base = rng.normal(size=(40, 2))
    train = np.hstack([base, base[:, :1]])  # the third feature copies the first
    y = np.arange(40) % 2
    det = Mahalanobis(dtype="float64").fit(train, y)
    assert det.whitener_.shape == (3, 2)
    # along the null direction (e1 - e3) the distance does not grow
    x = det.means_[:1]
    shifted = x + np.array([[1.0, 0.0, -1.0]])
    np.testing.assert_allclose(det.score(shifted), det.score(x), atol=1e-9)


# ------------------------------------------------------------------ common behaviour


def test_clone_and_params():
    sklearn = pytest.importorskip("sklearn.base")
    det = KNN(k=7, normalize=False)
    assert sklearn.clone(det).get_params() == det.get_params()
    assert repr(ViM(dim=3)) == "ViM(dim=3, dtype='float32')"


# -------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("cls", [ReAct, KNN, ViM, Mahalanobis])
def test_feature_detectors_must_be_fitted(cls):
    with pytest.raises(NotFittedError, match="not fitted"):
        cls().score([[1.0, 2.0]])


def test_feature_detector_errors():
    F = np.abs(np.random.default_rng(12).normal(size=(10, 3)))
    W = np.ones((2, 3))
    with pytest.raises(ValueError, match="weight="):
        ReAct().fit(F)
    with pytest.raises(ValueError, match=r"weight must have shape \(n_classes, 3\)"):
        ViM(dim=1).fit(F, weight=np.ones((2, 4)))
    with pytest.raises(ValueError, match=r"^bias must be a finite array of shape \(2,\); got "
                                         r"shape \(3,\)\.$"):
        ReAct().fit(F, weight=W, bias=[1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"^bias must be finite; got 1 NaN\.$"):  # not "got (2,)"
        ViM(dim=1).fit(F, weight=W, bias=[np.nan, 0.0])
    with pytest.raises(ValueError, match="percentile"):
        ReAct(percentile=0).fit(F, weight=W)
    with pytest.raises(ValueError, match="k must be at most"):
        KNN(k=11).fit(F)
    with pytest.raises(ValueError, match="k must be an integer"):
        KNN(k=0).fit(F)
    with pytest.raises(ValueError, match="norm 0"):
        KNN(k=1).fit(np.vstack([F, np.zeros(3)]))
    with pytest.raises(ValueError, match="dim must be smaller"):
        ViM(dim=3).fit(F, weight=W)
    with pytest.raises(ValueError, match="labels y|X and labels"):
        Mahalanobis().fit(F)
    with pytest.raises(ValueError, match="y must have shape"):
        Mahalanobis().fit(F, [0, 1])
    with pytest.raises(ValueError, match="covariance is zero"):
        Mahalanobis().fit(np.ones((4, 2)), [0, 0, 1, 1])
    det = KNN(k=2).fit(F)
    with pytest.raises(ValueError, match=r"features must have 3 column\(s\), as in fit; got "):
        det.score(np.ones((2, 4)))
    with pytest.raises(ValueError, match="needs the ID training features"):
        KNN().fit()
    for cls in (ReAct, KNN, ViM, Mahalanobis):
        with pytest.raises(ValueError, match="dtype must be one of 'float32', 'float64'; got"):
            cls(dtype="float16").fit(F, [0, 1] * 5, weight=W)
    with pytest.raises(ValueError, match="backend must be one of"):
        KNN(backend="annoy").fit(F)
    with pytest.raises(ValueError, match="backend='faiss' needs dtype='float32'"):
        KNN(k=2, backend="faiss", dtype="float64").fit(F).score(F)
    # finite but beyond float32: said so (it read "must be finite; got 1 infinite value")
    for call in (lambda: KNN(k=2).fit(F).score([[1e39, 0.0, 0.0]]),
                 lambda: KNN(k=2).fit(np.vstack([F, [[1e39, 0.0, 0.0]]])),
                 lambda: ReAct().fit(F, weight=np.ones((2, 3)), bias=np.zeros(2)).score(
                     [[1e39, 0.0, 0.0]])):
        with pytest.raises(ValueError, match=r"^features holds values beyond the float32 range "
                                             r"\(up to 1e\+39\); scale them, or use "
                                             r"dtype='float64'\.$"):
            call()
    with pytest.raises(ValueError, match="features must be finite"):
        KNN(k=2).fit(F).score([[np.inf, 0.0, 0.0]])


# ------------------------------------------------------------- loaded documents
def _fitted_document(det):
    rng = np.random.default_rng(5)
    F = rng.normal(size=(40, 4)) + 1.0
    W, b = rng.normal(size=(3, 4)), np.abs(rng.normal(size=3))
    return json.loads(det.fit(F, np.arange(40) % 3, weight=W, bias=b).to_json())


def _load_with(det, change):
    doc = _fitted_document(det)
    change(doc)
    return load_json(json.dumps(doc))


@pytest.mark.parametrize("k", [0, 41, 2**70])
def test_a_loaded_knn_k_is_within_the_bank(k):
    def set_k(doc):
        doc["params"]["k"] = k

    match = (r"^params\.k must be an integer >= 1; got 0\.$" if k == 0 else
             rf"^params\.k must be an integer in \[1, 40\] \(fitted\.bank_ has 40 rows\); "
             rf"got {k}\.$")
    with pytest.raises(ValueError, match=match):
        _load_with(KNN(k=5), set_k)


@pytest.mark.parametrize("dtype, threshold", [("float64", -1e308), ("float64", 1e308),
                                              ("float32", -1e38), ("float32", 1e300)])
def test_a_loaded_react_threshold_keeps_the_clipped_logits_finite(dtype, threshold):
    def set_threshold(doc):
        doc["fitted"]["threshold_"] = threshold

    with pytest.raises(ValueError, match=r"^fitted\.threshold_ must keep the logits of clipped "
                       rf"features within the {dtype} range of dtype: \|threshold_\| \* sum_j "
                       r"\|weight_\[k, j\]\| \+ \|bias_\[k\]\| <= .*; got threshold_ = "):
        _load_with(ReAct(dtype=dtype), set_threshold)
    # a large threshold that keeps them finite loads, and scores are finite
    det = _load_with(ReAct(dtype=dtype), lambda doc: doc["fitted"].update(threshold_=-1e30))
    assert np.isfinite(det.score(np.ones((3, 4)))).all()


@pytest.mark.parametrize("alpha", [1e308, -1e308, 0.0, -1.0, 2.0**513])
def test_a_loaded_vim_alpha_is_positive_and_at_most_2_to_the_512(alpha):
    with pytest.raises(ValueError, match=r"^fitted\.alpha_ must be a finite number in "
                       rf"\(0, 1\.34078e\+154\]; got {re.escape(repr(alpha))}\.$"):
        _load_with(ViM(dim=2), lambda doc: doc["fitted"].update(alpha_=alpha))
    det = _load_with(ViM(dim=2), lambda doc: doc["fitted"].update(alpha_=2.0**512))
    assert np.isfinite(det.score(np.ones((3, 4)))).all()


def test_vim_refuses_training_data_with_a_non_positive_alpha():
    rng = np.random.default_rng(0)
    F = rng.normal(size=(50, 4))
    with pytest.raises(ValueError, match=r"^ViM needs a positive mean max-logit on the training "
                       r"features .*; got alpha = -\d"):
        ViM(dim=2).fit(F, weight=rng.normal(size=(3, 4)), bias=np.full(3, -100.0))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gram_matrix_is_symmetric_and_that_of_float64_sums(dtype) -> None:
    """NumPy's product in the features' type, mirrored: exactly symmetric, and within the
    rounding of float32 (or float64) sums of the float64 Gram matrix."""
    from abstain.detectors import _features

    rng = np.random.default_rng(3)
    C = rng.normal(size=(700, 13)).astype(dtype)
    G = _features._gram(C)
    assert G.dtype == np.float64 and np.array_equal(G, G.T)
    C64 = C.astype(np.float64)
    tol = 1e-4 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(G, C64.T @ C64, rtol=tol, atol=tol * 700)
    _features._gram(np.asfortranarray(C))  # any memory order


@pytest.mark.parametrize("faster", ["numpy", "faiss"])
def test_knn_auto_picks_the_backend_measured_faster(faster, monkeypatch) -> None:
    """backend="auto" with faiss importable runs whichever backend searched the first block
    faster (a stand-in faiss, slowed or not, here), once per bank shape; both are exact."""
    import sys
    import time
    import types

    from abstain.detectors import _features

    class IndexFlatL2:
        def __init__(self, d):
            self.bank = np.empty((0, d), dtype=np.float32)

        def add(self, bank):
            self.bank = bank

        def search(self, Q, k):
            if faster == "numpy":
                time.sleep(0.05)
            d2 = ((Q[:, None, :] - self.bank[None, :, :]) ** 2).sum(axis=2)
            return np.sort(d2, axis=1)[:, :k], None

    monkeypatch.setitem(sys.modules, "faiss", types.SimpleNamespace(IndexFlatL2=IndexFlatL2))
    monkeypatch.setattr(_features, "_KNN_BACKEND", {})
    if faster == "faiss":  # the NumPy search slowed instead
        numpy_search = _features._kth_numpy

        def slow(*args):
            time.sleep(0.05)
            return numpy_search(*args)

        monkeypatch.setitem(_features._KNN_SEARCH, "numpy", slow)
    rng = np.random.default_rng(4)
    train, test = rng.normal(size=(60, 5)), rng.normal(size=(30, 5))
    det = KNN(k=3, normalize=False).fit(train)
    got = det.score(test)
    assert _features._KNN_BACKEND == {(60, 5, 3, 1024): faster}
    np.testing.assert_allclose(got, R.knn(test, train, 3, normalize=False), atol=1e-5)
    assert KNN(k=3, normalize=False, dtype="float64").fit(train).score(test).shape == (30,)
    assert len(_features._KNN_BACKEND) == 1  # float64 never probes


def test_float64_vim_keeps_a_small_spread_far_from_the_origin():
    # the outer product of the offset swamped the spread's eigenvalues in the sum: scores
    # moved by 0.7 % with the row order, and a spread of 1e-8 was refused as no residual
    mp = pytest.importorskip("mpmath")
    rng = np.random.default_rng(1)
    n, d, K, D = 40, 6, 3, 3
    F0 = rng.normal(size=(n, d))
    W, b = np.abs(rng.normal(size=(K, d))), np.abs(rng.normal(size=K))
    F, Q = 1 + 1e-6 * F0, 1 + 1e-6 * rng.normal(size=(8, d))
    s = ViM(dim=D, dtype="float64").fit(F, weight=W, bias=b).score(Q)
    for _ in range(3):
        p = rng.permutation(n)
        other = ViM(dim=D, dtype="float64").fit(F[p], weight=W, bias=b).score(Q)
        np.testing.assert_allclose(other, s, rtol=0, atol=1e-7 * np.max(np.abs(s)))
    # the paper's definition in 50 digits (the uncentred covariance of F - u)
    mp.mp.dps = 50
    Wm, bm = mp.matrix(W.tolist()), mp.matrix(b.tolist())
    u = -(Wm.T * mp.inverse(Wm * Wm.T) * bm)
    X = mp.matrix([[mp.mpf(float(v)) - u[j] for j, v in enumerate(r)] for r in F])
    ev, V = mp.eigsy(X.T * X / n)
    idx = sorted(range(d), key=lambda i: -ev[i])[D:]
    R = mp.matrix([[V[j, i] for i in idx] for j in range(d)])

    def norms(rows):
        return [mp.norm(mp.matrix([[mp.mpf(float(v)) - u[j] for j, v in enumerate(r)]]) * R)
                for r in rows]

    def logits(rows):
        return [[sum(mp.mpf(float(r[j])) * Wm[k, j] for j in range(d)) + bm[k]
                 for k in range(K)] for r in rows]

    alpha = (sum(max(z) for z in logits(F)) / n) / (sum(norms(F)) / n)
    ref = [float(alpha * v - mp.log(sum(mp.e ** x for x in z)))
           for v, z in zip(norms(Q), logits(Q), strict=True)]
    np.testing.assert_allclose(s, ref, rtol=0, atol=1e-7 * np.max(np.abs(ref)))
    ViM(dim=D, dtype="float64").fit(1 + 1e-8 * F0, weight=W, bias=b)  # full rank: a residual


def test_knn_bank_of_the_same_rows_in_another_order_is_the_same():
    # the subset was drawn by position: a permutation of the training rows changed it
    rng = np.random.default_rng(0)
    train, test = rng.normal(size=(100, 4)), rng.normal(size=(5, 4))
    p = rng.permutation(100)
    a = KNN(k=3, bank_size=20, random_state=0).fit(train).score(test)
    b = KNN(k=3, bank_size=20, random_state=0).fit(train[p]).score(test)
    np.testing.assert_array_equal(a, b)


def test_mahalanobis_documents_keep_only_eigenvalues_their_rcond_keeps():
    # a document whose params.rcond was raised to 0.5 loaded with the three columns a fit
    # at 0.5 drops to two (scores 26.75 against 2.997)
    import json

    from abstain import load_json

    rng = np.random.default_rng(0)
    F = rng.normal(size=(200, 3)) * [1.0, 1.0, 0.05]
    y = np.repeat([0, 1], 100)
    doc = json.loads(Mahalanobis().fit(F, y).to_json())
    doc["params"]["rcond"] = 0.5
    with pytest.raises(ValueError, match=r"fitted\.whitener_ must keep only eigenvalues above "
                                         r"params\.rcond = 0\.5"):
        load_json(json.dumps(doc))
    for dtype in ("float32", "float64"):  # fits load, whatever their rcond
        for rcond in (0.0, 1e-10, 0.01, 0.3, 0.9):
            scale = rng.uniform(0.01, 1.0, 4)
            det = Mahalanobis(rcond=rcond, dtype=dtype).fit(rng.normal(size=(80, 4)) * scale,
                                                             np.arange(80) % 3)
            load_json(det.to_json())


def test_a_vim_dimension_at_or_beyond_the_features_is_refused_by_name():
    # the shape check ran first: "residual_basis_ must have shape (6, -2)"
    rng = np.random.default_rng(6)
    train = rng.normal(size=(80, 6)) * [4, 3, 2, 1, 0.5, 0.2] + 1.0
    W, b = rng.normal(size=(4, 6)), rng.normal(size=4)
    doc = json.loads(ViM(dim=2).fit(train, weight=W, bias=b).to_json())
    for bad in (6, 8, 10**40):
        doc["fitted"]["dim_"] = bad
        with pytest.raises(ValueError, match=r"^fitted\.dim_ must be smaller than "
                           r"fitted\.n_features_in_ = 6; got \d+\.$"):
            load_json(json.dumps(doc))


def test_vim_far_from_the_origin_keeps_its_residual_in_either_dtype():
    # the stacked solve ran for float64 only, and against the spread's mean eigenvalue: one
    # large direction hid small ones (scores 6e-4 relative apart under a row permutation),
    # float32 at a mean of 1e6 was 2.7e-4 off float64, and one of spread 0.01 was refused
    rng = np.random.default_rng(11)
    n, d = 300, 6
    Q = np.linalg.qr(rng.normal(size=(d, d)))[0]
    sd = np.sqrt([1e8, 1e-2, 1e-2, 1e-3, 1e-3, 1e-3])
    mean = 3e5 * (0.8 * Q[:, 0] + 0.6 * Q[:, 1])
    F = mean + (rng.normal(size=(n, d)) * sd) @ Q.T
    T = mean + (rng.normal(size=(8, d)) * sd * 3) @ Q.T
    W, b = rng.normal(size=(3, d)), np.zeros(3)
    a = ViM(3, "float64").fit(F, weight=W, bias=b).score(T)
    p = ViM(3, "float64").fit(F[rng.permutation(n)], weight=W, bias=b).score(T)
    np.testing.assert_allclose(p, a, rtol=1e-8)
    X = 1e6 + rng.normal(size=(500, 12)) * 0.01
    Wx, bx = rng.normal(size=(4, 12)), rng.normal(size=4)
    s64 = ViM(8, "float64").fit(X, weight=Wx, bias=bx).score(X[:50])
    s32 = ViM(8, "float32").fit(X, weight=Wx, bias=bx).score(X[:50])
    assert np.max(np.abs(s32 - s64)) <= 1e-5 * np.max(np.abs(s64))


@pytest.mark.parametrize("dtype, scale", [("float64", 1e-150), ("float64", 1e-170),
                                          ("float32", 1e-20), ("float32", 1e-23),
                                          ("float32", 1e-50)])
def test_features_whose_squares_leave_the_float_range_are_refused(dtype, scale):
    # distances and covariances of such features were round-off: KNN 2e-4 off at 1e-160 and
    # 0 at 1e-165, Mahalanobis "the covariance is zero (every class has identical
    # features)", ViM in float32 2.4 relative off at 1e-23
    rng = np.random.default_rng(0)
    F = (rng.normal(size=(200, 4)) + 1) * scale
    y = rng.integers(0, 3, 200)
    W, b = rng.normal(size=(3, 4)) / scale, rng.normal(size=3)
    beside = np.column_stack([np.ones(200), F])  # a constant column besides
    for name, fit in (("KNN", lambda: KNN(k=3, normalize=False, dtype=dtype).fit(F)),
                      ("KNN", lambda: KNN(k=3, normalize=False, dtype=dtype).fit(beside)),
                      ("Mahalanobis", lambda: Mahalanobis(dtype=dtype).fit(F, y)),
                      ("ViM", lambda: ViM(dim=2, dtype=dtype).fit(F, weight=W, bias=b))):
        with pytest.raises(ValueError, match=rf"^{name}: the features vary by at most .* so "
                                             rf"their squares lose digits in {dtype}; "
                                             r"multiply them by a constant"):
            fit()
    # features that are one value in the dtype are accepted: equal rows (whose float64
    # mean is not exactly their value), rows that float32 rounds to one value
    rows = np.full((200, 2), 0.5)
    rows[0, 0] = np.nextafter(0.5, 1.0)
    for same in (np.full((6, 4), 0.1), np.full((50, 3), 0.7), rows):
        KNN(k=1, normalize=False, dtype=dtype).fit(same)
        KNN(k=1, normalize=False, dtype=dtype, bank_size=5, random_state=0).fit(same)
    # at a spread the squares keep, the scores are those of the features scaled up
    F = rng.normal(size=(200, 4)) + 1
    Q = rng.normal(size=(5, 4))
    small = 1e-120 if dtype == "float64" else 1e-12
    np.testing.assert_allclose(
        Mahalanobis(dtype=dtype).fit(F * small, y).score(Q * small),
        Mahalanobis(dtype=dtype).fit(F, y).score(Q), rtol=1e-12 if dtype == "float64" else 1e-5)
