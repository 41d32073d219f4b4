"""Brute-force reference implementations for the abstain test suite.

Everything here is written straight from the definitions (Franc, Prusa & Voracek,
"Optimal strategies for reject option classifiers", JMLR 2023), favouring plain loops,
exhaustive enumeration, exact rational arithmetic (``fractions.Fraction``) and
``scipy.optimize.linprog`` over speed. Only tiny inputs (n <= ~30, and n <= 8 for the
permutation averages) are meant to be passed in.

Conventions shared with the library: ``losses`` are non-negative, ``uncertainty`` is a
score where HIGHER means "reject first"; accepting takes the lowest scores first.
"""
