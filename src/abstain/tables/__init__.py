"""Score tables: the mergeable summaries of the rows that metrics and fits take in place of
their arrays.

Every tie-aware metric and reject-model fit depends on the rows only through their distinct
scores with per-score totals, so a table built in pieces (per batch of a stream, per file,
per partition of a cluster) gives the same result as the rows: bit for bit where the loss
sums are exact (0/1 and whole-number losses, losses on a grid of powers of two), else to the
rounding of sums added in another order.
:class:`ScoreTable` holds one score column, :class:`PairTable` the distinct pairs of two
(for the double-score fits), and :class:`BinnedTable` a score table on a fixed grid of
bins, whose metrics come with a certified error (:class:`Bounded`). :class:`TableResampler`
gives the score table of any bootstrap resample of rows grouped once (a pass, no sort),
and the totals of many resamples at once (:class:`ResampleTotals`).

Examples
--------
>>> from abstain.metrics import aurc
>>> from abstain.tables import ScoreTable
>>> table = ScoreTable.from_arrays([0.1, 0.2, 0.2, 0.9], [0, 1, 0, 1])
>>> table
ScoreTable(n=4, groups=3)
>>> aurc(table) == aurc([0, 1, 0, 1], [0.1, 0.2, 0.2, 0.9])
True
"""

from ._binned import BinnedTable, Bounded
from ._pair import PairTable
from ._resample import ResampleTotals, TableResampler
from ._score import ScoreTable

__all__ = ["ScoreTable", "PairTable", "BinnedTable", "Bounded", "TableResampler",
           "ResampleTotals"]
