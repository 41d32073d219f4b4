"""A minimal estimator base: scikit-learn's parameter contract without importing it."""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
import math
import os
import sys
import warnings
from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from ..exceptions import NotFittedError
from .schema import Field, Labels
from .validation import (
    Constraints,
    as_labels,
    as_losses,
    check_label_type,
    check_params,
    check_same_length,
    plain,
)


class ParamsMixin:
    """``get_params``/``set_params``/``repr`` from the keyword arguments of ``__init__``.

    ``__init__`` must store each parameter unchanged under its own name, so that
    ``sklearn.base.clone`` works on subclasses. ``_parameter_constraints`` states what each
    parameter accepts (see ``_core.validation.Interval`` and its siblings);
    ``_validate_params``, run by ``fit`` and on loading, checks it. A subclass with a rule
    between parameters extends ``_validate_params`` after ``super()._validate_params()``.
    """

    _parameter_constraints: ClassVar[Constraints] = {}

    def _validate_params(self) -> None:
        """Check each parameter against ``_parameter_constraints``."""
        constraints = self._parameter_constraints
        check_params({name: getattr(self, name) for name in constraints}, constraints)

    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [
            p.name
            for p in sig.parameters.values()
            if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        ]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Parameters of this estimator, by name."""
        params = {name: getattr(self, name) for name in self._param_names()}
        if deep:
            for name, value in list(params.items()):
                if hasattr(value, "get_params") and not isinstance(value, type):
                    for sub, sub_value in value.get_params(deep=True).items():
                        params[f"{name}__{sub}"] = sub_value
        return params

    def set_params(self, **params: Any) -> ParamsMixin:
        """Set parameters by name (``estimator__param`` for nested ones); return self.

        As in scikit-learn, the parameters of this object are set first and the nested ones
        after them, so ``set_params(estimator=e, estimator__C=5)`` sets ``C`` on ``e``
        whatever the order of the keywords."""
        valid = self._param_names()
        nested: dict[str, dict[str, Any]] = {}
        for key in params:
            name = key.partition("__")[0]
            if name not in valid:
                raise ValueError(
                    f"{key!r} is not a parameter of {type(self).__name__}; "
                    f"valid parameters are {', '.join(valid)}."
                )
        for key, value in params.items():
            name, _, sub = key.partition("__")
            if sub:
                nested.setdefault(name, {})[sub] = value
            else:
                setattr(self, name, value)
        for name, sub_params in nested.items():
            getattr(self, name).set_params(**sub_params)
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params(deep=False).items())
        return f"{type(self).__name__}({args})"

    def _check_fitted(self, attribute: str) -> None:
        if not hasattr(self, attribute):
            raise not_fitted_error(
                f"This {type(self).__name__} instance is not fitted yet; call 'fit' first."
            )


def not_fitted_error(message: str) -> NotFittedError:
    """abstain's ``NotFittedError``; also scikit-learn's when scikit-learn is already loaded.

    scikit-learn's model selection and ``check_estimator`` catch their own class; the
    error is an instance of both when ``sklearn`` is imported, without importing it here.
    """
    sk = sys.modules.get("sklearn.exceptions")
    sk_error = getattr(sk, "NotFittedError", None)
    if isinstance(sk_error, type) and issubclass(sk_error, Exception):
        return _with_sklearn(sk_error)(message)  # type: ignore[arg-type]
    return NotFittedError(message)


@functools.cache
def _with_sklearn(sk_error: type) -> type[NotFittedError]:
    """One class that is both abstain's and scikit-learn's ``NotFittedError``."""
    both = type("NotFittedError", (NotFittedError, sk_error), {})
    both.__module__ = NotFittedError.__module__
    return both


def accuracy(y: Any, prediction: NDArray[Any], sample_weight: Any = None) -> float:
    """The (weighted) fraction of ``prediction`` equal to ``y``: a classifier's ``score``.

    scikit-learn's ``ClassifierMixin.score`` without importing scikit-learn. ``y`` must be
    a non-empty 1-D array of labels of the length of ``prediction`` (one per row of ``X``);
    ``sample_weight`` non-negative finite weights of that length with a positive sum.
    """
    labels = as_labels(y, "y")
    check_same_length(X=prediction, y=labels)
    check_label_type(labels, prediction)
    correct = np.asarray(labels == prediction, dtype=bool)
    if sample_weight is None:
        return float(np.count_nonzero(correct) / correct.size)
    weight = as_losses(sample_weight, "sample_weight")
    check_same_length(y=labels, sample_weight=weight)
    top = float(weight.max())
    if top == 0.0:
        raise ValueError("sample_weight must have a positive sum; got all weights 0.")
    # each sum correctly rounded (whole weights give the exact fraction: 6 / 12 is 0.5, where
    # weights divided by their maximum summed to 0.4999999999999999): NumPy's sum where it
    # is exact (whole weights up to 2**53 in all), else math.fsum in units of a power of two
    # near the largest weight (exact), so that weights near the float maximum never overflow
    if top * weight.size <= 2.0**53 and np.all(weight == np.floor(weight)):
        return float(np.sum(weight[correct]) / np.sum(weight))
    weight = weight / math.ldexp(1.0, math.frexp(top)[1] - 1)
    return math.fsum(weight[correct].tolist()) / math.fsum(weight.tolist())


def derived_seeds(random_state: Any, k: int) -> list[int] | None:
    """``k`` seeds for the estimators inside one that takes ``random_state``: from an int or
    a SeedSequence (``SeedSequence(n)`` gives the seeds of ``n``, as it seeds as ``n``
    does), or the seed sequence of a Generator or BitGenerator (whose stream is not
    advanced); drawn from the stream of one without a seed sequence, or of a legacy
    ``RandomState``; None for None (they stay unseeded)."""
    if isinstance(random_state, np.random.SeedSequence):
        return [int(v) for v in random_state.generate_state(k)]
    if isinstance(random_state, np.random.BitGenerator):
        random_state = np.random.Generator(random_state)
    if isinstance(random_state, np.random.Generator):
        seq = random_state.bit_generator.seed_seq
        if isinstance(seq, np.random.SeedSequence):
            return [int(c.generate_state(1)[0]) for c in seq.spawn(k)]
        return [int(v) for v in random_state.integers(0, 2**32, size=k)]
    if isinstance(random_state, np.random.RandomState):
        return [int(v) for v in random_state.randint(0, 2**32, size=k, dtype=np.uint64)]
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        return [int(v) for v in np.random.SeedSequence(int(random_state)).generate_state(k)]
    return None


class merging(classmethod):  # type: ignore[type-arg]  # noqa: N801 - a decorator, like classmethod
    """A classmethod ``merge(cls, *tables)`` that merges the instance too when called on
    one: ``Table.merge(a, b)`` and ``a.merge(b)`` are the same table (as a plain
    classmethod, ``a.merge(b)`` returned ``b``'s rows alone and dropped ``a``'s)."""

    def __get__(self, obj: Any, cls: type | None = None) -> Any:
        if obj is None:
            return super().__get__(obj, cls)
        bound = functools.partial(self.__func__, type(obj), obj)
        return functools.update_wrapper(bound, self.__func__)


#: The categories of the library's own warnings that the current call silences.
_QUIET: contextvars.ContextVar[tuple[type[Warning], ...]] = contextvars.ContextVar(
    "abstain_quiet", default=())


@contextlib.contextmanager
def quiet(*categories: type[Warning]) -> Iterator[None]:
    """Silence the library's own warnings of ``categories`` (those issued by :func:`warn`)
    inside the block, in this thread (or task) only. ``warnings.catch_warnings`` saves and
    restores the filters of the whole process: calls in several threads restored each
    other's, and an "ignore" filter stayed for good."""
    token = _QUIET.set(_QUIET.get() + categories)
    try:
        yield
    finally:
        _QUIET.reset(token)


#: The folder of the package: frames of files under it are the library's own.
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def warn(message: str | Warning, category: type[Warning] | None = None,
         stacklevel: int | None = 1) -> None:
    """``warnings.warn`` (``stacklevel`` counted from the caller; None: the first frame
    outside the library, whatever the path through it), unless :func:`quiet` silences the
    warning's category here."""
    kind = type(message) if isinstance(message, Warning) else category or UserWarning
    if issubclass(kind, _QUIET.get()):
        return
    if stacklevel is None:
        frame, level = sys._getframe(0), 1
        while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE):
            frame, level = frame.f_back, level + 1
        warnings.warn(message, category, stacklevel=level)
        return
    warnings.warn(message, category, stacklevel=stacklevel + 1)


def column_names(X: Any) -> NDArray[np.object_] | None:
    """The column names of a data frame ``X`` where all are strings (scikit-learn's rule for
    ``feature_names_in_``), else None."""
    columns = getattr(X, "columns", None)
    if columns is None:
        return None
    names = np.asarray(list(columns), dtype=object)
    return names if names.size and all(isinstance(c, str) for c in names) else None


class NamedFeatures:
    """``feature_names_in_`` as scikit-learn keeps it: the column names of a data frame given
    to ``fit`` (all strings), saved with the fitted object and compared with those of every
    later input: other names, or the same in another order, are refused (the columns would
    be used in the wrong places); names on one side only warn."""

    _FIELDS: dict[str, Field] = {
        "feature_names_in_": Labels(unique_sorted=False, optional=True,
                                    convert=lambda v: np.asarray(v, dtype=object))}

    def _fit_names(self, X: Any) -> None:
        names = column_names(X)
        if names is not None:
            self.feature_names_in_ = names
        else:  # a refit on an array forgets the old names
            self.__dict__.pop("feature_names_in_", None)

    def _check_names(self, X: Any) -> None:
        names, fitted = column_names(X), getattr(self, "feature_names_in_", None)
        if names is not None and fitted is not None and not np.array_equal(names, fitted):
            if max(names.size, fitted.size) <= 8:
                shown = f": {fitted.tolist()}; got {names.tolist()}."
            else:
                j = next((i for i in range(min(names.size, fitted.size))
                          if names[i] != fitted[i]), min(names.size, fitted.size))
                shown = (f" ({fitted.size} names); got {names.size}, and column {j} is "
                         f"{names[j] if j < names.size else None!r} where fit had "
                         f"{fitted[j] if j < fitted.size else None!r}.")
            raise ValueError("The feature names should match those that were passed during "
                             "fit" + shown)
        # a detector with nothing to fit (MSP().fit()) was fitted on no columns at all
        if (names is None) != (fitted is None) and self._n_named() is not None:
            who = type(self).__name__
            warn(f"X has feature names, but {who} was fitted without feature names"
                 if fitted is None else "X does not have valid feature names, but "
                 f"{who} was fitted with feature names", UserWarning, stacklevel=None)

    def _n_named(self) -> int | None:
        """The number of columns that ``feature_names_in_`` names (None: not known)."""
        return getattr(self, "n_features_in_", None)

    def _loaded_names(self) -> None:
        """Refuse a loaded ``feature_names_in_`` that is not one string per column."""
        names, n = getattr(self, "feature_names_in_", None), self._n_named()
        if names is not None and ((n is not None and names.size != n)
                                  or not all(isinstance(c, str) for c in names)):
            raise ValueError(f"fitted.feature_names_in_ must hold {n} strings, one per "
                             f"column of the input, as a fit on a data frame keeps them; got "
                             f"{plain(names.tolist())}.")
