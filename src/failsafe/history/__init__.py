"""The history of one scenario run: the op model, the recorder that writes it, the loader that reads it.

This package imports nothing else of failsafe's, so checkers and reports can depend on it alone.
The format is documented in docs/history.md.
"""
