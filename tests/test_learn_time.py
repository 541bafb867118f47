"""Issue 12, the learners' time limits and Ctrl-C: a fit with a small ``max_time`` returns
within 1.2 max_time + 1 s (asserted with 1 s more: the suite runs on busy 2-core machines)
with status max_time and fitted parameters that predict, on training sets where one pass
takes several times the limit; SIGINT during a fit returns status interrupted."""
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import fwcore
from fwcore.learn import CRF, MLEStruct, SSVM
from fwcore.learn.datasets import noisy_point_matching, synthetic_segmentation
from fwcore.results import Status

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(fwcore.__file__)))
SLACK = 1.0


def _fit_held(learner, X, Y, limit, may_converge=False):
    t = time.perf_counter()
    learner.fit(X, Y)
    elapsed = time.perf_counter() - t
    assert elapsed <= 1.2 * limit + 1.0 + SLACK, f"{elapsed:.1f} s for a {limit} s limit"
    assert learner.status_ is Status.MAX_TIME or (may_converge and learner.status_ is
                                                  Status.CONVERGED and learner.gap_ <= 0.0)
    assert learner.coef_.shape == (learner.features_.dim,) and np.isfinite(learner.coef_).all()
    return learner


@pytest.mark.parametrize("threads", [False, True], ids=["serial", "threads"])
@pytest.mark.parametrize("cls", [MLEStruct, SSVM])
def test_a_gap_pass_longer_than_max_time_is_abandoned(cls, threads):
    # four 96x96 grids with the default 'lp' oracle: about 3.5 s an LP, 14 s a gap pass (on
    # 64x64 grids two threads ended a gap pass within the second on a fast machine)
    X, Y = synthetic_segmentation(4, size=96, seed=0)
    Xs, _ = synthetic_segmentation(1, size=6, seed=1)
    with ThreadPoolExecutor(2) as pool:
        m = _fit_held(cls(tol=0.0, max_time=1.0, executor=pool if threads else None), X, Y, 1.0)
        assert m.predict(Xs)[0].shape == (36,)
    # nothing was measured: the start point, no gap
    assert m.n_iter_ == 0 and len(m.trace_) == 0 and m.gap_ is None and m.primal_ is None


CASES = {
    "crf-qpbo": (lambda: synthetic_segmentation(12, size=64, seed=0),
                 {"model": CRF(oracle="qpbo")}, {"reg": 100.0, "rho": 0.5}, {"reg": 0.01}),
    "matching": (lambda: noisy_point_matching(8, n_points=200, seed=0),
                 {"model": "bipartite"}, {"reg": 0.01, "entropy": "bethe"}, {"reg": 0.01}),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("cls", [MLEStruct, SSVM])
def test_max_time_keeps_the_last_measured_iterate(cls, case):
    data, shared, mle, ssvm = CASES[case]
    X, Y = data()
    kw = {**shared, **(mle if cls is MLEStruct else ssvm)}
    # SSVM on the matchings can close its gap exactly (tol 0) within the limit
    m = _fit_held(cls(tol=0.0, max_iter=10**6, max_time=2.0, **kw), X, Y, 2.0,
                  may_converge=True)
    assert len(m.trace_) == m.n_iter_ + 1 >= 1
    assert m.gap_ == m.trace_[-1].gap and np.isfinite(m.gap_) and np.isfinite(m.primal_)
    assert len(m.predict(X[:1])[0]) == len(Y[0])


# the child builds the data, prints "ready", fits and prints "RESULT <status>"
_SCRIPT = """
from concurrent.futures import ThreadPoolExecutor
from fwcore.learn import MLEStruct, SSVM
from fwcore.learn.datasets import synthetic_segmentation
X, Y = synthetic_segmentation(4, size=48, seed=0)
pool = ThreadPoolExecutor(2)
print("ready", flush=True)
m = {call}.fit(X, Y)
print("RESULT", m.status_.value, flush=True)
"""


@pytest.mark.parametrize("call, delay", [
    ("MLEStruct(tol=0, max_iter=10**6)", 0.5),
    ("MLEStruct(tol=0, max_iter=10**6)", 4.0),
    ("SSVM(tol=0, max_iter=10**6, executor=pool)", 2.0),
])
def test_sigint_during_fit_returns_interrupted(call, delay):
    proc = subprocess.Popen([sys.executable, "-c", _SCRIPT.format(call=call)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": ROOT}, cwd=ROOT,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert proc.stdout.readline().strip() == "ready"
    time.sleep(delay)
    os.kill(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert out.splitlines()[-1] == "RESULT interrupted", out + err
