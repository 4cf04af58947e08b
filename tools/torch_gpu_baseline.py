#!/usr/bin/env python3
"""PyTorch GPU baseline for the device check: hetsgd's sparse MLP trained with plain PyTorch
on one CUDA device (synchronous SGD; with one GPU that is ordinary mini-batch SGD).

Model, as in hetsgd (DESIGN.md section 4): sparse input (d features) -> EmbeddingBag(d, H,
mode='sum', per_sample_weights=values) + bias -> ReLU -> Linear(H, L). Loss: softmax
cross-entropy against the multi-hot target normalised to sum 1, averaged over the batch rows (a
row without labels adds 0). Plain SGD with a dense first-layer gradient (sparse=False: the
fastest choice on a GPU for these sizes).

Data: XC Repository text files (e.g. written by `hetsgd data gen`). Trains for --time-budget
seconds (plus one warm-up batch), then reports samples/s and P@1 on the test set as one JSON
record on stdout.

Example:
  torch_gpu_baseline.py --train=amz_train.txt --test=amz_test.txt --time-budget=15
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
    """EmbeddingBag inputs (flat ids, offsets, weights) and the normalised target rows."""
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
    return (torch.tensor(ids, dtype=torch.long, device=device),
            torch.tensor(offs, dtype=torch.long, device=device),
            torch.tensor(vals, dtype=torch.float32, device=device),
            (torch.tensor(t_rows, dtype=torch.long, device=device),
             torch.tensor(t_cols, dtype=torch.long, device=device),
             torch.tensor(t_vals, dtype=torch.float32, device=device)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--train", required=True)
    ap.add_argument("--test", required=True)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--time-budget", type=float, default=15.0)
    ap.add_argument("--eval-max-points", type=int, default=2000)
    ap.add_argument("--tf32", action="store_true")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--device", default="cuda:0", help="cuda:N (or cpu, for a smoke test)")
    args = ap.parse_args()

    import torch
    on_gpu = args.device.startswith("cuda")
    if on_gpu and not torch.cuda.is_available():
        print(json.dumps({"error": "torch.cuda is not available"}))
        return 1

    def sync():
        if on_gpu:
            torch.cuda.synchronize()
    torch.manual_seed(args.seed)
    torch.backends.cuda.matmul.allow_tf32 = args.tf32
    dev = torch.device(args.device)
    feats, labels, d, num_labels = read_xc(args.train)
    tfeats, tlabels, _, _ = read_xc(args.test)

    emb = torch.nn.EmbeddingBag(d, args.hidden, mode="sum").to(dev)
    bound = 1.0 / (d ** 0.5)  # nn.Linear(d, H)'s default init, as hetsgd's init_params
    torch.nn.init.uniform_(emb.weight, -bound, bound)
    b0 = torch.nn.Parameter(torch.empty(args.hidden, device=dev).uniform_(-bound, bound))
    out = torch.nn.Linear(args.hidden, num_labels).to(dev)
    params = list(emb.parameters()) + [b0] + list(out.parameters())
    opt = torch.optim.SGD(params, lr=args.lr)

    def forward(ids, offs, vals):
        return out(torch.relu(emb(ids, offs, per_sample_weights=vals) + b0))

    n = len(feats)
    perm = torch.randperm(n).tolist()
    cursor, samples, steps, loss_v = 0, 0, 0, 0.0
    start = None
    while True:
        if cursor + args.batch > n:
            cursor = 0
        rows = perm[cursor:cursor + args.batch]
        cursor += args.batch
        ids, offs, vals, (tr, tc, tv) = to_batch(torch, feats, labels, rows, dev)
        logits = forward(ids, offs, vals)
        logp = torch.log_softmax(logits, dim=1)
        loss = -(logp[tr, tc] * tv).sum() / len(rows)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if start is None:  # the first step (CUDA context, cuBLAS plans) is warm-up
            sync()
            start = time.perf_counter()
            continue
        samples += len(rows)
        steps += 1
        if steps % 20 == 0:
            sync()
            if time.perf_counter() - start >= args.time_budget:
                break
    sync()
    elapsed = time.perf_counter() - start
    loss_v = float(loss.item())

    hits, m = 0, min(len(tfeats), args.eval_max_points)
    with torch.no_grad():
        for s in range(0, m, 512):
            rows = list(range(s, min(m, s + 512)))
            ids, offs, vals, _ = to_batch(torch, tfeats, tlabels, rows, dev)
            top = forward(ids, offs, vals).argmax(dim=1).tolist()
            hits += sum(1 for i, r in enumerate(rows) if top[i] in set(tlabels[r]))
    print(json.dumps({"impl": "pytorch", "device": torch.cuda.get_device_name(dev) if on_gpu else "cpu",
                      "torch": torch.__version__, "samples": samples, "train_time_s": elapsed,
                      "samples_per_s": samples / elapsed, "last_loss": loss_v,
                      "p1": hits / max(m, 1)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
