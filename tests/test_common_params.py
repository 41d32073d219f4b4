"""Parameter constraints, checked on every public class and function that states them:
each class states one for every parameter of ``__init__`` (or is listed below with the
reason), and a value outside each constraint is refused with one ``ValueError`` of one line
that names the parameter."""

from __future__ import annotations

import importlib
import inspect
import math
from typing import Any

import numpy as np
import pytest
from test_architecture import _public_modules

from abstain._core.base import ParamsMixin
from abstain._core.validation import (
    Boolean,
    InstanceOf,
    Interval,
    IsArray,
    IsCallable,
    Options,
    RandomState,
)
from abstain.combine import BankDetector
from abstain.detectors import MSP, DetectorBank
from abstain.models import SelectiveClassifier


def _public_objects() -> dict[str, Any]:
    found: dict[int, tuple[str, Any]] = {}
    for module_name in _public_modules():
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                found.setdefault(id(obj), (f"{module_name}.{name}", obj))
    return dict(found.values())


PUBLIC = _public_objects()
CLASSES = {k: v for k, v in PUBLIC.items()
           if inspect.isclass(v) and issubclass(v, ParamsMixin)}
FUNCTIONS = {k: v for k, v in PUBLIC.items()
             if inspect.isfunction(v) and hasattr(v, "_parameter_constraints")}


def _init_params(cls: type) -> list[str]:
    return [p.name for p in inspect.signature(cls.__init__).parameters.values()
            if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


#: Parameters checked by code in ``_validate_params`` rather than by a constraint, and why.
CHECKED_IN_CODE = {
    ("ShiftedBaseScores", "kinds"): "a list whose entries are checked one by one",
    ("ShiftedBaseScores", "shifts"): "a list whose entries are checked one by one",
    ("CSI", "shifts"): "a list whose entries are checked one by one",
    ("SupCSI", "shifts"): "a list whose entries are checked one by one",
    ("DetectorBank", "detectors"): "a non-empty list of detectors, checked entry by entry",
    ("DetectorBank", "names"): "one distinct name per detector: depends on detectors",
    ("BankDetector", "bank"): "a DetectorBank, recognised by its methods (combine does not "
                              "import the detectors' classes)",
    ("DoubleScoreDetector", "selector"): "an OOD rule of abstain.models, whose classes are "
                                         "imported only when the check runs",
    ("SelectiveClassifier", "estimator"): "any scikit-learn classifier, cloned and fitted",
    ("SelectiveClassifier", "reject_model"): "one of the registered reject rules of one "
                                             "score (abstain.models.REJECT_RULES)",
    ("BoundedTPRFPR", "search"): "checked with n_directions by the OOD rules' search options",
    ("BoundedTPRFPR", "n_directions"): "checked with search by the OOD rules' search options",
    ("BoundedTPRFPR", "random_state"): "checked with search by the OOD rules' search options",
}
for _rule in ("BoundedPrecisionRecall", "CostBasedOOD"):
    for _name in ("search", "n_directions", "random_state"):
        CHECKED_IN_CODE[(_rule, _name)] = CHECKED_IN_CODE[("BoundedTPRFPR", _name)]

#: Classes whose parameters are not yet stated as constraints: checked by hand-written code.
NOT_CONVERTED: set[str] = set()


def test_every_class_parameter_has_a_constraint() -> None:
    missing = []
    for path, cls in CLASSES.items():
        if cls.__name__ in NOT_CONVERTED:
            continue
        constraints = cls._parameter_constraints
        for name in _init_params(cls):
            if name not in constraints and (cls.__name__, name) not in CHECKED_IN_CODE:
                missing.append(f"{path}({name})")
        assert set(constraints) <= set(_init_params(cls)), path
    assert not missing, "parameters without a constraint: " + ", ".join(missing)


#: Public classes with ``__init__`` parameters that are not estimators (no ParamsMixin, no
#: ``_parameter_constraints``), and why.
NOT_ESTIMATORS = {
    "StreamingMetric": "checks its metric name and options in __init__ with the metric's "
                       "own messages (not yet a constraint)",
    "BinnedTable": "a table of counts built from arrays: its edges are data",
    "TableResampler": "rows grouped once for bootstrap tables: its arguments are data",
    "PairResampler": "a pair's rows sorted once for bootstrap metrics: its arguments are data",
    "SyntheticOOD1D": "a data set of the examples: its arguments are the mixture's data",
    "RiskCoverageDisplay": "a figure's data (curves and points), as scikit-learn's displays",
    "RiskAtFPRDisplay": "a figure's data (curves and points), as scikit-learn's displays",
    "SmallCNN": "a torch module of the examples (extra torch)",
    "CSINetwork": "a torch module (extra torch): checks its sizes in __init__, as SmallCNN",
    "Interrupted": "an exception of the command line",
    "InfeasibleTargetWarning": "a warning: its message and what the search attains are data",
    "MetricSpec": "a registry entry (a frozen dataclass), checked by register_metric",
    "RuleSpec": "a registry entry (a frozen dataclass), checked by register_rule",
    "RuleTarget": "a target of a registry entry, checked by register_rule",
    "FPRAtTPR": "a torchmetrics Metric (extra torchmetrics): checks tpr in __init__ with "
                "check_params, then takes torchmetrics' own keyword arguments",
    "SelectiveRiskAtCoverage": "a torchmetrics Metric (extra torchmetrics): checks coverage "
                               "in __init__ with check_params, then torchmetrics' arguments",
}


def test_every_other_public_class_with_parameters_is_listed() -> None:
    others = {cls.__name__ for cls in PUBLIC.values()
              if inspect.isclass(cls) and not issubclass(cls, ParamsMixin)
              and "__init__" in vars(cls) and _init_params(cls)}
    assert others <= set(NOT_ESTIMATORS), sorted(others - set(NOT_ESTIMATORS))


def test_the_lists_of_exceptions_name_real_parameters() -> None:
    names = {cls.__name__: cls for cls in CLASSES.values()}
    for cls_name, param in CHECKED_IN_CODE:
        assert param in _init_params(names[cls_name])
        assert param not in names[cls_name]._parameter_constraints
    assert NOT_CONVERTED <= set(names)


def _candidates(constraint: Any) -> list[Any]:
    """Values outside ``constraint`` (and some inside, filtered out by the caller)."""
    if isinstance(constraint, Interval):
        out: list[Any] = ["0.5", True, [0.5], object()]
        step = 1 if constraint.kind is int else 0.5
        if constraint.left is not None:
            out.append(constraint.left - step)
            if constraint.closed in ("right", "neither"):
                out.append(constraint.left)
        if constraint.right is not None:
            out.append(constraint.right + step)
            if constraint.closed in ("left", "neither"):
                out.append(constraint.right)
        if constraint.kind is float:
            out += [math.nan, math.inf, -math.inf, 10**400]
        else:
            out += [1.5, np.float64(2.0)]
        return out
    if isinstance(constraint, Options):
        return ["no such option", 3, [constraint.options[0]]]
    if isinstance(constraint, Boolean):
        return ["yes", 1, None]
    if isinstance(constraint, RandomState):
        return [-1, "seed", 1.5, True]
    if isinstance(constraint, (InstanceOf, IsCallable, IsArray)):
        return [object(), 5]
    raise AssertionError(f"no invalid values for {constraint!r}")


def _accepts(allowed: list[Any], value: Any) -> bool:
    return any(value is None if c is None else c.accepts(value) for c in allowed)


def _invalid_values(allowed: list[Any]) -> list[Any]:
    values = [None] if None not in allowed else []
    for constraint in allowed:
        if constraint is not None:
            values += _candidates(constraint)
    return [v for v in values if not _accepts(allowed, v)]


#: Arguments a class needs to be built, beyond its defaults.
REQUIRED: dict[str, Any] = {
    "BankDetector": lambda: BankDetector(DetectorBank([MSP()])),
    "SelectiveClassifier": lambda: SelectiveClassifier(object()),  # estimator: not checked
}


def _instance(cls: type) -> Any:
    make = REQUIRED.get(cls.__name__)
    return make() if make is not None else cls()


def _check_message(exc: pytest.ExceptionInfo[ValueError], name: str) -> None:
    message = str(exc.value)
    assert "\n" not in message, message
    assert message.startswith(name + " must "), message
    assert message.endswith("."), message


CLASS_CASES = [(path, name) for path, cls in CLASSES.items()
               for name in cls._parameter_constraints]


@pytest.mark.parametrize(("path", "name"), CLASS_CASES)
def test_a_class_refuses_each_invalid_value_by_name(path: str, name: str) -> None:
    cls = CLASSES[path]
    obj = _instance(cls)
    obj._validate_params()  # the defaults are valid
    for value in _invalid_values(cls._parameter_constraints[name]):
        obj.set_params(**{name: value})
        with pytest.raises(ValueError) as exc:
            obj._validate_params()
        _check_message(exc, name)
    assert _invalid_values(cls._parameter_constraints[name])


FUNCTION_CASES = [(path, name) for path, func in FUNCTIONS.items()
                  for name in func._parameter_constraints]


@pytest.mark.parametrize(("path", "name"), FUNCTION_CASES)
def test_a_function_refuses_each_invalid_value_by_name(path: str, name: str) -> None:
    func = FUNCTIONS[path]
    signature = inspect.signature(func)
    others = {p.name: None for p in signature.parameters.values()
              if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    for other, allowed in func._parameter_constraints.items():
        if other != name:  # a valid value: only the parameter under test is refused
            options = [c.options[0] for c in allowed if isinstance(c, Options)]
            others[other] = next(v for v in (*options, 0.5, 1, 2, None, True)
                                 if _accepts(allowed, v))
    for value in _invalid_values(func._parameter_constraints[name]):
        with pytest.raises(ValueError) as exc:  # refused before the arrays are read
            func(**{**others, name: value})
        _check_message(exc, name)


def test_the_walk_found_the_classes_and_functions() -> None:
    assert len(CLASSES) > 20
    assert len(FUNCTIONS) > 25
