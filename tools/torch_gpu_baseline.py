#!/usr/bin/env python3
"""PyTorch GPU baseline for the device check: hetsgd's sparse MLP and training recipe in plain
PyTorch on one CUDA device, timed on GPU-resident batches.

Model, as in hetsgd (core/README.md §Model): sparse input (d features) -> EmbeddingBag(d, H,
mode='sum', per_sample_weights=values) + bias -> ReLU -> Linear(H, L). Loss: softmax
cross-entropy against the multi-hot target normalised to sum 1, averaged over the batch rows.
Recipe as hetsgd's defaults: Adam (lr 5e-4, betas 0.9/0.999, eps 1e-8), batch 128, lazy on the
sparse layer (SparseAdam on the embedding, as hetsgd updates only the batch's feature rows),
dense Adam on the rest.

Every batch of one epoch is built and copied to the GPU before the clock starts, so the timed
loop holds only GPU work and PyTorch's own launch overhead: no Python-side batch assembly, no
blocking copies. The loop synchronises every 50 steps to check the time budget.

Data: XC Repository text files (e.g. written by `hetsgd data gen`). Prints one JSON record per
mode (fp32, tf32: TF32 matmuls allowed) on stdout.

Example:
  torch_gpu_baseline.py --train=amz_train.txt --test=amz_test.txt --time-budget=8
"""

import argparse
import json
import sys
import time


def read_xc(path):
    """Returns (rows of (features, values), rows of labels, num_features, num_labels)."""
    feats, labels = [], []
    with open(path) as f:
        n, d, num_labels = (int(x) for x in f.readline().split())
        for _ in range(n):
            line = f.readline().rstrip("\n")
            head, _, rest = line.partition(" ")
            labels.append([int(x) for x in head.split(",") if x])
            fs, vs = [], []
            for tok in rest.split():
                k, _, v = tok.partition(":")
                fs.append(int(k))
                vs.append(float(v))
            feats.append((fs, vs))
    return feats, labels, d, num_labels


def to_batch(torch, feats, labels, rows, device):
    """EmbeddingBag inputs (flat ids, offsets, weights) and the normalised target entries."""
    ids, offs, vals = [], [], []
    t_rows, t_cols, t_vals = [], [], []
    for i, r in enumerate(rows):
        offs.append(len(ids))
        ids.extend(feats[r][0])
        vals.extend(feats[r][1])
        ys = labels[r]
        for y in ys:
            t_rows.append(i)
            t_cols.append(y)
            t_vals.append(1.0 / len(ys))
    t = lambda v, dt: torch.tensor(v, dtype=dt, device=device)
    return (t(ids, torch.long), t(offs, torch.long), t(vals, torch.float32),
            (t(t_rows, torch.long), t(t_cols, torch.long), t(t_vals, torch.float32)), len(rows))


def run_mode(torch, args, mode, data, dev):
    feats, labels, d, num_labels, tfeats, tlabels = data
    torch.manual_seed(args.seed)
    torch.backends.cuda.matmul.allow_tf32 = mode == "tf32"
    emb = torch.nn.EmbeddingBag(d, args.hidden, mode="sum", sparse=True).to(dev)
    bound = 1.0 / (d ** 0.5)  # nn.Linear(d, H)'s default init, as hetsgd's init_params
    torch.nn.init.uniform_(emb.weight, -bound, bound)
    b0 = torch.nn.Parameter(torch.empty(args.hidden, device=dev).uniform_(-bound, bound))
    out = torch.nn.Linear(args.hidden, num_labels).to(dev)
    sparse_opt = torch.optim.SparseAdam(list(emb.parameters()), lr=args.lr)
    dense_opt = torch.optim.Adam([b0] + list(out.parameters()), lr=args.lr)

    def forward(ids, offs, vals):
        return out(torch.relu(emb(ids, offs, per_sample_weights=vals) + b0))

    perm = torch.randperm(len(feats)).tolist()
    batches = [to_batch(torch, feats, labels, perm[s:s + args.batch], dev)
               for s in range(0, len(perm) - args.batch + 1, args.batch)]
    torch.cuda.synchronize()

    def step(b):
        ids, offs, vals, (tr, tc, tv), rows = b
        logp = torch.log_softmax(forward(ids, offs, vals), dim=1)
        loss = -(logp[tr, tc] * tv).sum() / rows
        sparse_opt.zero_grad(set_to_none=True)
        dense_opt.zero_grad(set_to_none=True)
        loss.backward()
        sparse_opt.step()
        dense_opt.step()
        return loss

    for i in range(5):  # warm-up: CUDA context, cuBLAS plans, allocator
        step(batches[i % len(batches)])
    torch.cuda.synchronize()
    start = time.perf_counter()
    steps, samples = 0, 0
    while True:
        loss = step(batches[steps % len(batches)])
        steps += 1
        samples += batches[(steps - 1) % len(batches)][4]
        if steps % 50 == 0:
            torch.cuda.synchronize()
            if time.perf_counter() - start >= args.time_budget:
                break
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    peak = torch.cuda.max_memory_allocated(dev)

    hits, m = 0, min(len(tfeats), args.eval_max_points)
    with torch.no_grad():
        for s in range(0, m, 512):
            rows = list(range(s, min(m, s + 512)))
            ids, offs, vals, _, _ = to_batch(torch, tfeats, tlabels, rows, dev)
            top = forward(ids, offs, vals).argmax(dim=1).tolist()
            hits += sum(1 for i, r in enumerate(rows) if top[i] in set(tlabels[r]))
    return {"impl": f"pytorch-{mode}", "device": torch.cuda.get_device_name(dev),
            "torch": torch.__version__, "batch": args.batch, "lr": args.lr, "optimizer": "adam",
            "samples": samples, "train_time_s": elapsed, "samples_per_s": samples / elapsed,
            "last_loss": float(loss.item()), "peak_gpu_mem_mib": peak / 2**20,
            "p1": hits / max(m, 1)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--train", required=True)
    ap.add_argument("--test", required=True)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=5e-4)
    ap.add_argument("--time-budget", type=float, default=8.0, help="seconds per mode")
    ap.add_argument("--eval-max-points", type=int, default=2000)
    ap.add_argument("--modes", default="fp32,tf32", help="comma-separated: fp32, tf32")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--device", default="cuda:0")
    args = ap.parse_args()

    import torch
    if not torch.cuda.is_available():
        print(json.dumps({"impl": "pytorch", "error": "torch.cuda is not available"}))
        return 1
    dev = torch.device(args.device)
    feats, labels, d, num_labels = read_xc(args.train)
    tfeats, tlabels, _, _ = read_xc(args.test)
    data = (feats, labels, d, num_labels, tfeats, tlabels)
    for mode in args.modes.split(","):
        print(json.dumps(run_mode(torch, args, mode, data, dev)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
