"""The Frank-Wolfe engine on problems with known answers: least squares over a simplex and
a product of simplices against scipy.optimize, linear convergence of away/pairwise FW,
active-set invariants after every step, stopping statuses, contraction and eq. 6, BCFW."""
import time

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy.optimize import minimize, minimize_scalar

from fwcore.fw import (METHODS, ActiveSet, Domain, ExactLineSearch, LocalSearch, MFWCorrection,
                       Objective, ProductDomain, Quadratic, Simplex, adaptive_delta,
                       block_coordinate_frank_wolfe, correct, frank_wolfe, safeguarded_newton)
from fwcore.fw.domains import Vertices
from fwcore.results import Status, StepType

SIZES = (4, 6, 5)


def face_instance(seed=0, n=20, m=40):
    """Strongly convex least squares over the simplex whose optimum lies on a face."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((m, n))
    x_true = np.zeros(n)
    x_true[:4] = rng.dirichlet(np.ones(4))
    return A, A @ x_true + 0.05 * rng.standard_normal(m)


def product_instance(seed=1, m=40):
    """Least squares over a product of simplices with an interior optimum."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((m, sum(SIZES)))
    x_true = np.concatenate([rng.dirichlet(5 * np.ones(k)) for k in SIZES])
    return A, A @ x_true + 0.01 * rng.standard_normal(m)


def scipy_reference(A, b, sizes, lower=0.0):
    """argmin 0.5||Ax - b||^2 over the product of simplices {x_block >= lower, sum = 1}."""
    bounds = np.cumsum((0,) + tuple(sizes))
    cons = [{"type": "eq", "fun": (lambda x, s=s, e=e: x[s:e].sum() - 1.0),
             "jac": (lambda x, s=s, e=e: np.r_[np.zeros(s), np.ones(e - s), np.zeros(len(x) - e)])}
            for s, e in zip(bounds[:-1], bounds[1:])]
    x0 = np.concatenate([np.full(k, 1.0 / k) for k in sizes])
    res = minimize(lambda x: 0.5 * np.sum((A @ x - b) ** 2), x0, jac=lambda x: A.T @ (A @ x - b),
                   method="SLSQP", bounds=[(lower, 1.0)] * len(x0), constraints=cons,
                   options={"ftol": 1e-15, "maxiter": 1000})
    assert res.success, res.message
    return res.x


def dense_from_atoms(atoms, weights, n, delta=0.0):
    """NumPy twin of the active set's iterate over a simplex (row -1 is u0 = uniform)."""
    x = np.zeros(n)
    for a, w in zip(atoms, weights):
        if a[0] == -1:
            x += w / n
        else:
            x[a[0]] += w * (1 - delta)
            x += w * delta / n
    return x


def simplex_gap(obj, x):
    g = obj.value_grad(x)[1]
    return g @ x - g.min()


@pytest.fixture(scope="module")
def face():
    A, b = face_instance()
    return Quadratic.least_squares(A, b), scipy_reference(A, b, (A.shape[1],))


@pytest.fixture(scope="module")
def product():
    A, b = product_instance()
    return Quadratic.least_squares(A, b), scipy_reference(A, b, SIZES)


# -- optimum against scipy ------------------------------------------------------------------

@pytest.mark.parametrize("variant", ["away", "pairwise", "fcfw"])
@pytest.mark.parametrize("step", ["exact"])
def test_simplex_least_squares_matches_scipy(face, variant, step):
    obj, x_ref = face
    assert np.sum(x_ref < 1e-9) >= 5  # the optimum lies on a face
    res = frank_wolfe(obj, Simplex(20), method=variant, step=step, tol=1e-9, max_iter=2000)
    assert res.status is Status.CONVERGED and res.gap <= 1e-9
    assert res.primal <= obj.value(x_ref) + 1e-9
    np.testing.assert_allclose(res.x, x_ref, atol=1e-5)
    np.testing.assert_allclose(res.gap, simplex_gap(obj, res.x), atol=1e-12)


@pytest.mark.parametrize("variant", METHODS + ("bcfw",))
def test_product_of_simplices_matches_scipy(product, variant):
    obj, x_ref = product
    domain = ProductDomain([Simplex(k) for k in SIZES])
    tol = 1e-5 if variant == "fw" else 1e-7  # vanilla FW is slow even here
    if variant == "bcfw":
        res = block_coordinate_frank_wolfe(obj, domain, tol=tol, max_iter=3000, seed=3)
    else:
        res = frank_wolfe(obj, domain, method=variant, tol=tol, max_iter=3000)
    assert res.status is Status.CONVERGED and res.gap <= tol
    assert abs(res.primal - obj.value(x_ref)) <= tol  # f - f* <= gap
    np.testing.assert_allclose(res.x, x_ref, atol=100 * np.sqrt(tol))
    for sl in domain.slices:
        assert abs(res.x[sl].sum() - 1) < 1e-12 and res.x[sl].min() >= -1e-15


def test_away_and_pairwise_converge_linearly_where_fw_does_not(face):
    obj, _ = face
    n_iter = 300
    runs = {v: frank_wolfe(obj, Simplex(20), method=v, tol=1e-8, max_iter=n_iter)
            for v in ("fw", "away", "pairwise")}
    assert runs["away"].status is Status.CONVERGED
    assert runs["pairwise"].status is Status.CONVERGED
    assert runs["fw"].status is Status.MAX_ITER and runs["fw"].gap > 1e-6


# -- active-set invariants ------------------------------------------------------------------

@pytest.mark.parametrize("variant", METHODS)
@pytest.mark.parametrize("step", ["exact", "agnostic"])
@pytest.mark.parametrize("delta", [0.0, 0.1])
def test_active_set_invariants_after_every_step(face, variant, step, delta):
    obj, _ = face
    records = []
    res = frank_wolfe(obj, Simplex(20), method=variant, step=step, delta=delta, tol=1e-10,
                      max_iter=60, debug=True, callback=records.append, refresh_every=7)
    assert len(records) == res.n_iter + 1 and res.trace == tuple(records)
    assert [r.iteration for r in records] == list(range(len(records)))
    assert res.weights.min() >= 0 and abs(res.weights.sum() - 1) < 1e-12
    assert len({a.tobytes() for a in res.atoms}) == len(res.atoms)  # no duplicate atoms
    np.testing.assert_allclose(res.x, dense_from_atoms(res.atoms, res.weights, 20, res.delta),
                               atol=1e-12)


def test_invariant_check_detects_corruption():
    verts = Vertices(Simplex(3))
    active = ActiveSet.from_arrays([[0], [2]], [0.25, 0.75])
    x = np.array([0.25, 0.0, 0.75])
    active.check(x, verts)
    with pytest.raises(AssertionError, match="differs"):
        active.check(x + 1e-6, verts)
    active.weights[0] = 0.5
    with pytest.raises(AssertionError, match="sum"):
        active.check(x, verts)
    active.weights[:] = [-0.25, 1.25]
    with pytest.raises(AssertionError, match="negative"):
        active.check(x, verts)


def test_active_set_dedup_remove_purge():
    verts = Vertices(Simplex(4))
    active = ActiveSet(1, capacity=2)
    for i, w in [(0, 0.5), (3, 0.5 - 1e-14), (1, 1e-14), (2, 0.0)]:
        active.add([i], w)
    assert active.add([3]) == 1 and len(active) == 4  # dedup; capacity grew
    x = dense_from_atoms(active.atoms, active.weights, 4)
    assert active.purge(x, verts, tol=1e-12, keep_atoms=True) == 1
    assert len(active) == 4 and active.n_active == 2
    active.check(x, verts, atol=1e-15)
    active.purge(x, verts, tol=1e-12)
    assert sorted(active.atoms[:, 0]) == [0, 3] and active.find([1]) == -1
    assert active.find([3]) >= 0
    active.check(x, verts, atol=1e-15)
    with pytest.raises(ValueError, match="distinct"):
        ActiveSet.from_arrays([[1], [1]], [0.5, 0.5])
    with pytest.raises(ValueError, match="sum to 1"):
        ActiveSet.from_arrays([[1], [2]], [0.5, 0.6])


def test_contract_eq6_keeps_x():
    rng = np.random.default_rng(0)
    active = ActiveSet.from_arrays([[0], [3], [1]], rng.dirichlet(np.ones(3)))
    x = Vertices(Simplex(5), 0.2).dense(active.atoms, active.weights)
    active.contract(0.2, 0.05)
    assert active.weights.min() >= 0 and abs(active.weights.sum() - 1) < 1e-15
    np.testing.assert_allclose(Vertices(Simplex(5), 0.05).dense(active.atoms, active.weights), x,
                               atol=1e-15)


# -- contraction -------------------------------------------------------------------------------

class Recording(Objective):
    """Wraps an objective and keeps every point it is evaluated at."""

    def __init__(self, obj):
        self.obj, self.points = obj, []

    def value_grad(self, x):
        self.points.append(x.copy())
        return self.obj.value_grad(x)

    def line_search(self, x, d, gamma_max):
        return self.obj.line_search(x, d, gamma_max)


def test_fcfw_with_fixed_delta_stays_in_contracted_polytope(face):
    obj, _ = face
    A, b = face_instance()
    delta, n = 0.2, 20
    rec = Recording(obj)
    res = frank_wolfe(rec, Simplex(n), method="fcfw", delta=delta, tol=1e-10, max_iter=200,
                      debug=True)
    assert res.status is Status.CONVERGED
    points = np.array(rec.points)
    assert points.min() >= delta / n - 1e-12
    np.testing.assert_allclose(points.sum(axis=1), 1.0, atol=1e-12)
    x_ref = scipy_reference(A, b, (n,), lower=delta / n)
    assert abs(res.primal - obj.value(x_ref)) <= 1e-9
    np.testing.assert_allclose(res.x, x_ref, atol=1e-5)


def test_adaptive_delta_reaches_optimum_over_uncontracted_domain(face):
    obj, x_ref = face
    deltas = []
    res = frank_wolfe(obj, Simplex(20), method="fcfw", delta=0.25, delta_rule=adaptive_delta,
                      tol=1e-8, max_iter=500, debug=True, callback=lambda r: deltas.append(r.delta))
    assert res.status is Status.CONVERGED
    assert np.all(np.diff(deltas) <= 0) and res.delta < 1e-3
    assert simplex_gap(obj, res.x) <= 1e-8  # the gap over D itself
    np.testing.assert_allclose(res.x, x_ref, atol=1e-4)


def test_adaptive_delta_rule():
    assert adaptive_delta(0.2, 1.0, 0.5) == 0.2           # positive uniform gap: keep
    assert adaptive_delta(0.2, 1.0, -0.1) == 0.2          # proposal 2.5 > delta: keep
    assert adaptive_delta(0.2, 1.0, -2.0) == 0.1          # proposal 0.125: halve at least
    assert adaptive_delta(0.2, 0.1, -2.0) == 0.0125       # proposal below half: take it


# -- stopping statuses -------------------------------------------------------------------------

def check_best_iterate(res, obj):
    """The returned iterate is the best seen, with a fresh gap, and matches its atoms."""
    assert res.primal == min(r.primal for r in res.trace)
    assert res.primal == pytest.approx(obj.value(res.x), abs=1e-14)
    assert res.gap == pytest.approx(simplex_gap(obj, res.x), abs=1e-12)
    np.testing.assert_allclose(res.x, dense_from_atoms(res.atoms, res.weights, len(res.x)),
                               atol=1e-12)


def test_max_iter_returns_best_iterate(face):
    obj, _ = face
    res = frank_wolfe(obj, Simplex(20), step="agnostic", tol=0.0, max_iter=40)
    assert res.status is Status.MAX_ITER and res.n_iter == 40 and len(res.trace) == 41
    check_best_iterate(res, obj)


def test_max_oracle_calls(face):
    obj, _ = face
    res = frank_wolfe(obj, Simplex(20), method="away", tol=0.0, max_oracle_calls=7)
    assert res.status is Status.MAX_ITER and res.n_oracle_calls >= 7
    assert res.trace[-1].n_oracle_calls == 7


class Slow(Recording):
    def value_grad(self, x):
        time.sleep(0.005)
        return super().value_grad(x)


def test_max_time(face):
    obj, _ = face
    res = frank_wolfe(Slow(obj), Simplex(20), tol=0.0, max_iter=10**6, max_time=0.1)
    assert res.status is Status.MAX_TIME and 0 < res.n_iter < 10**6
    check_best_iterate(res, obj)


def test_callback_false_interrupts(face):
    obj, _ = face
    res = frank_wolfe(obj, Simplex(20), method="pairwise", tol=0.0,
                      callback=lambda r: r.iteration < 5)
    assert res.status is Status.INTERRUPTED and res.n_iter == 5 and len(res.trace) == 6
    assert res.trace[0].step is StepType.INIT
    check_best_iterate(res, obj)


class InterruptOnce(Recording):
    """Raises KeyboardInterrupt at the given evaluation, as Ctrl-C would."""

    def __init__(self, obj, at):
        super().__init__(obj)
        self.at = at

    def value_grad(self, x):
        if len(self.points) == self.at:
            self.at = None
            raise KeyboardInterrupt
        return super().value_grad(x)


@pytest.mark.parametrize("variant", METHODS)
def test_keyboard_interrupt_returns_best_so_far(face, variant):
    obj, _ = face
    corrections = [MFWCorrection(max_steps=3)] if variant == "fcfw" else None
    res = frank_wolfe(InterruptOnce(obj, at=12), Simplex(20), method=variant, step="agnostic",
                      tol=0.0, max_iter=1000, corrections=corrections)
    assert res.status is Status.INTERRUPTED and res.n_iter <= 12
    check_best_iterate(res, obj)


def test_bcfw_interrupt_and_seed(product):
    obj, _ = product
    domain = ProductDomain([Simplex(k) for k in SIZES])
    a = block_coordinate_frank_wolfe(obj, domain, step="agnostic", max_iter=30, seed=5)
    b = block_coordinate_frank_wolfe(obj, domain, step="agnostic", max_iter=30, seed=5)
    assert [r.primal for r in a.trace] == [r.primal for r in b.trace]
    for sl in domain.slices:  # the weighted average stays in the domain
        assert abs(a.x_avg[sl].sum() - 1) < 1e-12 and a.x_avg[sl].min() >= 0
    res = block_coordinate_frank_wolfe(InterruptOnce(obj, at=20), domain, max_iter=1000)
    assert res.status is Status.INTERRUPTED
    assert res.primal == min(r.primal for r in res.trace)
    assert res.primal == pytest.approx(obj.value(res.x), abs=1e-14)


# -- line search --------------------------------------------------------------------------------

class Entropy(Objective):
    """f(x) = sum x log x + <c, x>; over the simplex the optimum is softmax(-c)."""

    def __init__(self, c, second_order):
        self.c = c
        if second_order:
            self.phi_derivatives = self._phi

    def value_grad(self, x):
        with np.errstate(divide="ignore", invalid="ignore"):  # the line search probes the boundary
            return float(np.sum(x * np.log(x)) + self.c @ x), 1.0 + np.log(x) + self.c

    def _phi(self, x, d, t):
        y = x + t * d
        with np.errstate(divide="ignore", invalid="ignore"):
            return float(d @ (1.0 + np.log(y) + self.c)), float(np.sum(d * d / y))


@pytest.mark.parametrize("second_order", [True, False])
@pytest.mark.parametrize("variant", ["fw", "away", "fcfw"])
def test_exact_line_search_on_entropy(second_order, variant):
    c = np.random.default_rng(2).standard_normal(8)
    tol = 1e-5 if variant == "fw" else 1e-7  # vanilla FW is slow on the entropy
    res = frank_wolfe(Entropy(c, second_order), Simplex(8), method=variant, tol=tol,
                      max_iter=2000)
    assert res.status is Status.CONVERGED
    p = np.exp(-c) / np.exp(-c).sum()
    np.testing.assert_allclose(res.x, p, atol=10 * np.sqrt(tol))


@settings(max_examples=40, deadline=None)
@given(st.floats(0.01, 100.0), st.floats(-5.0, 5.0), st.floats(1e-3, 10.0), st.booleans())
def test_safeguarded_newton_matches_bounded_minimisation(a, b, gamma_max, second_order):
    # phi(t) = a t^2 / 2 + b t - log(gamma_max + 1 - t): convex on [0, gamma_max]
    def phi(t):
        return 0.5 * a * t * t + b * t - np.log(gamma_max + 1.0 - t)

    def dphi(t):
        d1 = a * t + b + 1.0 / (gamma_max + 1.0 - t)
        return d1, (a + 1.0 / (gamma_max + 1.0 - t) ** 2) if second_order else None

    t = safeguarded_newton(dphi, dphi(0.0)[0], gamma_max)
    assert 0.0 <= t <= gamma_max
    ref = minimize_scalar(phi, bounds=(0.0, gamma_max), method="bounded",
                          options={"xatol": 1e-12}).x
    assert phi(t) <= phi(ref) + 1e-9


def test_exact_line_search_prefers_objective_hook():
    class Hooked(Entropy):
        def line_search(self, x, d, gamma_max):
            return 5.0  # clipped to gamma_max

    rule = ExactLineSearch()
    x, d = np.full(3, 1 / 3), np.array([2 / 3, -1 / 3, -1 / 3])
    assert rule(Hooked(np.zeros(3), False), x, d, np.ones(3), 0.7, 0) == 0.7


# -- bad input ------------------------------------------------------------------------------

def test_bad_input_messages(face):
    obj, _ = face
    dom = Simplex(20)
    with pytest.raises(ValueError, match="method must be one of.*'away'.*got 'awy'"):
        frank_wolfe(obj, dom, method="awy")
    with pytest.raises(ValueError, match="unknown step rule"):
        frank_wolfe(obj, dom, step="newton")
    with pytest.raises(ValueError, match="tol must be a number >= 0"):
        frank_wolfe(obj, dom, tol=-1)
    with pytest.raises(ValueError, match="max_iter must be an integer"):
        frank_wolfe(obj, dom, max_iter=2.5)
    with pytest.raises(ValueError, match="delta must be"):
        frank_wolfe(obj, dom, delta=1.0)
    with pytest.raises(TypeError, match="objective must be a fwcore.fw.Objective"):
        frank_wolfe(object(), dom)
    with pytest.raises(TypeError, match="domain must be a fwcore.fw.Domain"):
        frank_wolfe(obj, object())
    with pytest.raises(TypeError, match="callback must be"):
        frank_wolfe(obj, dom, callback=3)
    with pytest.raises(TypeError, match="ProductDomain"):
        block_coordinate_frank_wolfe(obj, dom)
    with pytest.raises(ValueError, match="init atoms have length"):
        frank_wolfe(obj, dom, init=[1, 2])

    class NoU0(Domain):
        dim, atom_size = 20, 1

        def lmo(self, g):
            return dom.lmo(g)

        def inner(self, g, atoms):
            return dom.inner(g, atoms)

        def add(self, x, atom, w):
            dom.add(x, atom, w)

    with pytest.raises(ValueError, match="u0"):
        frank_wolfe(obj, NoU0(), delta=0.1)
    res = frank_wolfe(obj, NoU0(), method="away", tol=1e-8, max_iter=500)  # starts at lmo(0)
    assert res.status is Status.CONVERGED

    class NaNObjective(Objective):
        def value_grad(self, x):
            return float("nan"), x

    with pytest.raises(ValueError, match="objective value is nan"):
        frank_wolfe(NaNObjective(), dom)


class NoisySimplex(Simplex):
    """A simplex whose lmo returns the second-best vertex every other call (an approximate
    oracle) and whose local_lmo is the exact argmin (a local search finding better ones)."""

    def __init__(self, n):
        super().__init__(n)
        self.calls = 0
        self.local_calls = 0

    def lmo(self, g):
        self.calls += 1
        return np.array([np.argsort(g)[self.calls % 2]], dtype=np.int32)

    def local_lmo(self, g, atom):
        self.local_calls += 1
        return np.array([int(np.argmin(g))], dtype=np.int32)


def test_corrective_steps_reach_the_optimum(face):
    """MFWCorrection every 5th step with a gap-relative tolerance, on the warm start
    (initial), and LocalSearch (Barrier FW Alg. 6) with an approximate lmo and the delta
    rule seeing max(correction gap, gap) (Alg. 1, Sec. 4) keep FCFW correct."""
    obj, x_ref = face
    res = frank_wolfe(obj, Simplex(20), method="fcfw", tol=1e-9, max_iter=2000, debug=True,
                      corrections=[MFWCorrection(tol=lambda gap: 0.1 * gap, every=5)])
    assert res.status is Status.CONVERGED
    np.testing.assert_allclose(res.x, x_ref, atol=1e-4)
    warm = frank_wolfe(obj, Simplex(20), method="fcfw", tol=1e-9, max_iter=2000,
                       init=(res.atoms, res.weights), corrections=[MFWCorrection(initial=True)])
    assert warm.n_oracle_calls == 1 and warm.status is Status.CONVERGED
    dom = NoisySimplex(20)
    mfw = MFWCorrection()
    rule = lambda delta, gap, ug: adaptive_delta(delta, max(gap, mfw.last_gap), ug)  # noqa: E731
    res = frank_wolfe(obj, dom, method="fcfw", tol=1e-7, max_iter=300, delta=0.1,
                      delta_rule=rule, corrections=[mfw, LocalSearch(dom.local_lmo, 3)],
                      debug=True)
    assert dom.local_calls > 0 and simplex_gap(obj, res.x) <= 1e-5
    with pytest.raises(TypeError, match="local_lmo must be a callable"):
        LocalSearch(None, 2)
    with pytest.raises(ValueError, match="every must be an integer >= 1"):
        MFWCorrection(every=0)
    with pytest.raises(ValueError, match="corrections apply to method='fcfw'"):
        frank_wolfe(obj, Simplex(20), method="away", corrections=[MFWCorrection()])


def test_max_vertices_bounds_the_correction_polytope(face):
    """With ``max_vertices`` V never exceeds the cap, even when every vertex carries weight
    (a local search adding a random vertex per step): the lightest weighted vertices hand
    their weight to V's best vertex; x stays sum w v (debug) and FCFW still converges."""
    obj, x_ref = face
    rng = np.random.default_rng(0)
    sizes = []

    def local_lmo(g, atom):
        return np.array([rng.integers(20)], dtype=np.int32)

    def record(rec):
        sizes.append(rec.n_active)

    res = frank_wolfe(obj, Simplex(20), method="fcfw", tol=1e-7, max_iter=500, delta=0.05,
                      delta_rule=adaptive_delta, max_vertices=12, debug=True, callback=record,
                      corrections=[MFWCorrection(), LocalSearch(local_lmo, 10)])
    assert len(res.atoms) <= 12 and max(sizes) <= 12
    assert res.status is Status.CONVERGED
    np.testing.assert_allclose(res.x, x_ref, atol=1e-3)


class NoOracleSimplex(Simplex):
    def lmo(self, g):
        raise AssertionError("correct must not call the oracle")


def test_correct_reoptimises_over_the_hull_of_the_given_atoms(face):
    """Barrier FW Alg. 5 alone: the optimum over conv(e_0..e_5) (scipy on those columns),
    from uniform weights, without an oracle call; fixed delta keeps it in the contraction."""
    obj, _ = face
    A, b = face_instance()
    atoms = np.arange(6, dtype=np.int32).reshape(-1, 1)
    res = correct(obj, NoOracleSimplex(20), (atoms, np.full(6, 1 / 6)),
                  MFWCorrection(max_steps=5000, tol=1e-10))
    assert res.status is Status.CONVERGED and res.gap <= 1e-10 and res.n_oracle_calls == 0
    np.testing.assert_allclose(res.x[:6], scipy_reference(A[:, :6], b, (6,)), atol=1e-5)
    assert not res.x[6:].any()
    np.testing.assert_allclose(res.x, dense_from_atoms(res.atoms, res.weights, 20), atol=1e-12)
    res = correct(obj, NoOracleSimplex(20), (atoms, np.full(6, 1 / 6)),
                  MFWCorrection(max_steps=3, tol=1e-6), delta=0.1)
    assert res.status is Status.MAX_ITER and res.n_iter == 3
    assert res.x.min() >= 0.1 / 20 - 1e-15
    # work caps the steps at work / (|V| dim), but never below 10
    res = correct(obj, NoOracleSimplex(20), (atoms, np.full(6, 1 / 6)),
                  MFWCorrection(max_steps=5000, tol=1e-14, work=6 * 20 * 25))
    assert res.n_iter == 25
    res = correct(obj, NoOracleSimplex(20), (atoms, np.full(6, 1 / 6)),
                  MFWCorrection(max_steps=5000, tol=1e-14, work=1.0))
    assert res.n_iter == 10
    with pytest.raises(ValueError, match="max_steps"):
        MFWCorrection(max_steps=-1)
    with pytest.raises(ValueError, match="work"):
        MFWCorrection(work=0)
    with pytest.raises(TypeError, match="correction must be a fwcore.fw.MFWCorrection"):
        correct(obj, Simplex(20), (atoms, np.full(6, 1 / 6)), 0.1)


def test_safeguarded_newton_finds_roots_of_steep_derivatives():
    """Regula falsi alone crawls on these (the bracket shrinks by ~1% a step)."""
    import math
    from fwcore.fw.linesearch import safeguarded_newton
    cases = [(lambda t: (-1.0 + 1e6 * t ** 3, 3e6 * t ** 2), 0.01),
             (lambda t: (-1e3 + 1e3 * math.exp(50 * (t - 0.999)), None), 0.999),
             (lambda t: (math.tanh(1e4 * (t - 0.3)), None), 0.3)]
    for dphi, root in cases:
        assert abs(safeguarded_newton(dphi, dphi(0.0)[0], 1.0, max_iter=60) - root) < 1e-9
