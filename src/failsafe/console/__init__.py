"""The failsafe console: a web page on 127.0.0.1 that shows the cluster live and breaks it on request.

poller.py        one thread polls the cluster for every open page (nodes, metadata, configs, groups, runs)
views.py         what each view shows, built from what the poller read (pure)
timeline.py      leadership, ISR, node and fault changes since the console started (pure)
runs.py          the runs under the cluster directory, the live counts of a running one, one run's history on request
rebalances.py    a run's rebalance history per consumer group, from the rebalance checker's events (pure)
share_groups.py  a run's share groups: acknowledgements and records in flight per partition (pure)
app.py           the ASGI app (Starlette): token check, JSON API, server-sent events, fault actions
server.py        binding 127.0.0.1, uvicorn, the URL with its token
"""
