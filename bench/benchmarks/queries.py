"""Sampling, joint queries and marginal MAP (fwcore._query) against their NumPy twins
(tests/query_numpy.py), measured in one run: forward sampling of a random Bayesian
network, backward sampling through the clique tree of a grid, and the mixed sum/max
elimination of marginal MAP on the same grid (and `fwcore.sample` / `fwcore.infer_mmap`
end to end). Sizes: a 2000-variable network and a 12x12 grid (quick: 300 and 8x8)."""

import numpy as np

import fwcore
from fwcore import _query
from fwcore.bayes import bayes_form
from fwcore.queries import MessageTree

from .common import QUICK, median_seconds, tests_module

_N_VARS, _SIDE, _SAMPLES = (300, 8, 500) if QUICK else (2000, 12, 2000)


def _forward_inputs(model, form, u):
    card = model.card.astype(np.int64)
    cpt = np.concatenate([c.ravel() for c in form.cpts])
    cpt_off = np.concatenate([[0], np.cumsum([c.size for c in form.cpts])[:-1]])
    par_start = np.concatenate([[0], np.cumsum([len(p) for p in form.parents])])
    par_var = np.array([v for p in form.parents for v in p], dtype=np.int64)
    stride = np.array([int(np.prod(card[list(p[k + 1:])])) for p in form.parents
                       for k in range(len(p))], dtype=np.int64)
    return (form.order, card, par_start, par_var, stride, cpt_off.astype(np.int64), cpt, u)


class QueryKernels:
    """Seconds of each kernel and of its NumPy twin on the same inputs, and their ratio."""

    param_names = ["task"]
    params = [["forward", "backward", "mmap"]]
    timeout = 1800

    def setup_cache(self):
        twin = tests_module("query_numpy")
        networks = tests_module("networks")
        rng = np.random.default_rng(0)
        out = {}
        net = networks.random_network(_N_VARS, 0, max_parents=3, max_card=3)
        form = bayes_form(net)
        u = rng.random((net.n_vars, _SAMPLES))
        args = _forward_inputs(net, form, u)
        x = np.empty(u.shape, dtype=np.int32)
        kernel = median_seconds(lambda: _query.forward_sample(*args[:1], net.card.astype(np.int32),
                                                       *args[2:], x))
        out["forward"] = (kernel, median_seconds(lambda: twin.forward_sample(*args), 1),
                          median_seconds(lambda: fwcore.sample(net, _SAMPLES, seed=0)))
        grid = fwcore.random_grid(_SIDE, coupling=1.5, field=1.0, seed=0)
        tree = MessageTree(grid)
        tree.up()
        msgs, _, _ = twin.up_pass(tree, grid, grid.n_vars)
        u = rng.random((grid.n_vars, _SAMPLES))
        x = np.empty(u.shape, dtype=np.int32)
        out["backward"] = (
            median_seconds(lambda: _query.backward_sample(tree.tree, grid.theta, tree.msg_off,
                                                   tree.msg, u, x)),
            median_seconds(lambda: twin.backward_sample(tree, grid, msgs, u), 1),
            median_seconds(lambda: fwcore.sample(grid, _SAMPLES, {0: 1}, seed=0)))
        q = [int(v) for v in rng.choice(grid.n_vars, size=8, replace=False)]
        mixed = MessageTree(grid, q, n_max=len(q))
        out["mmap"] = (median_seconds(mixed.up),
                       median_seconds(lambda: twin.up_pass(mixed, grid, grid.n_vars - len(q)), 1),
                       median_seconds(lambda: fwcore.infer_mmap(grid, q)))
        return out

    def setup(self, figures, task):
        self.kernel, self.numpy, self.entry = figures[task]

    def track_kernel_seconds(self, figures, task):
        return self.kernel

    def track_numpy_seconds(self, figures, task):
        return self.numpy

    def track_numpy_over_kernel(self, figures, task):
        return self.numpy / self.kernel

    def track_entry_point_seconds(self, figures, task):
        """`fwcore.sample` (forward; backward with evidence) or `fwcore.infer_mmap`, all
        included (plan, order, passes)."""
        return self.entry
