"""benchmarks/tables/filtered.py against hand-made rows: QPS at R@10 0.95
per way and band (median and range over rounds), the best recall of a way
that never gets there, the mix auto chose, and the issue's targets: auto
against the best forced way, and in the selective bands against post."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tables import filtered as T  # noqa: E402


def point(band, way, rnd, L, recall, qps, reads=10.0, mix=None):
    return {"kind": "point", "system": "stratavec-diskann", "band": band, "way": way, "round": rnd, "L": L,
            "recall_at_10": recall, "qps": qps, "reads_per_query": reads, "selectivity": [0.4, 0.1, 0.01, 0.001][band],
            "mix": mix or {"pre": 0, "in_search": 0, "post": 0}}


def rows():
    run = {"kind": "run", "dataset": "wordnet-minilm", "n": 116707, "nq": 1000, "threads": 2,
           "memory_budget_bytes": 35.9e6, "rounds": 2, "bands": [{}, {}, {}, {}], "command": "stratavec bench-filtered"}
    out = [run]
    for rnd in range(2):
        # Band 0: post is best; auto chose post (1.0x).
        out += [point(0, "auto", rnd, 40, 0.96, 1000 + rnd, mix={"post": 1.0}),
                point(0, "post", rnd, 40, 0.96, 1000 + rnd), point(0, "pre", rnd, 40, 0.99, 200),
                point(0, "in-search", rnd, 40, 0.97, 800)]
        # Band 3: pre is best; post never gets there; auto 0.9x pre (missed).
        out += [point(3, "auto", rnd, 40, 0.97, 900, mix={"pre": 1.0}), point(3, "pre", rnd, 40, 0.97, 1000),
                point(3, "post", rnd, 40, 0.31, 3000), point(3, "in-search", rnd, 40, 0.95, 100)]
    return out


def test_cells_and_targets(tmp_path):
    (tmp_path / T.ROWS).write_text("\n".join(json.dumps(r) for r in rows()) + "\n")
    text = T.render(str(tmp_path))
    assert "| diskann | 0 | 40.00% | 1,000 (1,000–1,001), 10.0 reads | 200, 10.0 reads |" in text, text
    assert "| post 100% | 1.00× (post) | 1.0× | all |" in text, text
    assert "| diskann | 3 | 0.10% | 900, 10.0 reads | 1,000, 10.0 reads | 100, 10.0 reads |" in text, text
    assert "max R@10 0.310 | pre 100% | 0.90× (pre) | — | missed: auto 0.90x pre |" in text, text


def test_a_peer_gets_a_column_of_its_band(tmp_path):
    peer = [{"kind": "point", "system": "hnswlib", "band": b, "way": "peer", "round": 0, "L": 16,
             "recall_at_10": r, "qps": q, "reads_per_query": None, "selectivity": 0.1}
            for b, r, q in ((0, 0.99, 700.0), (3, 0.90, 20.0))]
    (tmp_path / T.ROWS).write_text("\n".join(json.dumps(r) for r in rows() + peer) + "\n")
    text = T.render(str(tmp_path))
    assert "hnswlib (filter callback, all in RAM): QPS at R@10 0.95 |" in text, text
    assert "| missed: auto 0.90x pre | max R@10 0.900 |" in text, text
    assert "| all | 700 |" in text, text
    assert "| hnswlib |" not in text, "a peer is a column, not a row of its own"


def test_a_missing_file_names_the_run_that_makes_it(tmp_path):
    assert "bench.py run benchmarks/scenarios/filtered.toml" in T.render(str(tmp_path))


def test_the_same_way_within_its_rounds_spread_holds(tmp_path):
    """Auto sending every query to the pre-filter does the pre-filter's
    work: 0.97x of it holds where the pre-filter's own rounds spread
    ±5%, and misses where they agree, or where auto mixed ways."""
    def band(auto_mix, pre_qps):
        run = {"kind": "run", "rounds": 2, "bands": [{}]}
        return [run] + [r for rnd, q in enumerate(pre_qps) for r in (
            point(1, "auto", rnd, 40, 0.96, 0.97 * q, mix=auto_mix), point(1, "pre", rnd, 40, 0.96, q))]
    for mix, qps, want in (({"pre": 1.0}, (950, 1050), "all (auto = pre for every query, 0.97× within pre's ±5%"),
                           ({"pre": 1.0}, (1000, 1000), "missed: auto 0.97x pre"),
                           ({"pre": 0.9, "in_search": 0.1}, (950, 1050), "missed: auto 0.97x pre")):
        (tmp_path / T.ROWS).write_text("\n".join(json.dumps(r) for r in band(mix, qps)) + "\n")
        text = T.render(str(tmp_path))
        assert want in text, text


def test_the_same_way_faster_in_some_rounds_slower_in_others_holds(tmp_path):
    """Auto doing the pre-filter's work, faster than its pass in one
    round and slower in the other, is parity even where the pre-filter's
    own rounds agree; slower in every round it is a miss."""
    def band(ratios):
        run = {"kind": "run", "rounds": len(ratios), "bands": [{}]}
        return [run] + [r for rnd, x in enumerate(ratios) for r in (
            point(1, "auto", rnd, 40, 0.96, x * 1000, mix={"pre": 1.0}), point(1, "pre", rnd, 40, 0.96, 1000))]
    for ratios, want in (((0.94, 1.01), "the two passes' ratio within a round 0.94–1.01×"),
                         ((0.94, 0.99), "missed: auto 0.96x pre")):
        (tmp_path / T.ROWS).write_text("\n".join(json.dumps(r) for r in band(ratios)) + "\n")
        text = T.render(str(tmp_path))
        assert want in text, text
