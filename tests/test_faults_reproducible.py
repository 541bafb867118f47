"""Same seed, same answer (issue 28): without max_time no decision of `fwcore.infer` reads
a clock, so repeated runs, a slow or a fast clock, and `fwcore.infer_many` on threads or
processes all give the serial answer, for every kind of oracle."""
import contextlib
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import numpy as np
import pytest

import fwcore
from fwcore.marginals.trw_dual import pass_budget, trw_dual_bound

ORACLES = ("trws", "icm", "portfolio", "exact")


def _same(a, b):
    np.testing.assert_array_equal(a.mu, b.mu)
    assert ((a.log_z_upper, a.info["primal"], a.gap, a.status, a.n_oracle_calls) ==
            (b.log_z_upper, b.info["primal"], b.gap, b.status, b.n_oracle_calls))


def _clock(step):
    """A perf_counter that advances ``step`` seconds at each read."""
    now = [0.0]

    def read():
        now[0] += step
        return now[0]
    return read


def test_ten_serial_runs_give_one_answer():
    model = fwcore.random_grid(4, coupling=1.0, seed=1)
    runs = [fwcore.barrier_fw(model, oracle="trws", seed=0, rho_updates=2) for _ in range(10)]
    assert len({r.log_z_upper for r in runs}) == 1
    for r in runs[1:]:
        _same(runs[0], r)


@pytest.mark.parametrize("oracle", ORACLES)
def test_the_answer_does_not_depend_on_the_clock(monkeypatch, oracle):
    # the reproducer: the tree-decomposition bound ran until a deadline
    model = fwcore.random_grid(5, coupling=1.0, seed=1)
    runs = []
    for step in (1e-9, 1.0):
        monkeypatch.setattr(time, "perf_counter", _clock(step))
        runs.append(fwcore.barrier_fw(model, oracle=oracle, seed=0, rho_updates=2))
    _same(*runs)


def test_the_dual_bound_stops_after_its_budget():
    model = fwcore.random_grid(8, coupling=3.0, seed=2)
    small = trw_dual_bound(model, max_passes=20)
    assert small[2] < trw_dual_bound(model, max_passes=200)[2]
    assert small[0] == trw_dual_bound(model, max_passes=20)[0]
    assert pass_budget(model) >= pass_budget(fwcore.random_grid(40, coupling=1.0, seed=1))


@contextlib.contextmanager
def _dask_executor():
    """A dask.distributed cluster's executor (one in-process worker, two threads)."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            yield client.get_executor()


@pytest.mark.parametrize("executor", [lambda: ThreadPoolExecutor(2),
                                      lambda: ProcessPoolExecutor(2), _dask_executor],
                         ids=["threads", "processes", "dask"])
def test_executors_equal_serial_for_every_oracle(executor):
    models = [fwcore.random_grid(4, coupling=1.0, seed=s) for s in range(2)]
    kw = dict(method="barrier-fw", seed=0, rho_updates=2)
    with executor() as ex:
        for o in ORACLES:
            for a, b in zip(fwcore.infer_many(models, oracle=o, **kw),
                            fwcore.infer_many(models, executor=ex, oracle=o, **kw)):
                _same(a, b)
