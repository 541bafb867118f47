"""Small random models for the tests of formats, sampling, queries and marginal MAP,
and brute-force answers on them."""
import itertools

import numpy as np

import fwcore
from fwcore.bayes import bayes_form
from fwcore.factor_graph import model_from_factors

__all__ = ["random_network", "evidence_cases", "random_factor_graph", "brute_joint"]


def random_network(n, seed, max_parents=3, max_card=4):
    """A Bayesian network of ``n`` variables (random DAG, cards 2..max_card, Dirichlet
    CPTs with some zeros), variables named and declared in a shuffled order."""
    rng = np.random.default_rng(seed)
    card = rng.integers(2, max_card + 1, size=n)
    factors = []
    for v in range(n):
        parents = sorted(rng.choice(v, size=min(v, int(rng.integers(0, max_parents + 1))),
                                    replace=False).tolist()) if v else []
        cpt = rng.dirichlet(np.full(card[v], 0.7), size=int(np.prod(card[parents]))).reshape(
            [*card[parents], card[v]])
        cpt[cpt < 0.02] = 0.0
        cpt /= cpt.sum(axis=-1, keepdims=True)
        with np.errstate(divide="ignore"):
            factors.append(((*parents, v), np.log(cpt)))
    perm = rng.permutation(n)  # variable v is declared at position perm[v]
    names = [f"V{perm[v]}" for v in range(n)]
    states = [[f"{names[v]}_{k}" for k in range(card[v])] for v in range(n)]
    return fwcore.factor_graph.model_from_factors(card, factors, names, states)


def evidence_cases(model, seed, count=4):
    """A few evidence dicts by name and state name, drawn from the network (so each has
    a positive probability): ancestral samples of its `bayes_form`."""
    rng = np.random.default_rng(seed)
    form = bayes_form(model)
    cases = []
    for _ in range(count):
        x = np.zeros(model.n_vars, dtype=int)
        for v in form.order:
            x[v] = rng.choice(model.card[v], p=form.cpts[v][tuple(x[list(form.parents[v])])])
        chosen = rng.choice(model.n_vars, size=min(3, model.n_vars), replace=False)
        cases.append({model.names[v]: model.states[v][x[v]] for v in chosen})
    return cases


def random_factor_graph(seed, n=7, max_card=3, n_factors=6, arity=3, p_neg_inf=0.05,
                        scale=1.0):
    """A FactorGraph of random factors (arity up to ``arity``) with some -inf entries,
    feasible (the all-zero state keeps finite entries)."""
    rng = np.random.default_rng(seed)
    card = rng.integers(2, max_card + 1, size=n)
    factors = [((v,), scale * rng.normal(size=card[v])) for v in range(n)]
    for _ in range(n_factors):
        scope = tuple(rng.choice(n, size=int(rng.integers(2, arity + 1)), replace=False))
        table = scale * rng.normal(size=card[list(scope)])
        table[rng.random(table.shape) < p_neg_inf] = -np.inf
        table[(0,) * len(scope)] = 0.0
        factors.append((scope, table))
    return model_from_factors(card, factors)


def brute_joint(model):
    """(every joint state (m, n), its probability (m,)) of ``model`` by enumeration."""
    x = np.array(list(itertools.product(*[range(int(c)) for c in model.card])), dtype=np.int64)
    if isinstance(model, fwcore.FactorGraph):
        s = np.zeros(len(x))
        for scope, table in model.factors:
            s += table[tuple(x[:, list(scope)].T)]
    else:
        s = model.score(x)
    p = np.exp(s - s.max())
    return x, p / p.sum()
