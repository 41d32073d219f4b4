"""``abstain.load_json`` (``abstain/_load.py``): the codec's registry is filled by the modules
that define serialisable classes, and ``load_json`` imports them, so that it reads every kind
in a fresh interpreter without the user importing anything first."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from estimators import CASES

import abstain
from abstain.exceptions import ConvergenceWarning
from abstain.tables import PairTable, ScoreTable

SRC = Path(abstain.__file__).resolve().parents[1]


def _fresh(code: str, *args: str) -> str:
    """Run ``code`` in a new interpreter that imports abstain from this source tree."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get(
        "PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True,
                          text=True, check=True)
    return done.stdout


def _documents() -> dict[str, str]:
    docs = {}
    for name, case in sorted(CASES.items()):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            docs[name] = case.fit(case.make()).to_json()
    docs["ScoreTable"] = ScoreTable.from_arrays([0.1, 0.2, 0.2], [0, 1, 0]).to_json()
    docs["PairTable"] = PairTable.from_arrays(np.array([[0.1, 0.3], [0.2, 0.4], [0.5, 0.1]]),
                                              [0, 1, 0], is_ood=[False, False, True]).to_json()
    return docs


def test_load_json_reads_every_kind_in_a_fresh_interpreter(tmp_path):
    # nested documents among them: DoubleScoreDetector nests two detectors, BankDetector and
    # DetectorBank a list of them, ScoreCombiner and GuaranteedDetector their combiners
    docs = _documents()
    path = tmp_path / "docs.json"
    path.write_text(json.dumps(docs))
    out = _fresh("import json, sys, abstain\n"
                 "docs = json.load(open(sys.argv[1]))\n"
                 "for name, doc in docs.items():\n"
                 "    obj = abstain.load_json(doc)\n"
                 "    assert type(obj).__name__ == name, (name, type(obj))\n"
                 "    assert obj.to_json() == doc, name\n"
                 "print(len(docs))\n", str(path))
    assert int(out) == len(docs) == len(CASES) + 2


def test_load_json_knows_every_kind_that_any_module_registers():
    # a fresh interpreter: the kinds registered by importing abstain._load are those of every
    # module of the library (abstain.torch only where PyTorch is installed)
    code = ("import importlib, pkgutil, sys, abstain\n"
            "from abstain._core.serialize import registered_kinds\n"
            "assert registered_kinds() == {}, sorted(registered_kinds())\n"
            "import abstain._load\n"
            "first = sorted(registered_kinds())\n"
            "for info in pkgutil.walk_packages(abstain.__path__, 'abstain.'):\n"
            "    if (info.name.split('.')[1] in ('torch', 'datasets', 'plot', 'distributed')\n"
            "            or info.name.endswith('__main__')):\n"
            "        continue\n"
            "    importlib.import_module(info.name)\n"
            "print(first == sorted(registered_kinds()), len(first))\n")
    same, count = _fresh(code).split()
    assert same == "True" and int(count) == len(CASES) + 2


@pytest.mark.parametrize("package", ["torch", "datasets", "plot", "distributed"])
def test_the_skipped_packages_register_no_kind(package):
    # what the walk above skips (optional extras) defines no serialisable class
    root = SRC / "abstain" / package
    files = sorted(root.rglob("*.py")) if root.is_dir() else [root.with_suffix(".py")]
    assert files and not any("@serializable" in f.read_text() for f in files)


def test_import_abstain_stays_light():
    # the top-level package imports load_json's module (and NumPy) on first use only
    out = _fresh("import sys, abstain\n"
                 "print('abstain._load' in sys.modules, 'numpy' in sys.modules)\n"
                 "abstain.load_json\n"
                 "print('abstain._load' in sys.modules)\n")
    assert out.split() == ["False", "False", "True"]


def test_the_command_line_imports_load_json_when_it_loads_a_rule():
    # every command imports abstain.app.rules at start-up; load_json (and with it combine,
    # ordinal, ...) only when a rule file is read
    out = _fresh("import sys, abstain.app.cli\n"
                 "print('abstain._load' in sys.modules, 'abstain.combine' in sys.modules)\n")
    assert out.split() == ["False", "False"]


@pytest.mark.parametrize("where", ["top", "nested"])
def test_a_key_written_twice_is_refused_not_read_as_its_last_value(where, tmp_path):
    from abstain.models import BoundedAbstention

    rule = BoundedAbstention(0.5).fit([0.1, 0.9, 0.2, 0.7], [0.0, 1.0, 0.0, 1.0])
    text = rule.to_json()
    doc = json.loads(text)
    key = "format" if where == "top" else "threshold_"
    assert key in (doc if where == "top" else doc["fitted"])
    value = json.dumps(doc[key] if where == "top" else doc["fitted"][key])
    twice = text.replace(f'"{key}": {value}', f'"{key}": {value}, "{key}": {value}', 1)
    assert twice != text
    path = tmp_path / "rule.json"
    path.write_text(twice)
    for source in (twice, path):
        with pytest.raises(ValueError, match=f"holds the key '{key}' twice in one object"):
            abstain.load_json(source)
    assert abstain.load_json(text).threshold_ == rule.threshold_


def test_an_infeasible_rule_that_accepts_anything_is_refused():
    from abstain import BoundedImprovement
    from abstain.models import BoundedTPRFPR

    rng = np.random.default_rng(0)
    s, is_ood = rng.normal(size=40), rng.random(40) < 0.5
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rules = [BoundedImprovement(1e-9).fit([0.1, 0.2], [1.0, 1.0]),
                 BoundedTPRFPR(0.999, 0.001).fit(s, (rng.random(40) < 0.5) * 1.0, is_ood)]
    for rule in rules:
        assert rule.feasible_ is False and rule.threshold_ == -np.inf
        doc = json.loads(rule.to_json())
        assert abstain.load_json(json.dumps(doc)).threshold_ == -np.inf
        doc["fitted"]["threshold_"] = 0.5  # a hand edit: the rule would accept rows
        with pytest.raises(ValueError, match=r"fitted\.threshold_ must be -inf for "
                                             r"fitted\.feasible_ = false"):
            abstain.load_json(json.dumps(doc))
