"""DiskANN C++ through `diskannpy` 0.7.0 (PyPI), in its own venv with numpy<2.

Quirks handled here (see README.md):
- 0.7.0 has no PQ-bytes argument. DiskANN computes the in-RAM PQ code size as
  floor(search_memory_maximum * 2^30 / n) bytes per vector, after the GB value
  went through std::to_string (6 decimals). We pass (pq_bytes + 0.5) * n / 2^30
  rounded to 6 decimals, check the floor reproduces pq_bytes, and after the
  build verify the chunk count in ann_pq_compressed.bin.
- Alpha is not exposed; DiskANN's default 1.2 is used (recorded as alpha_used).
- The node cache is filled at load from ~sample queries (cache_mechanism=1);
  load time is excluded from search timing.
- The binding drops DiskANN's I/O statistics; run_peer.py reads /proc/self/io.
- `search` (single query) does not release the GIL, so its latency pass runs
  on one thread.
"""

from __future__ import annotations

import math
import os

import numpy as np

from peer_common import Peer, diskann_memory_plan, log

GIB = 1 << 30
PREFIX = "ann"


def search_memory_gb(pq_bytes: int, n: int) -> float:
    """The search_memory_maximum (GB) that makes DiskANN 0.7.0 pick pq_bytes."""

    def chunks(g: float) -> int:
        g6 = float(f"{g:.6f}")  # std::to_string(double) then atof in DiskANN
        return int(math.floor(g6 * GIB / n))

    g = round((pq_bytes + 0.5) * n / GIB, 6)
    step = 1e-6
    for _ in range(100000):
        c = chunks(g)
        if c == pq_bytes:
            return float(f"{g:.6f}")
        g = round(g + (step if c < pq_bytes else -step), 6)
        if g <= 0:
            break
    raise ValueError(f"no 6-decimal GB value gives {pq_bytes} PQ bytes for n={n}")


class DiskannCpp(Peer):
    key = "diskannpy"
    label = "DiskANN C++ (diskannpy)"
    dist = "diskannpy"
    sweep_name = "L"
    on_disk = True
    gil_free_single = False

    def build_params(self, n: int, d: int) -> dict:
        a = self.args
        return {
            "graph_degree": a.graph_degree,
            "complexity": a.complexity,
            "alpha_used": 1.2,  # not exposed by diskannpy 0.7.0
            "pq_bytes": a.pq_bytes,
            "search_memory_maximum_gb": search_memory_gb(a.pq_bytes, n),
            "build_memory_maximum_gb": a.build_memory_gb,
            "build_threads": a.build_threads,
            "metric": "l2",
        }

    def build(self, base_path: str, index_dir: str, params: dict) -> dict:
        import diskannpy as dap

        if abs(self.args.alpha - 1.2) > 1e-9:
            log(f"warning: diskannpy 0.7.0 does not expose alpha; building with 1.2, not {self.args.alpha}")
        dap.build_disk_index(
            data=base_path,
            distance_metric="l2",
            index_directory=index_dir,
            complexity=params["complexity"],
            graph_degree=params["graph_degree"],
            search_memory_maximum=params["search_memory_maximum_gb"],
            build_memory_maximum=params["build_memory_maximum_gb"],
            num_threads=params["build_threads"],
            pq_disk_bytes=0,
            vector_dtype=np.float32,
            index_prefix=PREFIX,
        )
        pq_file = os.path.join(index_dir, f"{PREFIX}_pq_compressed.bin")
        hdr = np.fromfile(pq_file, dtype="<u4", count=2)
        if int(hdr[1]) != params["pq_bytes"]:
            raise RuntimeError(f"{pq_file}: DiskANN chose {int(hdr[1])} PQ bytes per vector, wanted {params['pq_bytes']}")
        return {"pq_bytes_actual": int(hdr[1])}

    def load(self, index_dir: str, params: dict, n: int, d: int) -> dict:
        import diskannpy as dap

        a = self.args
        plan = diskann_memory_plan(n, d, params["pq_bytes"], params["graph_degree"], a.memory_budget_mb)
        log(f"loading with {plan['cache_nodes']} cached nodes (sample-query warm-up)")
        # Scratch contexts for at least 2 threads: loaded with 1, the
        # sample-query warm-up (OpenMP over the default thread count) waits
        # forever for a free context (seen: 5+ minutes in futex, no reads).
        # Searches still run on --threads.
        self.index = dap.StaticDiskIndex(
            index_directory=index_dir,
            num_threads=max(a.threads, a.build_threads, 2),
            num_nodes_to_cache=plan["cache_nodes"],
            cache_mechanism=1,
            index_prefix=PREFIX,
        )
        plan["cache_policy"] = "sample-query paths (cache_mechanism=1)"
        return plan

    def search_batch(self, queries, k, value):
        r = self.index.batch_search(
            queries, k_neighbors=k, complexity=value, num_threads=self.args.threads, beam_width=self.args.beam_width
        )
        return np.asarray(r.identifiers), {}

    def search_one(self, query, k, value):
        return self.index.search(query, k_neighbors=k, complexity=value, beam_width=self.args.beam_width).identifiers


PEER = DiskannCpp
