"""Many independent inference problems at once, on any `concurrent.futures.Executor`."""
from .api import infer
from ..checks import EXECUTOR, validate_params

__all__ = ["infer_many"]


@validate_params({"executor": [EXECUTOR, None]}, unchecked=("models",))
def infer_many(models, executor=None, **kwargs):
    """`fwcore.infer` on each model, in order; ``kwargs`` are passed to every call.

    ``executor``: None (serial), or any `concurrent.futures.Executor`: a
    ThreadPoolExecutor (the kernels release the GIL), a ProcessPoolExecutor (arguments must
    pickle: oracle names rather than lambdas), or a cluster engine's executor such as
    dask.distributed's ``Client.get_executor()``. Results are the same as the serial run's
    for a fixed ``seed`` and no ``max_time`` (with one, how far each run gets depends on
    the machine's load); an exception in one model is raised here.
    """
    models = list(models)
    if executor is None:
        return [infer(m, **kwargs) for m in models]
    futures = [executor.submit(infer, m, **kwargs) for m in models]
    return [f.result() for f in futures]
