"""The private core of abstain: imports nothing above it (NumPy, SciPy and
:mod:`abstain.exceptions` only).

- :mod:`.validation`: every input check, one message format;
- :mod:`.base`: the estimator contract (``get_params``, ``set_params``, ``clone``);
- :mod:`.groups`: tie groups, the one sort every metric and reject model shares;
- :mod:`.decision`: the randomised threshold rule of every reject rule;
- :mod:`.risk_bounds`: risk upper bounds and the guaranteed-risk search;
- :mod:`.ood_search` and :mod:`.ood_sample`: the OOD rule searches over one score or
  the directions of two;
- :mod:`.serialize`: the one JSON codec and the registry of every fitted kind, with the
  field types of the schemas in :mod:`.schema`;
- :mod:`.files`: atomic writes; :mod:`.progress`: the progress bar;
  :mod:`.optional`: lazy imports of optional extras.

Nothing here is public API: names may change without notice.
"""
