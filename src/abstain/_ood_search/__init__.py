"""The OOD rule searches: the best threshold rule of one score, or of a direction of two
scores, under a constraint or a cost. Private to the library: names may change without
notice.

- :mod:`.search`: the sweeps over sorted tie groups, the grid and the exact search of
  directions;
- :mod:`.sample`: a validated OOD sample and the search for its best rule, shared by the
  OOD metrics and the OOD reject models (``N_DIRECTIONS`` is the one default number of
  directions);
- :mod:`.branch`: the exact double-score search by branch and bound over intervals of
  directions;
- :mod:`.envelope` and :mod:`.envelope_branch`: the exact envelope of a pair's curves over
  all directions, swept in full or pruned by a lower bound.
"""
