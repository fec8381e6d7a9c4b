"""Randomized fault campaigns: schedules drawn over the fault registry (nemesis.py), run many times on one
cluster (runner.py), summed up (stats.py, index.py), and shrunk to the smallest schedule that still fails
(shrink.py). A run's schedule is a normal scenario file (schedule.py) that 'failsafe run' replays."""
