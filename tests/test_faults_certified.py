"""Issue 28, "status is honest": no run is converged with a non-finite score or a
non-finite certificate, and certified bounds hold, on models with -inf rows, columns and
scattered entries (the reproducers; random small models against brute force are
tests/test_certified_sweep.py's)."""
import itertools
import math

import numpy as np
import pytest
from scipy.special import logsumexp

import fwcore
from fwcore.loop import Callbacks, Stopping, run_loop
from fwcore.lp_relax.api import METHODS
from fwcore.results import Record, Status

INF = np.inf


def test_loop_never_converges_on_a_non_finite_certificate():
    for bad in (dict(score=-INF), dict(gap=math.nan), dict(bound=INF), dict(primal=math.nan)):
        fields = dict(primal=0.0, gap=0.0, bound=1.0, score=1.0) | bad
        outcome = run_loop(lambda k: (Record(iteration=k, time=0.0, **fields), 0.0),
                           lambda k: None, Stopping(5), Callbacks())
        assert outcome.status is Status.STALLED, bad


def test_lp_on_a_forbidden_diagonal_decodes_a_feasible_labelling():
    m = fwcore.PairwiseMRF([2, 2], [[1, 0], [1, 0]], [(0, 1)], [[[-INF, 0], [0, -INF]]])
    for method in METHODS:
        r = fwcore.infer_lp(m, method=method, max_iter=300)
        assert r.score == 1.0 and np.isfinite(r.measure), method
        assert r.upper_bound >= 1.0 - 1e-9, method
        if method in ("subgradient", "mplp"):
            assert r.status is Status.CONVERGED and r.upper_bound <= 1.0 + 1e-6, method


@pytest.mark.parametrize("bp", [fwcore.trbp, fwcore.loopy_bp])
def test_bp_normalises_large_unaries_in_the_log_domain(bp):
    m = fwcore.PairwiseMRF([2, 2], [[1e15, 1e15 + 0.25], [0, 0]], [(0, 1)], [np.zeros((2, 2))])
    r = bp(m)
    expected = np.exp([-0.25, 0.0]) / np.exp([-0.25, 0.0]).sum()
    assert np.allclose(r.node_marginals[0], expected, atol=1e-12)
    assert np.allclose(r.edge_marginals[0].sum(), 1.0)


def test_loopy_bp_is_exact_on_a_tree_with_a_forbidden_column():
    rng = np.random.default_rng(0)
    n = 8
    pw = [rng.normal(size=(4, 4)) for _ in range(n - 1)]
    pw[3][:, 0] = -INF
    m = fwcore.PairwiseMRF([4] * n, [rng.normal(size=4) for _ in range(n)],
                           [(i, i + 1) for i in range(n - 1)], pw)
    r = fwcore.loopy_bp(m, damping=0.0)
    states = np.array(list(itertools.product(range(4), repeat=n)))
    scores = m.score(states)
    p = np.exp(scores - logsumexp(scores))
    assert r.node_marginals[4][0] == 0.0
    for i in range(n):
        assert np.allclose(r.node_marginals[i], np.bincount(states[:, i], p, 4), atol=1e-9)
    assert r.log_z_upper == pytest.approx(logsumexp(scores), abs=1e-9)


class _LPStoppingOnCall(fwcore.oracles.lp.LocalPolytopeLP):
    """The LP oracle whose call ``stop`` ends as HiGHS's time limit ends one: status
    max_time, the uniform point, no bound."""

    def __init__(self, model, stop):
        super().__init__(model)
        self.stop = stop

    def _solve(self, scores, time_limit):
        if self.n_calls == self.stop:
            return None, None, Status.MAX_TIME
        return super()._solve(scores, time_limit)


@pytest.mark.parametrize("stop", [1, 3])
def test_local_polytope_run_never_takes_a_timed_out_lp_point_as_a_vertex(stop):
    """An LP call stopped at its time limit returns u0, which is no vertex: taken as one,
    the FW gap was -9.6e3 on a 6x6 plaquette factor graph, -2.8e7 on 40x40, and the run
    could converge on it. It now ends the run with status max_time and the bound last
    proven (none when the first call stops: status max_time, not interrupted)."""
    rng = np.random.default_rng(2)
    pair = [rng.normal(size=(3, 3)) for _ in range(4)]
    pair[0][1, :] = pair[2][:, 0] = -INF
    m = fwcore.PairwiseMRF([3] * 4, rng.normal(size=(4, 3)), [(0, 1), (1, 2), (2, 3), (0, 3)],
                           pair)
    scores = m.score(np.array(list(itertools.product(range(3), repeat=4))))
    r = fwcore.barrier_fw(m, domain="local", oracle=_LPStoppingOnCall(m, stop), max_iter=50)
    assert r.status is Status.MAX_TIME
    assert r.n_oracle_calls == stop and r.gap >= 0.0
    assert r.certified == (stop > 1)
    if r.certified:
        assert r.log_z_upper >= logsumexp(scores) - 1e-9
