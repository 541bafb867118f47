"""The sampled estimate's confidence machinery (fwcore.marginals.estimate): the running
tally against direct sums, the interval against its formula in plain arithmetic, and its
coverage on weights of known mean."""
import math

import numpy as np
import pytest

from fwcore.marginals.estimate import CLIP, PILOT, Tally, bernstein_lower, bernstein_upper


def _eps(w, bound, level, delta):
    """Maurer & Pontil's half-width at ln(level / δ) in plain arithmetic."""
    n = len(w)
    return (math.sqrt(2 * w.var(ddof=1) * math.log(level / delta) / n) +
            7 * bound * math.log(level / delta) / (3 * (n - 1)))


def _direct_interval(w, u, confidence):
    """The module docstring's interval in plain arithmetic (weights ``w`` ≤ ``u``)."""
    delta = 1 - confidence
    upper = math.log(w.mean() + _eps(w, u, 4, delta))
    low = w.mean() * delta / 4
    if len(w) >= PILOT + 2:
        c = min(u, CLIP * w[:PILOT].mean())
        clipped = np.minimum(w[PILOT:], c)
        low = max(low, clipped.mean() - _eps(clipped, c, 8, delta))
    return (math.log(low) if low > 0 else -math.inf), upper


@pytest.mark.parametrize("shift", [0.0, -700.0, 700.0])
def test_the_tally_matches_direct_sums_in_any_batches(shift):
    rng = np.random.default_rng(0)
    log_w = rng.normal(size=600) * 3
    log_w[:5] = -np.inf                      # weights of exactly 0
    node_off = np.array([0, 2, 5, 6])
    x = np.stack([rng.integers(0, 2, 600), rng.integers(0, 3, 600), np.zeros(600, int)], 1)
    tally = Tally(shift + 20.0, node_off)
    for part in np.array_split(np.arange(600), 7):
        tally.add(log_w[part] + shift, x[part])
    w = np.exp(log_w)
    assert tally.n == 600
    assert tally.log_mean == pytest.approx(math.log(w.mean()) + shift, abs=1e-12)
    assert tally.log_var == pytest.approx(math.log(w.var(ddof=1)) + 2 * shift, abs=1e-10)
    assert tally.ess == pytest.approx(w.sum() ** 2 / (w ** 2).sum(), rel=1e-12)
    assert tally.log_clip == pytest.approx(math.log(CLIP * w[:PILOT].mean()) + shift)
    clipped = np.minimum(w[PILOT:], CLIP * w[:PILOT].mean())
    assert tally.clipped.log_mean == pytest.approx(math.log(clipped.mean()) + shift, abs=1e-12)
    expected = np.concatenate([np.bincount(x[:, v], weights=w, minlength=k) / w.sum()
                               for v, k in enumerate(np.diff(node_off))])
    np.testing.assert_allclose(tally.marginals(), expected, rtol=1e-12)


def test_the_tally_of_zero_weights_only():
    tally = Tally(3.0)
    tally.add(np.full(10, -np.inf))
    assert tally.n == 10 and tally.log_mean == -math.inf and tally.ess == 0.0
    lower, upper = tally.interval(0.95)
    assert lower == -math.inf and upper == pytest.approx(
        3.0 + math.log(7 * math.log(80) / 27))
    tally.add(np.array([1.0]))               # a weight after zeros: they count in n
    assert tally.log_mean == pytest.approx(1.0 - math.log(11))


@pytest.mark.parametrize("seed", range(6))
def test_the_interval_is_its_formula(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 5000)) if seed else 100
    u = float(rng.uniform(1, 50))
    w = u * rng.beta(rng.uniform(0.1, 3), rng.uniform(0.1, 3), size=n)
    tally = Tally(math.log(u))
    for part in np.array_split(w, 5):
        tally.add(np.log(part))
    got = tally.interval(0.95)
    want = _direct_interval(w, u, 0.95)
    assert got[1] == pytest.approx(want[1], rel=1e-10)
    assert got[0] == pytest.approx(want[0], rel=1e-10) or got[0] == want[0] == -math.inf


def test_the_one_sided_bounds_are_maurer_and_pontils():
    w = np.random.default_rng(3).uniform(0, 2, 50)
    args = (math.log(w.mean()), math.log(w.var(ddof=1)), 50, math.log(2.0), 0.1)
    assert bernstein_upper(*args) == pytest.approx(math.log(w.mean() + _eps(w, 2.0, 2, 0.1)))
    assert bernstein_lower(*args) == pytest.approx(math.log(w.mean() - _eps(w, 2.0, 2, 0.1)))


def test_the_interval_is_clipped_by_the_certified_bounds_and_needs_two_samples():
    tally = Tally(1.0)
    tally.add(np.array([0.0]))
    assert tally.interval(0.9, -2.0, 3.0) == (-2.0, 3.0)
    tally.add(np.array([0.0, 0.0]))
    lower, upper = tally.interval(0.9, -0.5, 0.2)
    assert lower >= -0.5 and upper == 0.2


@pytest.mark.parametrize("n,confidence", [(20, 0.95), (400, 0.95), (2000, 0.95), (400, 0.5)])
def test_the_interval_holds_at_least_as_often_as_its_confidence(n, confidence):
    """Weights U·Beta(a, b) with a heavy right tail: the interval of each of 1000 samples
    of n weights contains log Z = log(U a / (a + b)) at least ``confidence`` of the time."""
    rng = np.random.default_rng(1)
    u, a, b = 1e3, 0.05, 5.0
    log_z = math.log(u * a / (a + b))
    hits = 0
    for _ in range(1000):
        tally = Tally(math.log(u))
        tally.add(np.log(u * rng.beta(a, b, size=n)))
        lower, upper = tally.interval(confidence)
        hits += lower <= log_z <= upper
    assert hits / 1000 >= confidence


def test_clipping_tightens_the_lower_end_under_a_loose_bound():
    """U 100x the weights' mean: the lower end from 2000 samples is within a nat of log Z,
    where Markov's inequality alone is 4.4 nats below."""
    rng = np.random.default_rng(4)
    u, a, b = 1e3, 0.05, 5.0
    tally = Tally(math.log(u))
    tally.add(np.log(u * rng.beta(a, b, size=2000)))
    lower, _ = tally.interval(0.95)
    assert lower > math.log(u * a / (a + b)) - 1.0
    assert lower > tally.log_mean + math.log(0.05 / 4) + 3


def test_the_interval_narrows_with_samples():
    rng = np.random.default_rng(2)
    widths = []
    for n in (300, 10_000, 1_000_000):
        tally = Tally(0.0)
        tally.add(np.log(rng.uniform(0, 1, n)))
        lower, upper = tally.interval(0.95)
        widths.append(upper - lower)
    assert widths[0] > widths[1] > widths[2] and widths[2] < 0.02
