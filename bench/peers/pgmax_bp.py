"""fwcore vs PGMax (JAX loopy BP) on the same models, in one run.

PGMax is a benchmark-only peer; it needs its own virtual environment (current JAX breaks
it), with fwcore installed there too:

    python3 -m venv /tmp/pgmax-venv
    /tmp/pgmax-venv/bin/pip install --no-deps pgmax
    /tmp/pgmax-venv/bin/pip install "jax==0.4.30" "jaxlib==0.4.30"
    /tmp/pgmax-venv/bin/pip install scipy numba tqdm typing-extensions
    /tmp/pgmax-venv/bin/pip install .
    OPENBLAS_NUM_THREADS=1 /tmp/pgmax-venv/bin/python bench/peers/pgmax_bp.py

Prints, per model: seconds and zeta_mu (mean |P(x_i=1) - exact|, where an exact answer
exists) for PGMax loopy BP (1000 iterations, damping 0.5, as fwcore's loopy_bp), fwcore's
loopy BP, TRBP, and Barrier FW (exact oracle where tractable, TRW-S otherwise). Seconds
are the median of 3 runs (PGMax's first, compiling run excluded).

    python bench/peers/pgmax_bp.py --per-iteration SIDE ITERATIONS

prints instead, as JSON, PGMax's wall and CPU seconds per iteration of loopy BP on
``fwcore.random_grid(SIDE, seed=0)`` (medians of 3 runs of ITERATIONS iterations; CPU of
every thread): what bench/benchmarks/speed.py's `LoopyBPPeer` reads.
"""
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import fwcore

INSTANCES = Path(os.environ.get("FWCORE_INSTANCES",
                                Path(__file__).resolve().parents[3] / "shared" / "instances"))


def pgmax_loopy_bp(model, num_iters=1000, damping=0.5):
    """Node marginals from PGMax's loopy sum-product BP on a binary pairwise model."""
    from pgmax import fgraph, fgroup, infer, vgroup
    if (model.card != 2).any():
        raise ValueError("this comparison uses binary models")
    variables = vgroup.NDVarArray(num_states=2, shape=(model.n_vars,))
    graph = fgraph.FactorGraph(variable_groups=[variables])
    tables = np.stack([model.pairwise(e) for e in range(model.n_edges)])
    graph.add_factors(fgroup.PairwiseFactorGroup(
        variables_for_factors=[[variables[int(i)], variables[int(j)]] for i, j in model.edges],
        log_potential_matrix=tables))
    unary = np.stack([model.unary(i) for i in range(model.n_vars)])
    bp = infer.build_inferer(graph.bp_state, backend="bp")

    def run():
        arrays = bp.init(evidence_updates={variables: unary})
        arrays = bp.run(arrays, num_iters=num_iters, damping=damping, temperature=1.0)
        marg = infer.get_marginals(bp.get_beliefs(arrays))[variables]
        return np.asarray(marg)

    run()  # compile
    return run


def timed(fn, repeats=3):
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return out, statistics.median(times)


def zeta(p1, exact):
    return float("nan") if exact is None else float(np.mean(np.abs(p1 - exact)))


def per_iteration(side, iterations):
    """{"wall": s, "cpu": s} per iteration of PGMax loopy BP on random_grid(side, seed=0),
    timed as bench/benchmarks/speed.py times fwcore's."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from benchmarks.speed import per_iteration as timed
    wall, cpu = timed(pgmax_loopy_bp(fwcore.random_grid(side, seed=0), num_iters=iterations),
                      iterations)
    return {"wall": wall, "cpu": cpu}


def main():
    if sys.argv[1:2] == ["--per-iteration"]:
        print(json.dumps(per_iteration(int(sys.argv[2]), int(sys.argv[3]))))
        return 0
    models = []
    grid10 = INSTANCES / "fw-inference" / "grid10x10" / "gridWi10Tr1.uai"
    for path in [grid10, INSTANCES / "uai2014" / "Segmentation_11.uai",
                 INSTANCES / "uai2014" / "Grids_12.uai"]:
        if path.exists():
            mar = fwcore.read_mar(f"{path}.MAR")
            models.append((path.stem, fwcore.read_uai(path), np.array([m[1] for m in mar]),
                           "exact"))
    models.append(("random_grid(100)", fwcore.random_grid(100, seed=0), None, "trws"))
    print(f"{'model':<18}{'method':<26}{'seconds':>9}{'zeta_mu':>9}")
    for name, model, exact, oracle in models:
        runs = {
            "pgmax loopy BP": pgmax_loopy_bp(model),
            "fwcore loopy_bp": lambda: np.array(
                [p[1] for p in fwcore.loopy_bp(model).node_marginals]),
            "fwcore trbp": lambda: np.array([p[1] for p in fwcore.trbp(model).node_marginals]),
            f"fwcore infer ({oracle})": lambda: np.array(
                [p[1] for p in
                 fwcore.barrier_fw(model, oracle=oracle, max_time=600).node_marginals]),
        }
        for method, fn in runs.items():
            p1, seconds = timed(fn, repeats=1 if "infer" in method or "trbp" in method else 3)
            if method == "pgmax loopy BP":
                p1 = p1[:, 1]
            print(f"{name:<18}{method:<26}{seconds:>9.3f}{zeta(p1, exact):>9.4f}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
