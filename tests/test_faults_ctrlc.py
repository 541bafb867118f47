"""Issue 28, Ctrl-C: exact inference stops at once (KeyboardInterrupt; the CLI exits 130),
every MAP method returns the best labelling found so far within 2 s of SIGINT. The
children time themselves from the signal's arrival (a handler wrapping Python's default)
to the moment the call has returned or raised."""
import sys
from pathlib import Path

import fwcore

sys.path.insert(0, str(Path(__file__).resolve().parent))  # --import-mode=importlib
from test_faults_interrupt import _interrupt  # noqa: E402

# the child's clock: SIGINT's arrival is noted before Python's default handler raises
_TIMED = """
import signal, time
import fwcore
arrived = []
def note(signum, frame):
    arrived.append(time.perf_counter())
    signal.default_int_handler(signum, frame)
signal.signal(signal.SIGINT, note)
{setup}
print("ready", flush=True)
try:
    {call}
except KeyboardInterrupt:
    print("KeyboardInterrupt")
print("LATENCY", time.perf_counter() - arrived[0], flush=True)
"""


def _latency(out):
    """The child's seconds from SIGINT to the end of the interrupted call."""
    return float(out.splitlines()[-1].split()[1])


def test_sigint_stops_exact_inference_at_once():
    # a 21x21 grid: elimination runs 8-36 s on a busy machine; SIGINT comes within it
    script = _TIMED.format(setup="m = fwcore.random_grid(21, coupling=1, seed=0)",
                           call="fwcore.exact_inference(m)")
    code, out, err = _interrupt([sys.executable, "-c", script], 2.0)
    assert code == 0, err
    assert "KeyboardInterrupt" in out and _latency(out) < 2.0, out + err


def test_sigint_to_cli_exact_exits_130_at_once(tmp_path):
    model = tmp_path / "grid.uai"
    fwcore.write_uai(fwcore.random_grid(21, coupling=1, seed=0), str(model))
    script = _TIMED.format(setup="from fwcore.cli import main",
                           call=f"code = main(['exact', {str(model)!r}, '--out', "
                                f"{str(tmp_path / 'out')!r}])\n    print('EXIT', code)")
    code, out, err = _interrupt([sys.executable, "-c", script], 4.0)
    assert code == 0, err
    assert "EXIT 130" in out and "fwcore exact: interrupted" in err, out + err
    assert _latency(out) < 2.0 and not (tmp_path / "out.MAR").exists()
