"""make.py's labels step: label matrix, filtered queries and their exact
ground truth, written beside base.fbin (from the vectors already there)."""

import os

import binfiles
import filters
import groundtruth
import labels
import wordnet

FILES = ("base.labels.spmat", "labels.tsv", "query.filters.spmat", "query.filters.tsv", "gt.filtered.ibin")


def run(args, d, selection):
    out = args.out
    base = binfiles.read_fbin(out / "base.fbin")
    queries = binfiles.read_fbin(out / "query.fbin")
    if base.shape[0] != len(selection.base) or queries.shape[0] != len(selection.queries):
        raise wordnet.MissingInput(f"{out}: the vectors there are not this recipe's "
                                   f"({base.shape[0]} base, {queries.shape[0]} queries; expected "
                                   f"{len(selection.base)}, {len(selection.queries)}): --limit/--queries differ?")
    lexnames = wordnet.lexnames(d)
    vocab, rows, ancestry = labels.build([t.synset for t in selection.base], selection.synsets, lexnames)
    chosen = filters.choose([t.synset for t in selection.queries], vocab, rows, ancestry, lexnames, args.seed)
    ids, dists = groundtruth.top_k(base, queries, args.k, args.threads,
                                   allowed=filters.allowed_matrix(chosen, base.shape[0]))
    # Written under temporary names and renamed together at the end: a
    # present gt.filtered.ibin means the whole step finished.
    tmp = {f: out / f"{f}.tmp" for f in FILES}
    binfiles.write_spmat(tmp["base.labels.spmat"], rows, len(vocab.names))
    labels.write_tsv(tmp["labels.tsv"], vocab)
    binfiles.write_spmat(tmp["query.filters.spmat"], [f.labels for f in chosen], len(vocab.names))
    filters.write_tsv(tmp["query.filters.tsv"], chosen, vocab, base.shape[0])
    binfiles.write_gt(tmp["gt.filtered.ibin"], ids, dists)
    for f in FILES:
        os.replace(tmp[f], out / f)
    by_source = {}
    for f in chosen:
        by_source[f.source] = by_source.get(f.source, 0) + 1
    print(f"labels: {len(vocab.names)} labels, {sum(len(r) for r in rows)} base entries; "
          f"filters by source {by_source}", flush=True)
    return list(FILES)
