"""hetsgd.metrics equal the C++ metrics (hetsgd eval) and the definitions."""

import json
import math

import numpy as np
import pytest
import scipy.sparse as sp

import hetsgd
from conftest import run_cli


def test_hand_computed():
    Y = sp.csr_matrix(np.array([[1, 0, 1, 0], [0, 1, 0, 0], [0, 0, 0, 0]], np.float32))
    pred = np.array([[2, 1, 0], [3, 1, 0], [0, 1, 2]], np.int32)
    assert hetsgd.metrics.precision(Y, pred, 1) == pytest.approx(1 / 3)
    assert hetsgd.metrics.precision(Y, pred, 3) == pytest.approx((2 / 3 + 1 / 3) / 3)
    assert hetsgd.metrics.recall(Y, pred, 3) == pytest.approx((1 + 1) / 3)
    dcg = 1 + 1 / math.log2(4)
    idcg = 1 + 1 / math.log2(3)
    n3 = (dcg / idcg + (1 / math.log2(3)) / 1) / 3
    assert hetsgd.metrics.ndcg(Y, pred, 3) == pytest.approx(n3)
    # A score matrix in pyxclib's layout gives the same as its top-k ids.
    scores = sp.csr_matrix(np.array([[1, 2, 3, 0], [1, 2, 0, 3], [3, 2, 1, 0]], np.float32))
    assert hetsgd.metrics.ndcg(Y, scores, 3) == pytest.approx(n3)


def test_psp_against_definition(small):
    X, Y, Xt, Yt = small
    inv = hetsgd.metrics.inverse_propensity(Y)
    n, counts = Y.shape[0], np.asarray((Y != 0).sum(axis=0)).ravel()
    c = (math.log(n) - 1) * (1.5 + 1) ** 0.55
    assert np.allclose(inv, 1 + c * (counts + 1.5) ** -0.55, rtol=1e-5)
    model = hetsgd.train(X, Y, epochs=2, hidden=16, threads=1, progress=False)
    labels, _ = model.predict(Xt, 5)
    for k in (1, 3, 5):
        num = den = 0.0
        for r in range(Yt.shape[0]):
            truth = set(Yt.indices[Yt.indptr[r]:Yt.indptr[r + 1]])
            num += sum(inv[l] for l in labels[r, :k] if l in truth) / k
            den += sum(sorted((inv[l] for l in truth), reverse=True)[:k]) / k
        assert hetsgd.metrics.psp(Yt, labels, k, propensity=inv) == pytest.approx(num / den)


def test_equal_to_cpp_eval(small, tmp_path, cli):
    X, Y, Xt, Yt = small
    model = hetsgd.train(X, Y, epochs=2, hidden=16, threads=1, progress=False)
    model.save(tmp_path / "m.model")
    hetsgd.write(tmp_path / "test.txt", Xt, Yt)
    hetsgd.write(tmp_path / "train.txt", X, Y)
    cpp = json.loads(run_cli(cli, "eval", "-m", tmp_path / "m.model", "-d",
                             tmp_path / "test.txt", "--train", tmp_path / "train.txt",
                             "--json").stdout)
    labels, _ = model.predict(Xt, 5)
    m = hetsgd.metrics.ranking(Yt, labels, propensity=hetsgd.metrics.inverse_propensity(Y))
    for k in (1, 3, 5):
        assert m["precision"][k - 1] == pytest.approx(cpp[f"p{k}"], abs=1e-12)
        assert m["ndcg"][k - 1] == pytest.approx(cpp[f"ndcg{k}"], abs=1e-12)
        assert m["recall"][k - 1] == pytest.approx(cpp[f"recall{k}"], abs=1e-12)
        assert m["psp"][k - 1] == pytest.approx(cpp[f"psp{k}"], abs=1e-12)
        assert m["psndcg"][k - 1] == pytest.approx(cpp[f"psndcg{k}"], abs=1e-12)
