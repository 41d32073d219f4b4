"""The private core of abstain: the infrastructure every layer shares. It imports nothing
above it (NumPy, SciPy and :mod:`abstain.exceptions` only).

- :mod:`.validation`: every input check, one message format;
- :mod:`.base`: the estimator contract (``get_params``, ``set_params``, ``clone``);
- :mod:`.groups`: tie groups, the one sort every metric and reject model shares;
- :mod:`.decision`: the randomised threshold rule of every reject rule;
- :mod:`.exact`: exact predicates, error-free sums and products;
- :mod:`.serialize`: the one JSON codec and the registry that every fitted kind joins when
  its module is imported, with the field types of the schemas in :mod:`.schema`;
- :mod:`.files`: atomic writes; :mod:`.progress`: the progress bar;
  :mod:`.optional`: lazy imports of optional extras; :mod:`.version`: the version.

The score tables are public in :mod:`abstain.tables`; the OOD rule searches and the risk
certification are private packages above this one (``abstain._ood_search``,
``abstain._certify``). Nothing here is public API: names may change without notice.
"""
