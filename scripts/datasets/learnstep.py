"""make.py's learn step: 1,000 more example sentences (texts.py's `learn`,
after the queries in their order, none of them a query) embedded like the
queries into learn.fbin. A planner (`stratavec build --profile auto
--plan-queries learn.fbin`) searches with them to choose an index; the
queries the index is scored on stay unseen, as a learn set's do in
big-ann-benchmarks' text-to-image and query-log sets."""

import os

import binfiles
import encoder

FILE = "learn.fbin"


def run(args, selection, model):
    out = args.out
    learn = encoder.encode(model, [t.text for t in selection.learn], args.threads)
    tmp = out / f"{FILE}.tmp"
    binfiles.write_fbin(tmp, learn)
    os.replace(tmp, out / FILE)
    print(f"learn: {learn.shape[0]} example sentences", flush=True)
    return [FILE]
