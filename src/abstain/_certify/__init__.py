"""Risk certification: upper bounds on a selective risk and the searches that certify a
threshold. Private to the library: names may change without notice.

- :mod:`.risk_bounds`: risk upper bounds, the guaranteed-risk search (SGR) and conformal
  risk control;
- :mod:`.ltt`: the Learn-then-Test p-values and fixed-sequence searches;
- :mod:`.certify`: the certified-risk search that ``BoundedImprovement(bound=...)`` names.
"""
