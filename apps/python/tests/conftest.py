"""Shared fixtures: a small learnable data set, bibtex when present, the command line."""

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parents[3]
BIBTEX = Path(os.environ.get("HETSGD_DATASETS", "/work/shared/datasets")) / "bibtex"


def make_data(rows, features=60, labels=12, seed=0):
    """Rows of 4-8 random features; a row's labels are its features' ids mod `labels`, so a
    model can learn them."""
    rng = np.random.default_rng(seed)
    xi, xp, yi, yp = [], [0], [], [0]
    for _ in range(rows):
        f = np.sort(rng.choice(features, size=rng.integers(4, 9), replace=False))
        xi.extend(f)
        xp.append(len(xi))
        lab = np.unique(f[:2] % labels)
        yi.extend(lab)
        yp.append(len(yi))
    X = sp.csr_matrix((rng.uniform(0.5, 1.5, len(xi)).astype(np.float32),
                       np.array(xi, np.int32), np.array(xp, np.int64)), shape=(rows, features))
    Y = sp.csr_matrix((np.ones(len(yi), np.float32), np.array(yi, np.int32),
                       np.array(yp, np.int64)), shape=(rows, labels))
    return X, Y


@pytest.fixture(scope="session")
def small():
    """(X, Y, Xt, Yt): 400 training and 100 test rows."""
    X, Y = make_data(400, seed=1)
    Xt, Yt = make_data(100, seed=2)
    return X, Y, Xt, Yt


@pytest.fixture(scope="session")
def cli():
    """The `hetsgd` binary: $HETSGD_BIN, else the build folder's, else PATH's."""
    for c in (os.environ.get("HETSGD_BIN"), ROOT / "build" / "apps" / "hetsgd",
              shutil.which("hetsgd")):
        if c and Path(c).is_file():
            return str(c)
    pytest.skip("no hetsgd binary (set HETSGD_BIN or build into build/)")


def run_cli(cli, *args, check=True):
    return subprocess.run([cli, *map(str, args)], capture_output=True, text=True, check=check)


@pytest.fixture(scope="session")
def bibtex():
    if not (BIBTEX / "train.txt").is_file():
        pytest.skip(f"bibtex not found in {BIBTEX} (set HETSGD_DATASETS)")
    return BIBTEX
