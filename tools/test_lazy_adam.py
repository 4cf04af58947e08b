#!/usr/bin/env python3
"""Checks pytorch_baseline.py's LazyAdam against torch.optim.SparseAdam: the same model (the
sampled-softmax peer's EmbeddingBag first layer and nn.Embedding output tables), the same
initial weights, batches and candidates, a few steps of each; every parameter and both moments
must agree to 1e-6. The batches repeat feature ids inside a step (an uncoalesced gradient) and
leave rows out of some steps, so the lazy rule (a row's moments decay only when it is in the
gradient, bias correction by the global step) is exercised, not only dense Adam.

Run: /usr/bin/python3 tools/test_lazy_adam.py   (needs torch; exit 0 when every check passes)
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np  # noqa: E402
import torch  # noqa: E402

import pytorch_baseline as pb  # noqa: E402

FEATURES, LABELS, HIDDEN, ROWS, BATCH, STEPS = 40, 60, 8, 48, 12, 6


def tiny_data(seed=3):
    """ROWS rows over FEATURES features (ids repeat across the rows of a batch) and LABELS
    labels; features >= 30 and labels >= 50 appear only in the second half of the rows, so
    their rows of the weights first move at a later global step."""
    rng = np.random.default_rng(seed)
    x_ptr, x_ind, x_val, y_ptr, y_ind = [0], [], [], [0], []
    for r in range(ROWS):
        late = r >= ROWS // 2
        f = rng.choice(FEATURES if late else 30, size=rng.integers(2, 7), replace=False)
        x_ind += f.tolist()
        x_val += rng.uniform(0.1, 1.0, size=len(f)).tolist()
        y_ind += rng.choice(LABELS if late else 50, size=rng.integers(1, 4),
                            replace=False).tolist()
        x_ptr.append(len(x_ind))
        y_ptr.append(len(y_ind))
    return pb.XcData(FEATURES, LABELS, np.array(x_ptr, dtype=np.int64),
                     np.array(x_ind, dtype=np.int64), np.array(x_val, dtype=np.float32),
                     np.array(y_ptr, dtype=np.int64), np.array(y_ind, dtype=np.int64))


def train_steps(sparse_optimizer, data):
    args = pb.parse_args(["--train=-", "--test=-", f"--hidden={HIDDEN}", "--output=sampled",
                          "--sampled-negatives=6", "--init=hetsgd", "--lr=0.01",
                          f"--sparse-optimizer={sparse_optimizer}"])
    torch.manual_seed(0)
    model = pb.build_model(torch, args, FEATURES, LABELS)
    opts = pb.make_optimizers(torch, args, model)
    sampler = pb.Sampler(torch, args, LABELS)
    for step in range(STEPS):
        begin = (step * BATCH) % ROWS
        batch = pb.Batch(torch, data, begin, begin + BATCH)
        for o in opts:
            o.zero_grad(set_to_none=True)
        pb.sampled_batch_loss(torch, model, sampler, batch).backward()
        for o in opts:
            o.step()
    sparse_opt = opts[-1]
    state = {}
    for name, p in model.named_parameters():
        state[name] = p.detach().clone()
        if p in sparse_opt.state:
            for key in ("exp_avg", "exp_avg_sq"):
                moment = (getattr(sparse_opt, key)(p) if hasattr(sparse_opt, key)
                          else sparse_opt.state[p][key])
                state[f"{name}.{key}"] = moment.clone()
    init = pb.build_model(torch, args, FEATURES, LABELS)
    return state, {name: p.detach().clone() for name, p in init.named_parameters()}, type(
        sparse_opt).__name__


class LazyAdamMatchesSparseAdam(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        data = tiny_data()
        cls.lazy, cls.init, cls.lazy_name = train_steps("lazy-adam", data)
        cls.stock, _, cls.stock_name = train_steps("sparse-adam", data)

    def test_the_flag_picks_the_optimiser(self):
        self.assertEqual(self.lazy_name, "LazyAdam")
        self.assertEqual(self.stock_name, "SparseAdam")

    def test_every_parameter_and_moment_matches(self):
        self.assertEqual(set(self.lazy), set(self.stock))
        # The three row-sparse tables carry moments in both optimisers.
        self.assertEqual(sum(k.endswith(".exp_avg") for k in self.lazy), 3)
        for name in sorted(self.lazy):
            a, b = self.lazy[name], self.stock[name]
            err = (a - b).abs().max().item()
            self.assertLess(err, 1e-6, f"{name}: max |lazy - SparseAdam| = {err:.3g}")

    def test_the_run_moved_the_weights(self):
        # Not a vacuous match: every table moved, and rows outside every step did not.
        for name in ("embed.weight", "out_w.weight", "out_b.weight"):
            moved = (self.lazy[name] - self.init[name]).abs().amax(dim=1) > 0
            self.assertGreater(int(moved.sum()), 0, name)
            untouched = self.lazy[name + ".exp_avg_sq"].abs().amax(dim=1) == 0
            self.assertTrue(torch.equal(moved, ~untouched), name)


class LazyAdamUnit(unittest.TestCase):
    def test_duplicate_rows_are_summed_before_the_update(self):
        LazyAdam = pb.lazy_adam_class(torch)
        w = torch.nn.Parameter(torch.zeros(5, 2))
        opt = LazyAdam([w], lr=0.1)
        # Row 1 twice (+1 and +3), row 3 once: one update of row 1 with g = 4 (Adam's first
        # step is -lr * sign(g) whatever |g|), not two updates.
        w.grad = torch.sparse_coo_tensor([[1, 3, 1]], [[1.0, -2.0], [0.5, 0.5], [3.0, 2.0]],
                                         (5, 2))
        opt.step()
        expected = torch.zeros(5, 2)
        expected[1] = torch.tensor([-0.1, 0.0])  # g = (4, 0): the second column stays at 0
        expected[3] = torch.tensor([-0.1, -0.1])
        self.assertLess((w.detach() - expected).abs().max().item(), 1e-6)
        self.assertEqual(opt.exp_avg(w)[1].tolist(), [0.4000000059604645, 0.0])

    def test_bias_correction_uses_the_global_step(self):
        LazyAdam = pb.lazy_adam_class(torch)
        w = torch.nn.Parameter(torch.zeros(2, 1))
        opt = LazyAdam([w], lr=0.1)
        for row in (0, 1):  # row 0 at step 1, row 1 first at step 2
            w.grad = torch.sparse_coo_tensor([[row]], [[2.0]], (2, 1))
            opt.step()
        # Row 1's moments after its one update: m = 0.1 g, v = 0.001 g^2; corrected by t = 2,
        # the step is lr * sqrt(1 - 0.999^2) / (1 - 0.9^2) * 0.1 / sqrt(0.001) = 0.0744 (by
        # its own update count, t = 1, it would be lr = 0.1).
        expected = 0.1 * (1 - 0.999 ** 2) ** 0.5 / (1 - 0.9 ** 2) * 0.1 * 2.0 / (
            (0.001 * 4.0) ** 0.5 + 1e-8)
        self.assertAlmostEqual(-w[1, 0].item(), expected, delta=1e-6)
        self.assertAlmostEqual(-w[0, 0].item(), 0.1, delta=1e-6)

    def test_dense_gradient_is_refused(self):
        LazyAdam = pb.lazy_adam_class(torch)
        w = torch.nn.Parameter(torch.zeros(3, 2))
        w.grad = torch.ones(3, 2)
        with self.assertRaisesRegex(RuntimeError, "sparse gradients"):
            LazyAdam([w]).step()


if __name__ == "__main__":
    unittest.main(verbosity=2)
