# Stub of the compiled module; the documented API is in stratavec/__init__.py.
import os
import pathlib
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

__version__: str

def build_index(
    data: Union[np.ndarray, str, os.PathLike[str]],
    index_dir: Union[str, os.PathLike[str]],
    *,
    metric: str = "l2",
    graph_degree: int = 64,
    complexity: Optional[int] = None,
    alpha: float = 1.2,
    pq_bytes: Optional[int] = None,
    passes: int = 1,
    page_size: Optional[int] = None,
    seed: int = 42,
    threads: Optional[int] = None,
    profile: str = "diskann",
    shuffle: Optional[str] = None,
    nav_sample: Optional[float] = None,
    store: Optional[str] = None,
    memory_budget_mb: Optional[float] = None,
    layout: Optional[str] = None,
    replicas: Optional[int] = None,
    cache_rank: str = "nav",
    node_cache_rank: Optional[str] = None,
    visits_sample: float = 0.1,
    column: Optional[str] = None,
    id_column: Optional[str] = None,
    ids: Optional[np.ndarray] = None,
    code_dim: Optional[int] = None,
    entry_clusters: Optional[int] = None,
    ivf_clusters: Optional[int] = None,
    ivf_replicas: int = 4,
    ivf_closure: float = 0.2,
    ivf_grouping: str = "frequency",
    ivf_codes: bool = False,
    ivf_sample_nprobe: int = 64,
) -> Dict[str, Any]: ...

class Index:
    @staticmethod
    def open(
        index_dir: Union[str, os.PathLike[str]],
        memory_budget_mb: Optional[float] = None,
        io: str = "auto",
        navigation_graph: bool = True,
        sqpoll: bool = False,
    ) -> Index: ...
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
        complexity: int = ...,
        beam_width: Optional[int] = ...,
        threads: Optional[int] = ...,
        in_flight: Optional[int] = ...,
        phi: float = ...,
        max_complexity: int = ...,
        page_search: Optional[bool] = ...,
        pipeline: Optional[bool] = ...,
        prune_ratio: float = ...,
        nav_complexity: int = ...,
        on_error: str = ...,
    ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]: ...
    def search(
        self,
        queries: np.ndarray,
        k: int = 10,
        *,
        complexity: int = 64,
        beam_width: Optional[int] = None,
        threads: Optional[int] = None,
        in_flight: Optional[int] = None,
        return_stats: bool = False,
        page_search: Optional[bool] = None,
        pipeline: Optional[bool] = None,
        prune_ratio: float = 0.3,
        nav_complexity: int = 10,
        on_error: str = "raise",
        two_stage: Optional[bool] = None,
        refine_ratio: float = 0.5,
        adaptive_beam: bool = True,
        dispatch_ratio: float = 1.0,
        pipelined: Optional[bool] = None,
        width: Optional[str] = None,
        rerank_factor: float = 4.0,
        poll_us: int = 0,
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
    ) -> Collection: ...
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
        complexity: int = 64,
        probe: Optional[int] = None,
        probe_shrink: Optional[float] = None,
        beam_width: Optional[int] = None,
        threads: Optional[int] = None,
        in_flight: Optional[int] = None,
        return_stats: bool = False,
        on_error: str = "raise",
    ) -> Tuple[Any, ...]: ...
