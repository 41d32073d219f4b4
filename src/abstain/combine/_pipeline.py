"""z-values and a combiner in one fitted object, and the loader of combine files."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._core.base import NamedFeatures, ParamsMixin, column_names
from .._core.serialize import (
    Array,
    Field,
    Int,
    Labels,
    Nested,
    Number,
    Record,
    Seq,
    Text,
    dumps,
    serializable,
)
from .._core.validation import (
    F64,
    Boolean,
    Interval,
    Options,
    RandomState,
    as_matrix,
    check_columns,
    plain,
)
from ..metrics import MAX_BOOTSTRAP
from ._pvalues import EmpiricalZ
from ._qp import (
    as_covariance,
    check_positive_definite,
    covariance_diagonal,
    inlier_covariance,
)
from ._select import (
    MIN_HALVED,
    MIN_ROWS,
    canonical_rows,
    check_record,
    describe,
    select_statistic,
)
from ._statistics import GLRT_METHODS, METHODS, STATISTICS, combine

# --------------------------------------------------------------------------- pipeline
#: The largest ``epsilon`` of a :class:`ScoreCombiner`. Its z-values come from
#: :class:`EmpiricalZ`, whose p-values are at least ``1 / (n_train + 2)``: they lie within
#: +-10 for any ``n_train`` below 1e20, and with ``method="glrt"`` every ``epsilon`` above
#: them ranks the rows as Stouffer's sum does. The bound keeps the statistic, of the order
#: of ``n_scores * epsilon**2``, far from overflow.
EPSILON_MAX = 100.0


def check_epsilon_method(epsilon: object, method: object) -> None:
    """Raise when ``epsilon`` is given with a method that does not use it."""
    if epsilon is not None and method not in (*GLRT_METHODS, "auto"):
        raise ValueError(f"epsilon is used only by methods 'glrt', 'glrt_cov' and 'auto'; "
                         f"got epsilon={plain(epsilon)} with method={plain(method)}.")


#: The schema of ``selection_``: what ``method="auto"`` chose, and on what.
_CANDIDATE = Record({"method": Text(("single", *STATISTICS)),
                     "columns": Labels(integer=True, min_length=1, convert=list),
                     "auroc": Number(0, 1)})
SELECTION = Record({
    "criterion": Text(("auroc",)), "n_tasks": Int(1),
    "method": Text(("single", *STATISTICS)),
    "columns": Labels(integer=True, min_length=1, convert=list),
    "single": Int(0), "single_auroc": Number(0, 1),
    "combination_method": Text(STATISTICS, none=True),
    "combination_columns": Labels(integer=True, min_length=2, none=True, convert=list),
    "combination_auroc": Number(0, 1, none=True),
    "win_fraction": Number(0, 1, none=True),
    "kind_win_fractions": Seq(Number(0, 1), min_length=1, none=True),
    "task_win_fractions": Seq(Number(0, 1), min_length=1, none=True),
    "task_loss_fractions": Seq(Number(0, 1), min_length=1, none=True),
    "candidates": Seq(_CANDIDATE, min_length=1)}, none=True)


def _same_columns(parts: list[Any], what: str = "the rows of every task must name the same "
                  "columns in one order") -> None:
    """Refuse data frames among ``parts`` that name their columns otherwise than the first
    that names any: the base scores are read by position, so another order would test each
    base score on another's values."""
    names = [n for n in (column_names(p) for p in parts) if n is not None]
    for other in names[1:]:
        if not np.array_equal(other, names[0]):
            raise ValueError(f"{what}: {names[0].tolist()}; got {other.tolist()}.")


@serializable("combine")
class ScoreCombiner(NamedFeatures, ParamsMixin):
    """Base scores -> empirical z-values -> one combined statistic (Algorithm 1, lines 2-4),
    or, with ``method="auto"`` (the default), the best single base score unless a
    combination beats it with confidence on proxy outliers.

    ``fit`` learns the z-value maps (:class:`EmpiricalZ`) from inlier training scores and,
    for ``method="glrt_cov"``, the inlier covariance of eq. (34) from their in-sample
    z-values; ``score`` returns :func:`combine` of the z-values of new inputs.

    **Why "auto" is the default.** A combiner of every base score can lose to the best
    one of them, and by a lot: the GLRT gave up 0.06 AUROC on average to the best single
    base score on FashionMNIST leave-one-class-out (docs/combining.md). Nothing measured
    on inliers alone tells which case one is in.
    ``method="auto"`` measures it on proxy outliers, ``fit(S_train, S_outliers)``: the
    rows of ``S_train`` are shuffled (``random_state``) and halved, one half fits the
    z-values of the choice, the other half are the proxy inliers against ``S_outliers``;
    the choice and its paired-bootstrap test (``confidence``, ``n_bootstrap``) are those
    of the module ``abstain.combine._select``, summarised in ``selection_``: each single
    score, each statistic of :data:`STATISTICS` on every column and on a greedy subset,
    and a combination kept only when its AUROC beats the best single score's in at least
    ``confidence`` of the paired resamples of held-out halves. The z-values of what was
    chosen are then refitted on every row of ``S_train``. A single score's statistic is
    the score itself (negated with ``higher_is_inlier``).

    Proxy outliers: held-out classes of labelled inliers
    (:class:`abstain.detectors.LeaveClassesOut`; :class:`BankDetector` makes them itself
    from its training labels), rotated images (:func:`abstain.detectors.rotations`), or any
    outliers at hand that the test data do not hold.

    Parameters
    ----------
    method : str, default "auto"
        One of :data:`METHODS`: ``"auto"`` or a statistic of :data:`STATISTICS`.
    epsilon : float in [0, 100], optional
        For ``glrt`` / ``glrt_cov`` (and those chosen by ``auto``); default 0.25. Above the
        largest z-value (about 10) every ``epsilon`` ranks the rows as Stouffer's sum,
        hence the bound.
    sigma : float >= 0, default 1e-6
        Ridge of eq. (34), used by ``glrt_cov``.
    higher_is_inlier : bool, default False
        The base scores are inlier scores (larger = more inlier, as in the paper); they
        are negated on the way in. The statistic is higher = more OOD either way.
    confidence : float in (0, 1), default 0.9
        ``auto`` keeps a combination only when it wins at least this share of the paired
        resamples.
    n_bootstrap : int in [1, 10**6], default 500
        Paired resamples of ``auto``'s test.
    subsets : bool, default True
        ``auto`` also tries each statistic on a greedy subset of the base scores; False:
        on every base score only (fewer choices made on the proxy).
    veto : bool, default True
        ``auto`` keeps no combination that some proxy task alone shows below the best
        single score in at least ``confidence`` of the same paired resamples, whatever its
        mean (with one task and ``confidence`` above 1/2, none that passes the test).
        False: the test on the mean of each kind alone decides: more combinations kept,
        and more of them losing to the single score on the real outliers
        (docs/combining.md).
    random_state : None, int or numpy Generator
        Seeds ``auto``'s split of the rows and its resamples.

    Attributes
    ----------
    empirical_z_ : EmpiricalZ
        Fitted on every column of ``S_train``.
    method_ : str
        The statistic used: ``method``, or what ``auto`` chose (``"single"`` for one base
        score).
    columns_ : list of int
        The base scores (columns) it uses: every column unless ``auto`` chose fewer.
    cov_ : ndarray of shape (len(columns_), len(columns_)) or None
    selection_ : dict or None
        ``auto``'s record (None otherwise): ``method`` and ``columns`` chosen, the best
        single score (``single``, ``single_auroc``), the best combination
        (``combination_method``, ``combination_columns``, ``combination_auroc``),
        ``win_fraction`` (the least over the kinds of proxy), ``kind_win_fractions``
        (one per kind), ``task_win_fractions`` and ``task_loss_fractions`` (one per
        proxy task, from the same resamples: shares above and below the single score;
        the losses decide the veto) and every ``candidates`` entry with its AUROC on the
        choosing halves; :meth:`summary` says it in one line.

    Examples
    --------
    >>> import numpy as np
    >>> from abstain.combine import ScoreCombiner
    >>> rng = np.random.default_rng(0)
    >>> comb = ScoreCombiner(method="glrt").fit(rng.normal(size=(500, 3)))
    >>> stat = comb.score([[0.0, 0.0, 0.0], [3.0, 3.0, 3.0]])
    >>> bool(stat[1] > stat[0])
    True

    With proxy outliers, ``auto`` keeps a single score unless combining pays:

    >>> S_in = rng.normal(size=(1000, 3))
    >>> S_out = rng.normal(size=(400, 3)) + [2.0, 0.0, 0.0]   # only column 0 sees them
    >>> auto = ScoreCombiner(random_state=0).fit(S_in, S_out)
    >>> auto.method_, auto.columns_
    ('single', [0])
    >>> S_out = rng.normal(size=(400, 3)) + 0.6               # every column sees a little
    >>> auto = ScoreCombiner(random_state=0).fit(S_in, S_out)
    >>> auto.method_ != "single", len(auto.columns_)
    (True, 3)
    """

    def __init__(self, *, method: str = "auto", epsilon: float | None = None,
                 sigma: float = 1e-6, higher_is_inlier: bool = False,
                 confidence: float = 0.9, n_bootstrap: int = 500, subsets: bool = True,
                 veto: bool = True, random_state: Any = None) -> None:
        self.method = method
        self.epsilon = epsilon
        self.sigma = sigma
        self.higher_is_inlier = higher_is_inlier
        self.confidence = confidence
        self.n_bootstrap = n_bootstrap
        self.subsets = subsets
        self.veto = veto
        self.random_state = random_state

    _parameter_constraints = {
        "method": [Options(METHODS)],
        "epsilon": [Interval(float, 0, EPSILON_MAX, closed="both", condition=(
            f"be a finite number in [0, {EPSILON_MAX:g}] (z-values lie within +-10; a larger "
            "epsilon ranks as Stouffer's sum)")), None],
        "sigma": [Interval(float, 0, None, closed="left")],
        "higher_is_inlier": [Boolean()],
        "confidence": [Interval(float, 0, 1, closed="neither")],
        "n_bootstrap": [Interval(int, 1, MAX_BOOTSTRAP, closed="both")],
        "subsets": [Boolean()],
        "veto": [Boolean()],
        "random_state": [RandomState()]}

    def _validate_params(self) -> None:
        super()._validate_params()
        check_epsilon_method(self.epsilon, self.method)

    def fit(self, S_train: ArrayLike, S_outliers: ArrayLike | None = None) -> ScoreCombiner:
        """Fit on inlier training base scores of shape (n_train, n_scores); with
        ``method="auto"``, choose on proxy outliers ``S_outliers`` (n_outliers, n_scores)."""
        self._validate_params()
        S = as_matrix(S_train, "S_train", columns="n_scores", min_rows=2)
        if self.method != "auto":
            if S_outliers is not None:
                raise ValueError(f"S_outliers is used only by method='auto'; got outliers "
                                 f"with method={self.method!r}.")
            self._fit_names(S_train)
            return self._fit_z(S, None)
        if S_outliers is None:
            raise ValueError(
                "S_outliers must be given with method='auto', which chooses on proxy "
                "outliers: base scores of held-out classes (abstain.detectors.LeaveClassesOut) "
                "or of rotated images, say; or name a statistic of STATISTICS as method; "
                "got None.")
        out = as_matrix(S_outliers, "S_outliers", columns="n_scores")
        check_columns("S_outliers", out, S.shape[1])
        _same_columns([S_train, S_outliers], "S_outliers must have the columns of S_train, "
                      "in its order")
        if out.shape[0] < MIN_ROWS:
            raise ValueError(f"S_outliers must hold at least {MIN_ROWS} rows (half choose, "
                             f"half test); got {out.shape[0]}.")
        if S.shape[0] < MIN_HALVED:
            raise ValueError(f"S_train must hold at least {MIN_HALVED} rows with "
                             f"method='auto' (half fit the z-values, half, at least {MIN_ROWS}, "
                             f"are proxy inliers); got {S.shape[0]}.")
        rng = np.random.default_rng(self.random_state)  # type: ignore[arg-type]
        rows = canonical_rows(S)[rng.permutation(S.shape[0])]
        half = S.shape[0] // 2
        record = self.choose([(S[rows[:half]], S[rows[half:]], out)], rng)
        self._fit_names(S_train)
        return self._fit_z(S, record)

    def choose(self, tasks: list[tuple[Any, Any, Any]], rng: np.random.Generator, *,
               weights: Any = None, kinds: Any = None) -> dict[str, Any]:
        """``auto``'s selection record on proxy ``tasks`` of (z-value rows, proxy inlier
        rows, proxy outlier rows) base scores, with this object's settings; ``weights``
        (one positive number per task, default equal) weigh the tasks' AUROCs; ``kinds``
        (one label per task, default one kind) group them by kind of proxy, and a
        combination is kept only when it passes the paired test on every kind. ``rng``:
        a NumPy ``Generator``, or a seed for one. The rows of every task must name the
        same columns in the same order, if they name any."""
        self._validate_params()
        tasks = list(tasks)  # (a generator is read once, here)
        _same_columns([part for task in tasks for part in task])
        if not isinstance(rng, np.random.Generator):
            try:
                rng = np.random.default_rng(rng)
            except (TypeError, ValueError):
                raise ValueError(f"rng must be a numpy.random.Generator or a seed (an int, "
                                 f"None, a SeedSequence); got {plain(rng)}.") from None
        return select_statistic(tasks, higher_is_inlier=bool(self.higher_is_inlier),
                                epsilon=self.epsilon, sigma=float(self.sigma),
                                confidence=float(self.confidence),
                                n_bootstrap=int(self.n_bootstrap),
                                subsets=bool(self.subsets), veto=bool(self.veto), rng=rng,
                                weights=weights, kinds=kinds)

    def fit_chosen(self, S_train: ArrayLike, selection: dict[str, Any] | None) -> ScoreCombiner:
        """Fit the z-values on ``S_train`` for ``method``, or (``auto``) for what the
        ``selection`` record (of :meth:`choose`) chose."""
        self._validate_params()
        S = as_matrix(S_train, "S_train", columns="n_scores", min_rows=2)
        self._fit_names(S_train)
        return self._fit_z(S, selection)

    def _fit_z(self, S: F64, selection: dict[str, Any] | None) -> ScoreCombiner:
        """:meth:`fit_chosen` on the rows ``S`` already read (``fit`` reads them once)."""
        if (selection is None) != (self.method != "auto"):
            raise ValueError("selection must be given with method='auto' only; got "
                             f"{'none' if selection is None else 'one'} with method="
                             f"{self.method!r}.")
        ez = EmpiricalZ(higher_is_inlier=self.higher_is_inlier).fit(S)
        if selection is None:
            name, cols = str(self.method), list(range(S.shape[1]))
        else:
            check_record(selection, S.shape[1])
            name, cols = selection["method"], [int(c) for c in selection["columns"]]
        self.cov_ = None
        if name == "glrt_cov":
            self.cov_ = inlier_covariance(ez.transform(S)[:, cols], self.sigma)
            check_positive_definite(
                self.cov_, f"the inlier covariance of S_train (with sigma={self.sigma!r})",
                "; give sigma > 0, a ridge (the paper uses 1e-6)")
        self.empirical_z_, self.method_, self.columns_ = ez, name, cols
        self.selection_ = selection
        return self

    def summary(self) -> str:
        """One line: the statistic used, and for ``auto`` why."""
        self._check_fitted("empirical_z_")
        if self.selection_ is None:
            return f"{self.method_} of every base score ({len(self.columns_)} columns)"
        return "auto: " + describe(self.selection_, float(self.confidence), bool(self.veto))

    def transform(self, S: ArrayLike) -> F64:
        """Empirical z-values of ``S``: shape (n_samples, n_scores), every column."""
        self._check_fitted("empirical_z_")
        self._check_names(S)
        return self.empirical_z_.transform(as_matrix(S, "S", columns="n_scores"))

    def score(self, S: ArrayLike) -> F64:
        """The combined statistic of base scores ``S`` (n_samples, n_scores): shape (n,);
        a single base score chosen by ``auto`` is returned as it is (negated with
        ``higher_is_inlier``)."""
        self._check_fitted("empirical_z_")
        if self.method_ == "single":
            self._check_names(S)
            arr = as_matrix(S, "S", columns="n_scores")
            check_columns("S", arr, self.empirical_z_.n_scores_)
            col = arr[:, self.columns_[0]]
            return -col if self.higher_is_inlier else col.copy()
        Z = self.transform(S)[:, self.columns_]
        kw: dict[str, Any] = {"epsilon": self.epsilon} if self.method_ in GLRT_METHODS else {}
        return combine(Z, self.method_, cov=self.cov_, **kw)

    def to_json(self) -> str:
        """Serialise to plain JSON; load with :func:`abstain.load_json`."""
        return dumps(self)

    _FIELDS: dict[str, Field] = {
        "empirical_z_": Nested("EmpiricalZ"),
        "method_": Text(("single", *STATISTICS)),
        "columns_": Labels(integer=True, min_length=1, convert=list),
        "cov_": Array(("m", "m"), none=True),
        "selection_": SELECTION,
    }

    def _n_named(self) -> int:
        return int(self.empirical_z_.n_scores_)

    def _after_load(self) -> None:
        ez = self.empirical_z_
        if ez.higher_is_inlier != self.higher_is_inlier:
            raise ValueError("fitted.empirical_z_ must have the higher_is_inlier of params; got "
                             f"{plain(ez.higher_is_inlier)}.")
        m = ez.n_scores_
        sel = self.selection_
        if (sel is None) != (self.method != "auto"):
            raise ValueError("fitted.selection_ must be a record for method 'auto' and null "
                             f"otherwise; got {'null' if sel is None else 'a record'} with "
                             f"method {self.method!r}.")
        want = ((str(self.method), list(range(m))) if sel is None
                else (sel["method"], [int(c) for c in sel["columns"]]))
        if sel is not None:
            try:
                check_record(sel, m, float(self.confidence), bool(self.veto))
            except ValueError as exc:
                raise ValueError(str(exc)) from None
        if (self.method_, self.columns_) != want:
            raise ValueError(f"fitted.method_ and fitted.columns_ must be {want[0]!r} and "
                             f"{want[1]}; got {self.method_!r} and {self.columns_}.")
        if (self.cov_ is None) != (self.method_ != "glrt_cov"):
            raise ValueError("fitted.cov_ must be an array for method 'glrt_cov' and null for "
                             f"the others; got {'null' if self.cov_ is None else 'an array'} "
                             f"with method {self.method_!r}.")
        if self.cov_ is not None:
            try:
                cov = as_covariance(self.cov_, len(self.columns_))
            except ValueError as exc:
                raise ValueError(f"fitted.cov_: {exc}") from None
            check_positive_definite(cov, "fitted.cov_")
            # its diagonal is that of the z-values of the training rows (each column's
            # values are in empirical_z_) and sigma; fit computes it so, exactly
            ez = self.empirical_z_
            # sorted_train_ holds the training scores as transform compares them (negated
            # for higher_is_inlier): back to the scores' own sign before transform
            train = -ez.sorted_train_.T if ez.higher_is_inlier else ez.sorted_train_.T
            z = ez.transform(train)[:, self.columns_]
            diag = covariance_diagonal(z, float(self.sigma))
            if not np.array_equal(np.diag(cov), diag):
                raise ValueError(f"fitted.cov_ must have the diagonal {plain(diag.tolist())} "
                                 f"of the z-values of fitted.empirical_z_ and params.sigma = "
                                 f"{plain(self.sigma)}, as a fit computes it; got "
                                 f"{plain(np.diag(cov).tolist())}.")
