# Stub of the compiled module; the documented API is in stratavec/__init__.py.
import os
import pathlib
from typing import Any, Dict, List, Optional, Sequence, Tuple, TypedDict, Union

from typing_extensions import Unpack

import numpy as np

__version__: str

def parameters(which: str) -> List[Dict[str, Any]]: ...

class BuildParams(TypedDict, total=False):
    """`stratavec build`'s flags as keywords (checked against
    `parameters("build")` by tests/test_stub.py)."""

    profile: str
    metric: str
    graph_degree: int
    complexity: int
    alpha: float
    passes: int
    pq_bytes: int
    pq_sample: int
    pq_iters: int
    page_size: int
    max_batch_fraction: float
    seed: int
    shuffle: str
    shuffle_iterations: int
    shuffle_gain: float
    shuffle_undirected: bool
    shuffle_nearest: int
    nav_sample: float
    nav_degree: int
    layout: str
    replicas: int
    memory_budget_mb: float
    cache_rank: str
    node_cache_rank: str
    visits_sample: float
    store: str
    code_dim: int
    entry_clusters: int
    ivf_clusters: int
    ivf_replicas: int
    ivf_closure: float
    ivf_grouping: str
    ivf_sample_nprobe: int
    ivf_codes: bool
    exrabitq_bits: int
    exrabitq_centres: int
    pipelined_refinement: bool
    label_aware: bool
    objective: str
    plan_queries: str
    target_recall: float
    device_reads_per_s: float

class SearchParams(TypedDict, total=False):
    """`stratavec search`'s flags as keywords (checked against
    `parameters("search")` by tests/test_stub.py)."""

    k: int
    complexity: int
    beam_width: int
    threads: int
    in_flight: int
    page_search: bool
    prune_ratio: float
    pipeline: bool
    nav_complexity: int
    two_stage: bool
    refine_ratio: float
    radius: float
    range_phi: float
    range_max_complexity: int
    pipelined: bool
    settle: bool
    settle_wave: int
    settle_reach: float
    width: str
    rerank_factor: float
    adaptive_beam: bool
    dispatch_ratio: float
    poll_us: int

def build_index(
    data: Union[np.ndarray, str, os.PathLike[str]],
    index_dir: Union[str, os.PathLike[str]],
    *,
    threads: Optional[int] = None,
    column: Optional[str] = None,
    id_column: Optional[str] = None,
    ids: Optional[np.ndarray] = None,
    labels: Optional[Union[str, os.PathLike[str], Tuple[List[int], List[int]]]] = None,
    label_names: Optional[List[str]] = None,
    label_column: Optional[str] = None,
    **params: Unpack[BuildParams],
) -> Dict[str, Any]: ...

class Index:
    @staticmethod
    def open(
        index_dir: Union[str, os.PathLike[str]],
        memory_budget_mb: Optional[float] = None,
        io: str = "auto",
        navigation_graph: bool = True,
        sqpoll: bool = False,
        delta_share: float = 0.1,
        auto_merge: bool = True,
    ) -> Index: ...
    def add(self, vectors: Any, ids: Any = None, *, labels: Any = None, batch: int = 0) -> Dict[str, Any]: ...
    def remove(self, ids: Any, *, batch: int = 0) -> Dict[str, Any]: ...
    def merge(self, threads: Optional[int] = None) -> Dict[str, Any]: ...
    @property
    def next_id(self) -> int: ...
    @property
    def pending(self) -> Tuple[int, int]: ...
    def __contains__(self, id: int) -> bool: ...
    @property
    def dim(self) -> int: ...
    @property
    def n(self) -> int: ...
    def __len__(self) -> int: ...
    @property
    def metric(self) -> str: ...
    @property
    def profile(self) -> str: ...
    @property
    def dtype(self) -> str: ...
    @property
    def cached_nodes(self) -> int: ...
    @property
    def index_dir(self) -> pathlib.Path: ...
    @property
    def io_backend(self) -> str: ...
    def memory(self) -> Dict[str, int]: ...
    def range_search(
        self,
        queries: Any,
        radius: float,
        *,
        on_error: str = ...,
        **params: Unpack[SearchParams],
) -> Tuple[np.ndarray, np.ndarray, np.ndarray]: ...
    def search(
        self,
        queries: np.ndarray,
        k: int = 10,
        *,
        return_stats: bool = False,
        on_error: str = "raise",
        filter: Optional[Union[str, Sequence[Optional[str]]]] = None,
        filter_way: str = "auto",
        **params: Unpack[SearchParams],
) -> Tuple[Any, ...]: ...

# Collections of segments (stratavec.collection; issue #24).

PathArg = Union[str, os.PathLike[str]]

def partition_collection(
    data: Any,
    segments: int,
    partition: str = "range",
    metric: str = "l2",
    seed: int = 42,
) -> Tuple[np.ndarray, Optional[np.ndarray]]: ...
def commit_collection(
    staging: PathArg,
    collection_dir: PathArg,
    *,
    partition: str,
    centroids: Optional[np.ndarray] = None,
    memory_budget_mb: Optional[float] = None,
) -> Dict[str, Any]: ...
def collection_info(collection_dir: PathArg) -> Dict[str, Any]: ...
def route_queries(
    collection_dir: PathArg, queries: Any, probe: Optional[int] = None
) -> List[np.ndarray]: ...
def plan_visits(
    collection_dir: PathArg,
    queries: Any,
    complexity: int,
    k: int,
    probe: Optional[int] = None,
    probe_shrink: Optional[float] = None,
) -> List[Tuple[int, int, np.ndarray]]: ...
def merge_results(
    nq: int, k: int, parts: Sequence[Tuple[np.ndarray, np.ndarray, np.ndarray]]
) -> Tuple[np.ndarray, np.ndarray]: ...
def segment_budgets(
    collection_dir: PathArg, memory_budget_mb: float, io: str = "auto"
) -> List[int]: ...

class Collection:
    @staticmethod
    def open(
        collection_dir: PathArg,
        memory_budget_mb: Optional[float] = None,
        io: str = "auto",
        delta_share: float = 0.1,
        auto_merge: bool = True,
    ) -> Collection: ...
    def add(self, vectors: Any, ids: Any = None, *, labels: Any = None, batch: int = 0) -> Dict[str, Any]: ...
    def remove(self, ids: Any, *, batch: int = 0) -> Dict[str, Any]: ...
    def merge(self, threads: Optional[int] = None) -> int: ...
    @property
    def pending(self) -> Tuple[int, int]: ...
    @property
    def dim(self) -> int: ...
    @property
    def n(self) -> int: ...
    def __len__(self) -> int: ...
    @property
    def metric(self) -> str: ...
    @property
    def partition(self) -> str: ...
    @property
    def profile(self) -> str: ...
    @property
    def segments(self) -> List[Dict[str, Any]]: ...
    def memory_bytes(self) -> int: ...
    def search(
        self,
        queries: Any,
        k: int = 10,
        *,
        probe: Optional[int] = None,
        probe_shrink: Optional[float] = None,
        return_stats: bool = False,
        on_error: str = "raise",
        filter: Any = None,
        filter_way: str = "auto",
        **params: Unpack[SearchParams],
    ) -> Tuple[Any, ...]: ...
