"""hetsgd: extreme multi-label training across heterogeneous devices, from Python.

    import hetsgd
    X, Y = hetsgd.read("bibtex/train.txt")          # scipy CSR, or bring your own
    Xt, Yt = hetsgd.read("bibtex/test.txt")
    model = hetsgd.train(X, Y, test=(Xt, Yt), epochs=10)
    labels, scores = model.predict(Xt, k=5)
    hetsgd.metrics.psp(Yt, labels, k=5, propensity=hetsgd.metrics.inverse_propensity(Y))
    model.save("bibtex.model"); model = hetsgd.load("bibtex.model")

The options of :func:`train` are those of ``hetsgd train`` (same names, ranges and messages).
"""

from . import _hetsgd
from . import metrics
from ._data import read, to_dataset, write
from ._errors import (DeviceUnavailable, Error, InvalidArgument, IoError, NumericalError,
                      TrainingInterrupted, UsageError)
from ._model import Model, load
from ._train import compare, options_to_argv, train

__version__ = "0.1.0"
build_info = _hetsgd.build_info
devices = _hetsgd.describe_devices

__all__ = ["train", "compare", "Model", "load", "read", "write", "to_dataset", "metrics",
           "options_to_argv", "build_info", "devices", "Error", "InvalidArgument",
           "UsageError", "IoError", "DeviceUnavailable", "NumericalError",
           "TrainingInterrupted"]
