"""The failover atlas: a grid of faults × profiles × clients × modes, N runs per cell, p50/p95 per cell (docs/atlas.md).

grid.py     the axes, a cell (its scenario and --set changes), the --cells syntax, the default grid, the estimate
runner.py   groups (one cluster per mode and profile), resume, progress with an ETA, the exit code
launch.py   the real clusters and runs: one cluster at a time, each run through the code 'failsafe run' uses
store.py    one JSON per cell (its runs and their p50/p95), atlas.json over every stored cell
render.py   atlas.html: heat maps of the cells, each linking to its runs' report.html
"""
