"""Embedding many texts with a model's forward pass, on several threads.

Texts are sorted by token count and cut into batches of similar length, so
little padding is computed; numpy releases the GIL in its products, so a
thread per core scales (each with one BLAS thread, set by make.py before
numpy loads). A batch's content does not depend on the thread count, and
neither do the vectors: --threads 1 and 2 give the same bytes.
"""

import time
from concurrent.futures import ThreadPoolExecutor
from typing import List

import numpy as np

TOKEN_BUDGET = 2048    # padded tokens per batch
MAX_BATCH = 256


def batches(lengths: List[int]) -> List[List[int]]:
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    out, cur = [], []
    for i in order:
        # Length-sorted, so text i is the longest of the batch it would join.
        if len(cur) >= MAX_BATCH or (cur and (len(cur) + 1) * lengths[i] > TOKEN_BUDGET):
            out.append(cur)
            cur = []
        cur.append(i)
    if cur:
        out.append(cur)
    return out


def encode(model, texts: List[str], threads: int, progress_every: int = 0) -> np.ndarray:
    tokens = [e.ids for e in model.tokenizer.encode_batch(list(texts))]
    out = np.empty((len(texts), model.hidden), dtype=np.float32)
    done = [0]
    t0 = time.time()

    def run(batch):
        out[batch] = model.forward([tokens[i] for i in batch])
        before, done[0] = done[0], done[0] + len(batch)
        if progress_every and before // progress_every != done[0] // progress_every:
            print(f"  embedded {done[0]}/{len(texts)} in {time.time() - t0:.0f} s", flush=True)

    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(run, batches([len(t) for t in tokens])))
    return out
