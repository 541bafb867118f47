"""Executors on a dask.distributed cluster (the 'dask' extra): `Client.get_executor()` is
a `concurrent.futures.Executor`, and runs on it give the serial results. Skips when
dask.distributed is not installed."""
import numpy as np
import pytest

import fwcore
from fwcore.learn import CRF, MLEStruct
from fwcore.learn.datasets import synthetic_segmentation

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def executor():
    # one in-process worker with two threads: no process start-up, no dashboard
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            yield client.get_executor()


def test_infer_many_on_a_local_cluster_equals_serial(executor):
    models = [fwcore.random_clique(6, coupling=2.0, seed=s) for s in range(3)]
    kw = dict(method="barrier-fw", rho_updates=2, seed=0)
    serial = fwcore.infer_many(models, **kw)
    for a, b in zip(serial, fwcore.infer_many(models, executor=executor, **kw)):
        np.testing.assert_array_equal(a.mu, b.mu)
        assert a.log_z_upper == b.log_z_upper
    with pytest.raises(ValueError, match="oracle"):  # a worker's error reaches the caller
        fwcore.infer_many(models, executor=executor, method="barrier-fw",
                         oracle="no-such-oracle")


def test_learner_on_a_local_cluster_equals_serial(executor):
    X, Y = synthetic_segmentation(4, size=5, seed=0)
    serial = MLEStruct(model=CRF(oracle="qpbo"), max_iter=3, method="bcfw").fit(X, Y)
    par = MLEStruct(model=CRF(oracle="qpbo"), max_iter=3, method="bcfw",
                    executor=executor).fit(X, Y)
    np.testing.assert_array_equal(serial.coef_, par.coef_)
    assert serial.gap_ == par.gap_


def test_highs_oracles_run_in_a_daemonic_dask_worker_process():
    # a process worker is daemonic and may start no process: the HiGHS call, forked for
    # Ctrl-C elsewhere (LPs above 20,000 nonzeros: a 45x45 grid), runs in the worker itself
    X, Y = synthetic_segmentation(2, size=45, seed=0)
    serial = MLEStruct(model=CRF(oracle="lp"), max_iter=2, method="fw").fit(X, Y)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            par = MLEStruct(model=CRF(oracle="lp"), max_iter=2, method="fw",
                            executor=client.get_executor()).fit(X, Y)
    np.testing.assert_allclose(serial.coef_, par.coef_, rtol=1e-9, atol=1e-12)
