"""The one scenario engine: its run loop, actions, the workload plug-in interface, setup, the site
a run opens and one run judged.
"""
