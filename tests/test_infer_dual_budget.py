"""With max_time, `fwcore.infer`'s final tree-decomposition bound runs as long again as the
run before it (at least a second), not for the rest of a generous max_time (issue 30)."""
import time

import fwcore
from fwcore.marginals import barrier_fw


def test_final_bound_takes_a_bounded_share_of_max_time(monkeypatch):
    calls = []
    dual_bound = barrier_fw.trw_dual_bound

    def recorded(*args, deadline=None, **kwargs):
        calls.append((time.monotonic(), deadline.seconds_left()))
        return dual_bound(*args, deadline=deadline, **kwargs)

    monkeypatch.setattr(barrier_fw, "trw_dual_bound", recorded)
    start = time.monotonic()
    res = fwcore.barrier_fw(fwcore.random_grid(12, coupling=1.0, seed=0), oracle="icm",
                            max_iter=5, rho_updates=1, max_time=600.0, seed=0)
    (called, left), = calls
    assert left <= max(barrier_fw._DUAL_BOUND_SECONDS, called - start) + 1e-6
    assert res.certified and res.time < 60.0
