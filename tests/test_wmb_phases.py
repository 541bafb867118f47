"""The phases of a weighted mini-bucket run after its passes (issue 39, a million
variables): each holds a deadline already passed, the result is built from the beliefs'
own array, and the checks at the start have NumPy twins on their fast paths."""
import math

import numpy as np
import pytest

import fwcore
from fwcore import generators as gen
from fwcore.auto import PHASE_COSTS, SLOW_CORE
from fwcore.checks import _feasible_floor
from fwcore.loop import Deadline
from fwcore.marginals import wmb
from fwcore.results import Status
from fwcore.views import fixed_states, flat_factors


class _Outcome:
    trace = ()


def _run(model, max_time=None):
    call = Deadline(max_time)
    return wmb._Run(model, None, wmb.default_memory_limit(model.n_vars), 1e-6, call, max_time)


def _passed():
    deadline = Deadline(0.0)
    assert deadline.passed()
    return deadline


def _floor_twin(model):
    """`_feasible_floor` as written before its fast path: every factor's least finite entry,
    less 0.5 + 1e-9 x the sum of their largest absolute finite entries."""
    starts = np.concatenate([model.node_off[:-1], model.edge_off[:-1]])
    blocks = np.split(model.theta, starts[1:])
    least = sum(b[np.isfinite(b)].min() for b in blocks)
    scale = sum(np.abs(b[np.isfinite(b)]).max() for b in blocks)
    return least - 0.5 - 1e-9 * scale


def _finite_twin(flat, fixed):
    """`_finite_tables` factor by factor."""
    for f in range(len(flat.start) - 1):
        scope = flat.var[flat.start[f]:flat.start[f + 1]]
        table = flat.table[flat.off[f]:flat.off[f + 1]]
        if (fixed[scope] < 0).any() and not np.isfinite(table).all():
            return False
    return True


@pytest.mark.parametrize("seed", range(4))
def test_start_checks_match_their_twins(seed):
    rng = np.random.default_rng(seed)
    model = gen.potts_grid(4, 5, n_labels=3, seed=seed, coupling=4.0)
    theta = model.theta.copy()
    theta *= 10.0 ** rng.uniform(-3, 3)                   # extreme scales too
    if seed % 2:                                          # a few impossible states
        at = rng.choice(model.dim, 5, replace=False)
        theta[at] = -np.inf
    model = model.with_theta(theta)
    assert _feasible_floor(model) == pytest.approx(_floor_twin(model), rel=1e-12)
    flat, fixed = flat_factors(model), fixed_states(model)
    assert wmb._finite_tables(flat, fixed) == _finite_twin(flat, fixed)


@pytest.mark.parametrize("model", [gen.potts_grid(3, 4, n_labels=3, seed=0),
                                   gen.random_grid(3, seed=0),
                                   "mixed cards"])
def test_uniform_marginals_match_their_twin(model):
    if model == "mixed cards":
        card, edges = np.array([2, 3, 4, 2]), np.array([[0, 1], [1, 2], [2, 3], [0, 3]])
        dim = card.sum() + (card[edges[:, 0]] * card[edges[:, 1]]).sum()
        model = fwcore.PairwiseMRF.from_flat(card, edges, np.zeros(dim))
    sizes = np.diff(np.concatenate([model.node_off, model.edge_off[1:]]))
    np.testing.assert_array_equal(model.uniform_marginals(), np.repeat(1.0 / sizes, sizes))


def test_mean_field_phase_holds_a_deadline_already_passed():
    model = gen.random_grid(12, coupling=1.0, seed=0)
    run = _run(model)
    run.start()
    run._pass()
    run.read()
    before = run.lower
    run.lower_bound(_passed())                     # naive mean field: no set-up at all
    assert run.lower == before
    blocks = wmb.BlockMeanField(model, run.fixed, 2)
    assert blocks.ok
    lower, q = blocks.run(run.node.copy(), _passed())
    assert lower == -math.inf
    np.testing.assert_array_equal(q, run.node)


def test_every_phase_ends_before_the_results_time():
    model = gen.potts_grid(300, n_labels=4, seed=0)                  # μ: 3.2e6 entries
    run = _run(model, max_time=100.0)
    reserve = run.call.at - run.end.at
    assert reserve == pytest.approx(SLOW_CORE * PHASE_COSTS["wmb/result"] * model.dim,
                                    abs=1e-3)
    for phase in ("passes", "sampling", "loopy bp", "mixed", "mean field"):
        assert run.phase_end(phase).at <= run.end.at + 1e-6       # (clock reads apart)
    assert _run(model).end.at is None


def test_the_result_is_the_beliefs_array_and_uniform_without_beliefs():
    model = gen.potts_grid(6, n_labels=3, seed=1)
    run = _run(model)
    uniform = run.result(Status.INTERRUPTED, _Outcome(), 0.0)
    assert uniform.method == "wmb+uniform"
    np.testing.assert_allclose(uniform.mu, model.uniform_marginals())
    run.start()
    run._pass()
    run.read()
    res = run.result(Status.MAX_TIME, _Outcome(), 0.0)
    assert np.shares_memory(res.mu, run.fac)          # no copy of μ's size
    assert not res.mu.flags.writeable
    for table in res.edge_marginals:                  # the edge beliefs, normalised
        assert table.sum() == pytest.approx(1.0)


def test_uniform_result_keeps_evidence_as_point_masses():
    model = fwcore.apply_evidence(gen.potts_grid(4, n_labels=3, seed=2), {0: 1, 5: 2})
    run = _run(model)
    res = run.result(Status.INTERRUPTED, _Outcome(), 0.0)
    np.testing.assert_array_equal(res.node_marginals[0], [0.0, 1.0, 0.0])
    np.testing.assert_array_equal(res.node_marginals[5], [0.0, 0.0, 1.0])
    for e, (i, j) in enumerate(model.edges):
        np.testing.assert_allclose(res.edge_marginals[e],
                                   np.outer(res.node_marginals[i], res.node_marginals[j]))
