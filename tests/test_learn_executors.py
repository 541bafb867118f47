"""Learning past one machine (issue 40): every executor gives the serial fit (threads,
processes, a dask cluster whose workers keep the examples); with dask a pass sends bytes
of the weights' size; lazy datasets (a folder, memory-mapped arrays, a dask bag) give the
fit of the lists and keep no example in the learner's process; minibatch BCFW keeps its
objective monotone and reaches BCFW's optimum; progress lines inside a pass."""
import logging
import pickle
import sys
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from fwcore.learn import CRF, SSVM, MLEStruct
from fwcore.learn.data import (DaskBag, Dataset, ExampleFolder, InMemory, StackedArrays,
                               write_examples)
from fwcore.learn.datasets import noisy_point_matching, synthetic_segmentation
from fwcore.learn.mle_struct import TrainingMarginals
from fwcore import loop

sys.path.insert(0, str(Path(__file__).resolve().parent))  # --import-mode=importlib
from bench_files import load  # noqa: E402
from test_learn import tree_data  # noqa: E402

runner = load("bench.learn_executors")

distributed = pytest.importorskip("distributed")

QPBO = CRF(oracle="qpbo")
LEARNERS = {
    "ssvm-bcfw": lambda **kw: SSVM(reg=0.1, model=QPBO, tol=0.0, batch_size=3, **kw),
    "ssvm-fw": lambda **kw: SSVM(reg=0.1, model=QPBO, tol=0.0, method="fw", **kw),
    "mle-bcfw": lambda **kw: MLEStruct(reg=1.0, rho=0.5, model=QPBO, tol=0.0, batch_size=3,
                                       **kw),
    "mle-fw": lambda **kw: MLEStruct(reg=1.0, rho=0.5, model=QPBO, tol=0.0, method="fw", **kw),
    # the matching entropy adapts its δ per example: that state lives with the example
    "mle-matching": lambda **kw: MLEStruct(reg=0.05, model="bipartite", tol=0.0,
                                           batch_size=2, **kw),
}


@pytest.fixture(scope="module")
def client():
    # two worker processes: the examples are pickled to them and stay there (without
    # dask's MALLOC_TRIM_THRESHOLD_: fwcore.learn.shards.MALLOC_TRIM)
    dask = pytest.importorskip("dask")
    with dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}):
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           dashboard_address=None)
    with cluster, distributed.Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def segmentation():
    return synthetic_segmentation(7, size=6, seed=0)


def _data(name, segmentation):
    return noisy_point_matching(5, n_points=5, seed=0) if "matching" in name else segmentation


@pytest.mark.parametrize("name", list(LEARNERS))
def test_every_executor_gives_the_serial_fit(name, segmentation, client, tmp_path):
    X, Y = _data(name, segmentation)
    serial = LEARNERS[name](max_iter=3).fit(X, Y)
    folder = write_examples(tmp_path / "examples", X, Y)
    with ThreadPoolExecutor(2) as threads, ProcessPoolExecutor(2) as processes:
        for executor in (threads, processes, client, client.get_executor()):
            for data in ((X, Y), (folder,)):
                fit = LEARNERS[name](max_iter=3, executor=executor).fit(*data)
                np.testing.assert_array_equal(fit.coef_, serial.coef_)
                assert fit.gap_ == serial.gap_ and fit.primal_ == serial.primal_
                assert fit.n_oracle_calls_ == serial.n_oracle_calls_
                if name.startswith("mle"):  # τ read back from wherever it lives
                    for a, b in zip(fit.marginals_, serial.marginals_):
                        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", ["ssvm-bcfw", "mle-bcfw"])
@pytest.mark.parametrize("lazy", [False, True], ids=["scattered", "loaded-by-workers"])
def test_with_dask_a_pass_sends_bytes_of_the_weights_size(name, lazy, client, monkeypatch,
                                                           tmp_path):
    # the weights (32 numbers) against 60x60 images: per example, the results of a pass
    # are 2 x 33 numbers, its data 3,600 nodes x 2 features and 7,080 edges x 2
    X, Y = synthetic_segmentation(12, size=60, seed=1)
    pickled = len(pickle.dumps((X, Y)))
    data = (write_examples(tmp_path / "examples", X, Y),) if lazy else (X, Y)
    counter = runner.Counter()  # bench/learn_executors.py's wrappers of the client
    counter.count_dask(client, monkeypatch.setattr)
    per_pass = []
    fit = LEARNERS[name](max_iter=3, executor=client,
                         callback=lambda r: per_pass.append(counter.sent + counter.received))
    fit.fit(*data)
    first, later = per_pass[0], np.diff(per_pass)
    # the examples go out once (scattered) or never (the workers read the folder)
    assert (first > pickled) if not lazy else (first < 0.05 * pickled)
    assert later.max() < 0.01 * pickled, (later, pickled)
    # a process pool carries the examples (or their marginals) in every pass
    sent = []

    class Counting(Executor):
        def __init__(self, pool):
            self.pool = pool

        def submit(self, fn, *args):
            sent.append(len(pickle.dumps((fn, args))))
            return self.pool.submit(fn, *args)

    with ProcessPoolExecutor(2) as pool:
        LEARNERS[name](max_iter=1, executor=Counting(pool)).fit(*data)
    if not lazy or name.startswith("mle"):
        assert sum(sent) > 0.5 * pickled


def test_lazy_datasets_give_the_fit_of_the_lists(segmentation, tmp_path):
    X, Y = segmentation
    serial = LEARNERS["mle-bcfw"](max_iter=2).fit(X, Y)
    edges = X[0].edges
    arrays = {"node_features": np.stack([x.node_features for x in X]),
              "edge_features": np.stack([x.edge_features for x in X]),
              "labels": np.stack(Y)}
    for key, a in arrays.items():  # memory-mapped .npy files
        np.save(tmp_path / f"{key}.npy", a)
    mapped = {k: np.load(tmp_path / f"{k}.npy", mmap_mode="r") for k in arrays}
    stacked = StackedArrays(mapped.pop("labels"), shared={"edges": edges}, **mapped)
    assert len(pickle.dumps(stacked)) < 2000  # the files' names, not their rows
    dask_bag = pytest.importorskip("dask.bag")
    bag = DaskBag(dask_bag.from_sequence(list(zip(X, Y)), npartitions=3))
    for data in (write_examples(tmp_path / "folder", X, Y), stacked, bag):
        fit = LEARNERS["mle-bcfw"](max_iter=2).fit(data)
        np.testing.assert_array_equal(fit.coef_, serial.coef_)
        assert fit.gap_ == serial.gap_


class _Loads(Dataset):
    """A dataset counting the examples it loads."""

    def __init__(self, X, Y):
        self.inner, self.loaded = InMemory(X, Y), 0

    def __len__(self):
        return len(self.inner)

    def load(self, start, stop):
        self.loaded += stop - start
        return self.inner.load(start, stop)


def test_a_lazy_dataset_is_read_a_few_examples_at_a_time_and_not_kept(segmentation):
    X, Y = segmentation
    data = _Loads(X, Y)
    fit = LEARNERS["mle-bcfw"](max_iter=2).fit(data)
    where = fit.marginals_.where
    assert where.shard.items is None and where.shard.raw is None  # no example kept
    # read for the labels (n_labels), the first example (the model), to validate, to
    # start τ, then for each gap pass (3) and BCFW pass (2)
    assert data.loaded == 1 + 8 * len(X)
    assert len(fit.marginals_) == len(X) and fit.marginals_[-1].shape == fit.marginals_[0].shape
    again = pickle.loads(pickle.dumps(fit.marginals_))
    assert isinstance(fit.marginals_, TrainingMarginals) and isinstance(again, list)
    for a, b in zip(again, fit.marginals_):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("batch", [1, 4, 12])
def test_minibatch_bcfw_steps_never_worsen_the_objective(batch):
    X, Y = synthetic_segmentation(12, size=8, seed=2)
    mle = MLEStruct(reg=1.0, rho=0.5, model=QPBO, tol=0.0, max_iter=6, batch_size=batch,
                    averaging=False).fit(X, Y)
    assert np.all(np.diff(mle.trace_.columns()["primal"]) <= 1e-9)  # L(τ) never grows
    svm = SSVM(reg=0.1, model=QPBO, tol=0.0, max_iter=6, batch_size=batch).fit(X, Y)
    cols = svm.trace_.columns()
    assert np.all(np.diff(cols["primal"] - cols["gap"]) >= -1e-12)  # D(w, ℓ) never falls


def test_minibatch_bcfw_reaches_the_optimum_of_bcfw():
    X, Y = tree_data(4, n=5, seed=3)  # an exact oracle (trees): the gaps are proofs
    kw = dict(reg=1.0, rho="matrix-tree", model=CRF(oracle="tree"), tol=1e-4, max_iter=300,
              averaging=False)
    one, three = (MLEStruct(batch_size=b, **kw).fit(X, Y) for b in (1, 3))
    # weak duality: L* >= L(τ) − gap for both, so the objectives agree within the gaps
    assert abs(one.primal_ - three.primal_) <= max(one.gap_, three.gap_) + 1e-12
    assert max(one.gap_, three.gap_) < 0.05
    np.testing.assert_allclose(one.coef_, three.coef_, atol=0.05)


def test_progress_lines_inside_a_pass(caplog, monkeypatch):
    monkeypatch.setattr(loop, "PROGRESS_EVERY", 0.0)
    X, Y = synthetic_segmentation(70, size=4, seed=0)
    with caplog.at_level(logging.INFO, logger="fwcore"):
        SSVM(reg=0.1, model=QPBO, max_iter=1, tol=0.0, batch_size=5).fit(X, Y)
    lines = [r.getMessage() for r in caplog.records if r.name == "fwcore"]
    assert any(line.startswith("gap pass: 64/70 examples, gap so far") for line in lines)
    inside = [line for line in lines if line.startswith("pass 1: ")]
    assert len(inside) == 14 and inside[-1].startswith("pass 1: 70/70 examples")
    assert all("dual objective" in line and "examples/s" in line for line in inside)
    assert any(line.startswith("pass 1 ") and "oracle calls/s" in line for line in lines)


def test_batch_size_is_a_bcfw_option_and_the_executor_is_checked(segmentation, tmp_path):
    X, Y = segmentation
    with pytest.raises(ValueError, match="batch_size=3 is a BCFW option"):
        SSVM(method="fw", batch_size=3).fit(X, Y)
    with pytest.raises(ValueError, match="batch_size must be an integer >= 1"):
        SSVM(batch_size=0).fit(X, Y)
    with pytest.raises(TypeError, match="executor must be .*a distributed.Client or None"):
        SSVM(executor="dask").fit(X, Y)
    with pytest.raises(TypeError, match="without Y"):
        SSVM().fit(InMemory(X, Y), Y)
    with pytest.raises(ValueError, match="holds no .npz files"):
        ExampleFolder(tmp_path)


def test_max_time_on_a_cluster_is_held_and_counted_on_the_workers_clocks(client):
    import time
    from fwcore.results import Status
    X, Y = synthetic_segmentation(24, size=48, seed=0)
    t = time.perf_counter()
    fit = MLEStruct(reg=1.0, rho=0.5, model=QPBO, tol=0.0, max_iter=10**6, max_time=2.0,
                    batch_size=4, executor=client).fit(X, Y)
    elapsed = time.perf_counter() - t
    assert fit.status_ is Status.MAX_TIME and elapsed <= 1.2 * 2.0 + 1.0 + 1.0, elapsed
    assert np.isfinite(fit.coef_).all()
    assert len(fit.marginals_) == 24  # the measured iterate's, still on the workers


def test_a_dask_bag_is_built_on_the_workers(segmentation, client):
    dask_bag = pytest.importorskip("dask.bag")
    X, Y = segmentation
    serial = LEARNERS["mle-bcfw"](max_iter=2).fit(X, Y)
    bag = DaskBag(dask_bag.from_sequence(list(zip(X, Y)), npartitions=3))
    fit = LEARNERS["mle-bcfw"](max_iter=2, executor=client).fit(bag)
    np.testing.assert_array_equal(fit.coef_, serial.coef_)
