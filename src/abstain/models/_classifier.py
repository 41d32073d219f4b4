"""A scikit-learn meta-estimator that turns any classifier into a selective classifier."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._core.arrays import class_positions
from .._core.base import ParamsMixin, accuracy, not_fitted_error
from .._core.optional import require
from .._core.validation import (
    Boolean,
    Interval,
    IsArray,
    IsCallable,
    Options,
    RandomState,
    plain,
)
from ..scores._losses import check_loss_matrix
from ..scores._plugin import conditional_risk, margin
from ._registry import REJECT_RULES
from ._selective import BoundedAbstention, BoundedImprovement, CostBased

__all__ = ["SelectiveClassifier", "SelectivePrediction"]

_SCORES = ("auto", "conditional_risk", "margin")


class SelectivePrediction(NamedTuple):
    """Predicted labels and whether each prediction is accepted.

    Attributes
    ----------
    prediction : ndarray of shape (n,)
        The classifier's label for every sample, accepted or not.
    accept : ndarray of bool, shape (n,)
        True where the selective classifier predicts, False where it abstains.
    """

    prediction: NDArray[Any]
    accept: NDArray[np.bool_]


def _require_sklearn() -> Any:
    for module in ("sklearn.base", "sklearn.model_selection", "sklearn.utils.validation"):
        require(module, "sklearn", "SelectiveClassifier")
    return require("sklearn", "sklearn", "SelectiveClassifier")


class SelectiveClassifier(ParamsMixin):
    """Wrap a classifier with an uncertainty score and a reject model.

    ``fit`` trains a clone of ``estimator`` on one part of the data and fits the
    reject model on the held-out part (the calibration set), where the losses of
    the trained classifier are observed; with ``prefit=True`` the estimator is used
    as it is and all of ``X, y`` is calibration data.

    The uncertainty score is the plug-in conditional risk (section 3.2) for an
    estimator with ``predict_proba`` (the MCP rule under the 0/1 loss), and the
    margin score for one with only ``decision_function``. With a ``loss`` matrix and
    ``predict_proba`` the conditional risk predicts the plug-in Bayes decisions for that
    loss; with ``score_func="margin"`` or a callable the predictions are the estimator's
    own (``predict``), priced by the loss matrix.

    The verbs follow scikit-learn's contract for classifiers: :meth:`score` ``(X, y)`` is
    the accuracy, a float, so model selection works without ``scoring``;
    :meth:`uncertainty` is each sample's uncertainty, :meth:`accept` and
    :meth:`accept_proba` the decision, :meth:`predict` the labels.

    Parameters
    ----------
    estimator : classifier
        Anything with ``fit``, ``predict`` and ``predict_proba`` or ``decision_function``.
    reject_model : CostBased, BoundedImprovement or BoundedAbstention, optional
        Unfitted reject model; default ``BoundedAbstention(target_coverage=0.9)``.
    score_func : {"auto", "conditional_risk", "margin"} or callable, default "auto"
        The uncertainty score; a callable is ``score_func(estimator, X) -> uncertainty``
        (higher = reject first).
    loss : array-like of shape (K, K), optional
        ``loss[y_true, y_pred]`` over ``estimator.classes_``; default 0/1.
    calibration_size : float in (0, 1), default 0.3
        Fraction of ``X`` held out to fit the reject model, stratified by class (every
        class needs at least 2 rows).
    prefit : bool, default False
        Use ``estimator`` as already fitted; calibrate on all of ``X, y``.
    random_state : int, numpy Generator or RandomState, or None
        Seed of the split, of the estimator (each ``random_state`` of its parameters that
        is None: a random forest, say) and of the randomised accept decisions (of a reject
        model given without its own). An int seeds all three as it is; a ``Generator`` or
        a ``RandomState`` is drawn from for the split's and the estimator's seeds and seeds
        the reject model's draws, so one seeded generator reproduces the whole fit.

    Attributes
    ----------
    estimator_ : the fitted classifier
    reject_model_ : the fitted reject model
    classes_ : ndarray of shape (K,)
    loss_matrix_ : ndarray of shape (K, K)
        ``loss_matrix_[true, predicted]``, class indices into ``classes_``: ``loss``, or
        the 0/1 loss when it is None.

    Notes
    -----
    There is no ``to_json``: the wrapped estimator is an arbitrary scikit-learn object,
    which cannot be written without pickle. Save ``reject_model_`` with its ``to_json``
    (:func:`abstain.load_json` reads it back) and the estimator with its own library's tools.

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from sklearn.linear_model import LogisticRegression
    >>> from abstain import BoundedAbstention, SelectiveClassifier
    >>> X, y = load_digits(return_X_y=True)
    >>> clf = SelectiveClassifier(LogisticRegression(max_iter=2000),
    ...                           BoundedAbstention(target_coverage=0.8), random_state=0)
    >>> pred, accept = clf.fit(X[:1200], y[:1200]).predict_with_reject(X[1200:])
    >>> bool(abs(accept.mean() - 0.8) < 0.1)
    True
    >>> bool(clf.score(X[1200:], y[1200:]) > 0.9)           # accuracy, over all samples
    True
    >>> clf.uncertainty(X[1200:1203]).shape                  # higher = rejected first
    (3,)
    """

    def __init__(
        self,
        estimator: Any,
        reject_model: CostBased | BoundedImprovement | BoundedAbstention | None = None,
        *,
        score_func: str | Callable[[Any, Any], ArrayLike] = "auto",
        loss: ArrayLike | None = None,
        calibration_size: float = 0.3,
        prefit: bool = False,
        random_state: Any = None,
    ) -> None:
        self.estimator = estimator
        self.reject_model = reject_model
        self.score_func = score_func
        self.loss = loss
        self.calibration_size = calibration_size
        self.prefit = prefit
        self.random_state = random_state

    _estimator_type = "classifier"

    # ``estimator`` is any scikit-learn classifier (cloned and fitted as it is) and
    # ``reject_model`` one of the registered rules of one score: both checked in ``fit``
    _parameter_constraints = {
        "score_func": [Options(_SCORES), IsCallable()],
        "loss": [None, IsArray()],
        "calibration_size": [Interval(float, 0, 1, closed="neither")],
        "prefit": [Boolean()],
        "random_state": [RandomState(legacy=True)],  # scikit-learn's split takes it
    }

    def __sklearn_tags__(self) -> Any:
        """scikit-learn's classifier tags (imported only when scikit-learn asks).

        The tags of a classifier, with the input tags of ``estimator`` (sparse input,
        missing values) where it has tags of its own.
        """
        from sklearn.utils import ClassifierTags, InputTags, Tags, TargetTags, get_tags

        try:
            inner = get_tags(self.estimator).input_tags
        except (AttributeError, TypeError, ValueError):
            inner = InputTags()
        return Tags(
            estimator_type="classifier",
            target_tags=TargetTags(required=True),
            classifier_tags=ClassifierTags(multi_class=True),
            input_tags=InputTags(sparse=inner.sparse, allow_nan=inner.allow_nan),
        )

    def __sklearn_is_fitted__(self) -> bool:
        """Whether ``fit`` has run (scikit-learn's ``check_is_fitted`` protocol)."""
        return hasattr(self, "reject_model_")

    def _loss_matrix(self) -> NDArray[np.float64]:
        k = len(self.classes_)
        return 1.0 - np.eye(k) if self.loss is None else check_loss_matrix(self.loss, k)

    def _predict_and_score(self, X: Any) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
        """Class indices of the predictions and their uncertainty."""
        self._validate_params()  # score_func may have been set after fit
        est = self.estimator_
        score = self.score_func
        if callable(score):
            return self._class_index(est.predict(X)), np.asarray(score(est, X), dtype=np.float64)
        has_proba = hasattr(est, "predict_proba")
        if score == "conditional_risk" or (score == "auto" and has_proba):
            if not has_proba:
                raise ValueError("score_func='conditional_risk' needs an estimator with "
                                 "predict_proba.")
            pred, risk = conditional_risk(est.predict_proba(X), self._loss_matrix())
            return pred, risk
        if not hasattr(est, "decision_function"):
            raise ValueError("score_func='margin' needs an estimator with decision_function.")
        decision = np.asarray(est.decision_function(X))
        k = len(self.classes_)
        last = est.steps[-1][1] if hasattr(est, "steps") else est  # a pipeline's classifier
        if decision.ndim == 2 and (decision.shape[1] != k or getattr(
                last, "decision_function_shape", None) == "ovo"):
            # pairwise columns (an SVC's "ovo"): minus their largest is no margin of a class
            raise ValueError(f"score_func='margin' needs one decision column per class ({k}); "
                             f"this {type(last).__name__} gives pairwise (one-vs-one) columns: "
                             f"use decision_function_shape='ovr', scikit-learn's default.")
        return self._class_index(est.predict(X)), margin(decision)

    def _class_index(self, labels: Any) -> NDArray[np.intp]:
        """The position of each label in ``classes_``, sorted or not."""
        return class_positions(self.classes_, labels)

    def fit(self, X: Any, y: ArrayLike) -> SelectiveClassifier:
        """Fit the classifier (unless ``prefit``) and the reject model.

        Returns
        -------
        self
        """
        sklearn = _require_sklearn()
        if y is None:
            raise ValueError("SelectiveClassifier requires y to be passed, but the target y "
                             "is None.")
        self._validate_params()
        y = np.asarray(sklearn.utils.validation.column_or_1d(y, warn=True))
        if y.size == 0:
            raise ValueError("y must hold at least one row of every class; got 0 rows.")
        try:
            distinct = np.unique(y).size
        except TypeError:  # numbers beside strings have no order
            raise ValueError(f"y must hold class labels of one kind, all numbers or all "
                             f"strings; got values such as {y.tolist()[:3]}.") from None
        if distinct < 2:  # a reject rule needs a classifier that can err
            raise ValueError(f"y must hold at least 2 classes; got 1 class, "
                             f"{plain(np.asarray(y)[0].item())}.")
        base = self._check_reject_model()
        if self.prefit:
            if not hasattr(self.estimator, "classes_"):
                if _is_fitted(sklearn, self.estimator):
                    raise ValueError(f"estimator must be a classifier (with classes_); this "
                                     f"{type(self.estimator).__name__} is fitted but has none.")
                raise not_fitted_error(
                    f"prefit=True needs a fitted estimator; this "
                    f"{type(self.estimator).__name__} is not fitted yet: call its 'fit' "
                    f"first, or use prefit=False."
                )
            self.estimator_ = self.estimator
            X_cal, y_cal = X, y
            rows = X.shape[0] if hasattr(X, "shape") else len(X)  # a sparse matrix too
            if rows != y_cal.size:
                raise ValueError(f"X and y must have the same length; got X has {rows}, y has "
                                 f"{y_cal.size}.")
        else:
            size = float(self.calibration_size)
            sklearn.utils.multiclass.check_classification_targets(y)
            labels, counts = np.unique(y, return_counts=True)
            if counts.min() < 2:  # the split would put its row in one part, by chance
                raise ValueError(
                    f"y holds 1 sample of class {plain(labels[int(np.argmin(counts))].item())}: "
                    f"the split into fitting and calibration rows (stratified) needs at least "
                    f"2 rows of every class; drop the class, add rows, or fit the estimator "
                    f"yourself and pass prefit=True.")
            X_fit, X_cal, y_fit, y_cal = sklearn.model_selection.train_test_split(
                X, y, test_size=size, random_state=_split_seed(self.random_state), stratify=y)
            self.estimator_ = _seeded(sklearn.base.clone(self.estimator),
                                      _split_seed(self.random_state)).fit(X_fit, y_fit)
        if not hasattr(self.estimator_, "classes_"):
            raise ValueError(f"estimator must be a classifier (with classes_); this "
                             f"{type(self.estimator_).__name__} has none after its fit.")
        self.classes_ = np.asarray(self.estimator_.classes_)
        pred, uncertainty = self._predict_and_score(X_cal)
        unknown = ~np.isin(y_cal, self.classes_)
        if unknown.any():
            raise ValueError(f"y holds labels the estimator was not trained on (such as "
                             f"{plain(np.asarray(y_cal)[unknown][0].item())}): "
                             + ("the prefit estimator must know every class of y (its "
                                "classes_)." if self.prefit else
                                "every class must have rows in its fitting part."))
        true = self._class_index(y_cal)
        self.loss_matrix_ = self._loss_matrix()
        losses = self.loss_matrix_[true, pred]
        params = base.get_params(deep=False)
        if params.get("random_state") is None:
            params["random_state"] = _rule_seed(self.random_state)
        self.reject_model_ = type(base)(**params).fit(uncertainty, losses)
        for name in ("n_features_in_", "feature_names_in_"):  # the inner fit's, or none
            if hasattr(self.estimator_, name):
                setattr(self, name, getattr(self.estimator_, name))
            elif name in self.__dict__:
                delattr(self, name)
        return self

    def _check_reject_model(self) -> CostBased | BoundedImprovement | BoundedAbstention:
        """The unfitted reject model to fit, or a ValueError for anything else."""
        model = self.reject_model
        if model is None:
            return BoundedAbstention(0.9)
        # the registered reject rules of one score that need no OOD column
        rules = [s.model for s in REJECT_RULES.values() if not s.ood]
        if not isinstance(model, tuple(rules)):
            names = [r.__name__ for r in rules]
            raise ValueError(
                f"reject_model must be a {', '.join(names[:-1])} or {names[-1]} instance, or "
                f"None; got {model!r}. The OOD rules of abstain.models need is_ood labels and "
                "cannot be fitted here."
            )
        return model

    def score(self, X: Any, y: ArrayLike, sample_weight: ArrayLike | None = None) -> float:
        """Accuracy of :meth:`predict` on ``X`` against ``y``, as every scikit-learn classifier.

        The (weighted) fraction of correct labels over all samples, accepted or not, so
        that ``cross_val_score`` and ``GridSearchCV`` work without ``scoring``. To select
        by the quality of the abstention, give them a scorer of
        :mod:`abstain.metrics` (such as :func:`~abstain.metrics.neg_aurc_scorer`).

        Parameters
        ----------
        X : array-like of shape (n, d)
        y : array-like of shape (n,)
            True labels.
        sample_weight : array-like of shape (n,), optional
            Non-negative weights with a positive sum.

        Returns
        -------
        float
        """
        return accuracy(y, np.asarray(self.predict(X)), sample_weight)

    def set_output(self, *, transform: str | None = None) -> SelectiveClassifier:
        """Choose the container of the per-sample outputs, as scikit-learn's
        ``set_output``: ``"pandas"`` returns each of :meth:`uncertainty`, :meth:`predict`,
        :meth:`accept_proba`, :meth:`accept` (and the fields of
        :meth:`predict_with_reject`) as a ``pandas.Series`` named after the method, indexed
        by the input DataFrame's index (a ``RangeIndex`` for other inputs); ``"default"``
        returns NumPy arrays; None leaves the choice as it is. Returns ``self``.

        Examples
        --------
        >>> import pandas as pd
        >>> from sklearn.linear_model import LogisticRegression
        >>> from abstain import SelectiveClassifier
        >>> X = pd.DataFrame({"a": [0.0, 1, 2, 3, 4, 5, 6, 7] * 5},
        ...                  index=[f"r{i}" for i in range(40)])
        >>> y = (X["a"] > 3).astype(int)
        >>> clf = SelectiveClassifier(LogisticRegression(), random_state=0).fit(X, y)
        >>> out = clf.set_output(transform="pandas").accept(X.iloc[:3])
        >>> out.name, list(out.index)
        ('accept', ['r0', 'r1', 'r2'])
        """
        if transform is not None and transform not in ("default", "pandas"):
            raise ValueError(f"transform must be one of 'default', 'pandas' or None; got "
                             f"{transform!r}.")
        if transform == "pandas":
            require("pandas", "io", "SelectiveClassifier.set_output")
        if transform is not None:  # where scikit-learn keeps it, so that clone copies it
            self._sklearn_output_config = {"transform": transform}
        return self

    def _out(self, values: Any, X: Any, name: str) -> Any:
        """``values`` as the container that :meth:`set_output` chose."""
        if getattr(self, "_sklearn_output_config", {}).get("transform") != "pandas":
            return values
        pd = require("pandas", "io", "SelectiveClassifier.set_output")
        index = X.index if isinstance(X, pd.DataFrame) else None
        return pd.Series(values, index=index, name=name)

    def uncertainty(self, X: Any) -> NDArray[np.float64]:
        """Uncertainty of each sample's prediction (higher = rejected first), shape (n,).

        The score that the fitted reject model thresholds: ``accept(X)`` is
        ``reject_model_.accept(uncertainty(X))``.
        """
        self._check_fitted("reject_model_")
        return self._out(self._predict_and_score(X)[1], X, "uncertainty")  # type: ignore[no-any-return]

    def predict(self, X: Any) -> NDArray[Any]:
        """Predicted labels for all samples (see :meth:`predict_with_reject` for the mask)."""
        self._check_fitted("reject_model_")
        return self._out(np.asarray(self.classes_[self._predict_and_score(X)[0]]), X,  # type: ignore[no-any-return]
                         "prediction")

    def accept_proba(self, X: Any) -> NDArray[np.float64]:
        """Acceptance probability ``c(x)`` of each sample."""
        self._check_fitted("reject_model_")
        return self._out(self.reject_model_.accept_proba(self._predict_and_score(X)[1]), X,  # type: ignore[no-any-return]
                         "accept_proba")

    def accept(self, X: Any) -> NDArray[np.bool_]:
        """The randomised accept decision of each sample (True = the prediction is kept).

        The fitted reject model's :meth:`~abstain.BoundedAbstention.accept`; the mask of
        :meth:`predict_with_reject`.
        """
        self._check_fitted("reject_model_")
        return self._out(self.reject_model_.accept(self._predict_and_score(X)[1]), X,  # type: ignore[no-any-return]
                         "accept")

    def predict_with_reject(self, X: Any) -> SelectivePrediction:
        """Predicted labels and the randomised accept decision for each sample."""
        self._check_fitted("reject_model_")
        pred, uncertainty = self._predict_and_score(X)
        return SelectivePrediction(
            self._out(self.classes_[pred], X, "prediction"),
            self._out(self.reject_model_.accept(uncertainty), X, "accept"))


def _seeded(estimator: Any, seed: Any) -> Any:
    """``estimator`` with every ``random_state`` among its parameters (nested ones too)
    that is None set to ``seed`` (nothing where ``seed`` is None)."""
    if seed is None:
        return estimator
    unset = {k: seed for k, v in estimator.get_params(deep=True).items()
             if (k == "random_state" or k.endswith("__random_state")) and v is None}
    return estimator.set_params(**unset) if unset else estimator


def _split_seed(random_state: Any) -> Any:
    """What scikit-learn's split takes for ``random_state``: None, an int or a
    ``RandomState`` as they are, an int drawn from a ``Generator`` (or what seeds one)."""
    if random_state is None or isinstance(random_state, (int, np.integer,
                                                         np.random.RandomState)):
        return random_state
    return int(np.random.default_rng(random_state).integers(2**32))


def _rule_seed(random_state: Any) -> Any:
    """What a reject model takes for ``random_state``: None, an int or a ``Generator`` (or
    what seeds one) as they are, a ``Generator`` seeded from a ``RandomState``."""
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(int(random_state.randint(2**32, dtype=np.uint64)))
    return random_state


def _is_fitted(sklearn: Any, estimator: Any) -> bool:
    """scikit-learn's own test of a fitted estimator."""
    try:
        sklearn.utils.validation.check_is_fitted(estimator)
    except Exception:  # NotFittedError, or an object scikit-learn cannot judge
        return False
    return True
