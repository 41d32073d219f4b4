"""A detector bank, z-values, one combined statistic and the FAR guarantee, fitted on the
right splits in one call (Algorithm 1 with the threshold of Algorithm 3)."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._core.base import ParamsMixin, derived_seeds
from .._core.serialize import Int, Nested, check_fitted_copy, dumps, serializable
from .._core.validation import Interval, RandomState, plain
from ..detectors import DetectorBank, LeaveClassesOut
from ._guarantee import GuaranteedDetector, far_guarantee
from ._pipeline import ScoreCombiner, check_epsilon_method
from ._select import MIN_HALVED, MIN_ROWS, canonical_rows


@serializable("combine")
class BankDetector(ParamsMixin):
    """An OOD detector from a :class:`~abstain.detectors.DetectorBank` whose false-alarm
    rate is at most ``alpha`` with probability at least ``1 - delta``.

    ``fit(train_outputs, y, calibration_outputs)`` uses three independent parts of the
    in-distribution data, as the guarantee needs (section 3.3 of Reehorst and Schniter):

    1. the bank's detectors are fitted on ``train_outputs`` (a KNN bank, class means, ...);
    2. the rows of ``calibration_outputs`` are shuffled (seeded by ``random_state``) and
       split: the first ``z_fraction`` fit the z-values of the base scores
       (:class:`ScoreCombiner`, eq. 21; never fitted on the detectors' own training rows,
       whose scores are biased, e.g. a KNN distance of a bank row to itself);
    3. the other rows calibrate the combined statistic (:class:`GuaranteedDetector`,
       Algorithm 3).

    Given 1 and 2, the statistics of the rows of part 3 and of a new inlier are
    exchangeable, so ``P(FAR <= alpha) >= 1 - delta`` over the draw of part 3 (FAR: the
    probability that a new inlier is flagged, ``accept`` False).

    **What is combined** (``method="auto"``, the default). A combination of every base
    score can lose to the best one of them (docs/combining.md), so ``auto`` chooses on
    proxy outliers, then calibrates what it chose on part 3, which the choice never sees:

    - with ``outlier_outputs`` (outputs of proxy outliers, such as rotated images:
      :func:`abstain.detectors.rotations`), the bank of step 1 scores them, and the rows of
      part 2 are halved into z-value rows and proxy inliers. A list of outputs gives
      several kinds, one per entry (for images: rotations and shuffled pixels,
      :func:`abstain.detectors.shuffled_columns`), each scored against the same halves;
    - from the labels ``y`` of ``train_outputs``:
      :class:`~abstain.detectors.LeaveClassesOut` holds ``n_held_out`` classes out at a
      time, in at most ``n_proxy_splits`` splits; per split, a copy of the bank is fitted on part
      of the kept classes' rows, with the network's outputs restricted to those classes
      (:func:`~abstain.detectors.restrict_outputs`: logit columns and last-layer rows),
      and scores the other kept rows (halved into z-value rows and proxy inliers) and the
      held-out classes' rows (proxy outliers). Integer labels are the logit columns'
      indices (other labels keep every column).

    With both, the held-out classes (near outliers: classes the network does not know) and
    each kind of ``outlier_outputs`` (far ones, for rotated images: inputs unlike any
    class) weigh the same in the choice, however many splits the classes give: half each
    with one outputs, ``1 / (k + 1)`` each with a list of ``k``. A combination is kept only
    when it beats the best single score with confidence on each kind apart (the outliers
    to come may be of any kind; with only one kind, on it alone) and, with ``veto``, no
    proxy task (a held-out split, or one kind of outputs) shows it below with confidence.
    The choice (:class:`ScoreCombiner`'s ``auto``: the best single base score unless a
    combination beats it in at least ``confidence`` of ``n_bootstrap`` paired resamples)
    is in ``combiner_.selection_``; ``combiner_.summary()`` says it in one line. Without
    ``y`` or ``outlier_outputs``, ``auto`` is refused: name a statistic.

    Parameters
    ----------
    bank : DetectorBank (required; None only as the unset default)
        Copied (``type(bank)(**bank.get_params())``) and fitted; left unchanged.
    method : str, default "auto"
        One of :data:`abstain.combine.METHODS`: ``"auto"`` or a combined statistic.
    epsilon : float in [0, 100] or None, default None
        For ``glrt`` / ``glrt_cov`` (None: 0.25); the range of :class:`ScoreCombiner`.
    alpha : float in (0, 1), default 0.05
    delta : float in (0, 1), default 0.1
    z_fraction : float in (0, 1), default 0.5
        Share of the calibration rows that fit the z-values.
    confidence : float in (0, 1), default 0.9
    n_bootstrap : int in [1, 10**6], default 500
    subsets : bool, default True
    veto : bool, default True
        ``auto``'s test and candidates (see above and :class:`ScoreCombiner`).
    n_held_out : int >= 1, default 1
    n_proxy_splits : int >= 1, default 5
        ``auto``'s held-out classes (with ``y``): classes held out per split, and the most
        splits (:class:`~abstain.detectors.LeaveClassesOut`,
        seeded from ``random_state``).
    per_task : bool, default False
        ``auto``'s paired test on every proxy task apart (each held-out split, and the
        ``outlier_outputs``) instead of on each kind: a combination is kept only when it
        wins on every one (stricter than ``veto``, which only bars a combination that
        some task shows losing). Measured on the benchmark of docs/combining.md, it lost to
        the single score in 2 of 64 runs and almost never combines.
    random_state : None, int or numpy Generator
        Seeds the split of the calibration rows and ``auto``'s proxies and resamples, and
        every detector of the bank that has a ``random_state`` of None (a ``KNN`` with a
        ``bank_size``): with a seed, two fits are the same.

    Attributes
    ----------
    bank_ : DetectorBank
    combiner_ : ScoreCombiner
        With ``method="auto"``: what was chosen (``method_``, ``columns_``,
        ``selection_``).
    guarantee_ : GuaranteedDetector
        ``threshold_``, ``achieved_alpha_`` etc. of the calibration.
    n_z_, n_calibration_ : int
        Rows used for the z-values and for the threshold.

    Examples
    --------
    >>> import numpy as np
    >>> from abstain.combine import BankDetector
    >>> from abstain.detectors import KNN, MSP, DetectorBank
    >>> rng = np.random.default_rng(0)
    >>> def outputs(n, scale=1.0):
    ...     f = rng.normal(size=(n, 4)) * scale
    ...     return {"features": f, "logits": f[:, :3]}
    >>> bank = DetectorBank([MSP(), KNN(k=5, normalize=False)])
    >>> det = BankDetector(bank, method="glrt", alpha=0.1, delta=0.1, random_state=0).fit(
    ...     outputs(200), calibration_outputs=outputs(400))
    >>> det.bank_.names_, det.n_z_, det.n_calibration_
    (['msp', 'knn'], 200, 200)
    >>> float(det.accept(outputs(500)).mean()), float(det.accept(outputs(500, 5.0)).mean())
    (0.938, 0.014)
    """

    _FIELDS = {
        "bank_": Nested("DetectorBank"),
        "combiner_": Nested("ScoreCombiner"),
        "guarantee_": Nested("GuaranteedDetector"),
        "n_z_": Int(1),
        "n_calibration_": Int(1),
    }

    def __init__(self, bank: Any = None, *, method: str = "auto", epsilon: float | None = None,
                 alpha: float = 0.05, delta: float = 0.1, z_fraction: float = 0.5,
                 confidence: float = 0.9, n_bootstrap: int = 500, subsets: bool = True,
                 veto: bool = True, n_held_out: int = 1, n_proxy_splits: int = 5,
                 per_task: bool = False, random_state: Any = None) -> None:
        self.bank = bank
        self.method = method
        self.epsilon = epsilon
        self.alpha = alpha
        self.delta = delta
        self.z_fraction = z_fraction
        self.confidence = confidence
        self.n_bootstrap = n_bootstrap
        self.subsets = subsets
        self.veto = veto
        self.n_held_out = n_held_out
        self.n_proxy_splits = n_proxy_splits
        self.per_task = per_task
        self.random_state = random_state

    #: bank: a DetectorBank, checked by the methods it must have (in ``_validate_params``);
    #: method, epsilon, alpha and delta as in ScoreCombiner and GuaranteedDetector.
    _parameter_constraints = {
        "method": ScoreCombiner._parameter_constraints["method"],
        "epsilon": ScoreCombiner._parameter_constraints["epsilon"],
        "alpha": GuaranteedDetector._parameter_constraints["alpha"],
        "delta": GuaranteedDetector._parameter_constraints["delta"],
        "z_fraction": [Interval(float, 0, 1, closed="neither")],
        "confidence": ScoreCombiner._parameter_constraints["confidence"],
        "n_bootstrap": ScoreCombiner._parameter_constraints["n_bootstrap"],
        "subsets": ScoreCombiner._parameter_constraints["subsets"],
        "veto": ScoreCombiner._parameter_constraints["veto"],
        "n_held_out": [Interval(int, 1, None, closed="left")],
        "n_proxy_splits": [Interval(int, 1, None, closed="left")],
        "per_task": ScoreCombiner._parameter_constraints["subsets"],
        "random_state": [RandomState()]}

    def _validate_params(self) -> None:
        if not isinstance(self.bank, DetectorBank):
            raise ValueError("bank must be a DetectorBank of abstain.detectors; got "
                             f"{type(self.bank).__name__}.")
        super()._validate_params()
        check_epsilon_method(self.epsilon, self.method)

    def fit(self, train_outputs: Any, y: ArrayLike | None = None,
            calibration_outputs: Any = None, *, outlier_outputs: Any = None,
            weight: ArrayLike | None = None, bias: ArrayLike | None = None) -> BankDetector:
        """Fit the bank on ``train_outputs`` (with labels ``y`` and the last layer ``weight``,
        ``bias`` where its detectors need them), then the z-values and the threshold on two
        disjoint random parts of the in-distribution ``calibration_outputs``; with
        ``method="auto"``, choose what to combine first, on classes of ``train_outputs``
        held out (with ``y``) and on ``outlier_outputs``: the outputs of proxy outliers, or
        a list of them, one per kind (see the class docstring)."""
        self._validate_params()
        if calibration_outputs is None:
            raise ValueError("BankDetector.fit needs calibration_outputs: in-distribution "
                             "outputs not in train_outputs, for the z-values and the threshold.")
        auto = self.method == "auto"
        if not auto and outlier_outputs is not None:
            raise ValueError(f"outlier_outputs is used only by method='auto'; got outlier "
                             f"outputs with method={self.method!r}.")
        if auto and outlier_outputs is None and y is None:
            raise ValueError(
                "method='auto' chooses what to combine on proxy outliers: pass y (the class "
                "labels of train_outputs, whose classes are held out in turn) or "
                "outlier_outputs (e.g. the outputs of rotated images); or name a statistic of "
                "abstain.combine.STATISTICS as method.")
        bank = seeded_bank(self.bank, self.random_state)
        bank.fit(train_outputs, y, weight=weight, bias=bias)
        S = bank.score(calibration_outputs)
        n = S.shape[0]
        n_z = int(round(float(self.z_fraction) * n))
        n_cal = n - n_z
        g = far_guarantee(max(n_cal, 1), float(self.alpha), float(self.delta))
        least_z = MIN_HALVED if auto and outlier_outputs is not None else 2  # z: 2 rows
        if n_z < least_z or not g.feasible or n_cal < g.min_n:
            raise ValueError(
                f"calibration_outputs must have enough rows for both parts: at least "
                f"{least_z} for the z-values and {g.min_n} for FAR <= alpha={plain(self.alpha)} "
                f"with probability >= 1 - delta={plain(self.delta)}; got {n} rows, split "
                f"{n_z} + {n_cal} by z_fraction={plain(self.z_fraction)}.")
        rng = np.random.default_rng(self.random_state)  # type: ignore[arg-type]
        order = canonical_rows(S)[rng.permutation(n)]  # the same rows: the same split
        combiner = ScoreCombiner(method=self.method, epsilon=self.epsilon,
                                 confidence=self.confidence, n_bootstrap=self.n_bootstrap,
                                 subsets=self.subsets, veto=self.veto)
        record = None
        if auto:
            tasks = [] if y is None else self._class_tasks(train_outputs, y, weight, bias, rng)
            weights: list[float] | None = None
            kinds: list[Any] | None = None
            if outlier_outputs is not None:
                S_z = S[order[:n_z]]
                kinds_out = _outlier_kinds(outlier_outputs)
                # every kind of proxy weighs the same, and must show the win
                k = len(kinds_out) + bool(tasks)
                if k > 1:
                    weights = ([1 / k / len(tasks)] * len(tasks) if tasks else []) + [
                        1 / k] * len(kinds_out)
                    names = ([f"outlier_outputs[{i}]" for i in range(len(kinds_out))]
                             if len(kinds_out) > 1 else ["outlier_outputs"])
                    kinds = ["held-out classes"] * len(tasks) + names
                for i, other in enumerate(kinds_out):
                    S_out = bank.score(other)
                    if S_out.shape[0] < MIN_ROWS:
                        name = f"outlier_outputs[{i}]" if len(kinds_out) > 1 else "outlier_outputs"
                        raise ValueError(f"{name} must hold at least {MIN_ROWS} rows (half "
                                         f"choose, half test); got {S_out.shape[0]}.")
                    tasks.append((S_z[: n_z // 2], S_z[n_z // 2:], S_out))
            if self.per_task:  # every held-out split and the outliers given: a kind each
                kinds = list(range(len(tasks)))
            record = combiner.choose(tasks, rng, weights=weights, kinds=kinds)
        combiner.fit_chosen(S[order[:n_z]], record)
        guarantee = GuaranteedDetector(alpha=self.alpha, delta=self.delta).fit(
            combiner.score(S[order[n_z:]]))
        self.bank_, self.combiner_, self.guarantee_ = bank, combiner, guarantee
        self.n_z_, self.n_calibration_ = n_z, n_cal
        return self

    def _class_tasks(self, outputs: Any, y: Any, weight: Any, bias: Any,
                     rng: np.random.Generator) -> list[tuple[Any, Any, Any]]:
        """Proxy tasks of held-out classes of the training outputs: per split, a copy of
        the bank fitted on the kept classes' fitting rows scores their other rows (halved
        into z-value rows and proxy inliers) and the held-out rows."""
        proxy = LeaveClassesOut(int(self.n_held_out), n_splits=int(self.n_proxy_splits),
                                random_state=rng)
        tasks = []
        for t, p in enumerate(proxy.split_outputs(outputs, y, weight=weight, bias=bias)):
            part = seeded_bank(self.bank, self.random_state)
            try:
                part.fit(p.fit, p.y_fit, weight=p.weight, bias=p.bias)
            except ValueError as exc:  # the split's fitting rows: fewer than train_outputs'
                raise ValueError(f"the bank cannot be fitted on held-out-class split {t} "
                                 f"({len(p.y_fit)} fitting rows of its kept classes): "
                                 f"{exc}") from None
            S_in = part.score(p.inliers)
            S_in = S_in[canonical_rows(S_in)[rng.permutation(p.split.inliers.size)]]
            half = S_in.shape[0] // 2
            tasks.append((S_in[:half], S_in[half:], part.score(p.outliers)))
        return tasks

    def base_scores(self, outputs: Any) -> NDArray[np.float64]:
        """The bank's matrix of base scores of ``outputs``, shape (n, m)."""
        self._check_fitted("guarantee_")
        return self.bank_.score(outputs)  # type: ignore[no-any-return]

    def score(self, outputs: Any) -> NDArray[np.float64]:
        """The combined statistic of ``outputs`` (higher = more OOD), shape (n,)."""
        S = self.base_scores(outputs)
        return self.combiner_.score(S)  # type: ignore[no-any-return]

    def accept(self, outputs: Any) -> NDArray[np.bool_]:
        """True (kept as in-distribution) where ``score <= guarantee_.threshold_``."""
        stat = self.score(outputs)
        return self.guarantee_.accept(stat)  # type: ignore[no-any-return]

    def accept_proba(self, outputs: Any) -> NDArray[np.float64]:
        """:meth:`accept` as floats: the rule is not randomised."""
        return self.accept(outputs).astype(np.float64)

    def to_json(self) -> str:
        """Serialise to plain JSON; load with :func:`abstain.load_json`."""
        return dumps(self)

    def _after_load(self) -> None:
        self._validate_params()
        if self.combiner_.method != self.method:
            raise ValueError(f"fitted.combiner_ must use params.method {self.method!r}; got "
                             f"{self.combiner_.method!r}.")
        if self.guarantee_.n_calibration_ != self.n_calibration_:
            raise ValueError("fitted.guarantee_ must be calibrated on fitted.n_calibration_ = "
                             f"{self.n_calibration_} rows; got {self.guarantee_.n_calibration_}.")
        # the nested objects are built from these parameters, and the rows split by z_fraction
        for part, names in ((self.guarantee_, ("alpha", "delta")),
                            (self.combiner_, ("epsilon", "confidence", "n_bootstrap",
                                              "subsets", "veto"))):
            for name in names:
                if getattr(part, name) != getattr(self, name):
                    raise ValueError(f"params.{name} must be that of the fitted "
                                     f"{type(part).__name__} ({getattr(part, name)!r}); got "
                                     f"{getattr(self, name)!r}.")
        sigma = ScoreCombiner().sigma  # fit builds the combiner with the default ridge
        if self.combiner_.sigma != sigma:
            raise ValueError(f"fitted.combiner_ must have sigma = {sigma!r}, as a fit builds "
                             f"it; got {self.combiner_.sigma!r}.")
        parts: tuple[Any, ...] = (self.combiner_, self.combiner_.empirical_z_, self.guarantee_)
        for reader in parts:  # fit builds them on the bank's scores as they are
            if getattr(reader, "higher_is_inlier", False):
                raise ValueError(f"fitted {type(reader).__name__} must take the bank's scores "
                                 "as they are (higher_is_inlier false); got true.")
        # fit fits seeded_bank(bank, random_state): the same detectors, seeded alike
        given = seeded_bank(self.bank, self.random_state)
        mine, theirs = given.get_params(deep=False), self.bank_.get_params(deep=False)
        if type(self.bank_) is not type(given) or len(mine["detectors"] or []) != len(
                theirs["detectors"] or []) or mine["names"] != theirs["names"]:
            raise ValueError("fitted.bank_ must be params.bank fitted: the same detectors "
                             "and names.")
        for i, (det, fitted) in enumerate(zip(mine["detectors"] or [],
                                              theirs["detectors"] or [], strict=True)):
            if self.random_state is None and "random_state" in det.get_params(deep=False):
                # a Generator's state is not stored: its seeds cannot be derived again
                det.set_params(random_state=fitted.get_params(deep=False)["random_state"])
            check_fitted_copy(fitted, det, f"fitted.bank_.detectors[{i}]",
                              f"params.bank.detectors[{i}] (seeded by params.random_state)")
        n = self.n_z_ + self.n_calibration_
        if self.combiner_.empirical_z_.n_train_ != self.n_z_ or self.n_z_ != int(
                round(float(self.z_fraction) * n)):
            raise ValueError(f"fitted.n_z_ must be the rows of the combiner's z-values "
                             f"({self.combiner_.empirical_z_.n_train_}) and z_fraction of the "
                             f"{n} calibration rows; got {self.n_z_}.")


def seeded_bank(bank: Any, random_state: Any) -> Any:
    """An unfitted copy of ``bank`` whose detectors with a ``random_state`` of None take a
    seed of their own from ``random_state`` (:func:`~abstain._core.base.derived_seeds`: an
    int, or a Generator's or BitGenerator's seed sequence, whose stream it does not
    advance); with None they stay unseeded."""
    detectors = bank.get_params(deep=False)["detectors"] or []
    seeds = derived_seeds(random_state, len(detectors))
    copies = []
    for i, det in enumerate(detectors):
        params = det.get_params(deep=False)
        if seeds is not None and "random_state" in params and params["random_state"] is None:
            params["random_state"] = seeds[i]
        copies.append(type(det)(**params))
    return type(bank)(**{**bank.get_params(deep=False), "detectors": copies})


def _outlier_kinds(outlier_outputs: Any) -> list[Any]:
    """``outlier_outputs`` as a list of kinds: a list (or a tuple that is not itself a
    network's outputs, as a named tuple is) holds one outputs per kind; anything else is one
    kind."""
    if isinstance(outlier_outputs, list) or (isinstance(outlier_outputs, tuple)
                                             and not hasattr(outlier_outputs, "_fields")):
        if not outlier_outputs:
            raise ValueError("outlier_outputs must hold at least one outputs of proxy "
                             "outliers; got an empty list.")
        return list(outlier_outputs)
    return [outlier_outputs]
