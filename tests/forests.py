"""Forests for the tests of exact sum-product on forests (`fwcore.exact_inference(method=
"tree")` and `fwcore.infer`'s exact shortcut): -inf entries, whole -inf rows and columns."""
import numpy as np

from fwcore.model import PairwiseMRF


def random_forest(seed, n, p_root=0.2, p_neg_inf=0.1):
    """A random forest (each variable joins an earlier one, or starts a new tree with
    probability ``p_root``), cards 1..4, random -inf entries and some whole -inf rows and
    columns in edge tables; a random x0 keeps a finite score."""
    rng = np.random.default_rng(seed)
    card = rng.integers(1, 5, size=n)
    edges = [(int(rng.integers(0, j)), j) for j in range(1, n) if rng.random() >= p_root]
    x0 = rng.integers(0, card)
    unary = [rng.normal(scale=2.0, size=c) for c in card]
    tables = [rng.normal(scale=2.0, size=(card[i], card[j])) for i, j in edges]
    for (i, j), t in zip(edges, tables):
        t[rng.random(t.shape) < p_neg_inf] = -np.inf
        if rng.random() < 0.3 and card[i] > 1:  # a row other than x0's
            t[(x0[i] + 1 + rng.integers(card[i] - 1)) % card[i], :] = -np.inf
        if rng.random() < 0.3 and card[j] > 1:
            t[:, (x0[j] + 1 + rng.integers(card[j] - 1)) % card[j]] = -np.inf
        t[x0[i], x0[j]] = rng.normal()
    for i, u in enumerate(unary):
        u[rng.random(u.shape) < p_neg_inf] = -np.inf
        u[x0[i]] = rng.normal()
    return PairwiseMRF(card, unary, edges, tables)


def forbidden_column_chain():
    """A chain of 8 four-state variables whose edge 3 forbids x_4 = 0 (a whole -inf
    column): loopy BP's fixed point there gives a "bound" below log Z."""
    rng = np.random.default_rng(0)
    n = 8
    pw = [rng.normal(size=(4, 4)) for _ in range(n - 1)]
    pw[3][:, 0] = -np.inf
    return PairwiseMRF([4] * n, [rng.normal(size=4) for _ in range(n)],
                       [(i, i + 1) for i in range(n - 1)], pw)
