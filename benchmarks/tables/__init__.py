"""The table renderers `benchmarks/bench.py report` calls, by the name a
scenario's `[[report]] table = "..."` gives.

Each renderer is `render(results_dir) -> str`: the markdown that goes
between a BENCHMARKS.md section's markers, from committed raw rows only (no
clock, no machine probe), so rendering twice gives the same bytes. A
renderer may also have `plot(results_dir, path)`, which `report --plots`
calls (it needs matplotlib; the tables never do). A renderer that fills
several sections from one folder takes `render(results_dir, files=None)`,
the files each section's [[report]] names.

The modules import `rounds` as a top-level module, so benchmarks/ must be
on sys.path (bench.py and the tests put it there).
"""

from . import (ab_plan, collection, filtered, filtered_graph, gorgeous, headline, hnswlib_gap, laser, main, pipeann,
               planner, planner_latency, starling, starling_scale, tiered, updates)

RENDERERS = {"laser": laser, "gorgeous": gorgeous, "pipeann": pipeann, "tiered": tiered,
             "headline": headline, "main": main, "ab_plan": ab_plan,
             "collection": collection, "starling": starling, "starling_scale": starling_scale,
             "updates": updates, "filtered": filtered, "filtered_graph": filtered_graph, "planner": planner,
             "planner_latency": planner_latency,
             "hnswlib_gap": hnswlib_gap}
