"""The transaction dependency graph: its edges from frames, and its G0 / G1c cycles on small hand-made graphs."""

from __future__ import annotations

import polars as pl

from failsafe.checkers.txn.graph import EDGE_SCHEMA, G0, G1C, WR, WW, dependency_graph, find_cycles, wr_edges, ww_edges


def writes(*rows: tuple[str, int, str]) -> pl.DataFrame:
    """(process, txn, value) of writes to topic t."""
    return pl.DataFrame(
        [{"process": p, "txn": n, "topic": "t", "value": v} for p, n, v in rows],
        schema={"process": pl.String, "txn": pl.Int64, "topic": pl.String, "value": pl.String},
    )


def reads(*rows: tuple[str, int | None, str]) -> pl.DataFrame:
    """(reader process, its txn, value) of reads of topic t."""
    return pl.DataFrame(
        [{"process": p, "txn": n, "topic": "t", "value": v} for p, n, v in rows],
        schema={"process": pl.String, "txn": pl.Int64, "topic": pl.String, "value": pl.String},
    )


def log(*partitions: list[str]) -> pl.DataFrame:
    """Each partition's values in offset order (offsets 0, 2, 4, ...: markers leave gaps)."""
    return pl.DataFrame(
        [
            {"topic": "t", "partition": p, "offset": 2 * o, "value": v}
            for p, values in enumerate(partitions)
            for o, v in enumerate(values)
        ],
        schema={"topic": pl.String, "partition": pl.Int64, "offset": pl.Int64, "value": pl.String},
    )


def edges(*rows: tuple[str, str, str]) -> pl.DataFrame:
    """(from, to, type) between transactions named by process (txn 1 each); the witness value is from + to."""
    return pl.DataFrame(
        [
            {"from_process": u, "from_txn": 1, "to_process": v, "to_txn": 1, "type": kind, "topic": "t", "value": u + v}
            for u, v, kind in rows
        ],
        schema=EDGE_SCHEMA,
    )


def as_tuples(frame: pl.DataFrame) -> list[tuple]:
    return sorted(frame.select("from_process", "from_txn", "to_process", "to_txn", "type", "value").iter_rows())


def test_wr_edges_run_from_the_writer_to_every_transaction_that_read_it() -> None:
    w = writes(("p", 1, "a"), ("p", 2, "b"))
    r = reads(("c", 7, "a"), ("d", 3, "a"), ("p", 2, "b"), ("e", None, "a"), ("c", 7, "stray"))
    # p's txn 2 reading its own write adds nothing; a read into no transaction is no edge; a value nobody sent neither.
    assert as_tuples(wr_edges(w, r)) == [("p", 1, "c", 7, WR, "a"), ("p", 1, "d", 3, WR, "a")]


def test_ww_edges_follow_each_partitions_log_skipping_plain_writes() -> None:
    w = writes(("p", 1, "a1"), ("p", 1, "a2"), ("p", 1, "a3"), ("q", 1, "b1"), ("r", 1, "c1"))
    # Partition 0: a1 a2 (one txn: no edge), plain x, b1; partition 1: c1, plain y, a3. No edge crosses partitions.
    frame = ww_edges(w, log(["a1", "a2", "x", "b1"], ["c1", "y", "a3"]))
    assert as_tuples(frame) == [("p", 1, "q", 1, WW, "a2"), ("r", 1, "p", 1, WW, "c1")]


def test_an_edge_made_by_reads_and_log_order_carries_both_types() -> None:
    graph = dependency_graph([edges(("a", "b", WR)), edges(("a", "b", WW)), edges(("a", "b", WR))])
    assert list(graph.edges) == [(("a", 1), ("b", 1))]
    assert graph[("a", 1)][("b", 1)]["via"] == {WR: ("t", "ab"), WW: ("t", "ab")}


def test_an_acyclic_graph_has_no_cycles() -> None:
    cycles = find_cycles(dependency_graph([edges(("a", "b", WR), ("b", "c", WW), ("a", "c", WR))]))
    assert cycles.counts == {G0: 0, G1C: 0} and cycles.examples == {G0: [], G1C: []}
    assert find_cycles(dependency_graph([])).counts == {G0: 0, G1C: 0}


def test_a_cycle_of_ww_edges_is_g0_only() -> None:
    cycles = find_cycles(dependency_graph([edges(("a", "b", WW), ("b", "a", WW))]))
    assert cycles.counts == {G0: 1, G1C: 0}
    assert cycles.examples[G0] == [
        {
            "txns": [{"process": "a", "txn": 1}, {"process": "b", "txn": 1}],
            "edges": [
                {
                    "from": {"process": "a", "txn": 1},
                    "to": {"process": "b", "txn": 1},
                    "type": WW,
                    "topic": "t",
                    "value": "ab",
                },
                {
                    "from": {"process": "b", "txn": 1},
                    "to": {"process": "a", "txn": 1},
                    "type": WW,
                    "topic": "t",
                    "value": "ba",
                },
            ],
        }
    ]
    assert cycles.members[G0] == {("a", 1), ("b", 1)}


def test_a_cycle_with_a_wr_edge_is_g1c_and_its_example_starts_at_that_edge() -> None:
    cycles = find_cycles(dependency_graph([edges(("a", "b", WW), ("b", "c", WW), ("c", "a", WR))]))
    assert cycles.counts == {G0: 0, G1C: 1}
    (cycle,) = cycles.examples[G1C]
    assert [t["process"] for t in cycle["txns"]] == ["c", "a", "b"]
    assert [e["type"] for e in cycle["edges"]] == [WR, WW, WW]


def test_a_component_with_both_a_ww_cycle_and_a_wr_edge_is_counted_as_each() -> None:
    cycles = find_cycles(dependency_graph([edges(("a", "b", WW), ("b", "a", WW), ("b", "c", WR), ("c", "a", WW))]))
    assert cycles.counts == {G0: 1, G1C: 1}
    assert cycles.members[G0] == {("a", 1), ("b", 1)} and cycles.members[G1C] == {("a", 1), ("b", 1), ("c", 1)}
    # The wr edge b -> c, then the shortest way back to b: c -> a -> b.
    assert [t["process"] for t in cycles.examples[G1C][0]["txns"]] == ["b", "c", "a"]


def test_a_g0_example_is_a_shortest_cycle() -> None:
    # The component holds a -> b -> c -> d -> a and the shorter a -> b -> a.
    cycles = find_cycles(
        dependency_graph([edges(("a", "b", WW), ("b", "c", WW), ("c", "d", WW), ("d", "a", WW), ("b", "a", WW))])
    )
    assert cycles.counts[G0] == 1
    assert [t["process"] for t in cycles.examples[G0][0]["txns"]] == ["a", "b"]


def test_each_component_counts_once_and_examples_are_capped() -> None:
    pairs = [edges((f"a{i}", f"b{i}", WR), (f"b{i}", f"a{i}", WR)) for i in range(7)]
    cycles = find_cycles(dependency_graph(pairs), limit=3)
    assert cycles.counts == {G0: 0, G1C: 7}
    assert len(cycles.examples[G1C]) == 3 and len(cycles.members[G1C]) == 14
    # Components in the order of their least transaction.
    assert [c["txns"][0]["process"] for c in cycles.examples[G1C]] == ["a0", "a1", "a2"]


def test_a_g1c_edge_that_is_also_ww_is_named_wr() -> None:
    cycles = find_cycles(dependency_graph([edges(("a", "b", WW), ("a", "b", WR), ("b", "a", WW))]))
    assert cycles.counts == {G0: 1, G1C: 1}
    assert [e["type"] for e in cycles.examples[G1C][0]["edges"]] == [WR, WW]
    assert [e["type"] for e in cycles.examples[G0][0]["edges"]] == [WW, WW]
