"""Explanations of the checkers' anomalies: what surrounds each in the history, in one sentence.
Not verdicts.
"""
