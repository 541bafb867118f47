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


def _sent(client, monkeypatch):
    """[(what, bytes)] pickled for each task the client is sent and each scatter."""
    import pickle
    log = []
    submit, scatter = client.submit, client.scatter

    def counted_submit(fn, *args, **kwargs):
        log.append(("submit", len(pickle.dumps(
            (fn, [a for a in args if not isinstance(a, distributed.Future)], kwargs)))))
        return submit(fn, *args, **kwargs)

    def counted_scatter(data, **kwargs):
        log.append(("scatter", len(pickle.dumps(data))))
        return scatter(data, **kwargs)

    monkeypatch.setattr(client, "submit", counted_submit)
    monkeypatch.setattr(client, "scatter", counted_scatter)
    return log


@pytest.fixture(scope="module")
def client(executor):
    return distributed.get_client()


def test_infer_many_sends_each_model_once_or_its_path(client, monkeypatch, tmp_path):
    import pickle
    models = [fwcore.random_grid(6, coupling=1.0, seed=s) for s in range(3)]
    paths = [tmp_path / f"m{k}.uai" for k in range(3)]
    for m, p in zip(models, paths):
        fwcore.write_uai(m, p)
    kw = dict(method="barrier-fw", rho_updates=1, seed=0, max_iter=20)
    from_files = fwcore.infer_many([fwcore.read_model(p) for p in paths], **kw)
    in_memory = fwcore.infer_many(models, **kw)
    log = _sent(client, monkeypatch)
    for given in (models, paths, [str(p) for p in paths]):
        log.clear()
        serial = in_memory if given is models else from_files
        for a, b in zip(serial, fwcore.infer_many(given, executor=client, **kw)):
            np.testing.assert_array_equal(a.mu, b.mu)
        size = len(pickle.dumps(models[0]))
        tasks = [n for what, n in log if what == "submit"]
        assert len(tasks) == 3 and max(tasks) < size / 4  # the model is not in the task
        assert [what for what, _ in log].count("scatter") == (3 if given is models else 0)


def test_perturb_and_map_on_a_cluster_sends_the_model_once(client, monkeypatch):
    import pickle
    model = fwcore.random_clique(5, coupling=2.0, seed=3)
    kwargs = dict(n_samples=3, inflation=2, oracle=("icm", {}), seed=7)
    serial = fwcore.perturb_and_map(model, **kwargs)
    log = _sent(client, monkeypatch)
    parallel = fwcore.perturb_and_map(model, executor=client, **kwargs)
    np.testing.assert_array_equal(serial.samples, parallel.samples)
    for a, b in zip(serial.node_marginals, parallel.node_marginals):
        np.testing.assert_array_equal(a, b)
    assert serial.n_oracle_calls == parallel.n_oracle_calls
    scattered = [n for what, n in log if what == "scatter"]
    # one scatter (broadcast to every worker), then tasks without the inflated model
    assert len(scattered) == 1 and scattered[0] > 4 * max(n for w, n in log if w == "submit")
    assert len(pickle.dumps(parallel.trace)) > 0 and parallel.trace[-1].time > 0
