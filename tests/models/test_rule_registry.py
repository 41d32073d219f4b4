"""abstain.models.REJECT_RULES: every public reject rule is registered, as data."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import abstain.models
from abstain._core.serialize import registered_kinds
from abstain.models import REJECT_RULES, CostBased, RuleSpec, RuleTarget, register_rule


def test_every_public_reject_rule_is_registered():
    # A reject rule on score columns is a class of abstain.models serialised as a selective
    # ("rule") or OOD ("ood") kind; each one has its registry entry, under its own name.
    kinds = registered_kinds()
    public = {name for name in abstain.models.__all__
              if inspect.isclass(getattr(abstain.models, name))
              and name in kinds and kinds[name].family in ("rule", "ood")}
    assert public == {"CostBased", "BoundedImprovement", "BoundedAbstention", "BoundedTPRFPR",
                      "BoundedPrecisionRecall", "CostBasedOOD"}
    assert public <= set(REJECT_RULES)
    for name, spec in REJECT_RULES.items():
        assert spec.model.__name__ == name


@pytest.mark.parametrize("name", list(REJECT_RULES))
def test_each_entry_names_parameters_of_its_class(name):
    spec = REJECT_RULES[name]
    params = inspect.signature(spec.model).parameters
    for target in (*spec.targets, *spec.companions):
        assert target.name in params, target.name
        assert set(target.requires) <= {t.name for t in spec.companions}
    assert "random_state" in params
    assert spec.n_scores in ((1,), (1, 2)) and (spec.n_scores == (1,) or spec.ood)


def test_register_rule_refuses_a_second_meaning_of_an_option(monkeypatch):
    class Other(CostBased):
        pass

    spec = RuleSpec(Other, (RuleTarget("reject_cost", "another help"),), lambda r, c: [])
    monkeypatch.setitem(REJECT_RULES, "Other", REJECT_RULES["CostBased"])
    with pytest.raises(ValueError, match=r"^spec declares the option 'reject_cost' otherwise "
                                         r"than CostBased; share one RuleTarget\.$"):
        register_rule(spec)


def test_the_name_of_a_rule_joins_its_targets():
    assert [s.name for s in REJECT_RULES.values()] == [
        "target_coverage", "target_risk", "reject_cost", "tpr/fpr", "precision/recall",
        "reject_id_cost/predict_ood_cost"]


def test_register_rule_refuses_a_spec_the_command_line_cannot_offer():
    class Clash(CostBased):
        def __init__(self, reject_cost=0.5, score=0.0, random_state=None):
            super().__init__(reject_cost, random_state=random_state)
            self.score_ = score

    summary = lambda r, c: []  # noqa: E731
    for spec, error, match in (
        ("CostBased", TypeError, r"^register_rule takes a RuleSpec; got str\.$"),
        (RuleSpec(CostBased, (), summary), ValueError,
         r"^the spec of CostBased must name at least one target\.$"),
        (RuleSpec(CostBased, (RuleTarget("not_a_param", "x"),), summary), ValueError,
         r"^'not_a_param' is no parameter of CostBased; a target, a companion and "
         r"random_state must be keywords of its class\.$"),
        (RuleSpec(Clash, (RuleTarget("score", "x"),), summary), ValueError,
         r"^the target 'score' of Clash would be the option --score, which abstain fit "
         r"already has; rename it\.$"),
    ):
        with pytest.raises(error, match=match):
            register_rule(spec)  # type: ignore[arg-type]
    assert "Clash" not in REJECT_RULES


def test_the_reserved_names_are_the_options_of_abstain_fit():
    from abstain.app.cli import _parser
    from abstain.models._registry import FIT_OPTIONS

    sub = next(a for a in _parser()._actions if a.dest == "command")
    fit = sub.choices["fit"]
    targets = {t.name for s in REJECT_RULES.values() for t in (*s.targets, *s.companions)}
    options = {a.dest for a in fit._actions} - targets
    assert options <= FIT_OPTIONS, options - FIT_OPTIONS


def test_the_infeasibility_message_of_tiny_losses_and_of_a_binned_table():
    import warnings

    from abstain import BoundedImprovement, ScoreTable
    from abstain.models._registry import _round

    # 10.0**k overflowed for values below about 1e-305
    for x in (1.5e-306, 5e-324, 1.7e308, 0.12345678):
        assert float(_round(x, down=True)) <= x <= float(_round(x, down=False))
    assert _round(1.5e-306, down=False) == "1.5e-306"
    spec = REJECT_RULES["BoundedImprovement"]
    rng = np.random.default_rng(0)
    binned = ScoreTable.from_arrays(rng.random(100), (rng.random(100) < 0.44) * 1.0).binned(5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rule = BoundedImprovement(0.01).fit(binned)
    assert "attainable on these 100 rows" in spec.infeasible(rule, (binned,), ["u"], None)
