"""Approximate MAP oracles (DESIGN.md "MAP oracles"): ICM, QPBO, TRW-S, max-product.

All maximise <scores, mu(x)>. QPBO and TRW-S also return a certified upper bound on the
maximum score (a lower bound on the minimum energy of the local-polytope relaxation);
ICM and max-product return none. After each call ``status`` says why the method stopped.
Ctrl-C during a call of ICM, TRW-S or max-product raises `fwcore.loop.Interrupted` with
the best labelling so far (ICM's as its kernel left it; the best decoding of TRW-S and
max-product, none before their first iteration ends).
"""
import time

import numpy as np

from .. import _kernels, _oracles
from ..checks import BOOL, Interval, TIME, check_seed, finite_penalty, validate_params
from ..loop import budget_status, keeping_best
from ..results import Record, Status
from .base import MapOracle, register_oracle
from ..labelling import node_argmax

__all__ = ["ICMOracle", "QPBOOracle", "TRWSOracle", "MaxProductOracle"]


_SWEEPS = {"max_sweeps": Interval(1, 2**31 - 1, integer=True)}  # the kernels' C int
#: the arguments that TRW-S and max-product share
_MESSAGE_PASSING = {"max_iter": Interval(1, integer=True), "tol": Interval(0.0, lo_open=True),
                    "time_limit": TIME}


def _run_icm(model, scores, x, max_sweeps, order=None, seed=None):
    """The ICM kernel of fwcore._kernels, in place on the int32 assignment x."""
    return _kernels.icm(scores, model.graph, x, max_sweeps, order, seed)


@register_oracle
class ICMOracle(MapOracle):
    """Iterated conditional modes (Besag 1986; the local search of Barrier FW, Alg. 6).

    Starts from ``init`` (warm start) or from the per-variable argmax of the unary scores,
    and sweeps until no single-variable change improves the score, or ``max_sweeps``.
    With ``seed`` each sweep visits the variables in a fresh random order (reproducible):
    blocks of 1024 consecutive variables in random order, each block's variables in random
    order, so that a block's data stays in cache; without it in index order. Variables none
    of whose neighbours moved since their last visit are skipped (they cannot move). Status:
    STALLED at a local optimum, else MAX_ITER.
    """

    name = "icm"
    takes_seed = True

    @validate_params(_SWEEPS, unchecked=("model", "seed"))
    def __init__(self, model, max_sweeps=100, seed=None):
        super().__init__(model)
        self.max_sweeps = max_sweeps
        self._rng = None if seed is None else check_seed(seed)
        self.n_sweeps = 0

    def _argmax(self, scores, init, time_limit):
        x = node_argmax(self.model, scores).astype(np.int32) if init is None else init.copy()
        seed = None if self._rng is None else int(self._rng.integers(2**63))
        with keeping_best(lambda inner: x):  # Ctrl-C: x, as the kernel left it
            _, self.n_sweeps, converged = _run_icm(self.model, scores, x, self.max_sweeps,
                                                   seed=seed)
        return x, None, (Status.STALLED if converged else budget_status())


@register_oracle
class QPBOOracle(MapOracle):
    """QPBO for binary pairwise models (Kolmogorov & Rother 2007, "Minimizing
    nonsubmodular functions with graph cuts - a review").

    Builds the doubled graph, computes a minimum cut by Boykov-Kolmogorov max-flow (first
    on one copy with the submodular terms, then on the whole graph reusing that flow and
    its search trees, see `fwcore._oracles.qpbo_maxflow`) and reads the partial labelling
    x_i = 0 if i ∈ S and ī ∉ S, 1 if i ∉ S and ī ∈ S, where S is the set reachable from
    the source in the residual graph (weak persistency: the labelled part belongs to some
    optimal solution; exact on submodular models). The unlabelled variables start from
    ``init`` (else 0) and are completed by ICM (which moves only on strict improvements, so
    the result scores at least labelled + start).
    The upper bound is the roof dual: -(const + maxflow / 2) >= max score. -inf scores
    get a finite penalty (`fwcore.checks.finite_penalty`): the maximisers are unchanged and
    the penalised relaxation's bound stays a bound.

    After a call, ``partial_labelling`` holds the persistent labels (-1: unlabelled).
    """

    name = "qpbo"

    @validate_params(_SWEEPS, unchecked=("model",))
    def __init__(self, model, max_sweeps=100):
        super().__init__(model)
        if model.n_vars and (model.card != 2).any():
            i = int(np.flatnonzero(model.card != 2)[0])
            raise ValueError(f"the qpbo oracle needs a binary model (every card == 2); "
                             f"card[{i}] = {model.card[i]}: use 'trws', 'icm' or an exact "
                             "oracle for multi-label models")
        if 4 * model.n_edges >= 2**31 or 2 * model.n_vars >= 2**31:
            raise ValueError("the qpbo oracle's graph would exceed 2**31 arcs or nodes")
        self.max_sweeps = max_sweeps
        n, n_arcs = model.n_vars, 4 * model.n_edges
        # p_i owns the adjacency slot range of i, p̄_i the same range shifted by 2E
        self._arc_start = np.concatenate([model.adj_start, 2 * model.n_edges
                                          + model.adj_start[1:]]).astype(np.int32)
        self._sub_end, self._back = np.empty(n, dtype=np.int32), np.empty(n, dtype=np.int32)
        self._head = np.empty(n_arcs, dtype=np.int32)
        self._sister = np.empty(n_arcs, dtype=np.int32)
        self._r_cap = np.empty(n_arcs)
        self._tr_cap = np.empty(2 * n)
        self._in_source = np.empty(2 * n, dtype=np.int8)
        self._work = (np.empty(2 * n, dtype=np.int32), np.empty(2 * n, dtype=np.int8),
                      np.empty(2 * n, dtype=np.int64), np.empty(2 * n, dtype=np.int32),
                      np.empty(2 * n, dtype=np.int8), np.empty(2 * n + 1, dtype=np.int32),
                      np.empty(2 * n + 1, dtype=np.int32))
        self.partial_labelling = None

    def _argmax(self, scores, init, time_limit):
        m = self.model
        n = m.n_vars
        x = init
        energy = -finite_penalty(m, scores, margin=1.0)
        const = _oracles.qpbo_build(energy, m.edges, self._arc_start, self._head,
                                    self._sister, self._r_cap, self._tr_cap, self._sub_end,
                                    self._back)
        flow = _oracles.qpbo_maxflow(self._arc_start, self._sub_end, self._head, self._sister,
                                     self._r_cap, self._tr_cap, self._in_source, *self._work)
        s, s_bar = self._in_source[:n].astype(bool), self._in_source[n:].astype(bool)
        labels = np.full(n, -1, dtype=np.int32)
        labels[s & ~s_bar] = 0
        labels[~s & s_bar] = 1
        self.partial_labelling = labels
        free = np.flatnonzero(labels < 0).astype(np.int32)
        x = np.where(labels >= 0, labels, 0 if x is None else x).astype(np.int32)
        if free.size:  # ICM visits the unlabelled variables first, then the rest
            order = np.concatenate([free, np.flatnonzero(labels >= 0)]).astype(np.int32)
            _run_icm(m, scores, x, self.max_sweeps, order=order)
        lower = const + 0.5 * flow
        # slack for rounding in the float sums behind const and flow
        bound = -lower + 1e-9 * max(1.0, abs(lower))
        return x, bound, (None if free.size == 0 else Status.STALLED)


class _MessagePassing(MapOracle):
    """Shared set-up of TRW-S and max-product: message storage and the stopping loop
    (arguments checked by the subclasses, `_MESSAGE_PASSING`)."""

    def __init__(self, model, max_iter, tol, time_limit):
        super().__init__(model)
        self.max_iter, self.tol, self.time_limit = max_iter, tol, time_limit
        card = model.card.astype(np.int64)
        sizes = card[model.edges[:, 0]] + card[model.edges[:, 1]]
        self._msg_off = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        self._msg = np.zeros(int(sizes.sum()))
        k = int(card.max()) if model.n_vars else 1
        self._hat, self._buf = np.empty(k), np.empty(2 * k)
        self._x = np.zeros(model.n_vars, dtype=np.int32)
        self.n_iter = 0
        self.trace = []

    def _sweep(self, scores, gamma, node_weight, damping):
        m = self.model
        return _oracles.message_sweeps(scores, m.graph, self._msg_off, self._msg, gamma,
                                       node_weight, damping, self._hat, self._buf)

    def _record(self, t0, best, bound):
        """A progress record after an iteration (time since the call's start ``t0``)."""
        self.add_progress(Record(iteration=self.n_iter, time=time.perf_counter() - t0,
                                 primal=best, score=best,
                                 bound=None if bound is None or bound == np.inf else bound))

    def _decode(self, scores, sequential):
        m = self.model
        _oracles.decode(scores, m.graph, self._msg_off, self._msg, sequential, self._x,
                        self._hat)
        return self._x.copy(), float(m.score(self._x, scores))


@register_oracle
class TRWSOracle(_MessagePassing):
    """Sequential tree-reweighted message passing, TRW-S (Kolmogorov 2006, Fig. 3), in
    the max-sum (score) domain, variables in index order, node weights
    gamma_s = 1/max(n_in(s), n_out(s)) (the monotonic chains of the paper's Sec. 4.2).

    Each iteration is a forward and a backward pass; the backward pass gives a bound on
    the maximum score (see `fwcore._oracles.message_sweeps`), the sequential labelling
    (Sec. 3.4) a candidate assignment; the best of each is kept (``init`` is a candidate
    too). With ``warm_start`` (default) a call starts from the messages the last one ended
    with (any messages give a valid bound: the bound is the dual value of the
    reparametrisation they define); on the slowly changing scores of Frank-Wolfe's calls
    this converges in fewer iterations to tighter bounds. Stops when bound − best score
    <= tol · max(1, |best score|) (CONVERGED), when the bound improves by less than that
    over an iteration (STALLED), after ``max_iter`` iterations or ``time_limit`` seconds
    (an iteration starts when one as long as the last still fits). ``trace`` lists
    (bound, best score) per iteration.
    """

    name = "trws"

    @validate_params({**_MESSAGE_PASSING, "warm_start": BOOL}, unchecked=("model",))
    def __init__(self, model, max_iter=100, tol=1e-6, time_limit=None, warm_start=True):
        super().__init__(model, max_iter, tol, time_limit)
        self.warm_start = warm_start
        earlier = np.zeros(model.n_vars, dtype=np.int64)
        np.add.at(earlier, model.edges[:, 1], 1)
        later = np.bincount(model.edges[:, 0], minlength=model.n_vars)
        chains = np.maximum(np.maximum(earlier, later), 1)
        self._gamma = 1.0 / chains
        self._node_weight = 1.0 - earlier * self._gamma

    def _argmax(self, scores, init, time_limit):
        x0 = init
        best_x, best = (None, -np.inf) if x0 is None else (x0, float(self.model.score(x0, scores)))
        if not (self.warm_start and np.isfinite(self._msg).all()):
            self._msg[:] = 0.0
        ub, self.trace, self.progress = np.inf, [], ()
        t0 = now = time.perf_counter()
        status = budget_status()
        with keeping_best(lambda inner: best_x):  # Ctrl-C: the best decoding so far
            # the loop counts its iterations on the oracle (n_iter), deliberately
            for self.n_iter in range(1, self.max_iter + 1):  # noqa: B020
                last = now
                bound, _ = self._sweep(scores, self._gamma, self._node_weight, 0.0)
                x, val = self._decode(scores, True)
                if best_x is None or val > best:
                    best_x, best = x, val
                improved = ub - bound
                ub = min(ub, bound)
                self.trace.append((bound, best))
                self._record(t0, best, ub)
                tol = self.tol * max(1.0, abs(best)) if np.isfinite(best) else self.tol
                if ub - best <= tol or ub == -np.inf:
                    status = Status.CONVERGED
                    break
                if improved <= tol:
                    status = Status.STALLED
                    break
                now = time.perf_counter()  # the next iteration starts if one like it fits
                if time_limit is not None and 2 * now - last - t0 > time_limit:
                    status = Status.MAX_TIME
                    break
        # slack for rounding in the float sums behind the bound
        return best_x, (ub + 1e-9 * max(1.0, abs(ub)) if np.isfinite(ub) else ub), status


@register_oracle
class MaxProductOracle(_MessagePassing):
    """Loopy max-product belief propagation in the max-sum domain, sequential sweeps in
    index order (forward, then backward), messages shifted to max 0 and damped:
    M <- damping M_old + (1 - damping) M_new. Decodes by max-marginals (argmax of each
    node belief) after every iteration and keeps the best-scoring decoding (or ``init``).
    Stops when no message entry changes by more than ``tol`` (STALLED: a fixed point is
    no proof of optimality), after
    ``max_iter`` iterations or ``time_limit`` seconds. No bound (None).
    """

    name = "maxproduct"

    @validate_params({**_MESSAGE_PASSING, "damping": Interval(0.0, 1.0, hi_open=True)},
                     unchecked=("model",))
    def __init__(self, model, max_iter=100, damping=0.5, tol=1e-6, time_limit=None):
        super().__init__(model, max_iter, tol, time_limit)
        self.damping = damping
        self._ones = np.ones(model.n_vars)
        self._zeros = np.zeros(model.n_vars)

    def _argmax(self, scores, init, time_limit):
        x0 = init
        best_x, best = (None, -np.inf) if x0 is None else (x0, float(self.model.score(x0, scores)))
        self._msg[:] = 0.0
        self.progress = ()
        t0 = time.perf_counter()
        status = budget_status()
        with keeping_best(lambda inner: best_x):  # Ctrl-C: the best decoding so far
            # the loop counts its iterations on the oracle (n_iter), deliberately
            for self.n_iter in range(1, self.max_iter + 1):  # noqa: B020
                _, change = self._sweep(scores, self._ones, self._zeros, self.damping)
                x, val = self._decode(scores, False)
                if best_x is None or val > best:
                    best_x, best = x, val
                self._record(t0, best, None)
                if change <= self.tol:  # a fixed point, but no proof of optimality
                    status = Status.STALLED
                    break
                if time_limit is not None and time.perf_counter() - t0 > time_limit:
                    status = Status.MAX_TIME
                    break
        return best_x, None, status
