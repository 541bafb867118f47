"""Wrong answers the extended certified sweep found (issue 41's acceptance run,
bench/certified_sweep.py), one reproducer each, deterministic."""
import numpy as np

import fwcore
from fwcore.marginals import wmb
from fwcore.views import flat_factors


def test_the_lower_weights_of_a_tree_without_clusters():
    """Sweep model 54 (seed 0), conditioned by WMB with max_time 0.0024 s: a branch whose
    variables are all in no factor left a tree of no cluster, and the lower bound's
    weights (`WeightedMiniBucket.make_lower`) indexed its first bucket: IndexError."""
    model = fwcore.FactorGraph([1, 2, 3], [])
    flat = flat_factors(model)
    fixed = np.full(model.n_vars, -1, dtype=np.int32)
    order = np.arange(model.n_vars, dtype=np.int64)
    w = wmb.WeightedMiniBucket(wmb.MiniBuckets(flat, fixed, order, 2**10))
    w.make_lower()
    assert w.forward(1.0) == np.log(6.0)
