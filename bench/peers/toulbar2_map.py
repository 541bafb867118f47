"""toulbar2's MAP on a factor graph, for bench/map_search.py (run by a Python that has
pytoulbar2, in a benchmark-only venv: see ../shared/PEERS.md).

    python toulbar2_map.py PROBLEM.npz SECONDS [--no-elimination]

PROBLEM.npz holds ``card`` (int), the factors' scopes in CSR (``scope_start``,
``scope_var``) and their log-potential tables end to end (``table_start``, ``tables``;
row-major over the scope, -inf for impossible entries). Each factor becomes a cost
function max(θ_f) − θ_f (forbidden: toulbar2's Top) at 6 decimals; toulbar2 prints each
solution as it finds it ("New solution: ..." then the values on the next line) and
"Optimum: ..." when it proves one, so that a caller who kills it at a wall-clock budget
(toulbar2's own limit counts CPU seconds after its preprocessing) has its best so far.
``--no-elimination`` turns off toulbar2's variable elimination (its preprocessing crashed,
signal 11, on uai2014-higher-order/Pedigree_11 with its evidence).
"""
import math
import sys

import numpy as np
import pytoulbar2


def main(path, seconds, eliminate=True):
    data = np.load(path)
    card = data["card"]
    cfn = pytoulbar2.CFN(resolution=6, verbose=0)
    if not eliminate:
        cfn.Option.elimDegree = cfn.Option.elimDegree_preprocessing = -1
    for i, c in enumerate(card):
        cfn.AddVariable(f"x{i}", list(range(int(c))))
    start, var = data["scope_start"], data["scope_var"]
    t_start, tables = data["table_start"], data["tables"]
    for k in range(start.size - 1):
        scope = var[start[k]:start[k + 1]].tolist()
        table = tables[t_start[k]:t_start[k + 1]]
        finite = np.isfinite(table)
        top = table[finite].max() if finite.any() else 0.0
        costs = np.where(finite, top - np.where(finite, table, 0.0), np.inf)
        cfn.AddFunction(scope, [cfn.Top if c == np.inf else float(c) for c in costs])
    sys.stdout.flush()
    cfn.Solve(showSolutions=1, timeLimit=max(1, math.ceil(seconds)))
    sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]), "--no-elimination" not in sys.argv[3:])
