"""A portfolio of MAP oracles that keeps the best score (Barrier FW Sec. 5 ran several
approximate solvers and kept the best labelling)."""
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..results import Status
from .base import MapOracle, available_oracles, register_oracle, resolve_oracle

__all__ = ["PortfolioOracle"]

#: default members, in order of preference; those not installed/registered are skipped
DEFAULT_MEMBERS = ("qpbo", "trws", "icm")


@register_oracle
class PortfolioOracle(MapOracle):
    """Runs several oracles on the same scores and returns the best-scoring assignment; the
    upper bound is the smallest bound any member reported (None when none did).

    Options: ``members`` — names, ``(name, options)`` pairs or oracle objects (default: the
    available ones among qpbo (binary models only), trws, icm); ``threads`` — run the
    members concurrently in a thread pool (useful when their kernels release the GIL).
    A call's time limit bounds the whole call (members run one after the other share it).
    After a call, ``member_scores`` maps each member's name (suffixed by its position when
    names repeat, e.g. two user functions) to its score and ``best`` names the winner.
    """

    name = "portfolio"
    exact = False

    def __init__(self, model, members=None, threads=False):
        super().__init__(model)
        if members is None:
            binary = bool((model.card == 2).all())
            installed = available_oracles()
            members = [m for m in DEFAULT_MEMBERS
                       if installed.get(m) and (m != "qpbo" or binary)]
            if not members:
                raise ValueError("the portfolio found none of its default members "
                                 f"({', '.join(DEFAULT_MEMBERS)}); pass members=[...]")
        if isinstance(members, (str, tuple)) or not len(members):
            raise ValueError("members must be a non-empty list of oracle names, (name, options) "
                             f"pairs or oracle objects; got {members!r}")
        self.members = [resolve_oracle(m, model) for m in members]
        self.exact = any(m.exact for m in self.members)
        self.threads = bool(threads)
        self.member_scores = {}
        self.best = None

    def _argmax(self, scores, init, time_limit):
        # one time limit for the whole call: members run one after the other get what is left
        end = None if time_limit is None else time.perf_counter() + time_limit

        def run(oracle):
            left = None if end is None else max(end - time.perf_counter(), 1e-3)
            x = oracle.argmax(scores, init, left)
            return x, float(self.model.score(x, scores)), oracle.upper_bound()

        if self.threads and len(self.members) > 1:
            with ThreadPoolExecutor(max_workers=len(self.members)) as pool:
                results = list(pool.map(run, self.members))
        else:
            results = [run(m) for m in self.members]
        names = [m.name if [o.name for o in self.members].count(m.name) == 1
                 else f"{m.name}{k}" for k, m in enumerate(self.members)]
        self.member_scores = {name: s for name, (_, s, _) in zip(names, results)}
        k = int(np.argmax([s for _, s, _ in results]))
        self.best = names[k]
        bounds = [b for _, _, b in results if b is not None]
        timed_out = any(m.status is Status.MAX_TIME for m in self.members)
        return results[k][0], (min(bounds) if bounds else None), \
            (Status.MAX_TIME if timed_out else None)

