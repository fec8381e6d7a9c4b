"""The transaction dependency graph and its cycles: Adya's G0 and G1c, found the way Elle finds them.

A node is a transaction, (process, txn). An edge T1 -> T2 says T2 must come after T1 in any serial order:

    wr  T2 read a write of T1 (T2: the transaction a consume-transform-produce worker consumed the record into)
    ww  in a partition's final log, a write of T2 directly follows a write of T1 (plain writes skipped)

A cycle has no serial order. G0 is a cycle of ww edges only; G1c a cycle with at least one wr edge.
Every edge inside a strongly connected component lies on a cycle, so the components say exactly
which anomalies exist: a component of the ww-only graph with two or more transactions holds a G0
cycle, a component of the whole graph holding a wr edge holds a G1c cycle. Each such component is
counted once and explained by one shortest cycle (jepsen-io/elle: name the smallest cycle, with
its edges). Pure: frames in, counts and cycles out.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import polars as pl

WR = "wr"
WW = "ww"
G0 = "G0"
G1C = "G1c"
EXAMPLES = 5
Node = tuple[str, int]
# One row per edge and the write it is about: the write of ``from`` that ``to`` read (wr) or directly followed in the
# log (ww).
EDGE_SCHEMA = {
    "from_process": pl.String,
    "from_txn": pl.Int64,
    "to_process": pl.String,
    "to_txn": pl.Int64,
    "type": pl.String,
    "topic": pl.String,
    "value": pl.String,
}


@dataclass(frozen=True)
class Cycles:
    """Per anomaly (G0, G1c): how many components hold one, a shortest cycle of the first few, and every transaction of
    those components."""

    counts: dict[str, int] = field(default_factory=lambda: {G0: 0, G1C: 0})
    examples: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: {G0: [], G1C: []})
    members: dict[str, set[Node]] = field(default_factory=lambda: {G0: set(), G1C: set()})


def wr_edges(writes: pl.DataFrame, reads: pl.DataFrame) -> pl.DataFrame:
    """writer -> reader for every read of a transactional write by a transaction.

    writes: (process, txn, topic, value) of the transactional writes; reads: (process, txn, topic, value)
    of the records read into a transaction (txn not null). A transaction reading its own write adds no edge.
    """
    writers = _writers(writes, "from")
    readers = reads.select(
        pl.col("process").alias("to_process"), pl.col("txn").alias("to_txn"), "topic", "value"
    ).drop_nulls()
    return _edges(readers.join(writers, on=["topic", "value"], how="inner").with_columns(pl.lit(WR).alias("type")))


def ww_edges(writes: pl.DataFrame, log: pl.DataFrame) -> pl.DataFrame:
    """writer(i) -> writer(i + 1) for consecutive transactional writes of each partition's final log.

    Records no transaction wrote (plain writes, values nobody sent) are skipped, not chain breakers.
    """
    placed = (
        log.select("topic", "partition", "offset", "value")
        .drop_nulls("value")
        .unique(subset=["topic", "partition", "offset"], keep="first")
    )
    placed = placed.join(_writers(writes, "to"), on=["topic", "value"], how="inner").sort(
        "topic", "partition", "offset"
    )
    previous = [
        pl.col(name).shift(1).over("topic", "partition").alias(alias)
        for name, alias in (("to_process", "from_process"), ("to_txn", "from_txn"), ("value", "from_value"))
    ]
    steps = placed.with_columns(previous).drop_nulls("from_txn")
    return _edges(steps.with_columns(pl.col("from_value").alias("value"), pl.lit(WW).alias("type")))


def dependency_graph(edges: Iterable[pl.DataFrame]) -> nx.DiGraph:
    """The graph of the given edge frames; each edge's ``via`` maps its types to the first write that made it: {"wr":
    (topic, value)}."""
    graph = nx.DiGraph()
    frames = [frame for frame in edges if frame.height]
    if not frames:
        return graph
    unique = pl.concat(frames).unique(
        subset=["from_process", "from_txn", "to_process", "to_txn", "type"], keep="first", maintain_order=True
    )
    for from_process, from_txn, to_process, to_txn, kind, topic, value in unique.iter_rows():
        u, v = (from_process, from_txn), (to_process, to_txn)
        if not graph.has_edge(u, v):
            graph.add_edge(u, v, via={})
        graph[u][v]["via"][kind] = (topic, value)
    return graph


def find_cycles(graph: nx.DiGraph, limit: int = EXAMPLES) -> Cycles:
    """The G0 and G1c components of graph, each explained (the first ``limit``) by one shortest cycle."""
    cycles = Cycles()
    ww_only = graph.edge_subgraph([(u, v) for u, v, via in graph.edges(data="via") if WW in via])
    for component in _components(ww_only):
        cycles.counts[G0] += 1
        cycles.members[G0].update(component)
        if len(cycles.examples[G0]) < limit:
            cycles.examples[G0].append(
                _example(graph, _shortest_cycle_through(ww_only.subgraph(component), min(component)), G0)
            )
    for component in _components(graph):
        wr = _first_wr_edge(graph, component)
        if wr is None:
            continue
        cycles.counts[G1C] += 1
        cycles.members[G1C].update(component)
        if len(cycles.examples[G1C]) < limit:
            u, v = wr
            back = nx.shortest_path(graph.subgraph(component), v, u)
            cycles.examples[G1C].append(_example(graph, [u, *back[:-1]], G1C))
    return cycles


def _writers(writes: pl.DataFrame, side: str) -> pl.DataFrame:
    """The transaction of each write, as (side_process, side_txn, topic, value); a value's first send stands for it."""
    return (
        writes.select(pl.col("process").alias(f"{side}_process"), pl.col("txn").alias(f"{side}_txn"), "topic", "value")
        .drop_nulls()
        .unique(subset=["topic", "value"], keep="first", maintain_order=True)
    )


def _edges(frame: pl.DataFrame) -> pl.DataFrame:
    self_edge = (pl.col("from_process") == pl.col("to_process")) & (pl.col("from_txn") == pl.col("to_txn"))
    return frame.filter(~self_edge).select([pl.col(name).cast(dtype) for name, dtype in EDGE_SCHEMA.items()])


def _components(graph: nx.DiGraph) -> list[set[Node]]:
    """The strongly connected components of two or more transactions, in the order of their least transaction."""
    return sorted((c for c in nx.strongly_connected_components(graph) if len(c) > 1), key=min)


def _first_wr_edge(graph: nx.DiGraph, component: set[Node]) -> tuple[Node, Node] | None:
    for u in sorted(component):
        for v in sorted(graph.successors(u)):
            if v in component and WR in graph[u][v]["via"]:
                return u, v
    return None


def _shortest_cycle_through(graph: nx.DiGraph, node: Node) -> list[Node]:
    """A shortest cycle through node (graph: its strongly connected component), as its nodes from node on."""
    paths = nx.single_source_shortest_path(graph, node)
    last = min((p for p in graph.predecessors(node) if p in paths), key=lambda p: (len(paths[p]), p))
    return paths[last]


def _example(graph: nx.DiGraph, nodes: list[Node], anomaly: str) -> dict[str, Any]:
    """A cycle as its transactions and typed edges (edge i from nodes[i] to nodes[i + 1], the last back to the first).

    A G0 cycle's edges are all ww. A G1c cycle's first edge is wr; its others are wr when a read makes them, else ww.
    """
    edges = []
    for i, u in enumerate(nodes):
        v = nodes[(i + 1) % len(nodes)]
        via = graph[u][v]["via"]
        kind = WW if anomaly == G0 else WR if i == 0 or WR in via else WW
        topic, value = via[kind]
        edges.append({"from": _txn(u), "to": _txn(v), "type": kind, "topic": topic, "value": value})
    return {"txns": [_txn(node) for node in nodes], "edges": edges}


def _txn(node: Node) -> dict[str, Any]:
    return {"process": node[0], "txn": node[1]}
