"""Exact and anytime MAP by AND/OR branch and bound guided by mini-bucket bounds, on the
model's factors (issue 37): the ``aobb`` oracle.

A model reaches the oracles as a `PairwiseMRF`; a `FactorGraph` as its pairwise
reduction. `FactorView` turns it back into factors: every auxiliary variable of the
reduction (a variable whose states each fix all its neighbours but one,
`fwcore.elimination.functional_vars`) is maximised out exactly into one factor over its
neighbours (for a reduction: the user's factor itself), every other edge stays a pairwise
factor, every variable keeps its unary. So the search and its bound work on the factor
graph the user gave, with no auxiliary variable (DESIGN.md "Factor graphs").

On those factors (`fwcore._search`, flat arrays, no GIL):

1. an elimination order (weighted min-fill on the factors' primal graph) gives the
   pseudo-tree (the parent of v: the first-eliminated variable of its separator) and
   each variable's context (its separator: the key of its cache);
2. mini-bucket elimination with moment matching (Flerova et al. 2011) along that order
   gives a certified upper bound on the maximum score and, through its messages, the
   heuristic of every node of the search (Kask & Dechter 2001);
3. depth-first AND/OR branch and bound with caching (Marinescu & Dechter 2009, AOBB-C)
   from the heuristic's greedy labelling, improved by ICM on the factors, finds the
   maximum and proves it; on the way, ICM from the search's current assignment gives an
   anytime incumbent. The mini-bucket size follows the time limit and ``memory_limit``.
"""
import threading
import time

import numpy as np

from .. import _search
from .._symbolic import eliminate
from ..checks import Interval, TIME, validate_params
from ..elimination import functional_vars, min_fill_order
from ..loop import Deadline, Interrupted
from ..model import PairwiseMRF
from ..results import Record, Status
from .base import MapOracle, register_oracle

__all__ = ["AOBBOracle", "FactorView", "MiniBuckets"]

#: bytes of one cache entry (its value and its flag) and of one message entry
_CACHE_ENTRY, _MESSAGE_ENTRY = 9, 8
#: mini-bucket elimination's measured cost per (table entry x member) of a pass
#: (linkage_12 at caps 2**20-2**26: 2.6-4.1 ns on a shared 2-core machine)
_MBE_SECONDS = 4e-9
#: the share of a call's time limit the mini-bucket bound may take
_MBE_SHARE = 0.2
#: the mini-bucket table caps tried (entries), largest first
_CAPS = tuple(2**k for k in range(26, 3, -2))
#: seconds between two ICM runs from the search's assignment, and between two progress
#: records
_LOOK_EVERY, _PROGRESS_EVERY = 0.05, 1.0
#: ICM sweeps on a new incumbent
_ICM_SWEEPS = 50
#: seconds of branch and bound, then of neighbourhood search, in the first round (rounds
#: grow by half); the first neighbourhood's variables and its searches' node limit
_TURN, _BALL, _BALL_NODES = 1.0, 60.0, 500000


class FactorView:
    """The factors of a `PairwiseMRF` (module docstring) as flat functions: ``card`` of
    the kept variables (``keep``: their indices in the model), scopes in CSR (``start``,
    ``var``, in the kept variables' numbering), row-major ``stride``s and table offsets
    ``off``; `tables(scores)` fills them from scores in the model's flat layout, `extend`
    maps a labelling of the kept variables back to the model's, `restrict` the other way.

    Factor order: the kept variables' unaries, the edges between kept variables, then one
    factor per auxiliary variable y over (its loose neighbour, if any, then the neighbours
    it fixes): entry (x_p, F) = max over the states s of y that fix F of
    θ_y(s) + θ_py(x_p, s) + Σ_k θ_{v_k y}(F_k, s) (max-elimination of y: exact for MAP).
    ``collapse=False`` keeps every variable (the plain pairwise factors)."""

    def __init__(self, model, collapse=True):
        self.model = model
        is_aux = np.zeros(model.n_vars, dtype=bool)
        if collapse:
            is_aux[functional_vars(model)] = True
            # an auxiliary variable next to another one is kept (no reduction makes those)
            is_aux[model.edges[is_aux[model.edges].all(axis=1)].ravel()] = False
        self.keep = np.flatnonzero(~is_aux)
        self.aux = np.flatnonzero(is_aux)
        new = np.full(model.n_vars, -1, dtype=np.int64)
        new[self.keep] = np.arange(self.keep.size)
        self.card = model.card[self.keep].astype(np.int32)
        plain = np.flatnonzero(~is_aux[model.edges].any(axis=1))
        scopes = [[v] for v in range(self.keep.size)] + new[model.edges[plain]].tolist()
        card = model.card.astype(np.int64)
        gather = [np.arange(model.node_off[v], model.node_off[v + 1]) for v in self.keep]
        gather += [np.arange(model.edge_off[e], model.edge_off[e + 1]) for e in plain]
        self._gather = np.concatenate(gather + [np.zeros(0, dtype=np.int64)])
        n_plain = len(scopes)
        # per auxiliary state (a "row"): its node score position, and per fixed neighbour
        # the consistency entry, the neighbour and the state it fixes; per table entry its
        # destination, row and loose-edge entry (-1: none)
        rows = {"node": [], "y": []}
        cons = {"pos": [], "row": [], "var": [], "state": []}
        ent = {"dest": [], "row": [], "loose": []}
        loose_rows = {"var": [], "base": [], "mul": []}
        off_entries = []
        tables, row0 = [], 0
        for y in self.aux:
            cy = int(card[y])
            fixed, loose = [], None
            for t in range(model.adj_start[y], model.adj_start[y + 1]):
                u, e = int(model.adj_var[t]), int(model.adj_edge[t])
                table = model.pairwise(e)
                table = table if model.edges[e, 1] == y else table.T   # [x_u, x_y]
                finite = np.isfinite(table)
                if loose is None and not (finite.sum(axis=0) == 1).all():
                    loose = (u, e)
                else:
                    fixed.append((u, e, np.argmax(finite, axis=0)))
            scope = ([] if loose is None else [loose[0]]) + [u for u, _, _ in fixed]
            size = int(np.prod(card[scope]))
            strides = np.cumprod(np.concatenate([card[scope][1:], [1]])[::-1])[::-1]
            k0 = 1 if loose is not None else 0
            s_all = np.arange(cy)
            fixed_part = np.zeros(cy, dtype=np.int64)
            for st, (u, e, f) in zip(strides[k0:], fixed):
                fixed_part += st * f
                pos = self._entry(e, u, f, y, s_all)
                cons["pos"].append(pos)
                cons["row"].append(row0 + s_all)
                cons["var"].append(np.full(cy, u))
                cons["state"].append(f)
                block = np.arange(model.edge_off[e], model.edge_off[e + 1])
                off_entries.append(np.setdiff1d(block, pos))
            rows["node"].append(model.node_off[y] + s_all)
            rows["y"].append(np.full(cy, len(tables)))
            if loose is None:
                ent["dest"].append(fixed_part)
                ent["row"].append(row0 + s_all)
                ent["loose"].append(np.full(cy, -1))
                loose_rows["var"].append(np.zeros(cy, dtype=np.int64))
                loose_rows["base"].append(np.full(cy, -1))
                loose_rows["mul"].append(np.zeros(cy, dtype=np.int64))
            else:
                u, e = loose
                cu = int(card[u])
                a, s_ = np.tile(np.arange(cu), cy), np.repeat(s_all, cu)
                ent["dest"].append(fixed_part[s_] + strides[0] * a)
                ent["row"].append(row0 + s_)
                ent["loose"].append(self._entry(e, u, a, y, s_))
                base = self._entry(e, u, 0, y, s_all)
                loose_rows["var"].append(np.full(cy, u))
                loose_rows["base"].append(base)
                loose_rows["mul"].append(self._entry(e, u, 1, y, s_all) - base)
            tables.append(size)
            scopes.append([int(new[u]) for u in scope])
            row0 += cy
        self._node, self._row_y = _cat(rows["node"]), _cat(rows["y"])
        self._cons, self._cons_row = _cat(cons["pos"]), _cat(cons["row"])
        self._cons_var, self._cons_state = _cat(cons["var"]), _cat(cons["state"])
        self._loose_var, self._loose_base = _cat(loose_rows["var"]), _cat(loose_rows["base"])
        self._loose_mul = _cat(loose_rows["mul"])
        self._off_entries = _cat(off_entries)
        lengths = np.array([len(sc) for sc in scopes], dtype=np.int64)
        self.start = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        self.var = np.array([v for sc in scopes for v in sc], dtype=np.int32)
        self.stride, self.off = _search.row_major(self.card, self.start, self.var)
        self.n_factors = len(scopes)
        self._plain_size = int(self.off[n_plain])
        aux_off = self.off[n_plain:-1]
        self._dest = _cat([aux_off[k] + d for k, d in enumerate(ent["dest"])])
        self._ent_row, self._ent_loose = _cat(ent["row"]), _cat(ent["loose"])
        self._unique = np.unique(self._dest).size == self._dest.size
        self.size = int(self.off[-1])

    def _entry(self, e, u, a, y, s):
        """Flat positions of edge e's entries (x_u = a, x_y = s)."""
        m = self.model
        if m.edges[e, 0] == u:
            return m.edge_off[e] + a * m.card[y] + s
        return m.edge_off[e] + s * m.card[u] + a

    def exact_for(self, scores):
        """Whether the auxiliary variables are functional under ``scores`` too (their
        consistency tables -inf off the fixed states, as in the model's)."""
        return bool(np.isneginf(scores[self._off_entries]).all())

    def _row_values(self, scores):
        """θ_y(s) + Σ_k θ_{v_k y}(F_k(s), s) for every auxiliary state (row)."""
        picked = scores[self._cons]
        total = np.bincount(self._cons_row, weights=np.where(np.isneginf(picked), 0.0, picked),
                            minlength=self._node.size)
        bad = np.bincount(self._cons_row, weights=np.isneginf(picked), minlength=self._node.size)
        return np.where(bad > 0, -np.inf, total + scores[self._node])

    def tables(self, scores):
        """The factors' tables (float64[size]) under ``scores`` (the model's layout)."""
        val = np.full(self.size, -np.inf)
        val[:self._plain_size] = scores[self._gather]
        if self._node.size:
            value = self._row_values(scores)[self._ent_row]
            has = self._ent_loose >= 0
            value[has] += scores[self._ent_loose[has]]
            if self._unique:
                val[self._dest] = value
            else:
                np.maximum.at(val, self._dest, value)
        return val

    def extend(self, x, scores):
        """The model's labelling whose kept variables are x: each auxiliary variable at
        its best state that fixes its neighbours as x has them (the best state when none
        does: the labelling then scores -inf, as x does)."""
        full = np.zeros(self.model.n_vars, dtype=np.int32)
        full[self.keep] = x
        if not self._node.size:
            return full
        value = self._row_values(scores)
        has = self._loose_base >= 0
        value[has] += scores[self._loose_base[has] + full[self._loose_var[has]] *
                             self._loose_mul[has]]
        wrong = np.bincount(self._cons_row, weights=full[self._cons_var] != self._cons_state,
                            minlength=self._node.size)
        value = np.where(wrong > 0, -np.inf, value)
        order = np.lexsort((value, self._row_y))   # by auxiliary variable, best last
        last = np.flatnonzero(np.r_[self._row_y[order][1:] != self._row_y[order][:-1], True])
        row_start = np.concatenate([[0], np.cumsum(self.model.card[self.aux])[:-1]])
        full[self.aux] = order[last] - row_start
        return full

    def restrict(self, x):
        """The kept variables' part of a model labelling."""
        return np.ascontiguousarray(np.asarray(x)[self.keep], dtype=np.int32)


def _cat(parts):
    """The int64 concatenation of ``parts`` (empty: an empty array)."""
    return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, dtype=np.int64)


class MiniBuckets:
    """The symbolic side of search on a `FactorView`: the elimination order, the
    pseudo-tree, contexts, and per mini-bucket table cap the partition
    (`fwcore._search.minibucket_plan`), its messages' layout and the `Search` object."""

    def __init__(self, view, memory_limit):
        self.view = view
        n = view.card.size
        self.memory_limit = memory_limit
        scope_len = np.diff(view.start)
        pairs = []
        for k in range(2, int(scope_len.max(initial=0)) + 1):
            ids = np.flatnonzero(scope_len == k)
            if not ids.size:
                continue
            block = view.var[view.start[ids][:, None] + np.arange(k)]
            for a in range(k):
                for b in range(a + 1, k):
                    pairs.append(block[:, [a, b]])
        edges = np.sort(np.concatenate(pairs), axis=1) if pairs else np.zeros((0, 2), np.int64)
        edges = np.unique(edges, axis=0) if edges.size else edges.reshape(0, 2)
        card = view.card.astype(np.int64)
        primal = PairwiseMRF.from_flat(
            view.card, edges, np.zeros(int(card.sum() + (card[edges[:, 0]] *
                                                         card[edges[:, 1]]).sum())))
        order, _ = min_fill_order(primal)
        self.order = np.asarray(order, dtype=np.int64)
        self.pos = np.empty(n, dtype=np.int64)
        self.pos[self.order] = np.arange(n)
        sep_start, sep_var, _, _ = eliminate(primal.adj_start, primal.adj_var, primal.card,
                                          self.order, 2**63 - 1)
        # separators in the variables' order, parents, children, roots
        sizes = np.diff(sep_start)
        ctx_len = np.zeros(n, dtype=np.int64)
        ctx_len[self.order] = sizes
        self.ctx_start = np.concatenate([[0], np.cumsum(ctx_len)]).astype(np.int64)
        self.ctx_var = np.empty(int(sizes.sum()), dtype=np.int32)
        dest = (self.ctx_start[self.order][:, None] + np.arange(int(sizes.max(initial=0))))
        valid = np.arange(int(sizes.max(initial=0)))[None, :] < sizes[:, None]
        src = sep_start[:-1][:, None] + np.arange(int(sizes.max(initial=0)))
        self.ctx_var[dest[valid]] = sep_var[src[valid]]
        self.parent = np.full(n, -1, dtype=np.int64)
        has = ctx_len > 0
        if has.any():
            first_pos = np.minimum.reduceat(self.pos[self.ctx_var], self.ctx_start[:-1][has])
            self.parent[has] = self.order[first_pos]
        kids = np.flatnonzero(self.parent >= 0)
        kids = kids[np.argsort(self.parent[kids], kind="stable")]
        self.ch_var = kids.astype(np.int32)
        self.ch_start = np.concatenate([[0], np.cumsum(np.bincount(
            self.parent[kids], minlength=n))]).astype(np.int64)
        self.roots = np.flatnonzero(self.parent < 0).astype(np.int32)
        self.preorder = self.order[::-1].copy()
        # the factors of each variable (ICM)
        by_var = np.argsort(view.var, kind="stable")
        self.inc_fun = np.repeat(np.arange(view.n_factors), scope_len)[by_var].astype(np.int64)
        self.inc_start = np.concatenate([[0], np.cumsum(np.bincount(
            view.var, minlength=n))]).astype(np.int64)
        # caches: contexts whose tables fit, smallest first, within half the memory
        ctx_size = np.ones(n)
        if self.ctx_var.size:
            logs = np.log2(card[self.ctx_var].astype(np.float64))
            ctx_size = 2.0 ** np.add.reduceat(np.concatenate([logs, [0.0]]),
                                              self.ctx_start[:-1])
            ctx_size[ctx_len == 0] = 1.0
        budget = 0.5 * memory_limit / _CACHE_ENTRY
        by_size = np.argsort(ctx_size, kind="stable")
        fits = np.cumsum(ctx_size[by_size]) <= budget
        self.cache_off = np.full(n, -1, dtype=np.int64)
        cached = by_size[fits]
        sizes_c = np.rint(ctx_size[cached]).astype(np.int64)
        self.cache_off[cached] = np.concatenate([[0], np.cumsum(sizes_c)[:-1]]).astype(np.int64)
        self.cache_size = int(sizes_c.sum())
        self.ctx_stride = np.zeros(self.ctx_var.size, dtype=np.int64)
        if self.ctx_var.size:
            strides, _ = _search.row_major(view.card, self.ctx_start, self.ctx_var)
            self.ctx_stride = strides
        self._plans = {}

    def plan(self, cap):
        """The mini-bucket partition with tables of at most ``cap`` entries (cached):
        a dict with the message layout, the crossings, the search object and its cost
        estimates (``entries``: message entries, ``work``: table entries x members)."""
        if cap in self._plans:
            return self._plans[cap]
        view = self.view
        m = view.n_factors
        bucket, src, target, s_start, s_var, mm_start, mm_fun = _search.minibucket_plan(
            view.card, self.order, view.start, view.var, 64, float(cap))
        stride, off = _search.row_major(view.card, s_start, s_var)
        n_msg = src.size
        f_start = np.concatenate([view.start, view.start[-1] + s_start[1:]])
        f_var = np.concatenate([view.var, s_var])
        f_stride = np.concatenate([view.stride, stride])
        f_off = np.concatenate([view.off, view.off[-1] + off[1:]])
        msg_size = np.diff(off)
        # a mini-bucket's table: its message's entries times its bucket's states
        work = float((msg_size * view.card[src] * np.diff(mm_start)).sum())
        cost_ids = np.flatnonzero(bucket >= 0)
        cost_ids = cost_ids[np.argsort(bucket[cost_ids], kind="stable")]
        cost_start = np.concatenate([[0], np.cumsum(np.bincount(
            bucket[cost_ids], minlength=view.card.size))]).astype(np.int64)
        cross_start, cross_ids = _search.crossings(self.parent, src, target)
        nc = np.diff(self.ch_start)
        arena = int((view.card.astype(np.int64) * (nc + 3)).sum()) + 1
        search = _search.Search(
            view.card, f_start, f_var, f_stride, f_off, m, self.ch_start, self.ch_var,
            self.roots, self.ctx_start, self.ctx_var, self.ctx_stride, self.cache_off,
            self.cache_size, cost_start, cost_ids, cross_start, cross_ids + m,
            self.inc_start, self.inc_fun, arena)
        plan = {"entries": int(off[-1]), "work": work, "src": src, "target": target,
                "mm_start": mm_start, "mm_fun": mm_fun, "f_start": f_start, "f_var": f_var,
                "f_stride": f_stride, "f_off": f_off, "n_messages": n_msg,
                "constants": np.flatnonzero(target < 0) + m,
                "const_originals": np.flatnonzero(bucket < 0), "search": search}
        self._plans[cap] = plan
        return plan

    def choose(self, time_limit):
        """The largest cap whose messages fit half of ``memory_limit`` and whose
        elimination takes at most `_MBE_SHARE` of ``time_limit`` (None: no time limit)."""
        budget = 0.5 * self.memory_limit / _MESSAGE_ENTRY
        for cap in _CAPS:
            plan = self.plan(cap)
            seconds = 2 * _MBE_SECONDS * plan["work"]
            if plan["entries"] <= budget and (time_limit is None or
                                              seconds <= _MBE_SHARE * time_limit):
                return cap
            self._plans.pop(cap)
        return _CAPS[-1]


@register_oracle
class AOBBOracle(MapOracle):
    """AND/OR branch and bound with a mini-bucket heuristic on the model's factors
    (`fwcore.oracles.search`; Marinescu & Dechter 2009, mini-buckets with moment matching
    of Flerova et al. 2011): exact when a call finishes; with a time limit, anytime: the
    best labelling found (the heuristic's greedy labelling, ICM on the factors from the
    search's assignment) and the mini-bucket bound, certified, status max_time.

    Options: ``time_limit`` (seconds per call), ``memory_limit`` (bytes for the
    mini-bucket messages and the search's caches, half each; default 2**30),
    ``cap`` (entries of a mini-bucket table; default: the largest whose elimination
    takes at most a fifth of the time limit and fits the memory).
    Ctrl-C raises `fwcore.loop.Interrupted` with the best labelling so far; ``bound``
    then holds the certified bound (`upper_bound` is that of the last finished call)."""

    name = "aobb"
    exact = True

    @validate_params({"time_limit": TIME, "memory_limit": Interval(2**16),
                      "cap": [Interval(2, integer=True), None]}, unchecked=("model",))
    def __init__(self, model, time_limit=None, memory_limit=2**30, cap=None):
        super().__init__(model)
        self.time_limit, self.memory_limit, self.cap = time_limit, memory_limit, cap
        self.view = FactorView(model)
        self._structures = {}
        #: the certified bound of the current or last call (None before one)
        self.bound = None
        #: nodes the last call's search expanded
        self.n_nodes = 0

    def _argmax(self, scores, init, time_limit):
        start = time.monotonic()
        deadline = Deadline(time_limit)
        view, mb = self._structure(self.view.exact_for(scores))
        cap = self.cap or mb.choose(None if time_limit is None else
                                    max(time_limit - (time.monotonic() - start), 1e-3))
        plan = mb.plan(cap)
        search = plan["search"]
        val = np.concatenate([view.tables(scores), np.zeros(plan["entries"])])
        stop = np.zeros(1, dtype=np.uint8)
        best_x = view.restrict(init) if init is not None else None
        kept = {"x": best_x}

        def keep_best(inner=None):
            return None if kept["x"] is None else view.extend(kept["x"], scores)

        try:
            done = _in_worker(lambda: _search.minibucket_messages(
                view.card, plan["f_start"], plan["f_var"], plan["f_stride"], plan["f_off"],
                val, view.n_factors, plan["src"], plan["mm_start"], plan["mm_fun"], True,
                _limit(deadline), stop), stop)
        except KeyboardInterrupt:
            raise _interrupted(keep_best()) from None
        args = (view.card, plan["f_start"], plan["f_var"], plan["f_stride"], plan["f_off"],
                val, view.n_factors)
        bound = None
        if done:
            bound = float(val[plan["f_off"][plan["constants"]]].sum() +
                          val[view.off[plan["const_originals"]]].sum())
            self.bound = bound
        # the incumbent: the heuristic's greedy labelling (or init), improved by ICM
        x = np.zeros(view.card.size, dtype=np.int32)
        if done:
            search.greedy(val, mb.preorder, x)
        _search.icm(view.card, *args[1:6], mb.inc_start, mb.inc_fun, x, _ICM_SWEEPS)
        best = _search.score(*args, x)
        if best_x is not None:
            init_score = _search.score(*args, best_x)
            if init_score > best:
                x, best = best_x.copy(), init_score
        kept["x"] = x.copy()
        x_best = x.copy()
        self.progress = ()
        self._record(start, best, bound)
        if not done or (bound is not None and best >= bound - 1e-9 * max(1.0, abs(bound))):
            status = None if done else Status.MAX_TIME
            return view.extend(x_best, scores), (best if done else bound), status
        info = np.array([best, 0.0])
        search.clear_cache()
        outcome = {}

        def run():
            outcome["result"] = self._alternate(search, val, x, x_best, best, deadline, stop,
                                                info)

        last = [time.monotonic()]

        def tick():
            kept["x"] = x_best  # read at the end only (the search writes it)
            if time.monotonic() - last[0] >= _PROGRESS_EVERY:
                last[0] = time.monotonic()
                self._record(start, float(info[0]), bound)

        try:
            _in_worker(run, stop, tick)
        except KeyboardInterrupt:
            raise _interrupted(view.extend(x_best, scores)) from None
        code, best = outcome["result"]
        self._record(start, best, best if code == 0 else bound)
        if code == 0:
            return view.extend(x_best, scores), best, None
        return view.extend(x_best, scores), bound, Status.MAX_TIME

    def _alternate(self, search, val, x, x_best, best, deadline, stop, info):
        """Branch and bound (`fwcore._search.Search.run`) and, once there is an incumbent,
        large-neighbourhood search around it (`Search.lns`) in turns of `_TURN` seconds,
        growing by half each round, until the search proves its answer or time is up.
        Returns (status code, best score)."""
        turn, size, seed = _TURN, _BALL, 0
        self.n_nodes = 0
        while True:
            left = deadline.seconds_left()
            piece = 0.0 if left is None and best == -np.inf else (
                turn if left is None else max(min(turn, left), 1e-9))
            code, best = search.run(val, x, x_best, best, piece, stop, info, _LOOK_EVERY)
            self.n_nodes += int(info[1])
            if code != 1 or deadline.passed():  # proven, stopped, or out of time
                return code, best
            if best > -np.inf:
                left = deadline.seconds_left()
                piece = turn if left is None else max(min(turn, left), 1e-9)
                code, best, size = search.lns(val, x, x_best, best, piece, stop, info, size,
                                              _BALL_NODES, seed)
                self.n_nodes += int(info[1])
                seed += 1
                if code == 2 or deadline.passed():
                    return (1 if code != 2 else code), best
            turn *= 1.5

    def _structure(self, collapse):
        """(view, `MiniBuckets`) with the auxiliary variables maximised out (``collapse``)
        or kept (scores that make them non-functional), built once each."""
        if collapse not in self._structures:
            view = self.view if collapse else FactorView(self.model, collapse=False)
            self._structures[collapse] = view, MiniBuckets(view, self.memory_limit)
        return self._structures[collapse]

    def _record(self, start, score, bound):
        self.add_progress(Record(iteration=len(self.progress) + 1,
                                 time=time.monotonic() - start, primal=score, bound=bound,
                                 score=score))


def _limit(deadline):
    """The kernels' time limit: the seconds left (0.0: none; a tiny positive number when
    none are left)."""
    left = deadline.seconds_left()
    return 0.0 if left is None else max(left, 1e-9)


def _interrupted(x):
    return KeyboardInterrupt() if x is None else Interrupted(x)


def _in_worker(func, stop, tick=None):
    """``func()`` (a kernel that releases the GIL and polls ``stop[0]``) in a thread,
    calling ``tick()`` here every 50 ms; Ctrl-C (or a KeyboardInterrupt from ``tick``)
    sets the stop flag, waits for the kernel to notice, and raises KeyboardInterrupt."""
    result = {}

    def target():
        try:
            result["value"] = func()
        except BaseException as err:  # handed to the caller
            result["error"] = err

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.05)
            if tick is not None and worker.is_alive():
                tick()
    except KeyboardInterrupt:
        stop[0] = 1
        worker.join()
        raise
    if "error" in result:
        raise result["error"]
    return result.get("value")
