"""Step-size rules (FrankWolfe.jl ``LineSearchMethod``): objects called as
``rule(objective, x, d, grad, gamma_max, iteration)`` returning gamma in [0, gamma_max],
where ``grad`` is the gradient at x and d a descent direction."""
import math

__all__ = ["Agnostic", "ExactLineSearch", "safeguarded_newton", "make_step_rule"]


class Agnostic:
    """gamma = 2 / (k + 2) (Jaggi 2013), clipped to gamma_max."""

    def __call__(self, objective, x, d, grad, gamma_max, iteration):
        return min(2.0 / (iteration + 2.0), gamma_max)


class ExactLineSearch:
    """argmin over [0, gamma_max] of φ(γ) = f(x + γ d): the objective's own
    `Objective.line_search` (a kernel, a closed form, or safeguarded Newton), clipped."""

    def __call__(self, objective, x, d, grad, gamma_max, iteration):
        return min(max(float(objective.line_search(x, d, gamma_max)), 0.0), gamma_max)


def safeguarded_newton(dphi, slope0, gamma_max, tol=1e-10, max_iter=100):
    """Root of the non-decreasing phi' on [0, gamma_max]: Newton steps while they stay inside
    the bracket, phi'' > 0 and each is at most half the last (Numerical Recipes' rtsafe),
    else regula falsi, or a bisection when the last step failed to halve the bracket.
    ``dphi(t)`` returns (phi'(t), phi''(t) or None; phi' = +inf outside phi's domain);
    ``slope0`` = phi'(0).
    Stops when |phi'| <= tol |phi'(0)| or the bracket [lo, hi] is shorter than tol * hi
    (relative to where it lies: a root next to 0, as a barrier's near a face of a polytope,
    is still found, where a width of tol * gamma_max returned 0, a step that does not move);
    returns the last point with phi' <= 0 then. Never leaves [0, gamma_max]."""
    if not slope0 < 0.0 or gamma_max <= 0.0:
        return 0.0
    lo, d_lo = 0.0, slope0
    hi = gamma_max
    d_hi, _ = dphi(hi)
    if d_hi <= 0.0:
        return hi
    if math.isnan(d_hi):
        d_hi = math.inf
    t = hi * d_lo / (d_lo - d_hi) if math.isfinite(d_hi) else 0.5 * hi
    width, newton_step = hi, math.inf
    for _ in range(max_iter):
        d1, d2 = dphi(t)
        if abs(d1) <= tol * abs(slope0):
            return t
        if d1 <= 0.0:
            lo, d_lo = t, d1
        else:
            hi, d_hi = t, (d1 if math.isfinite(d1) else math.inf)
        if hi - lo <= tol * hi:
            break
        step = t - d1 / d2 if d2 is not None and d2 > 0.0 and math.isfinite(d1) else math.nan
        if lo < step < hi and abs(step - t) <= 0.5 * newton_step:
            newton_step, t = abs(step - t), step  # Newton, at least halving its last step
        else:
            newton_step = hi - lo
            if hi - lo > 0.5 * width:  # the last step did not halve the bracket: bisect
                t = 0.5 * (lo + hi)
            elif math.isfinite(d_hi):
                t = (lo * d_hi - hi * d_lo) / (d_hi - d_lo)
                if not lo < t < hi:
                    t = 0.5 * (lo + hi)
            else:
                t = 0.5 * (lo + hi)
        width = hi - lo
    return lo


_RULES = {"exact": ExactLineSearch, "agnostic": Agnostic}


def make_step_rule(step):
    """A rule object from a name ('exact', 'agnostic') or a callable."""
    if isinstance(step, str):
        if step not in _RULES:
            raise ValueError(f"unknown step rule {step!r}; valid names: "
                             f"{', '.join(sorted(_RULES))}")
        return _RULES[step]()
    if callable(step):
        return step
    raise TypeError(f"step must be one of {sorted(_RULES)} or a callable "
                    f"rule(objective, x, d, grad, gamma_max, iteration); got {type(step).__name__}")
