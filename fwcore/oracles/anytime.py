"""Anytime approximate MAP oracles (issue 14): simulated annealing, fusion moves and
α-expansion through them.

- ``anneal``: simulated annealing on the flat layout (`fwcore._kernels.anneal`); with
  ``anytime=True`` a call plans its cooling schedule to fill its time limit;
- `Fusion`: the fusion move of Lempitsky, Rother, Roth & Blake 2010 ("Fusion moves for
  Markov random field optimization"): the best labelling that takes each variable's
  label from either of two labellings, found by QPBO on the binary fusion problem;
  unlabelled variables keep the incumbent's label, so the fused score never drops;
- ``expansion``: α-expansion (Boykov, Veksler & Zabih 2001) with each move a fusion of
  the incumbent with the constant labelling α (QPBO also solves the non-submodular moves
  partially, as in Rother et al. 2007's "QPBO-α-expansion").

Ctrl-C during a call of these oracles, or of the portfolio, raises `Interrupted`: a
KeyboardInterrupt that carries the best labelling the call had found (`fwcore.infer_map`
returns it).
"""
import time

import numpy as np

from .. import _kernels
from ..checks import BOOL, Interval, check_seed, validate_params
from ..loop import budget_status, keeping_best
from ..model import PairwiseMRF
from ..results import Record, Status
from .approximate import QPBOOracle
from .base import MapOracle, register_oracle
from ..labelling import node_argmax

__all__ = ["AnnealOracle", "ExpansionOracle", "Fusion", "temperature_scale"]

#: moves of the first, timed run of an anytime annealing call, in sweeps
_PROBE_SWEEPS = 20
#: an annealing schedule runs in kernel calls of at most this much work (moves times 1 +
#: the mean degree: 0.05-0.15 s at the 6e7-1.5e8 a second measured on grids and cliques;
#: 2**24 took 1 s on a 300x300 grid with both cores busy) and, with a time limit, this many
#: seconds: the kernel does not answer Ctrl-C (one schedule ran 30 s of a 60 s call after
#: SIGINT; 57 s of one without a time limit). Without a time limit the cut depends on no
#: clock.
_SLICE_WORK = 2**23
_SLICE = 0.25


def temperature_scale(model, scores):
    """The mean range (max − min of the finite entries) of the edge tables of ``scores``
    (of the node tables on a model without edges): the size of a typical move's change,
    which sets the annealing temperatures. 1.0 when every table is constant."""
    start = model.edge_off[0] if model.n_edges else 0
    offsets = model.edge_off if model.n_edges else model.node_off
    finite = np.isfinite(scores[start:])
    hi = np.fmax.reduceat(np.where(finite, scores[start:], -np.inf), offsets[:-1] - start)
    lo = np.fmin.reduceat(np.where(finite, scores[start:], np.inf), offsets[:-1] - start)
    spread = (hi - lo)[np.isfinite(hi - lo)]
    scale = float(spread.mean()) if spread.size else 0.0
    return scale if scale > 0.0 else 1.0


@register_oracle
class AnnealOracle(MapOracle):
    """Simulated annealing (Kirkpatrick, Gelatt & Vecchi 1983) with Metropolis moves of one
    variable, sweeping the variables in index order; temperatures t_start → t_end
    (multiples of `temperature_scale` of the call's scores), geometric cooling.

    Starts from ``init`` (else the per-variable argmax of the unary scores) and returns the
    best labelling visited, so never one scoring below the start; from a feasible start
    it never visits an infeasible labelling (moves to -inf entries are rejected). A call
    runs ``sweeps`` sweeps, stopped early by its time limit (status MAX_TIME, else
    STALLED). With ``anytime=True`` and a time limit, it first runs a short probe to
    measure its speed and then one schedule planned to fill the time left, from the best
    labelling so far (again while time is left): longer schedules find better labellings.
    Every schedule runs in short kernel calls (`_SLICE_WORK`, and `_SLICE` seconds with a
    time limit) that go on with the same walk, so that Ctrl-C raises `Interrupted` (the
    best labelling so far) at once; each call records its progress (time, best score)
    after each of them. Reproducible from ``seed`` without a time limit. No bound.
    """

    name = "anneal"
    takes_seed = True
    takes_anytime = True

    # sweeps up to 2**31 - 1: their moves (sweeps times variables) fit the kernel's int64
    @validate_params({"sweeps": Interval(1, 2**31 - 1, integer=True),
                      "t_start": Interval(0.0, lo_open=True),
                      "t_end": Interval(0.0, lo_open=True), "anytime": BOOL},
                     unchecked=("model", "seed"))
    def __init__(self, model, sweeps=1000, t_start=1.0, t_end=0.01, anytime=False, seed=None):
        super().__init__(model)
        if t_end > t_start:
            raise ValueError(f"t_end must be <= t_start; got t_end={t_end:g}, "
                             f"t_start={t_start:g}")
        self.sweeps, self.t_start, self.t_end, self.anytime = sweeps, t_start, t_end, anytime
        self._rng = check_seed(seed)
        n = model.n_vars
        self._best, self._log = np.empty(n, dtype=np.int32), np.empty(n, dtype=np.int32)
        #: moves made and accepted by the last call
        self.n_moves = self.n_accepted = 0

    def _schedule(self, scores, x, scale, n_moves, seconds):
        """One annealing schedule of ``n_moves`` moves from x (in place), for at most
        ``seconds`` (None: no limit), in kernel calls of at most `_SLICE_WORK` work (and
        `_SLICE` seconds with a limit), each going on from the last one's labelling, move
        and generator state: the walk of one call. The best labelling visited goes to
        ``self._kept`` (`_keep`). Returns the moves done."""
        m = self.model
        end = None if seconds is None else time.perf_counter() + seconds
        per_call = max(1, _SLICE_WORK * m.n_vars // (m.n_vars + 2 * m.n_edges))
        state = int(self._rng.integers(2**63))
        done = 0
        while done < n_moves:
            limit = 0.0  # the kernel's "no limit"
            if end is not None:
                limit = min(end - time.perf_counter(), _SLICE)
                if limit <= 0.0:
                    break
            _, _, moves, accepted, state = _kernels.anneal(
                scores, m.graph, x, self._best, self.t_start * scale, self.t_end * scale,
                n_moves, done, min(done + per_call, n_moves), limit, state, self._log)
            done += moves
            self.n_moves += moves
            self.n_accepted += accepted
            self._keep(scores, self._best)
            self.add_progress(Record(iteration=len(self.progress) + 1,
                                     time=time.perf_counter() - self._start,
                                     primal=self._kept_score, score=self._kept_score))
        return done

    def _keep(self, scores, y):
        """Keep a copy of y as the call's best labelling when it scores higher."""
        score = float(self.model.score(y, scores))
        if score > self._kept_score:
            self._kept, self._kept_score = y.copy(), score

    def _argmax(self, scores, init, time_limit):
        start = self._start = time.perf_counter()
        self.progress = ()
        m = self.model
        x = node_argmax(m, scores).astype(np.int32) if init is None else init.copy()
        scale = temperature_scale(m, scores)
        self.n_moves = self.n_accepted = 0
        self._kept, self._kept_score = x.copy(), float(m.score(x, scores))
        with keeping_best(lambda inner: self._kept):
            if not (self.anytime and time_limit is not None) or (m.card < 2).all():
                n_moves = self.sweeps * m.n_vars
                done = self._schedule(scores, x, scale, n_moves, time_limit)
                return self._kept, None, (None if done >= n_moves else Status.MAX_TIME)
            self._schedule(scores, x, scale, _PROBE_SWEEPS * m.n_vars, time_limit)
            rate = self.n_moves / max(time.perf_counter() - start, 1e-6)
            while True:
                left = time_limit - (time.perf_counter() - start)
                if left <= 1e-3 * time_limit:
                    return self._kept, None, Status.MAX_TIME
                # a schedule for the time left (the probe's rate, 10% slack for the set-up)
                self._schedule(scores, self._kept.copy(), scale,
                               max(int(0.9 * rate * left), m.n_vars), left)


#: a fusion move's estimated seconds per variable and edge before one is timed (a 100x100
#: grid, 30,000 of them: 6-8 ms on this project's shared 2-core machine)
_MOVE_SECONDS = 2.5e-7
#: a move starts only when this many times the longest one so far fits the time left
_MOVE_MARGIN = 1.5


class Fusion:
    """Fusion moves for one model's structure (Lempitsky et al. 2010): `fuse` returns the
    best labelling, found by QPBO on the binary fusion problem, that takes each variable's
    label from x (label 0) or from a proposal y (label 1). The QPBO oracle works on a
    binary model with the same edges, built once; variables QPBO leaves unlabelled keep x's
    label and are then improved by ICM on the fusion problem, and the fused labelling is
    returned only when it scores at least as well as x (so x is never made worse).
    ``longest``: the seconds of the longest move so far, before the first an estimate
    (`_MOVE_SECONDS` per variable and edge); callers with a deadline start a move only
    when `_MOVE_MARGIN` times that still fits (`fits`)."""

    def __init__(self, model):
        self.model = model
        n = model.n_vars
        binary = PairwiseMRF.from_flat(np.full(n, 2, dtype=np.int32), model.edges,
                                       np.zeros(2 * n + 4 * model.n_edges))
        self.qpbo = QPBOOracle(binary)
        self._ci = model.card[model.edges[:, 1]].astype(np.int64)
        self._zeros = np.zeros(n, dtype=np.int32)
        self.longest = _MOVE_SECONDS * (n + model.n_edges)
        self._moved = False

    def fits(self, end):
        """Whether a move ends before ``end`` (a `time.perf_counter` time)."""
        return end - time.perf_counter() > _MOVE_MARGIN * self.longest

    def fuse(self, scores, x, y):
        """(fused labelling, its score under ``scores``); x is the incumbent."""
        start = time.perf_counter()
        fused, score = self._fuse(scores, x, y)
        seconds = time.perf_counter() - start
        self.longest = max(self.longest, seconds) if self._moved else seconds
        self._moved = True
        return fused, score

    def _fuse(self, scores, x, y):
        m = self.model
        base = float(m.score(x, scores))
        differ = x != y
        if not differ.any():
            return x, base
        node = scores[m.node_off[:-1, None] + np.stack([x, y], axis=1)]
        i, j = m.edges[:, 0], m.edges[:, 1]
        pick = np.array([[0, 0], [0, 1], [1, 0], [1, 1]])
        xi = np.stack([x[i], y[i]], axis=1)[:, pick[:, 0]]
        xj = np.stack([x[j], y[j]], axis=1)[:, pick[:, 1]]
        pair = scores[m.edge_off[:-1, None] + xi * self._ci[:, None] + xj]
        fused_scores = np.concatenate([node.ravel(), pair.ravel()])
        z = self.qpbo.argmax(fused_scores, init=self._zeros)
        fused = np.where(z == 1, y, x).astype(np.int32)
        score = float(m.score(fused, scores))
        if score >= base:
            return fused, score
        return x, base


@register_oracle
class ExpansionOracle(MapOracle):
    """α-expansion (Boykov, Veksler & Zabih 2001) through fusion moves: from ``init`` (else
    the per-variable argmax of the unary scores) it fuses the labelling with the constant
    proposal x_i = α (variables with fewer states keep their label) for α = 0, 1, ...,
    max card − 1, and repeats such cycles until one changes nothing (STALLED: a local
    optimum for expansion moves), ``max_cycles`` or the time limit (MAX_TIME; a move starts
    only when one fits before it, `Fusion.fits`; Ctrl-C: `Interrupted`). Each move is
    solved by QPBO (exactly when it is submodular, as on metric Potts models; otherwise
    partially: unlabelled variables keep their label). Exact on binary submodular models.
    No bound."""

    name = "expansion"

    @validate_params({"max_cycles": Interval(1, integer=True)}, unchecked=("model",))
    def __init__(self, model, max_cycles=20):
        super().__init__(model)
        self.max_cycles = max_cycles
        self.fusion = Fusion(model)
        self.n_cycles = 0

    def _proposals(self):
        """The proposals of one cycle, each a function of the labelling as it is then."""
        card = self.model.card
        for alpha in range(int(card.max()) if self.model.n_vars else 0):
            yield lambda x, alpha=alpha: np.where(card > alpha, alpha, x).astype(np.int32)

    def _argmax(self, scores, init, time_limit):
        m = self.model
        start = time.perf_counter()
        x = node_argmax(m, scores).astype(np.int32) if init is None else init.copy()
        score = float(m.score(x, scores))
        end = None if time_limit is None else start + time_limit
        with keeping_best(lambda inner: x):
            # the loop counts its cycles on the oracle (n_cycles), deliberately
            for self.n_cycles in range(1, self.max_cycles + 1):  # noqa: B020
                before = score
                for propose in self._proposals():
                    if end is not None and not self.fusion.fits(end):
                        return x, None, Status.MAX_TIME
                    x, score = self.fusion.fuse(scores, x, propose(x))
                if not score > before:
                    return x, None, Status.STALLED
        return x, None, budget_status()


@register_oracle
class SwapOracle(ExpansionOracle):
    """αβ-swap (Boykov, Veksler & Zabih 2001) through the same fusion moves as
    `ExpansionOracle`: for each pair of labels α < β, the proposal swaps them (x_i = α
    becomes β and β becomes α where both are states of i), so the fused labelling lets
    every variable labelled α or β take either. Cycles over all pairs, stopping rules and
    time limits as α-expansion's; moves are exact when submodular (semi-metric Potts).
    No bound."""

    name = "swap"

    def _proposals(self):
        card = self.model.card
        labels = int(card.max()) if self.model.n_vars else 0
        for alpha in range(labels):
            for beta in range(alpha + 1, labels):
                def swap(x, a=alpha, b=beta):
                    both = card > b
                    return np.where(both & (x == a), b,
                                    np.where(both & (x == b), a, x)).astype(np.int32)
                yield swap
