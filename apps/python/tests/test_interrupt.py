"""Ctrl-C during training: the run stops at the next batch boundary and raises
TrainingInterrupted (a KeyboardInterrupt) carrying the model trained so far."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

SCRIPT = textwrap.dedent("""
    import signal, sys, time
    # A process started in the background by a non-interactive shell inherits SIGINT ignored,
    # and Python then leaves it ignored: restore Ctrl-C's usual handler.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.path.insert(0, {tests!r})
    import hetsgd
    from conftest import make_data
    X, Y = make_data(2000, seed=3)
    t0 = time.time()
    print("start", flush=True)
    try:
        hetsgd.train(X, Y, time_budget=60, epochs=0, hidden=64, threads=1, progress=False)
        print("finished", flush=True)
    except hetsgd.TrainingInterrupted as e:
        assert isinstance(e, KeyboardInterrupt)
        print("interrupted", round(time.time() - t0, 1), e.result["stop"],
              e.model.num_labels, flush=True)
""")


def test_ctrl_c_stops_training(tmp_path):
    script = tmp_path / "run.py"
    script.write_text(SCRIPT.format(tests=str(Path(__file__).parent)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    p = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True,
                         env=env)
    assert p.stdout.readline().strip() == "start"
    time.sleep(1.5)
    p.send_signal(signal.SIGINT)
    out, _ = p.communicate(timeout=30)
    assert p.returncode == 0, out
    word, seconds, stop, labels = out.split()[:4]
    assert word == "interrupted" and stop == "interrupted" and labels == "12"
    assert float(seconds) < 20  # far before the 60 s budget
