"""A local Ray cluster for a test module, started once more if Ray's own
start-up gives up under load.

Ray 2.60's raylet exits when its dashboard agent has not written its port
file within a fixed 15 s (ray-project/ray#65983; no setting changes it),
and ray.init then fails after its own 30 s wait. On a machine whose CPUs
are busy with other work — these tests run niced beside benchmarks and
builds — the agent's start (a Python process importing Ray) can take that
long. One more try, with the first failure printed, keeps that from
failing a module; a second failure is a real one.
"""

import time
import warnings


def start(**kwargs):
    """``init_local_ray(**kwargs)`` (127.0.0.1 only, signal handlers kept);
    returns the seconds the successful start took."""
    from stratavec.ray_collection import init_local_ray, shutdown_ray

    for attempt in (1, 2):
        t = time.monotonic()
        try:
            init_local_ray(**kwargs)
            return time.monotonic() - t
        except Exception as e:
            if attempt == 2:
                raise
            warnings.warn(f"local Ray cluster did not start ({type(e).__name__}: {e}); trying once more")
            shutdown_ray()
