"""A portfolio of MAP oracles that keeps the best score (Barrier FW Sec. 5 ran several
approximate solvers and kept the best labelling); with ``anytime=True`` it solves a call
exactly by variable elimination when that fits the call's time limit, else spends the
time limit on annealing, fusion moves and TRW-S."""
import math
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..auto import portfolio_members
from ..checks import BOOL, validate_params
from ..elimination import EliminationPlan
from ..loop import keeping_best, stopped_on_budget
from ..results import Record, Status, proves_optimal
from .anytime import AnnealOracle, ExpansionOracle, Fusion
from .approximate import TRWSOracle
from .base import MapOracle, build_oracle, register_oracle

__all__ = ["PortfolioOracle"]

#: an anytime call's first annealing run takes this share of the time left (a long
#: cooling schedule: annealing's result improves with the schedule's length), later runs
#: this share of the first one's
_FIRST_SHARE = 0.5
_LATER_SHARE = 0.125
#: and are at least this long (seconds)
_MIN_SLICE = 0.05
#: max-product elimination's cost (seconds) per clique-table entry of a binary variable
#: with one child clique (the kernel's fused path: Grids_15, 1.5e8 entries in 0.32-0.37 s
#: on a shared 2-core machine) and of any other (CSP_11: 9 ns, DBN_14: 9-12 ns,
#: ObjectDetection_11: 7.5 ns)
_ELIM_FAST_ENTRY, _ELIM_ENTRY = 3e-9, 1e-8
#: an elimination plan is tried for at most this many variables per second of the time
#: left (building or refusing one takes about 0.1-0.25 ms a variable)
_ELIM_VARS_PER_SECOND = 1000
#: and used when its argmax tables (a byte an entry, 4 past 256 states) fit in this
_ELIM_MEMORY = 2**30


@register_oracle
class PortfolioOracle(MapOracle):
    """Runs several oracles on the same scores and returns the best-scoring assignment; the
    upper bound is the smallest bound any member reported (None when none did).

    Options: ``members`` — names, ``(name, options)`` pairs or oracle objects (default:
    qpbo (binary models only), trws, icm); ``threads`` — run the
    members concurrently in a thread pool (useful when their kernels release the GIL).
    A call's time limit bounds the whole call (members run one after the other share it).
    After a call, ``member_scores`` maps each member's name (suffixed by its position when
    names repeat, e.g. two user functions) to its score and ``best`` names the winner.

    ``anytime=True``: a call given a time limit first tries exact max-product variable
    elimination (`fwcore.elimination.EliminationPlan`, planned once): when the plan's estimated
    time (its clique-table entries times the measured cost per entry) fits the time
    left, the call returns its maximiser, proven optimal (``best`` = "elimination", one
    ``progress`` record).
    Otherwise it runs the members and fuses their
    labellings (`fwcore.oracles.anytime.Fusion`), then until the limit rounds of:
    α-expansion from the best labelling (multi-label models); simulated annealing (the
    first run from the best labelling, for half the time left; later runs, an eighth of
    that, from the unary argmax, so that they differ from it; ``seed`` drives them); a
    fusion move of the best with the annealed labelling; more TRW-S iterations while
    TRW-S has not stalled (its bound is the certified one). It stops early when the bound proves the
    best score optimal (CONVERGED), else returns MAX_TIME; ``progress`` records (time,
    best score, best bound) after the members and after each round. Without a time limit a
    call is the plain portfolio.

    Ctrl-C raises `fwcore.loop.Interrupted` with the best labelling any member
    or round had found (a plain KeyboardInterrupt before the first one finished, or
    during elimination); ``progress`` then holds the rounds done.
    """

    name = "portfolio"
    exact = False
    takes_seed = True
    takes_anytime = True

    @validate_params({"threads": BOOL, "anytime": BOOL}, unchecked=("model", "members", "seed"))
    def __init__(self, model, members=None, threads=False, anytime=False, seed=None):
        super().__init__(model)
        self.anytime = anytime
        if members is None:
            members = portfolio_members(model)
        if isinstance(members, (str, tuple)) or not len(members):
            raise ValueError("members must be a non-empty list of oracle names, (name, options) "
                             f"pairs or oracle objects; got {members!r}")
        self.members = [build_oracle(m, model) for m in members]
        self.exact = any(m.exact for m in self.members)
        self.threads = threads
        self.member_scores = {}
        self.best = None
        self._plan, self._plan_limit = None, 0.0
        if self.anytime:
            self._anneal = AnnealOracle(model, anytime=True, seed=seed)
            self._expansion = ExpansionOracle(model) if (model.card > 2).any() else None
            self._fusion = (Fusion(model) if self._expansion is None else
                            self._expansion.fusion)
            trws = [m for m in self.members if isinstance(m, TRWSOracle)]
            self._trws = trws[0] if trws else TRWSOracle(model)

    def _argmax(self, scores, init, time_limit):
        # one time limit for the whole call: members run one after the other get what is left
        start = time.perf_counter()
        end = None if time_limit is None else start + time_limit
        self.progress = ()
        if self.anytime and end is not None and self._elimination_fits(end):
            self.member_scores, self.best = {}, "elimination"
            try:
                x = self._plan.map(self.model.with_theta(scores))
            except ValueError:  # every assignment has score -inf
                return np.zeros(self.model.n_vars, dtype=np.int32), -np.inf, None
            score = float(self.model.score(x, scores))
            self.progress = (Record(iteration=1, time=time.perf_counter() - start, primal=score,
                                    bound=score, score=score),)
            return x, score, None
        self._kept, self._kept_score = None, -np.inf

        def kept(inner):  # a member's best so far, if it kept one, against the call's
            if inner is not None:
                self._keep(inner, float(self.model.score(inner, scores)))
            return self._kept
        with keeping_best(kept):
            return self._members(scores, init, start, end)

    def _members(self, scores, init, start, end):
        """The members, then with ``anytime`` the rounds of `_spend`."""
        def run(oracle, share=1.0):
            left = None if end is None else share * self._left(end)
            x = oracle.argmax(scores, init, left)
            score = float(self.model.score(x, scores))
            self._keep(x, score)
            return x, score, oracle.upper_bound()

        if self.threads and len(self.members) > 1:
            with ThreadPoolExecutor(max_workers=len(self.members)) as pool:
                results = list(pool.map(run, self.members))
        elif self.anytime and end is not None:  # an even share of the time left each
            n = len(self.members)
            results = [run(m, 1.0 / (n - k)) for k, m in enumerate(self.members)]
        else:
            results = [run(m) for m in self.members]
        names = [m.name if [o.name for o in self.members].count(m.name) == 1
                 else f"{m.name}{k}" for k, m in enumerate(self.members)]
        self.member_scores = {name: s for name, (_, s, _) in zip(names, results)}
        k = int(np.argmax([s for _, s, _ in results]))
        self.best = names[k]
        bounds = [b for _, _, b in results if b is not None]
        timed_out = any(m.status is Status.MAX_TIME for m in self.members)
        bound = min(bounds) if bounds else None
        if self.anytime and end is not None:
            return self._spend(scores, results, bound, start, end)
        return results[k][0], bound, (Status.MAX_TIME if timed_out else None)

    def _spend(self, scores, results, bound, start, end):
        """The anytime rounds after the members (see the class docstring)."""
        k = int(np.argmax([s for _, s, _ in results]))
        x, best = results[k][0], results[k][1]
        for y, _, _ in results[:k] + results[k + 1:]:
            if self._fusion.fits(end):
                x, best = self._fusion.fuse(scores, x, y)
                self._keep(x, best)

        def record(bound):
            self.add_progress(Record(iteration=len(self.progress) + 1,
                                     time=time.perf_counter() - start, primal=best, bound=bound,
                                     score=best))

        record(bound)
        trws_running = stopped_on_budget(self._trws.status)
        while not proves_optimal(best, bound) and self._fusion.fits(end):
            if self._expansion is not None:
                y = self._expansion.argmax(scores, init=x, time_limit=self._left(end))
                x, best = self._better(scores, x, best, y)
            if not self._fusion.fits(end):
                break
            left = self._left(end)
            # the first run improves the best labelling; later ones, shorter, start afresh
            # (from the unary argmax) so that their labellings differ and fusion combines
            if len(self.progress) == 1:
                piece = max(_FIRST_SHARE * left, _MIN_SLICE)
                y = self._anneal.argmax(scores, init=x, time_limit=min(piece, left))
            else:
                y = self._anneal.argmax(scores, time_limit=min(_LATER_SHARE * piece, left))
            if self._fusion.fits(end):
                fused, fused_score = self._fusion.fuse(scores, x, y)
                x, best = self._better(scores, fused, fused_score, y)
            else:
                x, best = self._better(scores, x, best, y)
            if trws_running and self._fusion.fits(end):
                y = self._trws.argmax(scores, init=x, time_limit=self._left(end))
                x, best = self._better(scores, x, best, y)
                b = self._trws.upper_bound()
                bound = b if bound is None or b is None else min(bound, b)
                trws_running = stopped_on_budget(self._trws.status)
            record(bound)
        return x, bound, (None if proves_optimal(best, bound) else Status.MAX_TIME)

    def _elimination_fits(self, end):
        """Whether exact elimination is estimated to finish before ``end`` (plans it once,
        with a memory limit that refuses only plans too slow for the time left)."""
        model = self.model
        left = end - time.perf_counter()
        # a plan's bytes are at most 16 times its entries, which are affordable up to:
        limit = 16 * left / _ELIM_FAST_ENTRY
        if (self._plan is None and model.n_vars <= _ELIM_VARS_PER_SECOND * left
                and limit > 2 * self._plan_limit):
            self._plan_limit = limit
            try:
                plan = EliminationPlan(model, limit)
            except ValueError:
                return False
            card = model.card.tolist()
            sizes = [math.prod(card[u] for u in c) for c in plan.clique]
            fast = sum(s for v, s in enumerate(sizes)
                       if card[v] == 2 and len(plan.children[v]) == 1)
            tables = (1 if max(card, default=1) <= 256 else 4) * plan.message_entries
            if tables <= _ELIM_MEMORY:
                self._plan = plan
                self._elim_seconds = _ELIM_FAST_ENTRY * fast + _ELIM_ENTRY * (plan.work - fast)
        return self._plan is not None and self._elim_seconds <= end - time.perf_counter()

    @staticmethod
    def _left(end):
        return max(end - time.perf_counter(), 1e-3)

    def _better(self, scores, x, best, y):
        """The better of (x, its score ``best``) and y, kept (`_keep`)."""
        score = float(self.model.score(y, scores))
        x, best = (y, score) if score > best else (x, best)
        self._keep(x, best)
        return x, best

    def _keep(self, x, score):
        """Keep x as the call's best labelling (what Ctrl-C returns) when it scores higher."""
        if score > self._kept_score:
            self._kept, self._kept_score = x, score


