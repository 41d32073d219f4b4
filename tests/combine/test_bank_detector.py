"""abstain.combine._bank: BankDetector is the bank, z-values and guarantee fitted on the
stated splits; its false-alarm rate stays below alpha with probability 1 - delta."""

from __future__ import annotations

import numpy as np
import pytest
from reference.proxy_ref import content_splits

from abstain import NotFittedError, load_json
from abstain.combine import BankDetector, GuaranteedDetector, ScoreCombiner
from abstain.combine._select import canonical_rows
from abstain.detectors import KNN, MSP, DetectorBank, Energy, LeaveClassesOut, restrict_outputs


def _outputs(n, rng, scale=1.0):
    F = rng.normal(size=(n, 4)) * scale
    return {"features": F, "logits": F[:, :3] * 2.0}


def test_equals_the_three_steps_done_by_hand():
    rng = np.random.default_rng(0)
    train, cal, new = _outputs(100, rng), _outputs(300, rng), _outputs(50, rng, 2.0)
    bank = DetectorBank([MSP(), KNN(k=3, normalize=False)])
    det = BankDetector(bank, method="fisher", alpha=0.1, delta=0.1, z_fraction=0.4,
                       random_state=3).fit(train, calibration_outputs=cal)
    fitted = DetectorBank([MSP(), KNN(k=3, normalize=False)]).fit(train)
    S = fitted.score(cal)
    order = canonical_rows(S)[np.random.default_rng(3).permutation(300)]
    comb = ScoreCombiner(method="fisher").fit(S[order[:120]])
    guar = GuaranteedDetector(alpha=0.1, delta=0.1).fit(comb.score(S[order[120:]]))
    assert (det.n_z_, det.n_calibration_) == (120, 180)
    assert det.guarantee_.threshold_ == guar.threshold_
    np.testing.assert_array_equal(det.score(new), comb.score(fitted.score(new)))
    np.testing.assert_array_equal(det.accept(new), guar.accept(comb.score(fitted.score(new))))
    np.testing.assert_array_equal(det.base_scores(new), fitted.score(new))
    loaded = load_json(det.to_json())
    np.testing.assert_array_equal(loaded.accept(new), det.accept(new))
    assert not hasattr(bank, "detectors_")  # the given bank is left unfitted


def test_false_alarm_rate_at_most_alpha_with_probability_one_minus_delta():
    # Inliers only: each trial draws a fresh calibration set, the FAR is measured on a large
    # fresh inlier sample. Pr(FAR > alpha) must be <= delta up to the trials' noise.
    alpha, delta, trials = 0.1, 0.2, 100
    rng = np.random.default_rng(1)
    train = _outputs(200, rng)
    test = _outputs(10000, rng)
    bank = DetectorBank([MSP(), Energy(), KNN(k=5, normalize=False)])
    S_test = None  # the bank is fitted on the same train rows in every trial
    over = 0
    for t in range(trials):
        det = BankDetector(bank, method="glrt", alpha=alpha, delta=delta, random_state=t).fit(
            train, calibration_outputs=_outputs(160, rng))
        if S_test is None:
            S_test = det.base_scores(test)
            np.testing.assert_array_equal(det.guarantee_.accept(det.combiner_.score(S_test)),
                                          det.accept(test))
        far = 1.0 - det.guarantee_.accept(det.combiner_.score(S_test)).mean()
        over += float(far) > alpha
    # binomial(100, p <= 0.2): mean <= 20, sd 4; 32 is 3 sd above
    assert over <= delta * trials + 3 * np.sqrt(trials * delta * (1 - delta))


def test_bad_input():
    rng = np.random.default_rng(2)
    train, cal = _outputs(50, rng), _outputs(40, rng)
    bank = DetectorBank([MSP()])
    with pytest.raises(NotFittedError, match="not fitted"):
        BankDetector(bank).accept(cal)
    with pytest.raises(ValueError, match="needs calibration_outputs"):
        BankDetector(bank).fit(train)
    with pytest.raises(ValueError, match="bank must be a DetectorBank"):
        BankDetector().fit(train, calibration_outputs=cal)
    with pytest.raises(ValueError, match="^bank must be a DetectorBank .*; got MSP"):
        BankDetector(MSP(), method="glrt").fit(train, calibration_outputs=cal)
    with pytest.raises(ValueError, match=r"calibration_outputs must have enough rows .* 45 for "
                                         r"FAR <= alpha=0.05 .* got 40 rows, split 20 \+ 20"):
        BankDetector(bank, method="glrt").fit(train, calibration_outputs=cal)
    # auto halves the z-value rows: the smaller half (>= 2) fits the z-values, the larger
    # (>= 4) are proxy inliers, so 6 rows are too few and 7 the least
    with pytest.raises(ValueError, match=r"at least 7 for the z-values .* split 6 \+ 34"):
        BankDetector(bank, alpha=0.2, delta=0.2, z_fraction=0.15).fit(
            train, calibration_outputs=cal, outlier_outputs=cal)
    BankDetector(bank, alpha=0.2, delta=0.2, z_fraction=0.175, n_bootstrap=20).fit(
        train, calibration_outputs=cal, outlier_outputs=cal)
    # proxy outliers too few: named as passed, not as an inner proxy task
    with pytest.raises(ValueError, match=r"^outlier_outputs\[1\] must hold at least 4 rows "
                                         r"\(half choose, half test\); got 3\.$"):
        BankDetector(bank, alpha=0.2, delta=0.2).fit(
            train, calibration_outputs=cal, outlier_outputs=[cal, _outputs(3, rng)])
    # one row of z-values: the same message, not that of the inner EmpiricalZ (S_train)
    with pytest.raises(ValueError, match=r"^calibration_outputs must have enough rows for both "
                                         r"parts: at least 2 for the z-values .* split 1 \+ 39"):
        BankDetector(bank, method="glrt", alpha=0.2, delta=0.2, z_fraction=0.02).fit(
            train, calibration_outputs=cal)
    with pytest.raises(ValueError, match="method='auto' chooses what to combine on proxy "
                                         "outliers: pass y"):
        BankDetector(bank).fit(train, calibration_outputs=cal)
    with pytest.raises(ValueError, match="outlier_outputs is used only by method='auto'"):
        BankDetector(bank, method="fisher").fit(train, calibration_outputs=cal,
                                                outlier_outputs=cal)
    with pytest.raises(ValueError, match="y must hold at least 3 classes"):
        BankDetector(bank, alpha=0.2, delta=0.2).fit(
            train, np.arange(50) % 2, calibration_outputs=cal)
    with pytest.raises(ValueError, match=r"z_fraction must be in \(0, 1\)"):
        BankDetector(bank, z_fraction=1.0).fit(train, calibration_outputs=cal)
    with pytest.raises(ValueError, match="method must be one of"):
        BankDetector(bank, method="vote").fit(train, calibration_outputs=cal)


def test_a_document_whose_parts_disagree_is_refused():
    import json

    rng = np.random.default_rng(5)
    det = BankDetector(DetectorBank([MSP()]), method="glrt", alpha=0.2, delta=0.2,
                       random_state=0).fit(_outputs(30, rng), calibration_outputs=_outputs(60, rng))
    doc = json.loads(det.to_json())
    doc["params"]["method"] = "fisher"
    with pytest.raises(ValueError, match="fitted.combiner_ must use params.method 'fisher'"):
        load_json(json.dumps(doc))
    doc = json.loads(det.to_json())
    doc["fitted"]["n_calibration_"] = 7
    with pytest.raises(ValueError, match="fitted.guarantee_ must be calibrated on fitted"):
        load_json(json.dumps(doc))
    for section, edits, message in (
            ("params", {"alpha": 0.001, "delta": 0.5}, r"params\.alpha must be that of the "
                                                      r"fitted GuaranteedDetector \(0\.2\)"),
            ("params", {"epsilon": 50.0}, r"params\.epsilon must be that of the fitted "
                                          r"ScoreCombiner \(None\)"),
            ("fitted", {"n_z_": 3}, r"fitted\.n_z_ must be the rows of the combiner's z-values "
                                    r"\(30\)")):
        doc = json.loads(det.to_json())
        doc[section].update(edits)
        with pytest.raises(ValueError, match="^" + message):
            load_json(json.dumps(doc))
    # parts that read the bank's scores the other way round: every decision changes
    for paths in ([("guarantee_",)], [("combiner_",), ("combiner_", "fitted", "empirical_z_")]):
        doc = json.loads(det.to_json())
        for path in paths:
            node = doc["fitted"]
            for key in path:
                node = node[key]
            node["params"]["higher_is_inlier"] = True
        with pytest.raises(ValueError, match=r"must take the bank's scores as they are "
                                             r"\(higher_is_inlier false\); got true\.$"):
            load_json(json.dumps(doc))


@pytest.mark.parametrize("random_state", [0, None, np.random.SeedSequence(5),
                                          np.random.default_rng(3)])
def test_a_bank_that_params_bank_does_not_give_is_refused(random_state):
    import json

    rng = np.random.default_rng(6)
    bank = DetectorBank([MSP(), KNN(k=5, normalize=False)])
    det = BankDetector(bank, method="glrt", alpha=0.2, delta=0.2,
                       random_state=random_state).fit(_outputs(60, rng),
                                                      calibration_outputs=_outputs(60, rng))
    test = _outputs(20, rng)
    assert np.array_equal(load_json(det.to_json()).score(test), det.score(test))
    doc = json.loads(det.to_json())
    doc["params"]["bank"]["params"]["detectors"][1]["params"]["k"] = 50  # fitted with k=5
    with pytest.raises(ValueError, match=r"^fitted\.bank_\.detectors\[1\] must have the "
                                         r"parameters of params\.bank\.detectors\[1\] .*; k is "
                                         r"5, not 50\.$"):
        load_json(json.dumps(doc))
    doc = json.loads(det.to_json())
    doc["params"]["bank"]["params"]["names"] = ["a", "b"]
    with pytest.raises(ValueError, match=r"^fitted\.bank_ must be params\.bank fitted"):
        load_json(json.dumps(doc))


def test_a_seed_sequence_seeds_the_bank_as_its_integer_does():
    rng = np.random.default_rng(7)
    train, cal = _outputs(60, rng), _outputs(60, rng)
    bank = DetectorBank([MSP(), KNN(k=5, normalize=False)])
    fitted = [BankDetector(bank, method="glrt", alpha=0.2, delta=0.2, random_state=rs).fit(
        train, calibration_outputs=cal).bank_ for rs in (np.random.SeedSequence(5), 5)]
    seeds = [b.get_params(deep=False)["detectors"][1].random_state for b in fitted]
    assert seeds[0] is not None and seeds[0] == seeds[1]


@pytest.mark.parametrize(("edits", "message"), [
    ({"params": {"alpha": 0.001}}, r"fitted\.n_calibration_ = 1000 is below the 2302 rows"),
    ({"fitted": {"rank_": 500, "level_": 0.9}}, r"fitted\.rank_, level_ and achieved_alpha_ "
                                                 r"must be those of far_guarantee\(1000"),
    ({"fitted": {"achieved_alpha_": 0.01}}, r"fitted\.rank_, level_ and achieved_alpha_"),
])
def test_a_guarantee_that_its_parameters_do_not_give_is_refused(edits, message):
    import json

    det = GuaranteedDetector(alpha=0.05, delta=0.1).fit(np.random.default_rng(0).normal(
        size=1000))
    assert load_json(det.to_json()).rank_ == 41
    doc = json.loads(det.to_json())
    for section, values in edits.items():
        doc[section].update(values)
    with pytest.raises(ValueError, match="^" + message):
        load_json(json.dumps(doc))


def _blobs(n, rng, classes=(0, 1, 2, 3), shift=0.0):
    """Features of Gaussian classes (centres 3 apart on the axes of 6 dimensions) and the
    logits of their nearest-centre classifier."""
    y = rng.choice(np.asarray(classes), n)
    centres = 3.0 * np.eye(6)[:5]
    F = centres[y] + rng.normal(size=(n, 6)) + shift
    return {"features": F, "logits": -((F[:, None, :] - centres) ** 2).sum(-1) / 2}, y


def test_auto_with_selection_in_the_loop_keeps_the_guarantee():
    """method="auto" chooses on held-out classes of the training rows (or on outliers given),
    then calibrates on rows the choice never saw: Pr(FAR > alpha) <= delta still holds."""
    alpha, delta, trials = 0.1, 0.2, 60
    rng = np.random.default_rng(4)
    train, y = _blobs(400, rng)
    test, _ = _blobs(10000, rng)
    bank = DetectorBank([MSP(), Energy(), KNN(k=5, normalize=False)])
    over, chosen = 0, set()
    for t in range(trials):
        cal, _ = _blobs(200, rng)
        kw = {} if t % 2 else {"outlier_outputs": _blobs(100, rng, (4,))[0]}
        det = BankDetector(bank, alpha=alpha, delta=delta, n_bootstrap=100,
                           random_state=t).fit(train, y, cal, **kw)
        sel = det.combiner_.selection_
        chosen.add((sel["method"], tuple(sel["columns"])))
        far = 1.0 - det.accept(test).mean()
        over += float(far) > alpha
    assert over <= delta * trials + 3 * np.sqrt(trials * delta * (1 - delta))
    assert len(chosen) >= 1


def test_auto_held_out_classes_equal_the_splits_done_by_hand():
    rng = np.random.default_rng(6)
    train, y = _blobs(300, rng)
    cal, _ = _blobs(200, rng)
    bank = DetectorBank([MSP(), KNN(k=5, normalize=False)])
    det = BankDetector(bank, alpha=0.2, delta=0.2, n_held_out=2, n_proxy_splits=1,
                       n_bootstrap=50, random_state=0).fit(train, y, cal)
    sel = det.combiner_.selection_
    assert sel["n_tasks"] == 1
    # by hand: the same generator, drawn in the same order
    gen = np.random.default_rng(0)
    S = DetectorBank([MSP(), KNN(k=5, normalize=False)]).fit(train, y).score(cal)
    order = canonical_rows(S)[gen.permutation(200)]
    split = content_splits(LeaveClassesOut(2, n_splits=1, random_state=gen), train, y)[0]
    fit_out, w, b = restrict_outputs(train, split.fit, split.kept)
    part = DetectorBank([MSP(), KNN(k=5, normalize=False)]).fit(fit_out, y[split.fit])
    S_in = part.score(restrict_outputs(train, split.inliers, split.kept)[0])
    S_in = S_in[canonical_rows(S_in)[gen.permutation(split.inliers.size)]]
    S_out = part.score(restrict_outputs(train, split.outliers, split.kept)[0])
    h = S_in.shape[0] // 2
    comb = ScoreCombiner(n_bootstrap=50)
    record = comb.choose([(S_in[:h], S_in[h:], S_out)], gen)
    assert record == sel
    comb.fit_chosen(S[order[:100]], record)
    new, _ = _blobs(50, rng, shift=1.0)
    np.testing.assert_array_equal(det.score(new), comb.score(det.base_scores(new)))
    assert load_json(det.to_json()).combiner_.selection_ == sel


def test_held_out_classes_and_outliers_given_weigh_half_each():
    """With ``y`` and ``outlier_outputs``, ``auto`` chooses on both kinds of proxy: the
    held-out classes' splits and the outliers' task, each kind half of the weight, and
    tests a combination on each kind apart."""
    rng = np.random.default_rng(8)
    train, y = _blobs(300, rng)
    cal, _ = _blobs(200, rng)
    far, _ = _blobs(80, rng, shift=4.0)
    bank = DetectorBank([MSP(), KNN(k=5, normalize=False)])
    det = BankDetector(bank, alpha=0.2, delta=0.2, n_proxy_splits=3, n_bootstrap=50,
                       random_state=0).fit(train, y, cal, outlier_outputs=far)
    assert det.combiner_.selection_["n_tasks"] == 4
    # by hand: the class tasks, then the outliers' task, the same generator in that order
    gen = np.random.default_rng(0)
    S = DetectorBank([MSP(), KNN(k=5, normalize=False)]).fit(train, y).score(cal)
    order = canonical_rows(S)[gen.permutation(200)]
    tasks = det._class_tasks(train, y, None, None, gen)
    S_z = S[order[:100]]
    fitted = DetectorBank([MSP(), KNN(k=5, normalize=False)]).fit(train, y)
    tasks.append((S_z[:50], S_z[50:], fitted.score(far)))
    record = ScoreCombiner(n_bootstrap=50).choose(tasks, gen, weights=[1 / 6] * 3 + [0.5],
                                                  kinds=["classes"] * 3 + ["outliers"])
    assert record == det.combiner_.selection_
    # the test runs on each kind apart: one win fraction per kind, the least decides
    each = record["kind_win_fractions"]
    assert len(each) == 2 and record["win_fraction"] == min(each)


def test_a_list_of_outlier_outputs_gives_one_kind_each():
    """A list of ``outlier_outputs`` (for images: rotations and shuffled pixels) gives one
    kind per entry, scored against the same halves of the z-value rows; every kind, the
    held-out classes included, weighs the same and must show the win."""
    rng = np.random.default_rng(8)
    train, y = _blobs(300, rng)
    cal, _ = _blobs(200, rng)
    far, _ = _blobs(80, rng, shift=4.0)
    odd, _ = _blobs(60, rng, shift=-3.0)
    kw = {"alpha": 0.2, "delta": 0.2, "n_proxy_splits": 3, "n_bootstrap": 50,
          "random_state": 0}
    bank = DetectorBank([MSP(), KNN(k=5, normalize=False)])
    det = BankDetector(bank, **kw).fit(train, y, cal, outlier_outputs=[far, odd])
    sel = det.combiner_.selection_
    assert sel["n_tasks"] == 5
    assert len(sel["kind_win_fractions"]) == 3 and sel["win_fraction"] == min(
        sel["kind_win_fractions"])
    # by hand: the class tasks, then one task per kind given, in order
    gen = np.random.default_rng(0)
    S = DetectorBank([MSP(), KNN(k=5, normalize=False)]).fit(train, y).score(cal)
    order = canonical_rows(S)[gen.permutation(200)]
    tasks = det._class_tasks(train, y, None, None, gen)
    S_z = S[order[:100]]
    tasks += [(S_z[:50], S_z[50:], det.bank_.score(o)) for o in (far, odd)]
    record = ScoreCombiner(n_bootstrap=50).choose(tasks, gen, weights=[1 / 9] * 3 + [1 / 3] * 2,
                                                  kinds=["c"] * 3 + ["far", "odd"])
    assert record == sel
    # a tuple is a list of kinds too; one entry is the same as the outputs alone
    assert BankDetector(bank, **kw).fit(train, y, cal, outlier_outputs=(far, odd)
                                        ).combiner_.selection_ == sel
    one = BankDetector(bank, **kw).fit(train, y, cal, outlier_outputs=[far]).combiner_
    assert one.selection_ == BankDetector(bank, **kw).fit(
        train, y, cal, outlier_outputs=far).combiner_.selection_
    # without labels: the kinds given alone, half each
    alone = BankDetector(bank, **kw).fit(train, calibration_outputs=cal,
                                         outlier_outputs=[far, odd]).combiner_.selection_
    gen = np.random.default_rng(0)
    S = DetectorBank([MSP(), KNN(k=5, normalize=False)]).fit(train).score(cal)
    S_z = S[canonical_rows(S)[gen.permutation(200)][:100]]
    tasks = [(S_z[:50], S_z[50:], det.bank_.score(o)) for o in (far, odd)]
    assert alone == ScoreCombiner(n_bootstrap=50).choose(tasks, gen, weights=[0.5, 0.5],
                                                         kinds=["far", "odd"])
    # a named tuple of outputs (fields, as abstain.torch.extract's) is one kind, not two
    from collections import namedtuple
    Outputs = namedtuple("Outputs", ["features", "logits"])
    assert BankDetector(bank, **kw).fit(train, y, cal, outlier_outputs=Outputs(**far)
                                        ).combiner_.selection_ == one.selection_
    with pytest.raises(ValueError, match="outlier_outputs must hold at least one outputs"):
        BankDetector(bank, **kw).fit(train, y, cal, outlier_outputs=[])


def test_per_task_tests_every_proxy_task_apart():
    """``per_task=True``: every held-out split and the outliers' task is a kind of its own;
    the choice is the same, and each task's win fraction is its kind's."""
    rng = np.random.default_rng(8)
    train, y = _blobs(300, rng)
    cal, _ = _blobs(200, rng)
    far, _ = _blobs(80, rng, shift=4.0)
    kw = {"alpha": 0.2, "delta": 0.2, "n_proxy_splits": 3, "n_bootstrap": 50,
          "random_state": 0}
    bank = DetectorBank([MSP(), KNN(k=5, normalize=False)])
    det = BankDetector(bank, per_task=True, **kw).fit(train, y, cal, outlier_outputs=far)
    apart = det.combiner_.selection_
    both = BankDetector(bank, **kw).fit(train, y, cal, outlier_outputs=far).combiner_.selection_
    assert apart["candidates"] == both["candidates"] and apart["single"] == both["single"]
    assert apart["kind_win_fractions"] == apart["task_win_fractions"]
    assert len(apart["task_win_fractions"]) == 4
    assert apart["win_fraction"] == min(apart["task_win_fractions"])
    assert (apart["method"] == "single") == (apart["win_fraction"] < 0.9)
    # by hand: the same tasks and generator, one kind per task
    gen = np.random.default_rng(0)
    S = DetectorBank([MSP(), KNN(k=5, normalize=False)]).fit(train, y).score(cal)
    order = canonical_rows(S)[gen.permutation(200)]
    tasks = det._class_tasks(train, y, None, None, gen)
    S_z = S[order[:100]]
    tasks.append((S_z[:50], S_z[50:], det.bank_.score(far)))
    record = ScoreCombiner(n_bootstrap=50).choose(tasks, gen, weights=[1 / 6] * 3 + [0.5],
                                                  kinds=[0, 1, 2, 3])
    assert record == apart
    # held-out classes alone: one kind per split too
    alone = BankDetector(bank, per_task=True, **kw).fit(train, y, cal).combiner_.selection_
    assert alone["kind_win_fractions"] == alone["task_win_fractions"]
    assert len(alone["task_win_fractions"]) == 3
    with pytest.raises(ValueError, match="per_task"):
        BankDetector(bank, per_task="yes").fit(train, y, cal)
