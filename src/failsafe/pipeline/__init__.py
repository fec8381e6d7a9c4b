"""The PySpark pipeline: pure transforms, its I/O edges, and reading its output back to verify it."""
