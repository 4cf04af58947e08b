#!/usr/bin/env python3
"""PyTorch baseline for hetsgd: the identical sparse-input MLP, trained with plain PyTorch.

Model (core/README.md §Model): sparse input (d features) -> Linear(d, H) + ReLU -> Linear(H, L).
The sparse layer is an nn.EmbeddingBag(mode='sum', per_sample_weights=feature values) plus a
bias, which is how a PyTorch user feeds sparse rows into a linear layer; its gradient is
row-sparse (sparse=True), matching hetsgd's lazy first-layer update. Initialisation is
nn.Linear's default, U(-1/sqrt(in), 1/sqrt(in)) for weights and biases; `--init=hetsgd` instead
reproduces hetsgd's counter-based draw of that same distribution element by element
(core/param_layout.cpp), so both start from identical weights.

Loss: softmax cross-entropy against the multi-hot target normalised to sum 1, averaged over all
batch rows, a row without labels adding 0 (`--loss=softmax`, hetsgd's convention), or
BCEWithLogits averaged over rows x labels (`--loss=bce`). Optimisers: SGD (optional heavy-ball
momentum) or Adam, with the given learning rate, batch size and epochs. With Adam the row-sparse
parameters (the first layer, and the sampled output's weight and bias tables) take lazy Adam:
only the rows in a step's gradient move, their moments decay only then, and the bias
correction uses the global step, as hetsgd's lazy Adam. `--sparse-optimizer=lazy-adam` (the
default) is this file's LazyAdam: the gradient's rows are summed once per step (a sort of the
row ids and one segment sum; an EmbeddingBag's gradient has a row per (row, feature) entry of
the batch, 18.8k at the amazon-670k shape, about 12.5k of them distinct), then the weight rows
and their moments are gathered, updated in place and written back on dense tensors, with no
torch.sparse tensor in the update; `--sparse-optimizer=sparse-adam` is torch.optim.SparseAdam
(coalesce, sparse_mask and sparse adds), the same rule to float rounding
(tools/test_lazy_adam.py checks the two agree to 1e-6). Metrics: P@1/3/5 on the test set, XC
Repository conventions (rows without labels count as zero and stay in the denominator), every
label scored exactly, in chunks of labels (memory bounded at any L).

`--output=sampled` is the sampled softmax a PyTorch user writes instead of hetsgd's shortlisted
output layer (--output-layer=shortlist without hard negatives): the output layer is an
nn.Embedding(L, H, sparse=True) weight table and an [L x 1] bias table, both optimised with
lazy Adam (--sparse-optimizer, as the shortlist's output optimiser); every step scores only the
batch's distinct positive labels plus `--sampled-negatives` uniform draws (with replacement,
deduplicated, shared by the batch), and adds log((L - f) / u) to the logits of the u sampled
candidates that are not positives (f = the distinct positives), the shortlist's correction
(kernels/cpu/shortlist.cpp, shortlist_loss_grad in kernels/cpu/output_layer.cpp). With
`--sampled-negatives` >= L every label is a candidate and the loss is the full softmax's. The
peer has no hard negatives: the shortlist's come from an HNSW index that hetsgd builds in its own
process over its own current label weights and queries with each row's hidden vector, rebuilt
in the background; the two models differ from the first step on, so hetsgd's candidates are not
hard for this model, and a PyTorch equivalent would be a second ANN index over this model's
weights, rebuilt as it trains. Its like-for-like hetsgd run is `--hard-negatives=0`.

`--ddp` runs the data-parallel variant: `--world` processes (default 2) on CPU with the gloo
backend and DistributedDataParallel; every step each process takes its share of the global
batch of `--batch` rows, so the update equals single-process SGD on the global batch.

Data: XC Repository text files (`num_points num_features num_labels` header, then
`l1,l2,... f:v f:v ...` lines), e.g. the ones `hetsgd data gen` writes for synthetic presets, or
hetsgd's binary caches (`hetsgd data gen --format=cache`, `hetsgd data convert`), told apart by
the cache's magic and memory-mapped, so a large training set loads in seconds.

Examples:
  pytorch_baseline.py --train=train.txt --test=test.txt --epochs=5 --threads=2 --json
  pytorch_baseline.py --train=amz_train.bin --test=amz_test.bin --output=sampled --epochs=1 \
    --init=hetsgd --eval-max-points=5000 --threads=2
  pytorch_baseline.py --train=train.txt --test=test.txt --ddp --world=2 --threads=2
"""

import argparse
import json
import math
import os
import sys
import time


def _pin_blas_threads(argv):
    """OpenBLAS (pthread build, which Debian's numpy and torch both load) sizes its own thread
    pool from the environment when the library is loaded, and torch.set_num_threads() does not
    reach it; so set OPENBLAS_NUM_THREADS from --threads before numpy is imported (DDP
    children inherit it)."""
    threads, world, ddp = 0, 2, False
    for i, a in enumerate(argv):
        val = a.split("=", 1)[1] if "=" in a else (argv[i + 1] if i + 1 < len(argv) else "")
        if a.startswith("--threads"):
            threads = int(val) if val.isdigit() else 0
        elif a.startswith("--world"):
            world = int(val) if val.isdigit() else 2
        elif a == "--ddp":
            ddp = True
    if threads > 0:
        per_process = max(1, threads // world) if ddp else threads
        os.environ.setdefault("OPENBLAS_NUM_THREADS", str(per_process))
        os.environ.setdefault("OMP_NUM_THREADS", str(per_process))


if __name__ == "__main__":
    _pin_blas_threads(sys.argv[1:])

import numpy as np  # noqa: E402  (after the thread pinning above)


# --------------------------------------------------------------------------------------------
# Data


class XcData:
    """A multi-label sparse dataset in CSR form (numpy arrays)."""

    def __init__(self, num_features, num_labels, x_indptr, x_indices, x_values, y_indptr,
                 y_indices):
        self.num_features = int(num_features)
        self.num_labels = int(num_labels)
        self.x_indptr = x_indptr
        self.x_indices = x_indices
        self.x_values = x_values
        self.y_indptr = y_indptr
        self.y_indices = y_indices

    @property
    def rows(self):
        return len(self.x_indptr) - 1


def read_xc(path, num_features=None, num_labels=None, max_rows=0):
    """Parses an XC Repository text file into an XcData; raises ValueError naming file:line.
    max_rows > 0 reads only the first max_rows data rows (the header still gives the shape)."""
    with open(path, "r") as f:
        header = f.readline().split()
        if len(header) != 3:
            raise ValueError(f"{path}:1: header must be 'points features labels', got {header}")
        n, d, l = (int(v) for v in header)
        d = max(d, num_features or 0)
        l = max(l, num_labels or 0)
        x_indptr = [0]
        x_indices = []
        x_values = []
        y_indptr = [0]
        y_indices = []
        line_no = 1
        for line in f:
            line_no += 1
            if not line.strip() and not line.startswith(" "):
                continue
            if max_rows > 0 and len(x_indptr) > max_rows:
                break
            tokens = line.rstrip("\n").split(" ")
            first = tokens[0]
            start = 1
            if ":" in first:  # no label field at all
                start = 0
            elif first:
                try:
                    y_indices.extend(int(t) for t in first.split(","))
                except ValueError:
                    raise ValueError(f"{path}:{line_no}: bad label list '{first}'") from None
            for tok in tokens[start:]:
                if not tok:
                    continue
                fid, _, val = tok.partition(":")
                try:
                    x_indices.append(int(fid))
                    x_values.append(float(val))
                except ValueError:
                    raise ValueError(f"{path}:{line_no}: bad feature '{tok}'") from None
            x_indptr.append(len(x_indices))
            y_indptr.append(len(y_indices))
    data = XcData(d, l, np.asarray(x_indptr, dtype=np.int64),
                  np.asarray(x_indices, dtype=np.int64), np.asarray(x_values, dtype=np.float32),
                  np.asarray(y_indptr, dtype=np.int64), np.asarray(y_indices, dtype=np.int64))
    if data.rows != n and not (max_rows > 0 and data.rows == min(n, max_rows)):
        raise ValueError(f"{path}: header says {n} points, file has {data.rows}")
    if len(data.x_indices) and (data.x_indices.min() < 0 or data.x_indices.max() >= d):
        raise ValueError(f"{path}: feature id out of range [0, {d})")
    if len(data.y_indices) and (data.y_indices.min() < 0 or data.y_indices.max() >= l):
        raise ValueError(f"{path}: label id out of range [0, {l})")
    return data


CACHE_MAGIC = b"HETSGDDS"
CACHE_VERSION = 1


def read_cache(path, num_features=None, num_labels=None, max_rows=0):
    """Reads hetsgd's binary cache (datasets/README.md: a 64-byte header, then x_indptr and
    y_indptr as i64, x_indices i32, x_values f32, y_indices i32, zero padding to 8 bytes and a
    u64 checksum) into an XcData, memory-mapped, so a large training set loads in seconds. The
    checksum is not recomputed (hetsgd checks it); sizes, bounds and offsets are."""
    raw = np.memmap(path, dtype=np.uint8, mode="r")
    if len(raw) < 72 or bytes(raw[:8]) != CACHE_MAGIC:
        raise ValueError(f"{path}: not a hetsgd cache (no HETSGDDS magic)")
    version, bom = (int(v) for v in np.frombuffer(raw, dtype="<u4", count=2, offset=8))
    if version != CACHE_VERSION or bom != 0x01020304:
        raise ValueError(f"{path}: cache version {version}, byte-order mark {bom:#x}; this "
                         f"reader takes version {CACHE_VERSION}, little-endian")
    n, d, l, nnz, lnnz = (int(v) for v in np.frombuffer(raw, dtype="<i8", count=5, offset=16))
    if min(n, d, l, nnz, lnnz) < 0:
        raise ValueError(f"{path}: negative count in the header ({n}, {d}, {l}, {nnz}, {lnnz})")
    body = 16 * (n + 1) + 8 * nnz + 4 * lnnz
    expected = 64 + (body + 7) // 8 * 8 + 8
    if len(raw) != expected:
        raise ValueError(f"{path}: {len(raw)} bytes, the header declares {expected}")
    off = 64
    parts = []
    for count, dtype in ((n + 1, "<i8"), (n + 1, "<i8"), (nnz, "<i4"), (nnz, "<f4"),
                         (lnnz, "<i4")):
        parts.append(np.frombuffer(raw, dtype=dtype, count=count, offset=off))
        off += count * np.dtype(dtype).itemsize
    x_indptr, y_indptr, x_indices, x_values, y_indices = parts
    rows = min(n, max_rows) if max_rows > 0 else n
    xe, ye = int(x_indptr[rows]), int(y_indptr[rows])
    for name, ptr, total in (("x_indptr", x_indptr, nnz), ("y_indptr", y_indptr, lnnz)):
        if ptr[0] != 0 or ptr[-1] != total or np.any(np.diff(ptr) < 0):
            raise ValueError(f"{path}: {name} does not run from 0 up to {total}")
    d = max(d, num_features or 0)
    l = max(l, num_labels or 0)
    data = XcData(d, l, np.array(x_indptr[:rows + 1], dtype=np.int64),
                  x_indices[:xe].astype(np.int64), np.array(x_values[:xe], dtype=np.float32),
                  np.array(y_indptr[:rows + 1], dtype=np.int64),
                  y_indices[:ye].astype(np.int64))
    if len(data.x_indices) and (data.x_indices.min() < 0 or data.x_indices.max() >= d):
        raise ValueError(f"{path}: feature id out of range [0, {d})")
    if len(data.y_indices) and (data.y_indices.min() < 0 or data.y_indices.max() >= l):
        raise ValueError(f"{path}: label id out of range [0, {l})")
    return data


def read_data(path, num_features=None, num_labels=None, max_rows=0):
    """An XC text file or a hetsgd cache, told apart by the cache's magic."""
    with open(path, "rb") as f:
        magic = f.read(8)
    reader = read_cache if magic == CACHE_MAGIC else read_xc
    return reader(path, num_features, num_labels, max_rows=max_rows)


def gather_ranges(indptr, rows):
    """Positions of the entries of `rows` in a CSR array, concatenated, and the new indptr."""
    starts = indptr[rows]
    lengths = indptr[rows + 1] - starts
    new_indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(lengths, out=new_indptr[1:])
    total = int(new_indptr[-1])
    # position k of the output belongs to row r = searchsorted; offset inside the row = k - start
    owner = np.repeat(np.arange(len(rows), dtype=np.int64), lengths)
    pos = np.arange(total, dtype=np.int64) - new_indptr[owner] + starts[owner]
    return pos, new_indptr


def permute(data, order):
    """A copy of `data` with its rows in `order` (one vectorised gather per epoch)."""
    xp, x_indptr = gather_ranges(data.x_indptr, order)
    yp, y_indptr = gather_ranges(data.y_indptr, order)
    return XcData(data.num_features, data.num_labels, x_indptr, data.x_indices[xp],
                  data.x_values[xp], y_indptr, data.y_indices[yp])


class Batch:
    """Rows [begin, end) of a (permuted) dataset as torch tensors."""

    def __init__(self, torch, data, begin, end):
        xb, xe = int(data.x_indptr[begin]), int(data.x_indptr[end])
        yb, ye = int(data.y_indptr[begin]), int(data.y_indptr[end])
        self.rows = end - begin
        self.indices = torch.from_numpy(data.x_indices[xb:xe])
        self.offsets = torch.from_numpy(data.x_indptr[begin:end] - xb)
        self.values = torch.from_numpy(data.x_values[xb:xe])
        y_counts = np.diff(data.y_indptr[begin:end + 1])
        self.label_rows = torch.from_numpy(
            np.repeat(np.arange(self.rows, dtype=np.int64), y_counts))
        self.label_ids = torch.from_numpy(data.y_indices[yb:ye])
        self.label_counts = torch.from_numpy(y_counts.astype(np.float32))
        self.y_indptr = data.y_indptr[begin:end + 1] - yb
        self.y_np = data.y_indices[yb:ye]


# --------------------------------------------------------------------------------------------
# Model


def hetsgd_uniform(seed, start, count, bound):
    """hetsgd's init_params draw for buffer elements [start, start + count): bound*(2u - 1)
    with u = uniform01(seed, k) (core/random.h, SplitMix64), reproduced bit for bit."""
    mask = (1 << 64) - 1

    def mix64_int(z):
        z = (z + 0x9E3779B97F4A7C15) & mask
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        return z ^ (z >> 31)

    # Drawn in chunks: the uint64 temporaries of one 128 x 670,091 draw in a single piece
    # would add gigabytes to the process's peak RSS (element-wise, so the values are the same).
    out = np.empty(count, dtype=np.float32)
    seed_mix = np.uint64(mix64_int(seed))
    chunk = 1 << 22
    for c0 in range(0, count, chunk):
        c1 = min(count, c0 + chunk)
        with np.errstate(over="ignore"):
            k = np.arange(start + c0, start + c1, dtype=np.uint64)
            z = seed_mix ^ (k * np.uint64(0xD1B54A32D192ED03))
            z = z + np.uint64(0x9E3779B97F4A7C15)
            z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            z = z ^ (z >> np.uint64(31))
        u = (z >> np.uint64(40)).astype(np.float32) * np.float32(1.0 / 16777216.0)
        out[c0:c1] = np.float32(bound) * (np.float32(2.0) * u - np.float32(1.0))
    return out


def build_model(torch, args, d, num_labels):
    nn = torch.nn

    sampled = args.output == "sampled"

    class SparseMlp(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.EmbeddingBag(d, args.hidden, mode="sum", sparse=not args.dense_grad)
            self.bias0 = nn.Parameter(torch.empty(args.hidden))
            if sampled:
                # Row-sparse output layer: label j's weights are row j, its bias row j of a
                # [L x 1] table, so a step's gradient covers only its candidates' rows.
                self.out_w = nn.Embedding(num_labels, args.hidden, sparse=True)
                self.out_b = nn.Embedding(num_labels, 1, sparse=True)
            else:
                self.out = nn.Linear(args.hidden, num_labels)

        def hidden(self, batch):
            h = self.embed(batch.indices, batch.offsets, per_sample_weights=batch.values)
            return torch.relu(h + self.bias0)

        def forward(self, batch):
            return self.out(self.hidden(batch))

        def output_weights(self):
            """[L x H] weights and [L] bias of the output layer (views, no copies)."""
            if sampled:
                return self.out_w.weight, self.out_b.weight[:, 0]
            return self.out.weight, self.out.bias

    model = SparseMlp()
    with torch.no_grad():
        if args.init == "hetsgd":
            # hetsgd's buffer: W0 [d x H] row-major, b0 [H], W1 [H x L] row-major, b1 [L].
            b0 = 1.0 / math.sqrt(np.float32(d))
            b1 = 1.0 / math.sqrt(np.float32(args.hidden))
            off = 0
            w0 = hetsgd_uniform(args.seed, off, d * args.hidden, np.float32(b0))
            off += d * args.hidden
            bias0 = hetsgd_uniform(args.seed, off, args.hidden, np.float32(b0))
            off += args.hidden
            w1 = hetsgd_uniform(args.seed, off, args.hidden * num_labels, np.float32(b1))
            off += args.hidden * num_labels
            bias1 = hetsgd_uniform(args.seed, off, num_labels, np.float32(b1))
            model.embed.weight.copy_(torch.from_numpy(w0.reshape(d, args.hidden)))
            model.bias0.copy_(torch.from_numpy(bias0))
            w_out, b_out = model.output_weights()
            w_out.copy_(torch.from_numpy(w1.reshape(args.hidden, num_labels).T))
            b_out.copy_(torch.from_numpy(bias1))
        else:
            # nn.Linear(d, H)'s default: weights and bias U(-1/sqrt(d), 1/sqrt(d)).
            bound = 1.0 / math.sqrt(d)
            model.embed.weight.uniform_(-bound, bound)
            model.bias0.uniform_(-bound, bound)
            if sampled:  # nn.Linear(H, L)'s default, as the full layer gets
                bound = 1.0 / math.sqrt(args.hidden)
                model.out_w.weight.uniform_(-bound, bound)
                model.out_b.weight.uniform_(-bound, bound)
    return model


def lazy_adam_class(torch):
    """torch.optim.Optimizer subclass LazyAdam (built here because torch is imported late)."""

    class LazyAdam(torch.optim.Optimizer):
        """Lazy Adam on row-sparse gradients, kept in dense parameter and moment tensors: the
        rule of torch.optim.SparseAdam and of hetsgd's lazy Adam (only the rows in the step's
        gradient move, their moments decay only then, bias correction by the global step t),
        without torch.sparse in the update. SparseAdam coalesces the gradient (a sparse sort
        and sum), then builds sparse tensors for sparse_mask and three sparse adds per
        parameter; an EmbeddingBag's gradient holds one row per (row, feature) entry of the
        batch, 18.8k rows at the amazon-670k shape, so that is most of a step. Here the rows
        are summed once (one sort of the ids, one segment sum), and the weights
        and the moments (one [N x 2 x ...] tensor, m and v of a row side by side) are read
        with index_select, updated in place and written back with index_put_ on those rows
        only. exp_avg(p) and exp_avg_sq(p) give the moments as SparseAdam's state names
        them."""

        def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
            super().__init__(params, dict(lr=lr, betas=betas, eps=eps))
            self.t = 0  # the global step of the bias correction

        @torch.no_grad()
        def step(self, closure=None):
            self.t += 1
            for group in self.param_groups:
                beta1, beta2 = group["betas"]
                bc1 = 1.0 - beta1 ** self.t
                bc2 = 1.0 - beta2 ** self.t
                step_size = group["lr"] * math.sqrt(bc2) / bc1
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    state = self.state[p]
                    if not state:
                        # m and v side by side, [rows x 2 x ...]: a row's moments are one
                        # contiguous block, one gather and one scatter per step for both.
                        state["moments"] = p.new_zeros((p.shape[0], 2) + tuple(p.shape[1:]))
                    rows, g = self.rows_and_sums(p.grad)
                    if rows.numel() == 0:
                        continue
                    moments = state["moments"]
                    mv = moments.index_select(0, rows)
                    m, v = mv[:, 0], mv[:, 1]
                    m.mul_(beta1).add_(g, alpha=1.0 - beta1)
                    v.mul_(beta2).addcmul_(g, g, value=1.0 - beta2)
                    moments.index_put_((rows,), mv)
                    # index_put_ writes the rows back (they are distinct); on CPU it is faster
                    # than index_copy_ and index_add_.
                    p_rows = p.index_select(0, rows)
                    p_rows.addcdiv_(m, v.sqrt_().add_(group["eps"]), value=-step_size)
                    p.index_put_((rows,), p_rows)

        def exp_avg(self, p):
            return self.state[p]["moments"][:, 0]

        def exp_avg_sq(self, p):
            return self.state[p]["moments"][:, 1]

        @staticmethod
        def rows_and_sums(grad):
            """(distinct row ids ascending, their summed gradient rows) of a sparse COO
            gradient: one sort of the ids, then embedding_bag(mode="sum") as the segment sum
            (bags = runs of one id in sorted order). Not index_add_ nor an accumulating
            index_put_: in torch 1.13 on CPU the first dispatches once per row, the second
            takes tens of ms with two threads."""
            if not grad.is_sparse:
                raise RuntimeError("LazyAdam takes sparse gradients (sparse=True embeddings); "
                                   "use Adam for dense ones")
            ids, vals = grad._indices()[0], grad._values()
            if ids.numel() == 0:
                return ids, vals
            ids, order = torch.sort(ids)
            rows, counts = torch.unique_consecutive(ids, return_counts=True)
            starts = counts.cumsum(0).sub_(counts)
            sums = torch.nn.functional.embedding_bag(order, vals.reshape(len(vals), -1), starts,
                                                     mode="sum")
            return rows, sums.reshape((len(rows),) + tuple(vals.shape[1:]))

    return LazyAdam


def make_optimizers(torch, args, model):
    sparse = [model.embed.weight] if not args.dense_grad else []
    if args.output == "sampled":
        # Lazy Adam on the candidates' rows only, as hetsgd's shortlist output optimiser.
        sparse += [model.out_w.weight, model.out_b.weight]
    dense = [p for p in model.parameters() if not any(p is s for s in sparse)]
    if args.optimizer == "sgd":
        # torch.optim.SGD accepts sparse gradients (momentum buffers then stay sparse).
        return [torch.optim.SGD(list(model.parameters()), lr=args.lr, momentum=args.momentum)]
    opts = [torch.optim.Adam(dense, lr=args.lr)]
    if sparse:
        if args.sparse_optimizer == "lazy-adam":
            opts.append(lazy_adam_class(torch)(sparse, lr=args.lr))
        else:
            opts.append(torch.optim.SparseAdam(sparse, lr=args.lr))
    return opts


def batch_loss(torch, args, logits, batch):
    if args.loss == "bce":
        target = torch.zeros_like(logits)
        target[batch.label_rows, batch.label_ids] = 1.0
        return torch.nn.functional.binary_cross_entropy_with_logits(logits, target)
    # softmax CE with target t = multi-hot / |y|: loss_r = logsumexp(z_r) - mean_{j in y_r} z_rj
    lse = torch.logsumexp(logits, dim=1)
    picked = logits[batch.label_rows, batch.label_ids]
    label_sum = torch.zeros(batch.rows, dtype=logits.dtype).index_add_(0, batch.label_rows, picked)
    # A row without labels adds 0 but stays in the denominator (hetsgd's convention), so the
    # mean of a batch is the share-weighted mean of its DDP shares.
    has = (batch.label_counts > 0).to(logits.dtype)
    per_row = lse - label_sum / batch.label_counts.clamp(min=1.0)
    return (per_row * has).sum() / batch.rows


class Sampler:
    """The candidates of a sampled-softmax step, as hetsgd's shortlist picks them without hard
    negatives (kernels/cpu/shortlist.cpp): the batch's distinct positive labels, plus
    `--sampled-negatives` uniform draws over all L labels, with replacement, deduplicated and
    shared by every row of the batch (sampled_negatives >= L makes every label a candidate).
    The u candidates that are not positives stand for the L - f labels that are not (f the
    distinct positives), so each gets the ratio weight (L - f) / u, entering the softmax as a
    logit correction log((L - f) / u); positives get none (weight 1)."""

    def __init__(self, torch, args, num_labels):
        self.torch = torch
        self.num_labels = num_labels
        self.count = args.sampled_negatives
        self.gen = torch.Generator().manual_seed(args.seed)
        self.candidates = 0  # summed over steps, for the record
        self.steps = 0

    def draw(self, label_ids):
        """(candidate ids ascending, their logit corrections, each batch label's slot)."""
        torch = self.torch
        pos = torch.unique(label_ids)
        if self.count >= self.num_labels:
            cand = torch.arange(self.num_labels, dtype=torch.int64)
        else:
            neg = torch.randint(self.num_labels, (self.count,), generator=self.gen,
                                dtype=torch.int64)
            cand = torch.unique(torch.cat([pos, neg]))
        fixed = pos.numel()
        uniform = cand.numel() - fixed
        corr = torch.zeros(cand.numel())
        if uniform > 0:
            weight = (self.num_labels - fixed) / uniform
            if weight != 1.0:
                corr.masked_fill_(~torch.isin(cand, pos), math.log(weight))
        self.candidates += cand.numel()
        self.steps += 1
        return cand, corr, torch.searchsorted(cand, label_ids)


def sampled_batch_loss(torch, model, sampler, batch):
    """hetsgd's shortlist softmax over the step's candidates: per row, the softmax
    cross-entropy of the corrected logits z_c + log w_c against the row's labels (target
    multi-hot / |y|), averaged over all batch rows, a row without labels adding 0."""
    h = model.hidden(batch)
    cand, corr, slots = sampler.draw(batch.label_ids)
    w = model.out_w(cand)              # [C x H], gradient row-sparse
    b = model.out_b(cand)[:, 0]
    logits = h @ w.t() + (b + corr)    # [rows x C]
    lse = torch.logsumexp(logits, dim=1)
    picked = logits[batch.label_rows, slots]
    label_sum = torch.zeros(batch.rows, dtype=logits.dtype).index_add_(0, batch.label_rows, picked)
    has = (batch.label_counts > 0).to(logits.dtype)
    per_row = lse - label_sum / batch.label_counts.clamp(min=1.0)
    return (per_row * has).sum() / batch.rows


def evaluate(torch, args, model, test):
    """P@1/3/5 over all test rows (rows without labels count as zero), every label scored
    exactly: `--eval-batch` rows against `--eval-label-chunk` labels at a time, each chunk's
    top 5 merged into the rows' running top 5, so memory stays O(eval batch x chunk) at any L."""
    hits = np.zeros(5)
    rows = 0
    w, bias = model.output_weights()
    num_labels = w.shape[0]
    k = min(5, num_labels)
    chunk = max(1, args.eval_label_chunk)
    model.eval()
    with torch.no_grad():
        for begin in range(0, test.rows, args.eval_batch):
            end = min(test.rows, begin + args.eval_batch)
            b = Batch(torch, test, begin, end)
            h = model.hidden(b)
            best_s = torch.full((b.rows, k), -math.inf)
            best_i = torch.zeros((b.rows, k), dtype=torch.int64)
            for c0 in range(0, num_labels, chunk):
                c1 = min(num_labels, c0 + chunk)
                z = torch.addmm(bias[c0:c1], h, w[c0:c1].t())
                s, i = torch.topk(z, min(k, c1 - c0), dim=1)
                all_s = torch.cat([best_s, s], dim=1)
                all_i = torch.cat([best_i, i + c0], dim=1)
                best_s, at = torch.topk(all_s, k, dim=1)
                best_i = torch.gather(all_i, 1, at)
            # A hit is a (row, label) pair of the top k that is among the row's labels.
            top = best_i.numpy()
            truth = b.label_rows.numpy() * num_labels + b.y_np
            keys = np.arange(b.rows, dtype=np.int64)[:, None] * num_labels + top
            hit = np.isin(keys, truth).astype(np.float64)
            hits[:k] += np.cumsum(hit, axis=1).sum(axis=0)
            rows += b.rows
    model.train()
    rows = max(rows, 1)
    return {f"p{k}": float(hits[k - 1] / (k * rows)) for k in (1, 3, 5)}


# --------------------------------------------------------------------------------------------
# Training


def train(args, rank=0, world=1):
    import torch

    threads = max(1, args.threads // world) if args.threads > 0 else os.cpu_count() // world
    torch.set_num_threads(threads)
    torch.manual_seed(args.seed)
    t0 = time.perf_counter()
    train_data = read_data(args.train, max_rows=args.max_rows)
    test = read_data(args.test, train_data.num_features, train_data.num_labels,
                     max_rows=args.eval_max_points)
    d = max(train_data.num_features, test.num_features)
    num_labels = max(train_data.num_labels, test.num_labels)
    load_s = time.perf_counter() - t0

    model = build_model(torch, args, d, num_labels)
    net = model
    if world > 1:
        net = torch.nn.parallel.DistributedDataParallel(model)
    opts = make_optimizers(torch, args, model)
    rng = np.random.default_rng(args.seed)
    sampler = Sampler(torch, args, num_labels) if args.output == "sampled" else None

    global_batch = args.batch
    share = global_batch // world
    epoch_times = []
    epoch_losses = []
    samples = 0
    stopped = False  # --max-seconds reached

    def time_up(running_s):
        """--max-seconds: is the training time so far (finished epochs + `running_s`) over the
        limit? With DDP every rank takes the same answer, so all stop at the same step."""
        over = sum(epoch_times) + running_s >= args.max_seconds
        if world > 1:
            import torch.distributed as dist
            flag = torch.tensor([1 if over else 0], dtype=torch.int32)
            dist.all_reduce(flag, op=dist.ReduceOp.MAX)
            over = bool(flag.item())
        return over

    for epoch in range(args.epochs):
        if args.max_seconds > 0 and epoch > 0 and time_up(0.0):
            stopped = True
            break
        order = rng.permutation(train_data.rows)  # identical on every rank (same seed)
        t_start = time.perf_counter()
        perm = permute(train_data, order)
        loss_sum = 0.0
        steps = 0
        epoch_samples = 0  # rows of the global batches started (all ranks together)
        for begin in range(0, perm.rows, global_batch):
            # Checked between batches (never before an epoch's first one).
            if args.max_seconds > 0 and begin > 0 and time_up(time.perf_counter() - t_start):
                stopped = True
                break
            end = min(perm.rows, begin + global_batch)
            epoch_samples = end
            # this rank's share of the global batch
            n = end - begin
            lo = begin + (n * rank) // world
            hi = begin + (n * (rank + 1)) // world
            if hi <= lo:
                continue
            b = Batch(torch, perm, lo, hi)
            for o in opts:
                o.zero_grad(set_to_none=True)
            if sampler is not None:
                loss = sampled_batch_loss(torch, model, sampler, b)
            else:
                loss = batch_loss(torch, args, net(b), b)
            loss.backward()
            for o in opts:
                o.step()
            loss_sum += float(loss)
            steps += 1
        elapsed = time.perf_counter() - t_start
        epoch_times.append(elapsed)
        epoch_losses.append(loss_sum / max(steps, 1))
        samples += epoch_samples
        if rank == 0 and not args.quiet:
            print(f"epoch {epoch + 1}/{args.epochs}: {elapsed:.3f} s, "
                  f"{epoch_samples / elapsed if elapsed > 0 else 0.0:.0f} samples/s, "
                  f"loss {epoch_losses[-1]:.4f}"
                  + (f" (stopped after {epoch_samples} rows: --max-seconds)" if stopped else ""),
                  file=sys.stderr if args.json else sys.stdout, flush=True)
        if stopped:
            break
    train_s = sum(epoch_times)
    epochs_trained = samples / train_data.rows if train_data.rows else 0.0
    t_eval = time.perf_counter()
    metrics = evaluate(torch, args, model, test) if rank == 0 else {}
    eval_s = time.perf_counter() - t_eval
    record = {
        "framework": "pytorch",
        "torch_version": torch.__version__,
        "mode": f"ddp-gloo-{world}" if world > 1 else "single",
        "train": args.train,
        "rows": train_data.rows,  # rows loaded (the first --max-rows when given)
        "num_features": d,
        "num_labels": num_labels,
        "hidden": args.hidden,
        "loss": args.loss,
        "output": args.output,
        "sampled_negatives": args.sampled_negatives if sampler is not None else None,
        "avg_candidates": (sampler.candidates / sampler.steps
                           if sampler is not None and sampler.steps else None),
        "optimizer": args.optimizer,
        "sparse_optimizer": (args.sparse_optimizer
                             if args.optimizer == "adam" and (sampler or not args.dense_grad)
                             else None),
        "lr": args.lr,
        "batch": args.batch,
        "epochs": args.epochs,
        "threads": threads * world,
        "threads_per_process": threads,
        "world_size": world,
        "init": args.init,
        "load_s": load_s,
        "epoch_times_s": epoch_times,  # the last one partial when stopped by --max-seconds
        "epoch_losses": epoch_losses,
        "train_time_s": train_s,
        # Seconds per epoch; when --max-seconds stopped training inside an epoch, the time of
        # one full epoch extrapolated from the samples trained (rows / samples_per_s).
        "epoch_time_s": (train_s / max(len(epoch_times), 1) if not stopped else
                         (train_s * train_data.rows / samples if samples else float("nan"))),
        "samples": samples,  # rows trained (all processes together)
        "epochs_trained": epochs_trained,
        "samples_per_s": samples / train_s if train_s > 0 else 0.0,
        "stop": "max seconds" if stopped else "max epochs",
        "max_seconds": args.max_seconds,
        "max_rows": args.max_rows,
        "eval_points": test.rows,
        "eval_s": eval_s,
        **metrics,
    }
    return record


def ddp_worker(rank, args, world, port, queue):
    import torch.distributed as dist
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        record = train(args, rank, world)
        if rank == 0:
            queue.put(record)
    finally:
        dist.destroy_process_group()


def run_ddp(args):
    import socket
    import torch.multiprocessing as mp
    with socket.socket() as s:  # a free local port for the rendezvous
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    mp.start_processes(ddp_worker, args=(args, args.world, port, queue), nprocs=args.world,
                       join=True, start_method="spawn")
    return queue.get()


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--train", required=True, help="XC-format training file")
    p.add_argument("--test", required=True, help="XC-format test file")
    p.add_argument("--hidden", type=int, default=128, help="hidden layer width")
    p.add_argument("--loss", choices=["softmax", "bce"], default="softmax")
    p.add_argument("--output", choices=["full", "sampled"], default="full",
                   help="output layer in training: full (nn.Linear, every label) or sampled "
                        "(sampled softmax over the batch's positives and uniform negatives, "
                        "row-sparse nn.Embedding weights with lazy Adam)")
    p.add_argument("--sampled-negatives", type=int, default=1024,
                   help="sampled: uniform negative labels drawn per batch (deduplicated)")
    p.add_argument("--optimizer", choices=["sgd", "adam"], default="adam")
    p.add_argument("--sparse-optimizer", choices=["lazy-adam", "sparse-adam"],
                   default="lazy-adam",
                   help="Adam on the row-sparse parameters (the first layer, and the sampled "
                        "output's tables): lazy-adam (rows summed once, dense tensors updated "
                        "in place) or torch.optim.SparseAdam; the same rule")
    p.add_argument("--lr", type=float, default=1e-3, help="learning rate")
    p.add_argument("--momentum", type=float, default=0.0, help="SGD momentum")
    p.add_argument("--batch", type=int, default=256, help="global batch size (rows)")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--threads", type=int, default=0,
                   help="total intra-op threads (split between DDP processes); 0 = all cores")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--init", choices=["torch", "hetsgd"], default="torch",
                   help="torch: nn.Linear default init; hetsgd: hetsgd's exact initial weights")
    p.add_argument("--dense-grad", action="store_true",
                   help="dense gradient for the sparse layer (plain Adam instead of SparseAdam)")
    p.add_argument("--eval-batch", type=int, default=1024, help="test rows scored at a time")
    p.add_argument("--eval-label-chunk", type=int, default=16384,
                   help="labels scored at a time in the evaluation")
    p.add_argument("--max-seconds", type=float, default=0.0,
                   help="stop training after this many seconds of training time, checked "
                        "between batches (0 = off); samples/s is then over the trained time")
    p.add_argument("--max-rows", type=int, default=0,
                   help="read only the first N data rows of the training file (0 = all)")
    p.add_argument("--eval-max-points", type=int, default=0,
                   help="read and evaluate only the first N test rows (0 = all)")
    p.add_argument("--ddp", action="store_true", help="DistributedDataParallel over gloo")
    p.add_argument("--world", type=int, default=2, help="DDP processes")
    p.add_argument("--json", action="store_true", help="print one JSON record on stdout")
    p.add_argument("--quiet", action="store_true", help="no per-epoch lines")
    args = p.parse_args(argv)
    if args.batch < 1 or args.epochs < 1 or args.hidden < 1:
        p.error("--batch, --epochs and --hidden must be >= 1")
    if args.ddp and args.world < 2:
        p.error("--ddp needs --world >= 2")
    if args.output == "sampled" and (args.ddp or args.loss != "softmax"
                                     or args.optimizer != "adam" or args.dense_grad):
        p.error("--output=sampled takes the softmax loss and Adam, without --ddp or "
                "--dense-grad")
    if args.sampled_negatives < 0 or args.eval_batch < 1 or args.eval_label_chunk < 1:
        p.error("--sampled-negatives must be >= 0, --eval-batch and --eval-label-chunk >= 1")
    if args.max_seconds < 0 or args.max_rows < 0 or args.eval_max_points < 0:
        p.error("--max-seconds, --max-rows and --eval-max-points must be >= 0")
    return args


def main(argv=None):
    args = parse_args(argv)
    try:
        record = run_ddp(args) if args.ddp else train(args)
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(record))
    else:
        print(f"train {record['train_time_s']:.3f} s ({record['epoch_time_s']:.3f} s/epoch), "
              f"{record['samples_per_s']:.0f} samples/s, P@1={record['p1']:.4f} "
              f"P@3={record['p3']:.4f} P@5={record['p5']:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
