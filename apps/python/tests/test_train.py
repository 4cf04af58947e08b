"""train, predict, save/load: the package and the command line share options and files."""

import json
import re

import numpy as np
import pytest
import scipy.sparse as sp

import hetsgd
from conftest import run_cli

FAST = dict(epochs=3, hidden=32, threads=1, progress=False)


def test_train_learns_and_reports(small):
    X, Y, Xt, Yt = small
    records = []
    model = hetsgd.train(X, Y, test=(Xt, Yt), callback=records.append,
                         **dict(FAST, epochs=20, lr=0.01))
    assert (model.num_features, model.num_labels, model.hidden) == (60, 12, [32])
    assert model.result["stop"] == "max epochs"
    assert abs(model.result["epochs"] - 20.0) < 0.2
    assert records and records[-1]["p1"] == model.curve[-1]["p1"]
    assert records[-1]["algo"] == "adaptive"
    # Labels follow the features: far better than the initial model (0.25 here).
    assert model.curve[-1]["p1"] > max(0.6, model.curve[0]["p1"] + 0.2)


def test_predict_shapes_and_matrix(small):
    X, Y, Xt, Yt = small
    model = hetsgd.train(X, Y, **FAST)
    labels, scores = model.predict(Xt, k=5)
    assert labels.shape == (100, 5) and labels.dtype == np.int32
    assert scores.shape == (100, 5) and scores.dtype == np.float32
    assert np.all(np.diff(scores, axis=1) <= 0)  # best first
    assert model.predict(Xt, k=50)[0].shape == (100, 12)  # k capped at num_labels
    m = model.predict_matrix(Xt, k=3)
    assert isinstance(m, sp.csr_matrix) and m.shape == (100, 12) and m.nnz == 300
    top = np.asarray(m[0].toarray()).ravel()
    assert set(np.flatnonzero(top)) <= set(labels[0])
    # Fewer feature columns than the model: read at the model's width.
    narrow = Xt[:, :40]
    assert model.predict(narrow, k=2)[0].shape == (100, 2)


def test_save_load_round_trip(small, tmp_path):
    X, Y, Xt, Yt = small
    model = hetsgd.train(X, Y, **FAST)
    path = tmp_path / "m.model"
    model.save(path)
    back = hetsgd.load(str(path))
    assert np.array_equal(back.parameters(), model.parameters())
    a, b = model.predict(Xt, 5), back.predict(Xt, 5)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    assert back.result is None and repr(back).startswith("hetsgd.Model(")


def test_model_file_is_the_command_lines(small, tmp_path, cli):
    X, Y, Xt, Yt = small
    hetsgd.write(tmp_path / "train.txt", X, Y)
    hetsgd.write(tmp_path / "test.txt", Xt, Yt)
    model = hetsgd.train(tmp_path / "train.txt", test=str(tmp_path / "test.txt"), **FAST)
    model.save(tmp_path / "py.model")
    out = run_cli(cli, "eval", "-m", tmp_path / "py.model", "-d", tmp_path / "test.txt", "--json")
    ours = model.evaluate(tmp_path / "test.txt")
    theirs = json.loads(out.stdout)
    for key in ("p1", "p3", "p5", "ndcg3"):
        assert ours[key] == pytest.approx(theirs[key], abs=1e-12)
    run_cli(cli, "train", "--train", tmp_path / "train.txt", "--epochs", 1, "--hidden", 16,
            "-q", "-o", tmp_path / "cli.model")
    cli_model = hetsgd.load(tmp_path / "cli.model")
    assert cli_model.hidden == [16] and cli_model.num_labels == 12


def test_read_write_round_trip(small, tmp_path):
    X, Y, _, _ = small
    for fmt in ("xc", "cache"):
        hetsgd.write(tmp_path / f"d.{fmt}", X, Y, format=fmt)
        X2, Y2 = hetsgd.read(tmp_path / f"d.{fmt}")
        assert (X2 != X).nnz == 0 and (Y2 != Y).nnz == 0


def test_options_are_the_command_lines(small):
    X, Y, Xt, Yt = small
    assert hetsgd.options_to_argv({"lr": 0.5, "keep_best": False, "hidden": [8, 4]}) == [
        "--lr=0.5", "--keep-best=false", "--hidden=8,4"]
    model = hetsgd.train(X, Y, algo="sync", keep_best=False, val_fraction=0.0, max_rounds=2,
                         hidden=[8, 4], devices="cpu:0,cpu:1", threads=1, progress=False)
    assert model.hidden == [8, 4] and model.result["algo"] == "sync"
    assert model.result["stop"] == "max rounds" and len(model.result["devices"]) == 2


def test_validation_set_given(small):
    X, Y, Xt, Yt = small
    model = hetsgd.train(X, Y, test=(Xt, Yt), val=(Xt, Yt), **FAST)
    assert "val" in model.result and "val" in model.curve[-1]


def test_compare_returns_each_curve(small):
    X, Y, Xt, Yt = small
    runs = hetsgd.compare(X, Y, test=(Xt, Yt), algos="adaptive,sync", time_budget=0.3,
                          devices="cpu", threads=1, hidden=16, progress=False)
    assert list(runs) == ["adaptive", "sync"]
    for run in runs.values():
        assert run["error"] == "" and run["curve"] and "p1" in run["curve"][-1]


def test_compare_runs_each_algorithm_as_train_does(small):
    """compare's default budget (5 s, no epochs) is replaced by train's epochs; a given forest
    and tail weight change the model after training, in both."""
    X, Y, Xt, Yt = small
    opts = dict(epochs=3, time_budget=0, hidden=16, devices="cpu:0", threads=1, eval_every=3,
                seed=3, forest=0.5, forest_trees=5, tail_weight=0.5)
    trained = hetsgd.train(X, Y, test=(Xt, Yt), algo="adaptive", progress=False, **opts).result
    run = hetsgd.compare(X, Y, test=(Xt, Yt), algos="adaptive", progress=False, **opts)["adaptive"]
    assert run["error"] == ""
    assert run["forest_weight"] == 0.5 and run["tail_weight"] == 0.5
    for key in ("forest_trees", "refit", "selected_round"):
        assert run[key] == trained[key], key
    for key in ("p1", "p3", "p5"):
        assert run[key] == trained[key], key
        assert run["val"][key] == trained["val"][key], key


def test_tqdm_bar(small, capsys):
    pytest.importorskip("tqdm")
    X, Y, _, _ = small
    hetsgd.train(X, Y, epochs=1, hidden=8, threads=1, progress=True)
    assert "epoch" in capsys.readouterr().err


def test_tqdm_bar_without_an_epoch_count(small, capsys):
    """epochs="auto" (the run's length left to patience) draws a bar over time, not a total."""
    pytest.importorskip("tqdm")
    X, Y, _, _ = small
    model = hetsgd.train(X, Y, epochs="auto", hidden=8, threads=1, progress=True)
    assert model.result["stop"] in ("no improvement", "max epochs")
    assert "val P@1" in capsys.readouterr().err


def test_python_and_the_command_line_train_the_same_model(small, tmp_path, cli):
    """One pipeline: the same file, options and seed give the same choices and metrics from
    both front ends, and the saved file evaluates to what was reported."""
    X, Y, Xt, Yt = small
    hetsgd.write(tmp_path / "train.txt", X, Y)
    hetsgd.write(tmp_path / "test.txt", Xt, Yt)
    # Evaluation points by rounds, not seconds; one thread: the runs are reproducible.
    opts = dict(epochs=6, hidden=32, threads=1, eval_every=3, forest_trees=5, seed=3,
                forest="auto", tail_weight="auto")
    argv = hetsgd.options_to_argv(opts)
    out = run_cli(cli, "train", f"--train={tmp_path / 'train.txt'}",
                  f"--test={tmp_path / 'test.txt'}", "--json", "-q",
                  "-o", tmp_path / "cli.model", *argv)
    rec = json.loads(out.stdout.splitlines()[-1])
    model = hetsgd.train(str(tmp_path / "train.txt"), test=str(tmp_path / "test.txt"),
                         progress=False, **opts)
    py = model.result
    for key in ("forest_weight", "tail_weight", "refit", "selected_round"):
        assert py[key] == rec[key], key
    for key in ("p1", "p3", "p5", "psp1"):
        assert py[key] == pytest.approx(rec[key], abs=1e-9), key
        assert py["val"][key] == pytest.approx(rec["val"][key], abs=1e-9), key
    saved = json.loads(run_cli(cli, "eval", "-m", tmp_path / "cli.model", "-d",
                               tmp_path / "test.txt", "--json", "-q").stdout)
    assert saved["p1"] == pytest.approx(rec["p1"], abs=1e-9)
    assert saved["p5"] == pytest.approx(rec["p5"], abs=1e-9)
    # The Python model is the same model: its own evaluation agrees too.
    assert model.evaluate(Xt, Yt)["p1"] == pytest.approx(rec["p1"], abs=1e-9)


# `hetsgd train`'s options about where the training data comes from and what is written or
# printed: Python passes the data itself and returns the model and its record. (`test` and
# `val` are keywords of hetsgd.train with the options' meaning: a file or an (X, Y) pair.)
NOT_PYTHON = {"help", "train", "synthetic", "scale", "data-seed", "format", "output", "log",
              "json", "quiet"}


def test_python_takes_every_train_option_by_its_name(small, cli, tmp_path, monkeypatch):
    """Every other option of `hetsgd train --help` is a keyword of hetsgd.train: a value it
    cannot take is refused naming the option, never as an unknown argument."""
    X, Y, _, _ = small
    monkeypatch.chdir(tmp_path)  # --checkpoint=@@ writes a file named @@
    text = run_cli(cli, "train", "--help").stdout
    names = set(re.findall(r"^\s+(?:-\w,)?--([a-z][a-z0-9-]*)", text, re.M))
    assert len(names) > 60 and NOT_PYTHON <= names
    for name in sorted(names - NOT_PYTHON):
        kwargs = dict(epochs=1, hidden=4, threads=1, progress=False)
        kwargs[name.replace("-", "_")] = "@@"
        try:
            hetsgd.train(X[:40], Y[:40], **kwargs)
        except Exception as e:  # noqa: BLE001 - any refusal but "unknown" is fine here
            assert "not expected" not in str(e), f"--{name}: {e}"
    for name in NOT_PYTHON - {"help"}:
        with pytest.raises(Exception, match="not expected"):
            hetsgd.train(X[:40], Y[:40], progress=False, **{name.replace("-", "_"): "@@"})
