"""Variable elimination's kernels (fwcore._elim through fwcore.exact) against their NumPy
twin (tests/elim_numpy.py, the pure NumPy passes fwcore used before) and against TRBP,
on the medium models of `infer.InferMedium` (issue 13) with induced width 20 (the quick
profile: two 16x16 grids, width 16).

`setup_cache` measures every column in one run (medians of a few runs each, so that
ratios compare like with like on a busy machine): sum-product (log Z and marginals) by the
kernel and by the twin on the same plan, `exact_inference` (plan included) and `trbp` with
its defaults, and max-product by the kernel and the twin. The track_* methods report the
seconds and the ratios; the time_* methods time the kernels alone (asv timing).
"""

import fwcore
from fwcore.elimination import EliminationPlan, elimination_map, elimination_marginals
from fwcore.io.uai import read_uai

from .common import QUICK, built_models, instance_path, median_seconds, tests_module

_SIDE = 16 if QUICK else 20
_MODELS = {
    **({} if QUICK else {"Grids_15": lambda: read_uai(instance_path("uai2014/Grids_15.uai"))}),
    f"grid{_SIDE}-c1.5": lambda: fwcore.random_grid(_SIDE, coupling=1.5, field=1.0, seed=0),
    f"grid{_SIDE}-c4": lambda: fwcore.random_grid(_SIDE, coupling=4.0, field=1.0, seed=0),
}
_COLUMNS = ("kernel_sum", "numpy_sum", "exact_inference", "trbp", "kernel_max", "numpy_max")


class EliminationKernels:
    """Seconds and ratios: kernel vs NumPy twin vs TRBP (sum-product), kernel vs twin
    (max-product)."""

    param_names = ["model"]
    params = [list(_MODELS)]
    timeout = 3600  # also the limit of setup_cache, which runs every column

    def setup_cache(self):
        """{model: {column: median seconds}}; a model whose instance is missing is left out."""
        twin = tests_module("elim_numpy")
        repeats = 1 if QUICK else 3
        table = {}
        for name, model in built_models(_MODELS):
            plan = EliminationPlan(model)
            runs = {"kernel_sum": lambda: elimination_marginals(model, plan),
                    "numpy_sum": lambda: twin.numpy_marginals(model, plan),
                    "exact_inference": lambda: fwcore.exact_inference(model),
                    "trbp": lambda: fwcore.trbp(model),
                    "kernel_max": lambda: elimination_map(model, plan),
                    "numpy_max": lambda: twin.numpy_map(model, plan)}
            table[name] = {col: median_seconds(runs[col], repeats) for col in _COLUMNS}
        return table

    def setup(self, table, model):
        if model not in table:
            raise NotImplementedError(f"{model}: instance not found")
        self.row = table[model]
        self.model = _MODELS[model]()
        self.plan = EliminationPlan(self.model)

    def time_kernel_sum_product(self, table, model):
        elimination_marginals(self.model, self.plan)

    def time_kernel_max_product(self, table, model):
        elimination_map(self.model, self.plan)

    def track_kernel_sum_seconds(self, table, model):
        return self.row["kernel_sum"]

    def track_numpy_sum_seconds(self, table, model):
        return self.row["numpy_sum"]

    def track_trbp_seconds(self, table, model):
        return self.row["trbp"]

    def track_exact_inference_over_trbp(self, table, model):
        return self.row["exact_inference"] / self.row["trbp"]

    def track_numpy_over_kernel_sum(self, table, model):
        return self.row["numpy_sum"] / self.row["kernel_sum"]

    def track_kernel_max_seconds(self, table, model):
        return self.row["kernel_max"]

    def track_numpy_over_kernel_max(self, table, model):
        return self.row["numpy_max"] / self.row["kernel_max"]
