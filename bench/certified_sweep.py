"""Certified answers against brute force (issue 28): random small models with −inf
structure × every entry point and oracle that claims ``certified`` or ``converged``.

    python bench/certified_sweep.py [--models 1000] [--seed 0] [--calls NAME,...]
                                    [--workers 1] [--examples 3]

Model i depends only on (seed, i): a forest, a cycle, a random graph (pairwise, 2-8
variables of 2-4 states, binary in 1 of 4) or a factor graph (3-7 variables, one or two
factors of arity 3 or 4 beside unaries and edges), with −inf rows, columns, scattered
entries and −inf
unaries; 4 in 5 are planted feasible, the rest as drawn (some infeasible). References by
enumeration of every joint state: log Z, the maximum score and the node marginals; and
the local-polytope LP value (HiGHS) for the MAP LP solvers.

A call's answer is wrong (one count per kind) when it has
- ``below``: a certified upper bound below log Z (a MAP bound: below the maximum; an LP
  dual bound: also below the LP value), or an exact answer that is not the reference;
- ``above``: a lower bound above log Z, a score above the maximum, or a score that is
  not its assignment's (on the user's variables);
- ``converged``: status ``converged`` but not optimal within its tolerance (MAP: the
  maximum to 1e-6 relative; exact and weighted mini-bucket: log Z; Barrier FW: a certified
  gap at most its tol; the LP solvers: a proven MAP, or a bound within 0.1% (plus the
  smoothing width) of the LP value; loopy BP on a forest: log Z and the marginals);
- ``nan``: a NaN in any field of the result, its marginals or its trace;
- ``negative gap``: a gap below −1e-9 (relative);
- ``marginals``: node marginals that are not distributions (negative, or not summing to
  1 within 1e-6);
- ``infeasible``: on a model without a feasible assignment, an answer that claims a
  finite score or lower bound, or ``converged``, instead of the ValueError all entry
  points give (`fwcore.checks.INFEASIBLE`);
- ``-inf score``: on a feasible model, a decoded labelling that scores −inf (no broken
  promise, but a labelling arc consistency would have found).
Any other exception is an ``error``. Prints one row per call and examples of each kind;
exits 1 when anything was found.
"""
import argparse
import functools
import itertools
import math
import sys
import time
import traceback
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor

import numpy as np

KINDS = ("below", "above", "converged", "nan", "negative gap", "marginals", "infeasible",
         "-inf score", "error")
INF = np.inf
#: slack of every comparison with a reference: 1e-7 relative to max(1, |reference|)
SLACK = 1e-7


# -- models ---------------------------------------------------------------------------------

def _hit(rng, table, keep):
    """−inf on a row, a column or scattered entries of ``table``; ``keep`` (a planted
    joint state, or None) stays finite."""
    table, r = table.copy(), rng.random()
    if r < 0.3 and table.ndim == 2:
        table[int(rng.integers(table.shape[0])), :] = -INF
    elif r < 0.6 and table.ndim == 2:
        table[:, int(rng.integers(table.shape[1]))] = -INF
    else:
        table[rng.random(table.shape) < rng.choice([0.15, 0.3, 0.5])] = -INF
    if keep is not None:
        table[keep] = rng.normal()
    return table


def random_model(seed, i):
    """Model ``i`` of the sweep (module docstring): (kind, model)."""
    import fwcore
    rng = np.random.default_rng([seed, i])
    kind = ("forest", "cycle", "random", "factor")[i % 4]
    n = int(rng.integers(3 if kind == "factor" else 2, 8 if kind == "factor" else 9))
    card = rng.integers(2, 5, n) if rng.random() < 0.75 else np.full(n, 2)
    while np.prod(card.astype(float)) > 2**14:
        card[int(np.argmax(card))] -= 1
    planted = rng.integers(card) if rng.random() < 0.8 else None

    def keep(scope):
        return None if planted is None else tuple(int(planted[v]) for v in scope)

    if kind == "forest":
        edges = [(int(rng.integers(0, j)), j) for j in range(1, n) if rng.random() < 0.85]
    elif kind == "cycle":
        edges = [(k, (k + 1) % n) for k in range(n)] if n > 2 else [(0, 1)]
    else:
        edges = [(a, b) for a in range(n) for b in range(a + 1, n) if rng.random() < 0.5]
    unary = [_hit(rng, rng.normal(size=c), keep((v,))) if rng.random() < 0.25
             else rng.normal(size=c) for v, c in enumerate(card)]
    pair = [_hit(rng, rng.normal(0, 1.5, (card[a], card[b])), keep((a, b)))
            if rng.random() < 0.7 else rng.normal(0, 1.5, (card[a], card[b]))
            for a, b in edges]
    if kind != "factor":
        return kind, fwcore.PairwiseMRF(card, unary, edges, pair)
    factors = [((v,), u) for v, u in enumerate(unary)] + list(zip(edges, pair))
    for _ in range(int(rng.integers(1, 3))):
        arity = int(rng.integers(3, min(4, n) + 1))
        scope = tuple(int(v) for v in rng.choice(n, arity, replace=False))
        table = rng.normal(size=tuple(int(card[v]) for v in scope))
        factors.append((scope, _hit(rng, table, keep(scope))))
    return kind, fwcore.FactorGraph(card, factors)


def references(model):
    """Enumeration: {log_z, best, node (marginals), feasible, forest, lp (LP value of the
    pairwise model or reduction)}."""
    import fwcore
    from scipy.special import logsumexp
    states = np.array(list(itertools.product(*[range(int(c)) for c in model.card])))
    if isinstance(model, fwcore.FactorGraph):
        scores = np.array([model.score(x) for x in states])
        pairwise = model.reduced
    else:
        scores = model.score(states)
        pairwise = model
    feasible = bool(np.isfinite(scores).any())
    ref = dict(feasible=feasible, log_z=-INF, best=-INF, node=None, lp=None,
               forest=pairwise.n_edges == pairwise.n_vars - pairwise.n_components(),
               binary=bool((pairwise.card == 2).all()))
    if feasible:
        log_z = float(logsumexp(scores))
        p = np.exp(scores - log_z)
        ref.update(log_z=log_z, best=float(scores.max()),
                   node=[np.bincount(states[:, v], p, int(c)) for v, c in enumerate(model.card)])
        lp = fwcore.oracles.lp.LocalPolytopeLP(pairwise)
        lp.argmax_marginals(pairwise.theta)
        ref["lp"] = lp.upper_bound()
    return ref


# -- the calls --------------------------------------------------------------------------

def _calls():
    """name -> (function of a model, what its answer claims: "logz", "map", "lp"), and the
    conditions (on the references) under which it applies."""
    import fwcore
    from fwcore.marginals.condition import choose_conditioning

    def infer_wmb_bound(m, max_time=None):
        return fwcore.weighted_mini_bucket(m, ibound=1, max_iter=20, max_time=max_time)

    calls = {
        "infer": (lambda m: fwcore.infer(m, seed=0), "logz"),
        "infer barrier-fw": (lambda m: fwcore.barrier_fw(m, seed=0), "logz"),
        "infer oracle=exact": (lambda m: fwcore.barrier_fw(m, oracle="exact", seed=0), "logz"),
        "infer oracle=trws": (lambda m: fwcore.barrier_fw(m, oracle="trws", seed=0), "logz"),
        "infer oracle=icm": (lambda m: fwcore.barrier_fw(m, oracle="icm", seed=0), "logz"),
        "infer domain=local": (lambda m: fwcore.barrier_fw(m, domain="local", seed=0), "logz"),
        "infer approximate": (lambda m: fwcore.infer(m, method="approximate"), "logz"),
        "wmb ibound=1": (lambda m: fwcore.weighted_mini_bucket(m, ibound=1), "logz"),
        "trbp": (lambda m: fwcore.trbp(m), "logz"),
        "loopy_bp": (lambda m: fwcore.loopy_bp(m), "logz"),
        "exact_inference": (lambda m: fwcore.exact_inference(m), "logz"),
        "exact_inference bruteforce": (
            lambda m: fwcore.exact_inference(m, method="bruteforce"), "logz"),
        "exact_inference elimination": (
            lambda m: fwcore.exact_inference(m, method="elimination"), "logz"),
        "mean_field": (lambda m: fwcore.mean_field_lower_bound(m), "logz"),
        "conditioned k=1 wmb": (
            lambda m: fwcore.conditioned(m, infer_wmb_bound, choose_conditioning(m, 1)),
            "logz"),
        "conditioned k=2 barrier-fw": (
            lambda m: fwcore.conditioned(
                m, lambda b, max_time=None: fwcore.barrier_fw(b, seed=0),
                choose_conditioning(m, min(2, m.card.shape[0]))), "logz"),
        "conditioned_anytime": (
            lambda m: fwcore.conditioned_anytime(m, infer_wmb_bound, 0.3), "logz"),
        "perturb_and_map": (lambda m: fwcore.perturb_and_map(m, n_samples=3, inflation=1,
                                                             seed=0), "logz"),
        "exact_map": (lambda m: fwcore.exact_map(m), "map"),
    }
    for name, available in fwcore.available_oracles().items():
        if available:
            calls[f"infer_map {name}"] = (
                functools.partial(fwcore.infer_map, method=name, seed=0), "map")
    calls["infer_map auto"] = (functools.partial(fwcore.infer_map, seed=0), "map")
    calls["infer_map portfolio timed"] = (
        functools.partial(fwcore.infer_map, method="portfolio", time_limit=0.2, seed=0), "map")
    for method in fwcore.lp_relax.api.METHODS:
        calls[f"infer_lp {method}"] = (
            functools.partial(fwcore.infer_lp, method=method, max_iter=300), "lp")
    return calls


def _applies(name, ref):
    """Oracles that refuse a model by design (documented ValueErrors) are not called."""
    if name in ("infer_map qpbo", "infer_map cover"):
        return ref["binary"]
    if name == "infer_map tree":
        return ref["forest"]
    return True


# -- checks ------------------------------------------------------------------------------

def _floats(value):
    """Every float inside ``value`` (numbers, arrays, lists and tuples of them)."""
    if isinstance(value, (float, np.floating)):
        yield float(value)
    elif isinstance(value, np.ndarray) and value.dtype.kind == "f":
        yield from value.ravel().tolist()
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _floats(v)


def _has_nan(res):
    for name in res.__dataclass_fields__:
        value = getattr(res, name)
        if name == "trace":
            for record in value:
                if any(math.isnan(v) for f in record.__dataclass_fields__
                       for v in _floats(getattr(record, f))):
                    return True
        elif any(math.isnan(v) for v in _floats(value)):
            return True
    return False


def _tol(x):
    return SLACK * max(1.0, abs(x)) if np.isfinite(x) else 0.0


def check(name, claim, res, model, ref):
    """The kinds of wrong (module docstring) of one answer, with a line each."""
    import fwcore
    wrong = {}
    if _has_nan(res):
        wrong["nan"] = "a NaN"
    gap = getattr(res, "gap", None)
    if gap is not None and np.isfinite(gap) and gap < -1e-9 * max(1.0, abs(gap)):
        wrong["negative gap"] = f"gap {gap:.6g}"
    nodes = getattr(res, "node_marginals", None)
    if nodes is not None and not all((p >= 0.0).all() and abs(p.sum() - 1.0) <= 1e-6
                                     for p in map(np.asarray, nodes)):
        wrong["marginals"] = "node marginals that are not distributions"
    converged = res.status is fwcore.Status.CONVERGED
    if not ref["feasible"]:
        finite = [v for v in (getattr(res, "score", None), getattr(res, "log_z_lower", None),
                              getattr(res, "log_z", None)) if v is not None and np.isfinite(v)]
        if finite or converged:
            wrong["infeasible"] = f"status {res.status.value}, finite claims {finite}"
        return wrong
    log_z, best = ref["log_z"], ref["best"]
    if claim == "logz":
        upper = getattr(res, "log_z_upper", None)
        if res.certified and upper is not None and upper < log_z - _tol(log_z):
            wrong["below"] = f"certified log_z_upper {upper:.9g} < log Z {log_z:.9g}"
        lower = getattr(res, "log_z_lower", None)
        if lower is not None and lower > log_z + _tol(log_z):
            wrong["above"] = f"log_z_lower {lower:.9g} > log Z {log_z:.9g}"
        exact = name.startswith("exact_inference") or res.method.startswith("exact")
        if exact and not (abs(upper - log_z) <= _tol(log_z) and _marginals_match(res, ref)):
            wrong["below"] = f"exact answer {upper:.9g}, log Z {log_z:.9g}"
        if converged:
            problem = _not_optimal(name, res, ref)
            if problem:
                wrong["converged"] = problem
    else:
        score, bound = res.score, res.upper_bound
        user = model.score(res.assignment)
        if score == -INF:
            wrong["-inf score"] = "a labelling of score -inf"
        if not (score == user or abs(score - user) <= _tol(user)) or score > best + _tol(best):
            wrong["above"] = f"score {score:.9g} (assignment's {user:.9g}), max {best:.9g}"
        if bound is not None and bound < best - _tol(best):
            wrong["below"] = f"bound {bound:.9g} < max {best:.9g}"
        if (claim == "lp" and bound is not None
                and bound < ref["lp"] - 1e-6 * max(1.0, abs(ref["lp"]))):
            wrong["below"] = f"dual bound {bound:.9g} < LP value {ref['lp']:.9g}"
        if converged:
            proven = score >= best - 1e-6 * max(1.0, abs(best))
            if claim == "lp" and not proven:
                width = res.info.get("smoothing_width") or 0.0
                proven = (bound is not None and
                          bound <= ref["lp"] + width + 1e-3 * max(1.0, abs(ref["lp"])))
            if not proven:
                wrong["converged"] = (f"converged at score {score:.9g}, bound {bound}, "
                                      f"max {best:.9g}, LP {ref['lp']:.9g}")
    return wrong


def _marginals_match(res, ref, atol=1e-6):
    return all(np.allclose(a, b, atol=atol) for a, b in zip(res.node_marginals, ref["node"]))


def _not_optimal(name, res, ref):
    """Why a ``converged`` log Z answer is not optimal within its tolerance (None: it is)."""
    log_z = ref["log_z"]
    method = res.method
    if method.startswith("barrier-fw"):
        cg = res.certified_gap
        if cg is None or not np.isfinite(cg) or cg > 0.01 + 1e-9:
            return f"converged with certified gap {cg}"
    elif method.startswith("wmb") or name.startswith("wmb") or "approximate" in name:
        if (res.log_z_upper - log_z > 1e-6 + _tol(log_z) or
                log_z - res.log_z_lower > 1e-6 + _tol(log_z)):
            return (f"converged at [{res.log_z_lower:.9g}, {res.log_z_upper:.9g}], "
                    f"log Z {log_z:.9g}")
    elif name == "mean_field":
        if abs(res.log_z_lower - log_z) > _tol(log_z):
            return f"converged at {res.log_z_lower:.9g}, log Z {log_z:.9g}"
    elif name == "loopy_bp" and ref["forest"]:
        if abs(res.log_z_upper - log_z) > 1e-6 or not _marginals_match(res, ref, 1e-5):
            return f"converged on a forest at {res.log_z_upper:.9g}, log Z {log_z:.9g}"
    return None


# -- the sweep -----------------------------------------------------------------------------

def run_model(seed, i, names):
    """(model kind, feasible, {call: (kinds wrong: lines)}) of model i."""
    from fwcore.checks import INFEASIBLE
    kind, model = random_model(seed, i)
    ref = references(model)
    calls = _calls()
    out = {}
    for name in names:
        run, claim = calls[name]
        if not _applies(name, ref):
            continue
        try:
            res = run(model)
        except ValueError as err:
            if not ref["feasible"] and str(err) == INFEASIBLE:
                out[name] = {}
            else:
                out[name] = {"error": f"ValueError: {err}"}
            continue
        except Exception as err:  # noqa: BLE001 - every other exception is counted
            line = traceback.format_exception_only(type(err), err)[-1].strip()
            out[name] = {"error": line}
            continue
        out[name] = check(name, claim, res, model, ref)
    return kind, ref["feasible"], out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--calls", default=None, help="comma-separated call names (default all)")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--examples", type=int, default=3)
    args = p.parse_args(argv)
    names = list(_calls()) if args.calls is None else args.calls.split(",")
    unknown = set(names) - set(_calls())
    if unknown:
        p.error(f"unknown calls {sorted(unknown)}; known: {', '.join(_calls())}")
    t0 = time.perf_counter()
    job = functools.partial(run_model, args.seed, names=names)
    results = []
    with ProcessPoolExecutor(args.workers) as pool:
        for result in pool.map(job, range(args.models), chunksize=4):
            results.append(result)
            if len(results) % 50 == 0:
                print(f"{len(results)} models, {time.perf_counter() - t0:.0f} s",
                      file=sys.stderr, flush=True)
    kinds = Counter((kind, feasible) for kind, feasible, _ in results)
    print(f"{args.models} models (seed {args.seed}) in {time.perf_counter() - t0:.0f} s: "
          + ", ".join(f"{k} {'feasible' if f else 'infeasible'} {c}"
                      for (k, f), c in sorted(kinds.items())))
    cases, counts, examples = Counter(), defaultdict(Counter), defaultdict(list)
    for i, (_, _, out) in enumerate(results):
        for name, wrong in out.items():
            cases[name] += 1
            for kind, line in wrong.items():
                counts[name][kind] += 1
                if len(examples[name, kind]) < args.examples:
                    examples[name, kind].append(f"model {i}: {line}")
    width = max(map(len, names))
    print(f"{'call':{width}}  {'cases':>5}  " + "  ".join(f"{k:>10}" for k in KINDS))
    for name in names:
        print(f"{name:{width}}  {cases[name]:5d}  "
              + "  ".join(f"{counts[name][k]:10d}" for k in KINDS))
    total = sum(sum(c.values()) for c in counts.values())
    print(f"total: {sum(cases.values())} cases, {total} wrong or failed")
    for (name, kind), lines in sorted(examples.items()):
        print(f"\n{name} / {kind}:")
        for line in lines:
            print(f"  {line}")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
