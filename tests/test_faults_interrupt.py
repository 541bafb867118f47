"""Issue 12, interruption and time limits: SIGINT sent to a subprocess at several moments
returns the best result so far with status interrupted (the CLI exits 130); every time
limit is held (generous bounds: the suite runs on busy 2-core machines)."""
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import fwcore
from fwcore.results import Status

#: the folder holding the fwcore this test imports (the installed package, or the source
#: tree of an in-place build): children import the same one
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(fwcore.__file__)))

# the child builds the model, prints "ready", runs CALL and prints "RESULT <status>"
_SCRIPT = """
import fwcore
m = fwcore.random_grid({n}, coupling=4, seed=0)
print("ready", flush=True)
r = {call}
print("RESULT", r.status.value, flush=True)
"""


def _interrupt(argv, delay):
    """Run ``argv`` (SIGINT handled as Python's default even if this process ignores it),
    send SIGINT ``delay`` seconds after it prints "ready", return (exit code, stdout,
    stderr, seconds from the signal to the exit)."""
    env = {**os.environ, "PYTHONPATH": ROOT}
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=ROOT,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert proc.stdout.readline().strip() == "ready"
    time.sleep(delay)
    os.kill(proc.pid, signal.SIGINT)
    signalled = time.monotonic()
    out, err = proc.communicate(timeout=60)
    return proc.returncode, out, err, time.monotonic() - signalled


CALLS = {
    "infer-trws": (60, 'fwcore.barrier_fw(m, oracle="trws")', (0.3, 3.0)),
    "infer-set-up": (200, 'fwcore.barrier_fw(m, oracle="trws")', (0.2,)),  # in initial_rho (1 s)
    "infer-exact": (60, 'fwcore.barrier_fw(m, oracle="exact")', (2.0,)),  # toulbar2 or HiGHS
    "infer-local": (30, 'fwcore.barrier_fw(m, domain="local")', (1.5,)),
    "trbp": (60, "fwcore.trbp(m, max_iter=10**6, tol=1e-15)", (1.0,)),
    "loopy_bp": (60, "fwcore.loopy_bp(m, max_iter=10**6, tol=1e-15)", (1.0,)),
    "infer_map-ilp": (60, 'fwcore.infer_map(m, method="ilp")', (1.0,)),
    "infer_lp": (60, 'fwcore.infer_lp(m, method="l2-agd", max_iter=10**6, tol=0)', (1.0,)),
}


@pytest.mark.parametrize("case", [(name, d) for name, (_, _, ds) in CALLS.items() for d in ds],
                         ids=lambda c: f"{c[0]}@{c[1]}s")
def test_sigint_returns_an_interrupted_result(case):
    name, delay = case
    n, call, _ = CALLS[name]
    script = _SCRIPT.format(n=n, call=call)
    code, out, err, _ = _interrupt([sys.executable, "-c", script], delay)
    assert code == 0, err
    assert out.splitlines()[-1] == "RESULT interrupted", out + err


def test_sigint_to_the_cli_prints_writes_and_exits_130(tmp_path):
    model = tmp_path / "grid.uai"
    fwcore.write_uai(fwcore.random_grid(60, coupling=4, seed=0), str(model))
    script = ("import sys; print('ready', flush=True); from fwcore.cli import main; "
              f"sys.exit(main(['infer', {str(model)!r}, '--method', 'barrier-fw', "
              "'--oracle', 'trws', '--quiet', "
              f"'--rho-updates', '300', '--out', {str(tmp_path / 'out')!r}]))")
    # 8 s: past reading the file and importing (over 3 s on a busy 2-core machine), long
    # before the run ends (about 45 s with 300 rho updates; the default 10 take 4 s now
    # that the tree-decomposition bound has a fixed budget)
    code, out, err, _ = _interrupt([sys.executable, "-c", script], 8.0)
    assert code == 130, err
    assert "status interrupted" in out
    assert (tmp_path / "out.MAR").exists()


def _grid(n=40):
    return fwcore.random_grid(n, coupling=4, seed=0)


def _held(limit, run):
    t = time.perf_counter()
    res = run()
    elapsed = time.perf_counter() - t
    assert elapsed <= 1.2 * limit + 3.0, f"{elapsed:.1f} s for a {limit} s limit"
    return res


@pytest.mark.parametrize("oracle", ["ilp", "trws", "portfolio", "exact"])
def test_infer_holds_max_time(oracle):
    res = _held(2.0, lambda: fwcore.barrier_fw(_grid(), oracle=oracle, tol=1e-9, max_time=2.0))
    assert res.status in (Status.MAX_TIME, Status.CONVERGED)
    assert np.isfinite(res.mu).all()


def test_infer_local_holds_max_time():
    res = _held(2.0, lambda: fwcore.barrier_fw(_grid(), domain="local", tol=1e-9, max_time=2.0))
    assert res.status is Status.MAX_TIME and np.isfinite(res.mu).all()


@pytest.mark.parametrize("method", ["ilp", "lp", "trws"])
def test_infer_map_holds_time_limit(method):
    model = _grid(100)
    res = _held(1.0, lambda: fwcore.infer_map(model, method=method, time_limit=1.0))
    assert res.status in (Status.MAX_TIME, Status.CONVERGED, Status.STALLED)
    assert res.assignment.shape == (model.n_vars,)


def test_infer_map_lp_at_its_time_limit_returns_max_time():
    model = _grid(100)
    res = fwcore.infer_map(model, method="lp", time_limit=0.05)
    assert res.status is Status.MAX_TIME and res.upper_bound is None
    assert np.isfinite(res.score)


@pytest.mark.parametrize("method", ["trbp", "loopy_bp"])
def test_bp_holds_max_time(method):
    res = _held(1.0, lambda: getattr(fwcore, method)(_grid(100), max_iter=10**6, tol=1e-15,
                                                     max_time=1.0))
    assert res.status is Status.MAX_TIME


_CONDITIONED = """
import fwcore
m = fwcore.random_grid(6, coupling=2, seed=1)
def bound(branch, max_time=None):
    return fwcore.barrier_fw(branch, oracle="exact", max_time=max_time)
print("ready", flush=True)
r = fwcore.{call}
print("RESULT", r.status.value, r.certified, r.log_z_upper >= {log_z} - 1e-6, flush=True)
"""


@pytest.mark.parametrize("call", ["conditioned(m, bound, [0, 7, 14])",
                                  "conditioned_anytime(m, bound, 60)"])
def test_sigint_in_a_branch_ends_conditioning_with_a_certified_bound(call):
    # a branch's bound returns `interrupted` on Ctrl-C; the loop over branches stops there
    # (it went on through the other 7 branches for 4.8 s), the branches not bounded count
    # with the product bound: still certified
    log_z = fwcore.exact_inference(fwcore.random_grid(6, coupling=2, seed=1)).log_z
    code, out, err, after = _interrupt([sys.executable, "-c",
                                        _CONDITIONED.format(call=call, log_z=log_z)], 1.0)
    assert code == 0, err
    assert out.splitlines()[-1] == "RESULT interrupted True True", out + err
    assert after < 3.0  # measured 0.1-0.3 s; 2 s is the promise (a loaded machine: 3)
