"""Faults on a cluster's processes, each with an undo that the runner always runs."""
