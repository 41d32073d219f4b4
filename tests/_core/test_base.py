"""The estimator contract's helpers: seeds for inner estimators, nested parameters."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from abstain._core.base import derived_seeds, quiet, warn
from abstain.combine import BankDetector
from abstain.detectors import KNN, MSP, DetectorBank
from abstain.models import tune_detector


@pytest.mark.parametrize("make", [
    lambda: 7, lambda: np.random.SeedSequence(7), lambda: np.random.default_rng(7),
    lambda: np.random.PCG64(7), lambda: np.random.Philox(7),
    lambda: np.random.RandomState(7)], ids=["int", "SeedSequence", "Generator", "PCG64",
                                             "Philox", "RandomState"])
def test_every_kind_of_seed_gives_the_same_seeds_twice(make):
    # a BitGenerator gave None: the inner estimators drew from the OS's entropy
    a, b = derived_seeds(make(), 3), derived_seeds(make(), 3)
    assert a is not None and a == b and len(set(a)) == 3
    assert derived_seeds(None, 3) is None


def test_a_bit_generator_seeds_as_its_generator_does_and_is_not_advanced():
    assert derived_seeds(np.random.PCG64(7), 2) == derived_seeds(np.random.default_rng(7), 2)
    g = np.random.default_rng(7)
    derived_seeds(g.bit_generator, 2)
    assert g.random() == np.random.default_rng(7).random()


def test_a_bit_generator_seed_reaches_the_detectors_inside():
    rng = np.random.default_rng(0)
    tr = {"logits": rng.normal(size=(300, 3)), "features": rng.normal(size=(300, 4))}
    cal = {"logits": rng.normal(size=(200, 3)), "features": rng.normal(size=(200, 4))}
    te = {"logits": rng.normal(size=(50, 3)), "features": rng.normal(size=(50, 4))}
    bank = DetectorBank([MSP(), KNN(k=3, bank_size=30)])
    a, b = (BankDetector(bank, method="stouffer", random_state=np.random.PCG64(0))
            .fit(tr, None, cal).score(te) for _ in range(2))
    np.testing.assert_array_equal(a, b)
    y = rng.integers(0, 4, 600)
    F = np.eye(4)[y] * 3 + rng.normal(size=(600, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c, d = (tune_detector(KNN(bank_size=60), {"k": [1, 5]}, {"features": F[400:]},
                              train_outputs={"features": F[:400]}, y=y[:400],
                              random_state=np.random.PCG64(0)).scores for _ in range(2))
    np.testing.assert_array_equal(c, d)


def test_nested_parameters_are_set_after_their_parent_whatever_the_order():
    # estimator__C before estimator= set C on the old estimator, then replaced it
    from sklearn.linear_model import LogisticRegression

    from abstain import SelectiveClassifier

    old, new = LogisticRegression(C=1.0), LogisticRegression()
    sc = SelectiveClassifier(old).set_params(estimator__C=5.0, estimator=new)
    assert sc.estimator is new and new.C == 5.0 and old.C == 1.0
    with pytest.raises(ValueError, match=r"^'nope' is not a parameter of SelectiveClassifier"):
        SelectiveClassifier(old).set_params(estimator__C=2.0, nope=1)
    assert old.C == 1.0  # nothing is set when one key is wrong


def test_quiet_silences_the_library_warnings_of_this_thread_only() -> None:
    # catch_warnings saves and restores the filters of the whole process: threads restored
    # each other's, and an "ignore" filter stayed for good
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from abstain.exceptions import InfeasibleTargetWarning
    from abstain.metrics import StreamingMetric

    before = list(warnings.filters)
    with ThreadPoolExecutor(8) as ex:  # each probes its options under quiet(Warning)
        list(ex.map(lambda _: StreamingMetric("selective_risk_at_tpr_fpr", tpr=0.9, fpr=0.1),
                    range(64)))
    assert warnings.filters == before
    inside, shown = threading.Event(), []

    def other() -> None:
        inside.wait()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            warn("from another thread", InfeasibleTargetWarning)
        shown.append(len(caught))

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t = threading.Thread(target=other)
        t.start()
        with quiet(InfeasibleTargetWarning):
            warn("silenced", InfeasibleTargetWarning)
            inside.set()
            t.join()
        warn("shown", InfeasibleTargetWarning)
    assert [str(w.message) for w in caught] == ["shown"] and shown == [1]
