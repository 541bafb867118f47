"""Held-out MAP models of the shared families (issue 37), made by seeded generators of our
own, so that the MAP default is measured on models it was not tuned on:

    python bench/map_heldout.py OUT                    # 2 linkage-like, 2 grid-like models
    python bench/map_heldout.py OUT --seeds 7,8 --people 50 --loci 6
    python bench/map_search.py OUT --budgets 10,60     # then as the shared models

- ``linkage-SEED``: a genetic linkage network in the form of the linkage_* / Pedigree_*
  models (a Bayesian network written as CPTs, with evidence; Fishelson & Geiger's
  superlink encoding): a random pedigree (founders, then children of two earlier people),
  per person and locus a paternal and a maternal allele, per child and locus two
  selector variables (which parental allele it inherits, deterministic CPTs: zeros),
  selectors of neighbouring loci tied by a recombination fraction, per person and locus
  a phenotype: the unordered genotype at the marker loci (deterministic), affected or not
  with a penetrance at the disease locus. Evidence: the phenotypes of most people, drawn
  from a simulation of the same network, so it is consistent.
- ``gridcsp-SEED``: a grid-like weighted CSP: a square grid of variables of a few
  states, a factor over every 2x2 square with random log-potentials and a share of
  forbidden (-inf) entries, unaries, and evidence on a few variables; a planted labelling
  keeps it feasible.

Each model is written as ``OUT/NAME.uai`` with ``OUT/NAME.uai.evid``.
"""
import argparse
from pathlib import Path

import numpy as np

from fwcore.factor_graph import FactorGraph
from fwcore.io.uai import write_evid, write_uai


def linkage(seed, people=40, loci=5, founders=0.3, alleles=(2, 4), observed=0.7):
    """A linkage-like network and its evidence: (FactorGraph, {variable: state})."""
    rng = np.random.default_rng(seed)
    n_found = max(2, int(founders * people))
    parents = [None] * n_found + [tuple(int(p) for p in rng.choice(k, 2, replace=False))
                                  for k in range(n_found, people)]
    n_alleles = [2] + [int(rng.integers(alleles[0], alleles[1] + 1)) for _ in range(loci - 1)]
    card, factors, truth = [], [], []

    def var(c, value):
        card.append(c)
        truth.append(int(value))
        return len(card) - 1

    def log(table):
        with np.errstate(divide="ignore"):
            return np.log(table)

    theta = rng.uniform(0.01, 0.3, size=loci - 1)   # recombination between neighbours
    penetrance = np.sort(rng.uniform(0.05, 0.95, size=3))
    evidence = {}
    allele = {}
    for k in range(people):
        sel_prev = None
        for lo in range(loci):
            a = n_alleles[lo]
            if parents[k] is None:
                freq = rng.dirichlet(np.ones(a))
                for side in (0, 1):
                    v = var(a, rng.choice(a, p=freq))
                    allele[k, lo, side] = v
                    factors.append(((v,), log(freq)))
            else:
                sel = []
                for side in (0, 1):  # side 0: from the father, 1: from the mother
                    parent = parents[k][side]
                    if sel_prev is None:
                        s = var(2, rng.integers(2))
                        factors.append(((s,), log(np.full(2, 0.5))))
                    else:
                        t = theta[lo - 1]
                        s = var(2, truth[sel_prev[side]] ^ int(rng.random() < t))
                        factors.append(((sel_prev[side], s), log(np.array([[1 - t, t],
                                                                           [t, 1 - t]]))))
                    sel.append(s)
                    pa, ma = allele[parent, lo, 0], allele[parent, lo, 1]
                    v = var(a, truth[ma] if truth[s] else truth[pa])
                    allele[k, lo, side] = v
                    cpt = np.zeros((a, a, 2, a))
                    idx = np.arange(a)
                    cpt[idx, :, 0, idx] = 1.0
                    cpt[:, idx, 1, idx] = 1.0
                    factors.append(((pa, ma, s, v), log(cpt)))
                sel_prev = sel
            pa, ma = allele[k, lo, 0], allele[k, lo, 1]
            if lo == 0:  # the disease locus: affected with a penetrance by genotype
                p = penetrance[truth[pa] + truth[ma]]
                ph = var(2, rng.random() < p)
                table = np.empty((2, 2, 2))
                for x in range(2):
                    for y in range(2):
                        table[x, y] = [1 - penetrance[x + y], penetrance[x + y]]
            else:        # a marker: the unordered genotype
                i, j = np.triu_indices(a)
                code = np.zeros((a, a), dtype=int)
                code[i, j] = code[j, i] = np.arange(i.size)
                ph = var(i.size, code[truth[pa], truth[ma]])
                table = np.zeros((a, a, i.size))
                table[np.arange(a)[:, None], np.arange(a)[None, :], code] = 1.0
            factors.append(((pa, ma, ph), log(table)))
            if rng.random() < observed:
                evidence[ph] = truth[ph]
    return FactorGraph(np.array(card), factors), evidence


def grid_csp(seed, side=14, states=3, forbidden=0.3, observed=0.05):
    """A grid-like weighted CSP and its evidence: (FactorGraph, {variable: state})."""
    rng = np.random.default_rng(seed)
    n = side * side
    planted = rng.integers(states, size=n)
    factors = [((v,), rng.normal(size=states)) for v in range(n)]
    for r in range(side - 1):
        for c in range(side - 1):
            scope = (r * side + c, r * side + c + 1, (r + 1) * side + c, (r + 1) * side + c + 1)
            table = rng.normal(size=(states,) * 4)
            table[rng.random(table.shape) < forbidden] = -np.inf
            table[tuple(planted[list(scope)])] = rng.normal()
            factors.append((scope, table))
    shown = rng.choice(n, size=max(1, int(observed * n)), replace=False)
    return (FactorGraph(np.full(n, states), factors),
            {int(v): int(planted[v]) for v in shown})


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", help="folder for the .uai and .uai.evid files")
    ap.add_argument("--seeds", default="1,2", help="seeds of each family, comma-separated")
    ap.add_argument("--people", type=int, default=40)
    ap.add_argument("--loci", type=int, default=5)
    ap.add_argument("--side", type=int, default=14)
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for seed in map(int, args.seeds.split(",")):
        for name, (model, evidence) in (
                (f"linkage-{seed}", linkage(seed, args.people, args.loci)),
                (f"gridcsp-{seed}", grid_csp(seed, args.side))):
            write_uai(model, out / f"{name}.uai")
            write_evid(out / f"{name}.uai.evid", evidence)
            print(f"{name}: {len(model.card)} variables, {len(model.factors)} factors, "
                  f"{len(evidence)} observed")


if __name__ == "__main__":
    main()
