"""Parts "peer" and "labels" of tools/bench_xmc.py (which imports this module and describes
both in its --help); the helpers both share are in tools/bench_common.py.

Part "peer": hetsgd's shortlist against the PyTorch sampled-softmax peer at equal epochs, in
one run on the same SYNTHETIC amazon-670k-shaped cache (`hetsgd data gen --preset=amazon-670k
--scale=--peer-scale --format=cache`). Runs, one after the other, each --peer-epochs epochs
with the bench flags (bench_common.bench_flags: hidden --hidden, Adam lr 1e-3 held constant,
batch 256, no dropout, no validation split, label smoothing 0) on one CPU worker with
--threads threads:
  a. hetsgd --output-layer=shortlist with its defaults (the batch's positives, 10 HNSW hard
     negatives per row, 1024 uniform negatives per batch);
  b. the same with --hard-negatives=0 (positives and 1024 uniform negatives): the like-for-like
     row, the peer has no index;
  c. the peer: tools/pytorch_baseline.py --output=sampled, what a PyTorch user writes instead
     of the shortlist: an EmbeddingBag first layer, the output layer as
     nn.Embedding(L, hidden, sparse=True) weights and an [L x 1] bias, all three on lazy Adam
     (as hetsgd's first layer and the shortlist's output optimiser; --peer-sparse-optimizer:
     pytorch_baseline's LazyAdam, rows summed once and updated in place, or
     torch.optim.SparseAdam, the same rule); per batch the positives plus 1024 uniform
     negatives drawn with replacement, deduplicated and shared by the batch, with the
     shortlist's correction log((L - f) / u) on the u sampled candidates (f positives); no hard
     negatives (hetsgd's come from its own HNSW index over its own weights: see
     pytorch_baseline.py), so run b is its like-for-like row; hetsgd's initial weights
     (--init=hetsgd); it reads the same cache;
  d. hetsgd --output-layer=full and e. PyTorch's full softmax (nn.Linear + Adam, the first
     layer as in c), each for
     --peer-full-seconds of training (0 skips them): the full softmax's speed beside them.
P@1 and P@5 are exact (every label scored) on the first test rows of hetsgd's exact final
scoring, and the peers score the same rows: `final_eval_rows` of its --json (the whole test set
when that costs at most 1e12 flops, else its first 1e12 / (2 L hidden) rows), or, when the
final evaluation ranked every row through the label index, the sample it also scored exactly
(`exact_sample`, `index_recall.rows`); each run's row count is in the table.

Part "labels": the shortlist's training samples/s and peak RSS as the label count grows, at
the wiki-500k, amazon-670k and amazon-3m shapes (--labels-presets), each generated with the
same number of training rows (--labels-rows, i.e. --scale = rows / the preset's training
rows) so that the rows do not differ, then trained with the shortlist and the bench flags for
--labels-seconds (or --labels-epochs when > 0) on one worker. Reported per shape: the data
generation's wall time and peak RSS, the cache sizes, nnz and labels per row (the shapes
differ in them too), training samples/s and its ratio to amazon-670k's, peak RSS against
hetsgd's own memory estimate, process wall time and P@1 (little training: a sanity check).
"""

import array
import json
import os
import re
import shlex
import struct
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone

import bench_common as common

# Training rows of the presets (datasets/synthetic_presets.cpp), for --scale = rows / these.
PRESET_TRAIN_ROWS = {"wiki-500k": 1813391, "amazon-670k": 490449, "amazon-3m": 1717899,
                     "delicious-200k": 196606, "amazoncat-13k": 1186239}
ESTIMATE = re.compile(r"memory estimate.*\(host ([0-9.]+) GB\)")
FAILED = common.FAILED


def exact_view(rec):
    """A hetsgd record whose metrics and final_eval_rows are those of exact scoring: with an
    indexed final evaluation (final_eval "index"), its exact sample's; else unchanged."""
    if not rec or rec.get("final_eval") != "index" or not isinstance(rec.get("exact_sample"), dict):
        return rec
    out = dict(rec)
    out.update(rec["exact_sample"])
    out["final_eval_rows"] = rec["index_recall"]["rows"]
    return out


def run_captured(cmd, env, what, verbose):
    """Like bench_cpu.run_json (its last JSON line of stdout, _wall_s, _peak_rss_mb from
    wait4) and also hetsgd's memory estimate from stderr (_estimate_gb); None on failure."""
    if verbose:
        print("+ " + " ".join(shlex.quote(c) for c in cmd), file=sys.stderr, flush=True)
    print(f"  {what} ...", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    try:
        with tempfile.TemporaryFile("w+") as so, tempfile.TemporaryFile("w+") as se, \
                tempfile.NamedTemporaryFile("r") as rss:
            proc = subprocess.Popen(common.bench_cpu.peak_rss_command(cmd, rss.name), env=env,
                                    stdout=so, stderr=se, text=True)
            _, status, usage = os.wait4(proc.pid, 0)
            peak_mb = common.bench_cpu.read_peak_rss(rss.name, usage)
            so.seek(0)
            se.seek(0)
            stdout, stderr = so.read(), se.read()
    except OSError as e:
        print(f"  {what}: FAILED: {e}", file=sys.stderr, flush=True)
        return None
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    rec = None
    for line in reversed(stdout.strip().splitlines()):
        if line.strip().startswith("{"):
            rec = json.loads(line)
            break
    if code != 0 or rec is None:
        print(f"  {what}: FAILED ({code}): {' '.join(cmd)}\n{stderr[-2000:]}",
              file=sys.stderr, flush=True)
        return None
    rec["_wall_s"] = wall
    rec["_peak_rss_mb"] = peak_mb
    m = ESTIMATE.search(stderr)
    rec["_estimate_gb"] = float(m.group(1)) if m else None
    rec["_cmd"] = " ".join(shlex.quote(c) for c in cmd)
    print(f"  {what}: {common.num(rec.get('train_time_s'), '.1f')} s training, "
          f"{common.num(rec.get('samples_per_s'), '.0f')} samples/s, peak RSS "
          f"{rec['_peak_rss_mb']:.0f} MB, P@1 {common.num(rec.get('p1'), '.4f')}, "
          f"wall {wall:.1f} s", file=sys.stderr, flush=True)
    return rec


def cache_counts(path):
    """(rows, features, labels, nnz, label_nnz) from a cache's header, or None."""
    try:
        with open(path, "rb") as f:
            head = f.read(56)
        if len(head) == 56 and head[:8] == b"HETSGDDS":
            return struct.unpack("<5q", head[16:56])
    except OSError:
        pass
    return None


def positives_per_batch(path, batch=256):
    """Mean distinct labels per `batch` consecutive rows of a cache (the shortlist's positives
    per step; its candidates are these plus the hard and uniform negatives), or None."""
    counts = cache_counts(path)
    if counts is None:
        return None
    rows, _, _, nnz, label_nnz = counts
    try:
        with open(path, "rb") as f:
            f.seek(64 + 8 * (rows + 1))
            y_indptr = array.array("q")
            y_indptr.frombytes(f.read(8 * (rows + 1)))
            f.seek(64 + 16 * (rows + 1) + 8 * nnz)
            y = array.array("i")
            y.frombytes(f.read(4 * label_nnz))
    except (OSError, ValueError):
        return None
    if sys.byteorder != "little":
        y_indptr.byteswap()
        y.byteswap()
    sizes = [len(set(y[y_indptr[b]:y_indptr[min(rows, b + batch)]]))
             for b in range(0, rows, batch)]
    return sum(sizes) / len(sizes) if sizes else None


def provenance(args):
    """The lines every table of these parts starts with: command, commit, date, hardware."""
    try:
        commit = subprocess.run(["git", "-C", common.REPO, "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True).stdout.strip() or "unknown"
        dirty = subprocess.run(["git", "-C", common.REPO, "status", "--porcelain",
                                "--untracked-files=no"], capture_output=True,
                               text=True).stdout.strip()
    except OSError:
        commit, dirty = "unknown", ""
    try:
        version = subprocess.run([args.hetsgd, "--version"], capture_output=True,
                                 text=True).stdout.strip()
    except OSError:
        version = "unknown"
    cmd = " ".join(shlex.quote(a) for a in [os.path.relpath(sys.argv[0], common.REPO)]
                   + sys.argv[1:])
    date = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return [f"Command: `{cmd}`; commit {commit}{' (with local changes)' if dirty else ''}; "
            f"{version}; {date}.", "", common.machine_note(args)]


def mb(path):
    try:
        return os.path.getsize(path) / 2 ** 20
    except (OSError, TypeError):
        return None


# --------------------------------------------------------------------------------------------
# Part "peer"


# glibc's malloc returns large freed blocks to the kernel (mmap / heap trim), and a PyTorch step
# frees and allocates sparse gradients and temporaries of megabytes: every step then faults its
# pages in again. Raising both thresholds keeps the memory in the process: the peer's first
# epoch at 0.2 of amazon-670k took 10.0 s with them against 18.4 s without (later epochs 11.2 s
# either way); hetsgd gains 10-15% from them. `--malloc=keep` sets them for every run of the
# part "peer", so all run in the same environment.
KEEP_MALLOC = {"MALLOC_MMAP_THRESHOLD_": "4000000000", "MALLOC_TRIM_THRESHOLD_": "4000000000"}


def torch_env(args, env):
    t = str(args.threads)
    tenv = dict(env, OPENBLAS_NUM_THREADS=t, OMP_NUM_THREADS=t)
    if args.torch_omp_wait != "default":
        tenv["OMP_WAIT_POLICY"] = args.torch_omp_wait.upper()
    return tenv


def part_peer(args, env, work, out):
    print("[peer] shortlist against the PyTorch sampled-softmax peer", file=sys.stderr,
          flush=True)
    data = common.generate(args, "amazon-670k", args.peer_scale, os.path.join(work, "peer"),
                           "cache")
    if args.malloc == "keep":
        env = dict(env, **KEEP_MALLOC)
    res = {"data": data, "epochs": args.peer_epochs}
    t = args.threads
    ep = f"{args.peer_epochs:g}"
    runs = {}
    if data:
        base = [("--train", data["train"]), ("--test", data["test"]), ("--devices", "cpu:0"),
                ("--threads", str(t)), ("--batch", "256"), ("--label-smoothing", "0")]
        flags = common.bench_flags(args, "shortlist")
        runs["hetsgd_defaults"] = run_captured(
            common.hetsgd_cmd(args, base + [("--epochs", ep)] + flags), env,
            f"a. hetsgd shortlist (defaults), {ep} epochs", args.verbose)
        runs["hetsgd_no_hard"] = run_captured(
            common.hetsgd_cmd(args, base + [("--epochs", ep), ("--hard-negatives", "0")] + flags),
            env, f"b. hetsgd shortlist --hard-negatives=0, {ep} epochs", args.verbose)
    # Like for like: an indexed final evaluation's exact sample stands for it.
    for key in ("hetsgd_defaults", "hetsgd_no_hard"):
        runs[key] = exact_view(runs.get(key))
    # The peer scores exactly the test rows hetsgd's final evaluation scored.
    eval_rows = None
    for key in ("hetsgd_defaults", "hetsgd_no_hard"):
        rec = runs.get(key)
        if rec and isinstance(rec.get("final_eval_rows"), int) and rec["final_eval_rows"] > 0:
            eval_rows = rec["final_eval_rows"]
            break
    if eval_rows is None:
        eval_rows = args.peer_eval_rows
    res["eval_rows"] = eval_rows

    def torch_cmd(output, extra):
        return [args.python, common.BASELINE, f"--train={data['train']}",
                f"--test={data['test']}", f"--hidden={args.hidden}", "--optimizer=adam",
                "--lr=1e-3", "--batch=256", f"--threads={t}", f"--seed={args.seed}",
                "--loss=softmax", "--init=hetsgd", f"--output={output}",
                f"--sparse-optimizer={args.peer_sparse_optimizer}",
                f"--eval-max-points={eval_rows}", "--json", "--quiet"] + extra

    if data and not args.no_torch:
        runs["peer"] = run_captured(
            torch_cmd("sampled", [f"--epochs={int(args.peer_epochs)}",
                                  f"--sampled-negatives={args.peer_sampled_negatives}"]),
            torch_env(args, env), f"c. PyTorch sampled softmax, {ep} epochs", args.verbose)
    secs = args.peer_full_seconds
    if data and secs > 0:
        runs["hetsgd_full"] = run_captured(
            common.hetsgd_cmd(args, base + [("--epochs", "0"), ("--time-budget", f"{secs:g}")]
                              + common.bench_flags(args, "full")), env,
            f"d. hetsgd full softmax, {secs:g} s", args.verbose)
        if not args.no_torch:
            runs["torch_full"] = run_captured(
                torch_cmd("full", ["--epochs=1000000", f"--max-seconds={secs:g}"]),
                torch_env(args, env), f"e. PyTorch full softmax, {secs:g} s", args.verbose)
    res["runs"] = runs
    out["peer"] = res
    return report_peer(args, res)


def report_peer(args, res):
    data, runs = res["data"], res["runs"]
    num, get, cell = common.num, common.get, common.cell
    rows = data["rows"] if data else None
    shape = (f"Amazon-670K-shaped SYNTHETIC data (`hetsgd data gen --preset=amazon-670k "
             f"--scale={args.peer_scale:g} --format=cache`: {num(rows, 'd')} training rows, "
             f"{num(data and data['features'], 'd')} features, "
             f"{num(data and data['labels'], 'd')} labels; not the real data set)")
    lines = [f"### Shortlist against the PyTorch sampled-softmax peer at "
             f"{args.peer_epochs:g} epoch(s): {shape}", ""]
    lines += provenance(args) + [""]
    peer = runs.get("peer")
    cands = num(get(peer, "avg_candidates"), ".0f")
    lines.append(f"Model sparse -> {args.hidden} (ReLU) -> L, softmax, Adam lr 1e-3 constant, "
                 f"batch 256, no dropout, label smoothing 0, one worker with {args.threads} "
                 f"threads, hetsgd's initial weights in every run. The peer "
                 f"(`pytorch_baseline.py --output=sampled`): positives + "
                 f"{args.peer_sampled_negatives} uniform negatives per batch (deduplicated, "
                 f"{cands} candidates per step on average), the shortlist's logit correction "
                 f"log((L - f) / u), no hard negatives, lazy Adam on the row-sparse first "
                 f"layer and output tables ("
                 + ("pytorch_baseline's LazyAdam: rows summed once, dense tensors updated in "
                    "place" if args.peer_sparse_optimizer == "lazy-adam"
                    else "torch.optim.SparseAdam") + "). "
                 + ("Every run with glibc's malloc thresholds raised (MALLOC_MMAP_THRESHOLD_, "
                    "MALLOC_TRIM_THRESHOLD_: freed memory stays in the process, fewer page "
                    "faults per step). " if args.malloc == "keep" else "")
                 + f"P@k: exact, "
                 f"every label scored, on the first {num(res['eval_rows'], 'd')} test rows "
                 f"in every run. "
                 + (f"Full-softmax rows: {args.peer_full_seconds:g} s of training, not equal "
                    f"epochs (their epoch time is extrapolated)." if args.peer_full_seconds > 0
                    else "Full-softmax rows skipped (--peer-full-seconds=0)."))
    lines.append("")
    lines.append("| run | output layer in training | epochs trained | rows trained | "
                 "training s | epoch s | samples/s | / peer samples/s | peak RSS MB | "
                 "process wall s | P@1 | P@5 | P@1 - peer (points) |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    p_sps, p_p1 = get(peer, "samples_per_s"), get(peer, "p1")
    table = [("hetsgd shortlist, defaults", "positives + 10 HNSW hard negatives/row + "
              "1024 uniform", runs.get("hetsgd_defaults"), True),
             ("hetsgd shortlist, `--hard-negatives=0`", "positives + 1024 uniform",
              runs.get("hetsgd_no_hard"), True),
             ("PyTorch sampled softmax (the peer)", "positives + "
              f"{args.peer_sampled_negatives} uniform", peer, True)]
    if args.peer_full_seconds > 0:
        table += [("hetsgd full softmax", "all labels (chunked)", runs.get("hetsgd_full"),
                   False),
                  ("PyTorch full softmax", "all labels (nn.Linear)", runs.get("torch_full"),
                   False)]
    for name, layer, rec, measured in table:
        if name.startswith("PyTorch") and args.no_torch:
            continue
        sps = get(rec, "samples_per_s")
        trained = get(rec, "samples")
        epochs = trained / rows if trained is not None and rows else None
        if measured:
            epoch_s = (get(rec, "train_time_s") / epochs
                       if rec and epochs and get(rec, "train_time_s") else None)
            epoch_cell = cell(rec, epoch_s, ".1f")
        else:
            epoch_cell = (FAILED if rec is None else
                          f"{rows / sps:.0f} (extrapolated)" if sps and rows else "n/a")
        vs = common.ratio(sps, p_sps)
        d = (100.0 * (get(rec, "p1") - p_p1)  # only at equal epochs
             if measured and rec is not None and get(rec, "p1") is not None
             and p_p1 is not None else None)
        lines.append(f"| {name} | {layer} | {cell(rec, epochs, '.2f')} | "
                     f"{cell(rec, trained, '.0f')} | "
                     f"{cell(rec, get(rec, 'train_time_s'), '.1f')} | {epoch_cell} | "
                     f"{cell(rec, sps, '.0f')} | "
                     f"{cell(rec, vs, '.2f') + ('x' if vs is not None else '')} | "
                     f"{cell(rec, get(rec, '_peak_rss_mb'), '.0f')} | "
                     f"{cell(rec, get(rec, '_wall_s'), '.1f')} | "
                     f"{cell(rec, get(rec, 'p1'), '.4f')} | {cell(rec, get(rec, 'p5'), '.4f')} "
                     f"| {cell(rec, d, '+.2f')} |")
    lines.append("")
    verdict = []
    for key, what in (("hetsgd_defaults", "defaults"), ("hetsgd_no_hard", "--hard-negatives=0")):
        rec = runs.get(key)
        r = common.ratio(get(rec, "samples_per_s"), p_sps)
        if r is None or get(rec, "p1") is None or p_p1 is None:
            verdict.append(f"{what}: n/a")
            continue
        verdict.append(f"{what}: {r:.2f}x the peer's samples/s at P@1 "
                       f"{get(rec, 'p1'):.4f} against {p_p1:.4f} "
                       f"({'met' if r >= 3.0 and get(rec, 'p1') >= p_p1 - 1e-12 else 'not met'})")
    lines.append("Target: hetsgd >= 3x the peer's samples/s at equal P@1 per epoch. "
                 + "; ".join(verdict) + ".")
    return lines


# --------------------------------------------------------------------------------------------
# Part "labels"


# name: (table label, extra flags, with the bench flags). "user" is `hetsgd train` with no flag
# but the data, the worker and the budget: what a user gets (auto model, batch 128, the
# validation split and paced evaluations; samples/s counts training time only).
LABEL_VARIANTS = {"defaults": ("bench flags, defaults (10 hard + 1024 uniform)", [], True),
                  "no-hard": ("bench flags, `--hard-negatives=0` (1024 uniform)",
                              [("--hard-negatives", "0")], True),
                  "user": ("no flags (the user's default run)", [("--json", None)], False)}


def part_labels(args, env, work, out):
    print("[labels] shortlist samples/s and peak RSS against the label count", file=sys.stderr,
          flush=True)
    variants = [v for v in args.labels_variants.split(",") if v]
    results = []
    for preset in [p for p in args.labels_presets.split(",") if p]:
        total = PRESET_TRAIN_ROWS.get(preset)
        r = {"preset": preset, "data": None, "records": {}}
        results.append(r)
        if total is None:
            print(f"  {preset}: unknown training rows (known: "
                  f"{', '.join(PRESET_TRAIN_ROWS)}); skipped", file=sys.stderr)
            continue
        scale = min(1.0, args.labels_rows / total)
        r["scale"] = scale
        info = common.generate(args, preset, f"{scale:.8g}",
                               os.path.join(work, f"lab_{preset}"), "cache")
        r["data"] = info
        if info is None:
            continue
        info["counts"] = cache_counts(info["train"])
        info["positives"] = positives_per_batch(info["train"])
        info["train_mb"], info["test_mb"] = mb(info["train"]), mb(info["test"])
        opts = [("--train", info["train"]), ("--test", info["test"]), ("--devices", "cpu:0"),
                ("--threads", str(args.threads))]
        bench = [("--batch", "256"), ("--label-smoothing", "0")]
        if args.labels_epochs > 0:
            opts.append(("--epochs", f"{args.labels_epochs:g}"))
            how = f"{args.labels_epochs:g} epochs"
        else:
            opts += [("--epochs", "0"), ("--time-budget", f"{args.labels_seconds:g}")]
            how = f"{args.labels_seconds:g} s"
        for v in variants:
            _, extra, with_bench = LABEL_VARIANTS[v]
            cmd = common.hetsgd_cmd(args, opts + extra + (
                bench + common.bench_flags(args, "shortlist") if with_bench else []))
            r["records"][v] = run_captured(cmd, env, f"{preset}: shortlist {v}, {how}",
                                           args.verbose)
        # The data is not needed any more; a 2.8M-label cache pair is not small.
        if not args.work_dir:
            for f in (info["train"], info["test"]):
                try:
                    os.remove(f)
                except OSError:
                    pass
    out["labels"] = results
    return report_labels(args, results, variants)


def report_labels(args, results, variants):
    num, get, cell = common.num, common.get, common.cell
    how = (f"{args.labels_epochs:g} epochs" if args.labels_epochs > 0
           else f"{args.labels_seconds:g} s of training (--time-budget)")
    lines = [f"### Shortlist samples/s and peak RSS against the label count: SYNTHETIC "
             f"{', '.join(r['preset'] for r in results)}-shaped data, "
             f"{args.labels_rows:,} training rows each", ""]
    lines += provenance(args) + [""]
    lines.append(f"Each shape: `hetsgd data gen --preset=P --scale={args.labels_rows} / (P's "
                 f"training rows) --format=cache` (the shape's features and labels, a fraction "
                 f"of its rows; not the real data sets). Distinct positives per batch: the "
                 f"mean over the training rows' consecutive batches of 256 (the shortlist's "
                 f"candidates per step are these plus up to 1024 uniform and 10 x 256 hard "
                 f"negatives).")
    lines.append("")
    lines.append("| shape | labels | features | training rows (scale) | nnz / row "
                 "| labels / row | distinct positives / batch of 256 | data gen s "
                 "| data gen peak RSS MB | cache MB train + test |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        info = r["data"]
        if info is None:
            lines.append(f"| {r['preset']} | " + " | ".join(["failed"] * 9) + " |")
            continue
        c = info.get("counts") or (None,) * 5
        rows = c[0]

        def per_row(n):
            return n / rows if rows and n is not None else None

        sizes = (f"{info['train_mb']:.0f} + {info['test_mb']:.0f}"
                 if info.get("train_mb") is not None and info.get("test_mb") is not None
                 else "n/a")
        lines.append(f"| {r['preset']} | {num(c[2], 'd')} | {num(c[1], 'd')} | "
                     f"{num(rows, 'd')} ({r['scale']:.4g}) | {num(per_row(c[3]), '.1f')} | "
                     f"{num(per_row(c[4]), '.1f')} | {num(info.get('positives'), '.0f')} | "
                     f"{num(info.get('gen_s'), '.1f')} | {num(info.get('gen_rss_mb'), '.0f')} "
                     f"| {sizes} |")
    lines.append("")
    lines.append(f"Training: `hetsgd train --output-layer=shortlist` with the bench flags "
                 f"(hidden {args.hidden}, Adam lr 1e-3 constant, batch 256, no dropout, no "
                 f"validation split, label smoothing 0; the index rebuilt in the background), "
                 f"or with no flag but the data (\"no flags\": the shape's auto model, batch "
                 f"128, a 10% validation split and paced evaluations), "
                 f"for {how}, one worker with {args.threads} threads. Peak RSS: the process's "
                 f"ru_maxrss (data, model, optimiser state, label index). hetsgd's estimate: "
                 f"the host total it prints before training. P@1: on the test rows of hetsgd's "
                 f"final evaluation (their number in brackets: exact on the first rows, or "
                 f"every row ranked through label clusters built from the model), after "
                 f"little training: a sanity check, not accuracy.")
    lines.append("")
    lines.append("| shape | shortlist | training s | rows trained | samples/s | / amazon-670k "
                 "(same shortlist) | peak RSS MB | hetsgd estimate GB | process wall s "
                 "| P@1 (test rows) |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|")
    base = {}
    for r in results:
        if r["preset"] == "amazon-670k":
            base = {v: get(r["records"].get(v), "samples_per_s") for v in variants}
    for r in results:
        if r["data"] is None:
            continue
        for v in variants:
            rec = r["records"].get(v)
            sps = get(rec, "samples_per_s")
            rel = common.ratio(sps, base.get(v))
            lines.append(f"| {r['preset']} | {LABEL_VARIANTS[v][0]} | "
                         f"{cell(rec, get(rec, 'train_time_s'), '.1f')} | "
                         f"{cell(rec, get(rec, 'samples'), '.0f')} | {cell(rec, sps, '.0f')} | "
                         f"{cell(rec, rel, '.2f')} | "
                         f"{cell(rec, get(rec, '_peak_rss_mb'), '.0f')} | "
                         f"{cell(rec, get(rec, '_estimate_gb'), '.2f')} | "
                         f"{cell(rec, get(rec, '_wall_s'), '.1f')} | "
                         f"{cell(rec, get(rec, 'p1'), '.4f')} "
                         f"({cell(rec, get(rec, 'final_eval_rows'), '.0f')}) |")
    lines.append("")
    big = next((r for r in results if r["preset"] == "amazon-3m"), None)
    verdict = []
    for v in variants:
        rel = common.ratio(get(big and big["records"].get(v), "samples_per_s"), base.get(v))
        verdict.append(f"{LABEL_VARIANTS[v][0]}: " + (
            "n/a" if rel is None else f"{rel:.2f} ({'met' if rel >= 0.5 else 'not met'})"))
    lines.append("Target: samples/s at 2.8M labels >= half of that at 670K. "
                 + "; ".join(verdict) + ".")
    return lines


def add_options(p):
    """bench_xmc.py's options for these parts."""
    p.add_argument("--peer-scale", type=float, default=1.0,
                   help="peer: fraction of Amazon-670K's 490,449 training rows generated")
    p.add_argument("--peer-epochs", type=int, default=1,
                   help="peer: epochs of the shortlist runs and of the peer")
    p.add_argument("--peer-sampled-negatives", type=int, default=1024,
                   help="peer: the peer's uniform negatives per batch (hetsgd's default)")
    p.add_argument("--peer-sparse-optimizer", choices=["lazy-adam", "sparse-adam"],
                   default="lazy-adam",
                   help="peer: the PyTorch runs' Adam on row-sparse parameters "
                        "(pytorch_baseline.py --sparse-optimizer)")
    p.add_argument("--peer-full-seconds", type=float, default=60.0,
                   help="peer: training seconds of the full-softmax rows (0 = skip them)")
    p.add_argument("--malloc", choices=["keep", "default"], default="keep",
                   help="peer: keep: every run keeps freed memory (glibc's mmap and trim "
                        "thresholds raised; fewer page faults per step); default: glibc's")
    p.add_argument("--peer-eval-rows", type=int, default=2000,
                   help="peer: test rows the peer scores when no hetsgd run says how many")
    p.add_argument("--labels-presets", default="wiki-500k,amazon-670k,amazon-3m",
                   help="labels: the shapes, smallest label count first")
    p.add_argument("--labels-rows", type=int, default=50000,
                   help="labels: training rows generated for every shape")
    p.add_argument("--labels-seconds", type=float, default=60.0,
                   help="labels: training seconds per shape")
    p.add_argument("--labels-epochs", type=float, default=0,
                   help="labels: train this many epochs instead of --labels-seconds (0 = off)")
    p.add_argument("--labels-variants", default="defaults,no-hard,user",
                   help="labels: runs per shape: defaults (the bench flags, 10 HNSW hard "
                        "negatives per row), no-hard (the bench flags, --hard-negatives=0), "
                        "user (no flags but the data)")


def check_options(p, args):
    if args.peer_scale <= 0 or args.peer_scale > 1 or args.peer_epochs < 1:
        p.error("--peer-scale must be in (0, 1] and --peer-epochs >= 1")
    if args.peer_full_seconds < 0 or args.peer_sampled_negatives < 0 or \
            args.peer_eval_rows < 1:
        p.error("--peer-full-seconds and --peer-sampled-negatives must be >= 0, "
                "--peer-eval-rows >= 1")
    if args.labels_rows < 1 or args.labels_seconds <= 0 or args.labels_epochs < 0:
        p.error("--labels-rows and --labels-seconds must be > 0, --labels-epochs >= 0")
    bad = [v for v in args.labels_variants.split(",") if v and v not in LABEL_VARIANTS]
    if bad or not [v for v in args.labels_variants.split(",") if v]:
        p.error(f"--labels-variants: {','.join(bad) or 'none given'}; choose from "
                f"{', '.join(LABEL_VARIANTS)}")
