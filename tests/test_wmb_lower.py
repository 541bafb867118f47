"""The kernels of issue 36 against their NumPy twins (`wmb_lower_numpy`): the lower bound's
passes with weights of mixed sign, and importance sampling from the upper bound's
proposal (the log-sum-exp primitives with negative weights: tests/test_wmb.py)."""
import sys
from pathlib import Path

import numpy as np
import pytest


sys.path.insert(0, str(Path(__file__).resolve().parent))  # --import-mode=importlib


def _case(seed, ibound, twin_class, zeros=0.15):
    """`test_wmb._twin_case` (−inf entries unless ``zeros`` is 0) with the kernels' WMB."""
    from test_wmb import _twin_case
    from fwcore.marginals import wmb
    fg, mb, twin = _twin_case(seed, ibound, twin_class, finite=zeros == 0.0)
    return fg, wmb.WeightedMiniBucket(mb), twin


def _flat(messages):
    return np.concatenate([m.reshape(-1) for m in messages] + [np.zeros(0)])


@pytest.mark.parametrize("seed", range(16))
@pytest.mark.parametrize("ibound", [1, 2])
@pytest.mark.parametrize("zeros, ceiling", [(0.0, None), (0.15, None), (0.0, 0.3)])
def test_the_lower_passes_are_their_twin(seed, ibound, zeros, ceiling):
    """Pass after pass (the weights' step within ``ceiling``, matching, backward), on
    factor graphs with evidence, with and without −inf entries."""
    from fwcore.marginals import wmb
    from wmb_lower_numpy import LowerTwin
    fg, w, twin = _case(seed, ibound, LowerTwin, zeros)
    w.make_lower()
    if ceiling is not None:
        w.ceiling = ceiling
    arrays = w.tree.arrays
    np.testing.assert_allclose(arrays["weight"], twin.weight, rtol=1e-12)
    for k in range(4):
        step = 1.0 / (k + 1)
        bound = w.forward(step)
        want = twin.forward(step, w.eta, wmb._WEIGHT_FLOOR, w.ceiling)
        assert bound == pytest.approx(want, rel=1e-9, abs=1e-9) or bound == want == -np.inf
        np.testing.assert_allclose(arrays["weight"], twin.weight, rtol=1e-9)
        np.testing.assert_allclose(arrays["repar"], np.concatenate(twin.repar + [[]]),
                                   rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(arrays["fwd"], _flat(twin.fwd), rtol=1e-9, atol=1e-9)
        w.backward()
        twin.backward()
        finite = np.isfinite(_flat(twin.bwd))
        np.testing.assert_allclose(arrays["bwd"][finite], _flat(twin.bwd)[finite], rtol=1e-9,
                                   atol=1e-9)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("ibound", [1, 2])
def test_the_sampler_is_its_twin(seed, ibound):
    from fwcore.marginals import wmb
    from wmb_lower_numpy import log_score, sample
    from wmb_numpy import WMBTwin
    fg, w, twin = _case(seed, ibound, WMBTwin)
    for k in range(3):
        w.forward(1.0 / (k + 1))
        twin.forward(1.0 / (k + 1), w.eta, wmb._WEIGHT_FLOOR)
        w.backward()
        twin.backward()
    rng = np.random.default_rng(seed)
    u = rng.random((200, len(twin.order)))
    x = np.empty((200, fg.n_vars), dtype=np.int64)
    log_q, log_f = np.empty(200), np.empty(200)
    assert w.sample(u, x, log_q, log_f) == (200, False)
    want_x, want_q = sample(twin, u)
    np.testing.assert_array_equal(x, want_x)
    np.testing.assert_allclose(log_q, want_q, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(log_f, [log_score(twin, xi) for xi in x], rtol=1e-12)
