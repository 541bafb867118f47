"""Many independent inference problems at once, on any `concurrent.futures.Executor` or
on a dask cluster, and the recognition of a dask client as an executor (for the batches of
`fwcore.perturb_and_map` and the learners too: this module imports no inference method at
import time)."""
import os
import sys

from ..checks import EXECUTOR, Kind, validate_params
from ..io import read_model

__all__ = ["infer_many", "dask_client", "DASK_CLIENT"]


def dask_client(executor):
    """The ``distributed.Client`` of ``executor`` (a client, or its ``get_executor()``),
    or None; dask is not imported here unless the program already imported it (a client
    exists only then)."""
    distributed = sys.modules.get("distributed")
    if distributed is None:
        return None
    if isinstance(executor, distributed.Client):
        return executor
    if isinstance(executor, distributed.client.ClientExecutor):
        return executor._client
    return None


#: a dask client (or its executor) as an ``executor`` (the ``dask`` extra)
DASK_CLIENT = Kind(lambda e: dask_client(e) is not None, "a distributed.Client")


@validate_params({"executor": [EXECUTOR, DASK_CLIENT, None]}, unchecked=("models",))
def infer_many(models, executor=None, **kwargs):
    """`fwcore.infer` on each model, in order; ``kwargs`` are passed to every call.

    ``models``: models, or paths of model files (`fwcore.io.read_model`), each read where
    its call runs, so that a worker reads its own and nothing but the path is sent.
    ``executor``: None (serial), or any `concurrent.futures.Executor`: a
    ThreadPoolExecutor (the kernels release the GIL), a ProcessPoolExecutor (arguments must
    pickle: oracle names rather than lambdas), or a dask ``distributed.Client`` (or its
    ``get_executor()``), to which each model is scattered: it goes once, straight to the
    worker that infers it, not through the scheduler with the task. Results are the same as
    the serial run's for a fixed ``seed`` and no ``max_time`` (with one, how far each run
    gets depends on the machine's load; ``max_time`` is a duration, counted on the
    worker's clock from the call's start); an exception in one model is raised here.
    """
    models = list(models)
    client = dask_client(executor)
    if client is not None:
        sent = [m if isinstance(m, (str, os.PathLike)) else client.scatter(m, hash=False)
                for m in models]
        return client.gather([client.submit(_infer, m, kwargs, pure=False) for m in sent])
    if executor is None:
        return [_infer(m, kwargs) for m in models]
    futures = [executor.submit(_infer, m, kwargs) for m in models]
    return [f.result() for f in futures]


def _infer(model, kwargs):
    from .api import infer  # (see the module docstring)
    if isinstance(model, (str, os.PathLike)):
        model = read_model(model)
    return infer(model, **kwargs)
