"""The run store: a run's directory, stored runs read back, re-judged, and repeated runs as
statistics.
"""
