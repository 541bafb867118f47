"""The sampled estimate's confidence machinery (fwcore.marginals.estimate): the running
tally against direct sums, the empirical Bernstein interval against its formula in plain
arithmetic, and its coverage on weights of known mean."""
import math

import numpy as np
import pytest

from fwcore.marginals.estimate import Tally, bernstein_interval


def _direct_interval(w, u, confidence):
    """The module docstring's interval in plain arithmetic (weights ``w`` ≤ ``u``)."""
    n, delta = len(w), 1 - confidence
    mean, var = w.mean(), w.var(ddof=1)

    def eps(level):
        return math.sqrt(2 * var * math.log(level / delta) / n) + 7 * u * math.log(
            level / delta) / (3 * (n - 1))

    low = max(mean - eps(8), mean * delta / 4)
    return (math.log(low) if low > 0 else -math.inf), math.log(mean + eps(4))


@pytest.mark.parametrize("shift", [0.0, -700.0, 700.0])
def test_the_tally_matches_direct_sums_in_any_batches(shift):
    rng = np.random.default_rng(0)
    log_w = rng.normal(size=200) * 3
    log_w[:5] = -np.inf                      # weights of exactly 0
    node_off = np.array([0, 2, 5, 6])
    x = np.stack([rng.integers(0, 2, 200), rng.integers(0, 3, 200), np.zeros(200, int)], 1)
    tally = Tally(node_off)
    for part in np.array_split(np.arange(200), 7):
        tally.add(log_w[part] + shift, x[part])
    w = np.exp(log_w)
    assert tally.n == 200
    assert tally.log_mean == pytest.approx(math.log(w.mean()) + shift, abs=1e-12)
    assert tally.log_var == pytest.approx(math.log(w.var(ddof=1)) + 2 * shift, abs=1e-10)
    assert tally.ess == pytest.approx(w.sum() ** 2 / (w ** 2).sum(), rel=1e-12)
    expected = np.concatenate([np.bincount(x[:, v], weights=w, minlength=k) / w.sum()
                               for v, k in enumerate(np.diff(node_off))])
    np.testing.assert_allclose(tally.marginals(), expected, rtol=1e-12)


def test_the_tally_of_zero_weights_only():
    tally = Tally()
    tally.add(np.full(10, -np.inf))
    assert tally.n == 10 and tally.log_mean == -math.inf and tally.ess == 0.0
    lower, upper = tally.interval(3.0, 0.95)
    assert lower == -math.inf and upper == pytest.approx(
        3.0 + math.log(7 * math.log(80) / 27))
    tally.add(np.array([1.0]))               # a weight after zeros: they count in n
    assert tally.log_mean == pytest.approx(1.0 - math.log(11))


@pytest.mark.parametrize("seed", range(5))
def test_the_interval_is_its_formula(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 5000))
    u = float(rng.uniform(1, 50))
    w = u * rng.beta(rng.uniform(0.1, 3), rng.uniform(0.1, 3), size=n)
    tally = Tally()
    tally.add(np.log(w))
    got = tally.interval(math.log(u), 0.95)
    want = _direct_interval(w, u, 0.95)
    assert got[1] == pytest.approx(want[1], rel=1e-10)
    assert got[0] == pytest.approx(want[0], rel=1e-10) or got[0] == want[0] == -math.inf


def test_the_interval_is_clipped_by_the_certified_bounds_and_needs_two_samples():
    tally = Tally()
    tally.add(np.array([0.0]))
    assert tally.interval(1.0, 0.9, -2.0, 3.0) == (-2.0, 3.0)
    tally.add(np.array([0.0, 0.0]))
    lower, upper = tally.interval(1.0, 0.9, -0.5, 0.2)
    assert lower >= -0.5 and upper == 0.2


@pytest.mark.parametrize("n,confidence", [(20, 0.95), (400, 0.95), (400, 0.5)])
def test_the_interval_holds_at_least_as_often_as_its_confidence(n, confidence):
    """Weights U·Beta(a, b) with a heavy right tail: the interval of each of 2000 samples
    of n weights contains log Z = log(U a / (a + b)) at least ``confidence`` of the time."""
    rng = np.random.default_rng(1)
    u, a, b = 1e3, 0.05, 5.0
    log_z = math.log(u * a / (a + b))
    hits = 0
    for _ in range(2000):
        tally = Tally()
        tally.add(np.log(u * rng.beta(a, b, size=n)))
        lower, upper = tally.interval(math.log(u), confidence)
        hits += lower <= log_z <= upper
    assert hits / 2000 >= confidence


def test_the_interval_narrows_with_samples():
    rng = np.random.default_rng(2)
    widths = []
    for n in (100, 10_000, 1_000_000):
        lower, upper = bernstein_interval(*_log_moments(rng.uniform(0, 1, n)), n, 0.0, 0.95)
        widths.append(upper - lower)
    assert widths[0] > widths[1] > widths[2] and widths[2] < 0.02


def _log_moments(w):
    return math.log(w.mean()), math.log(w.var(ddof=1))
