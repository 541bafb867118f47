"""infer_many: executors give the serial results."""
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import numpy as np
import pytest

import fwcore


@pytest.fixture(scope="module")
def models():
    return [fwcore.random_clique(6, coupling=2.0, seed=s) for s in range(3)]


def _same(a, b):
    for ra, rb in zip(a, b):
        np.testing.assert_array_equal(ra.mu, rb.mu)
        assert ra.log_z_upper == rb.log_z_upper


def test_threads_and_processes_equal_serial(models):
    kw = dict(method="barrier-fw", rho_updates=2, seed=0)
    serial = fwcore.infer_many(models, **kw)
    assert len(serial) == len(models)
    with ThreadPoolExecutor(2) as ex:
        _same(serial, fwcore.infer_many(models, executor=ex, **kw))
    with ProcessPoolExecutor(2) as ex:
        _same(serial, fwcore.infer_many(models, executor=ex, **kw))


def test_bad_executor_and_errors_propagate(models):
    with pytest.raises(TypeError, match="executor"):
        fwcore.infer_many(models, executor=object())
    with ThreadPoolExecutor(2) as ex, pytest.raises(ValueError, match="oracle"):
        fwcore.infer_many(models, executor=ex, method="barrier-fw", oracle="no-such-oracle")


def test_paths_are_read_where_the_call_runs(models, tmp_path):
    paths = [tmp_path / f"m{k}.uai" for k in range(len(models))]
    for m, p in zip(models, paths):
        fwcore.write_uai(m, p)
    kw = dict(method="barrier-fw", rho_updates=2, seed=0)
    serial = fwcore.infer_many([fwcore.read_model(p) for p in paths], **kw)
    _same(serial, fwcore.infer_many(paths, **kw))
    with ProcessPoolExecutor(2) as ex:
        _same(serial, fwcore.infer_many([str(p) for p in paths], executor=ex, **kw))
