"""Turning game tables into numbers: estimators with the deal as the unit, per-deal metrics,
comparisons, ratings and the ladder. DataFrame in, DataFrame out; plays no games itself.
"""
