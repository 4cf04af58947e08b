"""Exceptions of hetsgd. Their messages are the command line's (file, line, value, bound)."""


class Error(RuntimeError):
    """Base of every error hetsgd raises."""


class InvalidArgument(Error, ValueError):
    """An input or option outside its bounds (the message names the value and the bound)."""


class UsageError(InvalidArgument):
    """An option the command line's parser refuses: unknown name or value out of range."""


class IoError(Error, OSError):
    """A file could not be read, written or parsed (the message names the file and line)."""


class DeviceUnavailable(Error):
    """The requested device does not exist in this build or on this machine."""


class NumericalError(Error, FloatingPointError):
    """Training diverged: a loss or parameter became NaN or infinite."""


class TrainingInterrupted(KeyboardInterrupt):
    """Ctrl-C during train(): the run stopped at the next batch boundary.

    ``model`` holds the model trained until then (a :class:`hetsgd.Model`), ``result`` the
    run's summary (stop reason "interrupted"); for compare(), ``model`` is None and ``result``
    holds the runs.
    """

    def __init__(self, message, model=None, result=None):
        super().__init__(message)
        self.model = model
        self.result = result
