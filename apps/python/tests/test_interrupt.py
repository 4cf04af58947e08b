"""Ctrl-C during training: the run stops at the next batch boundary and raises
TrainingInterrupted (a KeyboardInterrupt) carrying the model trained so far."""

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = textwrap.dedent("""
    import signal, sys
    # A process started in the background by a non-interactive shell inherits SIGINT ignored,
    # and Python then leaves it ignored: restore Ctrl-C's usual handler.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.path.insert(0, {tests!r})
    import hetsgd
    from conftest import make_data
    X, Y = make_data(2000, seed=3)
    said = []
    def ready(record):
        # The first evaluation (the untrained model) runs inside train(): Ctrl-C is answered
        # from here on, so the test signals after this line, not after a guessed delay.
        if not said:
            said.append(True)
            print("training", flush=True)
    try:
        hetsgd.train(X, Y, time_budget=60, epochs=0, hidden=64, threads=1, progress=False,
                     callback=ready)
        print("finished", flush=True)
    except hetsgd.TrainingInterrupted as e:
        assert isinstance(e, KeyboardInterrupt)
        print("interrupted", e.result["stop"], e.model.num_labels, flush=True)
""")


def test_ctrl_c_stops_training(tmp_path):
    script = tmp_path / "run.py"
    script.write_text(SCRIPT.format(tests=str(Path(__file__).parent)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    p = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True,
                         env=env)
    try:
        assert p.stdout.readline().strip() == "training"
        p.send_signal(signal.SIGINT)
        # A hang bound, not a speed check: an unanswered signal would end the 60 s budget
        # with "finished".
        out, _ = p.communicate(timeout=120)
    finally:
        p.kill()
    assert p.returncode == 0, out
    word, stop, labels = out.split()[:3]
    assert word == "interrupted" and stop == "interrupted" and labels == "12", out
