"""The field's formats on the command line: predict from standard input, the XC score-matrix
text pyxclib reads, probabilities and a threshold; LIBSVM output and stats --json."""

import json
import subprocess

import numpy as np
import pytest

import hetsgd
from conftest import run_cli


@pytest.fixture(scope="module")
def trained(small, tmp_path_factory, cli):
    X, Y, Xt, Yt = small
    d = tmp_path_factory.mktemp("cli")
    hetsgd.write(d / "test.txt", Xt, Yt)
    model = hetsgd.train(X, Y, epochs=3, hidden=16, threads=1, progress=False)
    model.save(d / "m.model")
    return d, model, Xt


def test_predict_stdin_and_xc_matrix(trained, cli):
    d, model, Xt = trained
    by_file = run_cli(cli, "predict", "-m", d / "m.model", "-d", d / "test.txt", "-k", 3).stdout
    text = (d / "test.txt").read_text()
    by_stdin = subprocess.run([cli, "predict", "-m", d / "m.model", "-d", "-", "-k", "3"],
                              input=text, capture_output=True, text=True, check=True).stdout
    assert by_stdin == by_file
    xc = run_cli(cli, "predict", "-m", d / "m.model", "-d", d / "test.txt", "-k", 3,
                 "--output-format", "xc").stdout.splitlines()
    assert xc[0] == "100 12" and xc[1:] == by_file.splitlines()
    labels, _ = model.predict(Xt, 3)
    first = [int(p.split(":")[0]) for p in xc[1].split()]
    assert first == list(labels[0])


def test_predict_probability_and_threshold(trained, cli):
    d, _, _ = trained
    out = run_cli(cli, "predict", "-m", d / "m.model", "-d", d / "test.txt", "-k", 12,
                  "--scores", "probability").stdout.splitlines()
    for line in out:
        p = [float(x.split(":")[1]) for x in line.split()]
        assert abs(sum(p) - 1.0) < 1e-3 and p == sorted(p, reverse=True)  # all 12 labels
    kept = run_cli(cli, "predict", "-m", d / "m.model", "-d", d / "test.txt", "-k", 12,
                   "--scores", "probability", "--threshold", 0.2).stdout.splitlines()
    assert len(kept) == 100
    assert all(float(x.split(":")[1]) >= 0.2 for line in kept for x in line.split())
    bad = subprocess.run([cli, "predict", "-m", d / "m.model", "-d", "-"], input="junk\n",
                         capture_output=True, text=True)
    assert bad.returncode == 1 and "<stdin>:1" in bad.stderr


def test_convert_libsvm_and_stats_json(trained, cli):
    d, _, _ = trained
    run_cli(cli, "data", "convert", d / "test.txt", d / "test.svm", "--format", "libsvm")
    X1, Y1 = hetsgd.read(d / "test.txt")
    X2, Y2 = hetsgd.read(d / "test.svm", num_features=60, num_labels=12)
    assert (X1 != X2).nnz == 0 and (Y1 != Y2).nnz == 0
    st = json.loads(run_cli(cli, "data", "stats", "--json", d / "test.txt").stdout)
    assert st["rows"] == 100 and st["format"] == "xc"
    assert st["points_per_label"] == pytest.approx(Y1.nnz / 12)


@pytest.mark.parametrize("compressed", [True, False])
def test_npz_both_ways(trained, cli, tmp_path, compressed):
    import scipy.sparse as sp
    d, _, _ = trained
    X, Y = hetsgd.read(d / "test.txt")
    # scipy writes, hetsgd reads (labels stored as float64: any dtype is a label set).
    sp.save_npz(tmp_path / "X.npz", X, compressed=compressed)
    sp.save_npz(tmp_path / "Y.npz", Y.astype(np.float64), compressed=compressed)
    run_cli(cli, "data", "convert", tmp_path / "X.npz", tmp_path / "back.txt", "--labels",
            tmp_path / "Y.npz", "--format", "xc")
    assert (tmp_path / "back.txt").read_text() == (d / "test.txt").read_text()
    # hetsgd writes, scipy reads.
    extra = [] if compressed else ["--uncompressed"]
    run_cli(cli, "data", "convert", d / "test.txt", tmp_path / "oX.npz", "--format", "npz",
            "--labels-output", tmp_path / "oY.npz", *extra)
    X2, Y2 = sp.load_npz(tmp_path / "oX.npz"), sp.load_npz(tmp_path / "oY.npz")
    assert X2.format == "csr" and X2.dtype == np.float32 and X2.shape == X.shape
    assert (X2 != X).nnz == 0 and (Y2 != Y).nnz == 0


def test_npz_refusals(trained, cli, tmp_path):
    import scipy.sparse as sp
    d, _, _ = trained
    X, Y = hetsgd.read(d / "test.txt")
    sp.save_npz(tmp_path / "Y.npz", Y)
    sp.save_npz(tmp_path / "csc.npz", X.tocsc())
    (tmp_path / "junk.npz").write_text("junk")
    for bad, words in (("csc.npz", "only CSR"), ("junk.npz", "not a zip archive")):
        out = run_cli(cli, "data", "convert", tmp_path / bad, tmp_path / "o.txt", "--labels",
                      tmp_path / "Y.npz", check=False)
        assert out.returncode == 1 and words in out.stderr and bad in out.stderr
    out = run_cli(cli, "data", "convert", tmp_path / "Y.npz", tmp_path / "o.txt", check=False)
    assert out.returncode == 1 and "--labels" in out.stderr


@pytest.mark.parametrize("forest,linear", [(0.5, "off"), ("off", 0.5), (0.5, 0.5)])
def test_a_blended_model_ranks_by_its_blend_in_python(small, cli, tmp_path, forest, linear):
    """A model `hetsgd train` saved with a label forest, linear classifiers or both predicts and
    evaluates in Python as on the command line: the same labels, the same probabilities, the
    same P@k."""
    X, Y, Xt, Yt = small
    hetsgd.write(tmp_path / "train.txt", X, Y)
    hetsgd.write(tmp_path / "test.txt", Xt, Yt)
    out = run_cli(cli, "train", "--train", tmp_path / "train.txt", "--test",
                  tmp_path / "test.txt", "--epochs", 3, "--hidden", 16, "--threads", 1,
                  "--forest", forest, "--forest-trees", 8, "--linear", linear, "--tail-weight", 0,
                  "-q", "--json", "-o", tmp_path / "f.model").stdout
    record = json.loads(out)
    assert record["forest_weight"] == (0.5 if forest == 0.5 else 0.0)
    assert record["linear_weight"] == (0.5 if linear == 0.5 else 0.0)
    if linear == 0.5:
        assert record["linear_weights"] > 0
    model = hetsgd.load(tmp_path / "f.model")
    labels, scores = model.predict(Xt, 3)
    lines = run_cli(cli, "predict", "-m", tmp_path / "f.model", "-d", tmp_path / "test.txt",
                    "-k", 3).stdout.splitlines()
    for row, line in enumerate(lines):
        pairs = [p.split(":") for p in line.split()]
        assert [int(p[0]) for p in pairs] == list(labels[row])
        assert np.allclose([float(p[1]) for p in pairs], scores[row], rtol=1e-4)
    assert model.evaluate(Xt, Yt)["p1"] == pytest.approx(record["p1"], abs=1e-9)
