"""Data sets: synthetic examples with known densities."""

from ._synthetic import SyntheticOOD1D, synthetic_ood_1d

__all__ = ["SyntheticOOD1D", "synthetic_ood_1d"]
