"""DiskANN Rust through `diskannpy-rust` 0.49.1 (PyPI). Its import name is also
`diskannpy`, hence its own venv.

Quirks handled here (see README.md):
- RUST_LOG=warn is forced before import, or it logs every query.
- PQ bytes are passed directly (num_of_pq_chunks); alpha is exposed.
- The node cache is a BFS around the medoid (num_nodes_to_cache), sized by the
  same rule as the C++ peer.
- Its search_stats' mean_ios counts cached nodes as reads, so it over-reports
  with a cache; reads_per_query comes from /proc/self/io, and the engine's
  own figure is kept only as peer_reported_mean_ios.
"""

from __future__ import annotations

import os

os.environ["RUST_LOG"] = "warn"

import numpy as np  # noqa: E402

from peer_common import Peer, diskann_memory_plan  # noqa: E402

PREFIX = "ann"


class DiskannRust(Peer):
    key = "diskannpy-rust"
    label = "DiskANN Rust (diskannpy-rust)"
    dist = "diskannpy-rust"
    sweep_name = "L"
    on_disk = True
    gil_free_single = False  # measured: two Python threads calling search() are slower than one

    def build_params(self, n: int, d: int) -> dict:
        a = self.args
        return {
            "graph_degree": a.graph_degree,
            "complexity": a.complexity,
            "alpha_used": a.alpha,
            "pq_bytes": a.pq_bytes,
            "build_pq_bytes": 0,
            "build_memory_maximum_gb": a.build_memory_gb,
            "build_threads": a.build_threads,
            "metric": "l2",
        }

    def build(self, base_path: str, index_dir: str, params: dict) -> dict:
        import diskannpy as dap

        dap.build_disk_index(
            data=base_path,
            distance_metric="l2",
            index_directory=index_dir,
            complexity=params["complexity"],
            graph_degree=params["graph_degree"],
            build_memory_maximum=params["build_memory_maximum_gb"],
            num_threads=params["build_threads"],
            alpha=params["alpha_used"],
            build_pq_bytes=0,
            num_of_pq_chunks=params["pq_bytes"],
            vector_dtype=np.float32,
            index_prefix=PREFIX,
        )
        return {}

    def load(self, index_dir: str, params: dict, n: int, d: int) -> dict:
        import diskannpy as dap

        a = self.args
        plan = diskann_memory_plan(n, d, params["pq_bytes"], params["graph_degree"], a.memory_budget_mb)
        self.index = dap.StaticDiskIndex(
            index_directory=index_dir,
            num_threads=a.threads,
            beam_width=a.beam_width,
            num_nodes_to_cache=plan["cache_nodes"],
            index_prefix=PREFIX,
        )
        plan["cache_policy"] = "BFS from the medoid"
        return plan

    def search_batch(self, queries, k, value):
        r = self.index.batch_search(queries, k_neighbors=k, complexity=value, num_threads=self.args.threads)
        extra = {}
        stats = r.search_stats or {}
        if "mean_ios" in stats:
            extra["peer_reported_mean_ios"] = float(stats["mean_ios"])
        # The engine times every query of the batch itself (microseconds), at
        # the batch's real concurrency; kept beside our own latency pass.
        for ours, theirs in (("peer_reported_mean_us", "mean_latency"), ("peer_reported_p95_us", "latency_95"),
                             ("peer_reported_p999_us", "latency_999")):
            if theirs in stats:
                extra[ours] = float(stats[theirs])
        extra["peer_search_stats"] = {
            key: (float(v) if isinstance(v, (int, float, np.number)) else str(v)) for key, v in stats.items()
        }
        return np.asarray(r.identifiers), extra

    def search_one(self, query, k, value):
        return self.index.search(query, k_neighbors=k, complexity=value).identifiers


PEER = DiskannRust
