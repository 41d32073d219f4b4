"""Random inputs with heavy ties: seeded NumPy generators and hypothesis strategies."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

LOSS_KINDS = ("zero_one", "quarters", "uniform", "exponential")


def random_losses(rng: np.random.Generator, n: int, kind: str) -> np.ndarray:
    if kind == "zero_one":
        return rng.integers(0, 2, n).astype(float)
    if kind == "quarters":  # dyadic: every partial sum is exact in float64
        return rng.integers(0, 9, n) / 4.0
    if kind == "uniform":
        return rng.uniform(0.0, 1.0, n)
    if kind == "exponential":
        return rng.exponential(2.0, n)
    raise ValueError(kind)


def random_uncertainty(rng: np.random.Generator, n: int, n_levels: int | None = 3) -> np.ndarray:
    """Scores from ``n_levels`` distinct values (heavy ties); ``None`` = continuous."""
    if n_levels is None:
        return rng.normal(size=n)
    levels = np.sort(rng.normal(size=n_levels))
    return levels[rng.integers(0, n_levels, n)]


def random_case(rng: np.random.Generator, n_max: int = 8, n_min: int = 1):
    """(losses, uncertainty) of a random size in [n_min, n_max], mostly with heavy ties."""
    n = int(rng.integers(n_min, n_max + 1))
    kind = LOSS_KINDS[int(rng.integers(len(LOSS_KINDS)))]
    n_levels = [1, 2, 3, 3, 3, 4, None][int(rng.integers(7))]
    return random_losses(rng, n, kind), random_uncertainty(rng, n, n_levels)


def proper_uncertainty(rng: np.random.Generator, losses: np.ndarray, n_groups: int = 3):
    """A score that is proper on the sample: each row's score is the mean loss of a random
    group of rows, so the tie-group mean losses are non-decreasing in the score."""
    n = len(losses)
    group = rng.integers(0, n_groups, n)
    return np.array([losses[group == group[j]].mean() for j in range(n)])


def increasing_remap(uncertainty: np.ndarray, new_values: np.ndarray) -> np.ndarray:
    """Strictly increasing transform: the k-th smallest distinct score -> k-th of new_values."""
    distinct = np.unique(uncertainty)
    new_values = np.sort(np.asarray(new_values, dtype=float))
    assert len(new_values) >= len(distinct) and np.all(np.diff(new_values) > 0)
    return new_values[np.searchsorted(distinct, uncertainty)]


# --------------------------------------------------------------------------- hypothesis
_finite_loss = st.one_of(
    st.sampled_from([0.0, 1.0]),
    st.integers(0, 8).map(lambda k: k / 4.0),
    st.floats(0.0, 100.0, allow_nan=False, allow_infinity=False, allow_subnormal=False),
)


@st.composite
def losses_and_uncertainty(draw, min_size: int = 1, max_size: int = 8, max_levels: int = 3):
    """Small (losses, uncertainty) pairs; scores take at most ``max_levels`` distinct values
    (or are arbitrary floats one time in four)."""
    n = draw(st.integers(min_size, max_size))
    loss_kind = draw(st.sampled_from(["zero_one", "quarters", "any"]))
    if loss_kind == "zero_one":
        elements = st.sampled_from([0.0, 1.0])
    elif loss_kind == "quarters":
        elements = st.integers(0, 8).map(lambda k: k / 4.0)
    else:
        elements = _finite_loss
    losses = draw(hnp.arrays(np.float64, n, elements=elements))
    if draw(st.integers(0, 3)) == 0:
        uncertainty = draw(
            hnp.arrays(
                np.float64,
                n,
                elements=st.floats(-1e6, 1e6, allow_nan=False, allow_subnormal=False),
            )
        )
    else:
        levels = draw(
            st.lists(
                st.floats(-10, 10, allow_nan=False, allow_subnormal=False),
                min_size=1,
                max_size=max_levels,
                unique=True,
            )
        )
        idx = draw(hnp.arrays(np.int64, n, elements=st.integers(0, len(levels) - 1)))
        uncertainty = np.array(levels, dtype=float)[idx]
    return losses, uncertainty + 0.0  # + 0.0 turns -0.0 into 0.0


@st.composite
def increasing_values(draw, count: int):
    """``count`` strictly increasing finite floats (the image of a monotone transform)."""
    values = draw(
        st.lists(
            st.floats(-1e3, 1e3, allow_nan=False, allow_subnormal=False),
            min_size=count,
            max_size=count,
            unique=True,
        )
    )
    values = sorted(v + 0.0 for v in values)
    if len(set(values)) < count:  # -0.0 and 0.0 collapsed
        values = [float(k) for k in range(count)]
    return np.array(values)


# Bad (losses, uncertainty) pairs and the argument name the error must mention.
nan, inf = float("nan"), float("inf")
BAD_ARRAYS = {
    "empty": ([], [], "losses|uncertainty"),
    "losses_nan": ([0.0, nan], [0.0, 1.0], "losses"),
    "losses_inf": ([0.0, inf], [0.0, 1.0], "losses"),
    "losses_negative": ([0.0, -0.5], [0.0, 1.0], "losses"),
    "uncertainty_nan": ([0.0, 1.0], [nan, 1.0], "uncertainty"),
    "uncertainty_inf": ([0.0, 1.0], [0.0, inf], "uncertainty"),
    "uncertainty_minus_inf": ([0.0, 1.0], [-inf, 0.0], "uncertainty"),
    "mismatched_lengths": ([0.0, 1.0, 0.0], [0.0, 1.0], "losses|uncertainty"),
    "losses_2d": ([[0.0, 1.0], [1.0, 0.0]], [0.0, 1.0, 2.0, 3.0], "losses"),
    "uncertainty_2d": ([0.0, 1.0, 0.0, 1.0], [[0.0, 1.0], [2.0, 3.0]], "uncertainty"),
    "uncertainty_empty": ([0.0], [], "losses|uncertainty"),
}
