"""Exact reference inference: variable elimination and brute force on a few sizes, and
how fast models too large for elimination are refused (issue 12)."""
import numpy as np

import fwcore
from fwcore.elimination import EliminationPlan
from fwcore.exact import exact_inference, exact_map
from fwcore.generators import grid_edges

from .common import INSTANCES, QUICK


class ExactGrid:
    """Elimination on Barrier FW grids (treewidth = side length)."""

    param_names = ["side"]
    params = [[5, 10] if QUICK else [5, 10, 15, 20]]

    def setup(self, side):
        self.model = fwcore.random_grid(side, seed=0)

    def time_log_z_and_marginals(self, side):
        exact_inference(self.model, method="elimination")

    def time_map(self, side):
        exact_map(self.model, method="elimination")

    def peakmem_log_z_and_marginals(self, side):
        exact_inference(self.model, method="elimination")


class ExactClique:
    """Brute force vs elimination on the K_n cliques of Barrier FW Sec. 5."""

    param_names = ["n", "method"]
    params = [[10, 14], ["bruteforce", "elimination"]]

    def setup(self, n, method):
        self.model = fwcore.random_clique(n, coupling=3.0, seed=0)

    def time_log_z_and_marginals(self, n, method):
        exact_inference(self.model, method=method)


class ExactUAI:
    """Shared UAI 2014 instances (skipped when ../shared/instances is absent)."""

    param_names = ["instance"]
    params = [["Grids_12", "Segmentation_11", "pdb1akg"] if QUICK else
              ["Grids_12", "Grids_15", "DBN_14", "Segmentation_11", "CSP_11",
               "ObjectDetection_11", "pdb1akg"]]

    def setup(self, instance):
        path = INSTANCES / "uai2014" / f"{instance}.uai"
        if not path.exists():
            raise NotImplementedError(f"{path} not found")
        self.model = fwcore.read_uai(path)
        self.log_z = fwcore.read_pr(f"{path}.PR")

    def time_log_z_and_marginals(self, instance):
        exact_inference(self.model)

    def track_abs_error_log_z(self, instance):
        return abs(exact_inference(self.model).log_z - self.log_z)


class ExactRefusal:
    """Time to refuse a grid far too large for elimination (issue 12: minutes before)."""

    param_names = ["side"]
    params = [[100, 300] if QUICK else [100, 300, 1000]]

    def setup(self, side):
        import numpy as np
        from fwcore.generators import grid_edges
        e = np.asarray(grid_edges(side, side), dtype=np.int64)
        self.model = fwcore.PairwiseMRF.from_flat(np.full(side * side, 2), e,
                                                  np.zeros(2 * side * side + 4 * len(e)))

    def time_refusal(self, side):
        try:
            exact_inference(self.model)
        except ValueError:
            return
        raise AssertionError("the grid was not refused")


def _zero_model(n, edges):
    """A binary model with zero potentials on ``edges`` (from flat arrays: fast at 10^6)."""
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    return fwcore.PairwiseMRF.from_flat(np.full(n, 2), edges, np.zeros(2 * n + 4 * len(edges)))


def _sparse_random(n, degree, seed=0):
    """n variables, n * degree / 2 uniform random pairs less self loops and repeats."""
    e = np.sort(np.random.default_rng(seed).integers(0, n, size=(n * degree // 2, 2)), axis=1)
    keys = np.unique(e[e[:, 0] < e[:, 1]] @ np.array([n, 1]))
    return _zero_model(n, np.c_[keys // n, keys % n])


def _ladder(n, width=3):
    """A long thin grid (n / width rungs of ``width`` variables): treewidth ``width``."""
    idx = np.arange(n // width * width).reshape(-1, width)
    return _zero_model(idx.size, np.r_[np.c_[idx[:-1].ravel(), idx[1:].ravel()],
                                       np.c_[idx[:, :-1].ravel(), idx[:, 1:].ravel()]])


class ExactRefusalLarge:
    """exact_inference (default memory_limit) refusing 10^6-variable models (issue 12: in
    under 2 s): a sparse random graph (average degree 4; no k-core proof, the bandwidth
    order meets a table over the limit after about 80,000 eliminations) and a 1000 x 1000
    grid. The quick profile uses 10^5 variables."""

    param_names = ["model"]
    params = [["random-deg4", "grid"]]
    number, repeat, warmup_time, timeout = 1, 3, 0, 600

    def setup(self, model):
        n = 10**5 if QUICK else 10**6
        self.model = (_sparse_random(n, 4) if model == "random-deg4" else
                      _zero_model(n, grid_edges(int(n**0.5), int(n**0.5))))

    def time_refusal(self, model):
        try:
            exact_inference(self.model)
        except ValueError:
            return
        raise AssertionError(f"the {model} model was not refused")


class ExactPlanLong:
    """Planning (and not refusing) a long thin model that fits: a 10^6-variable ladder of
    width 3 (10^5 in the quick profile), both orders run to the end."""

    number, repeat, warmup_time, timeout = 1, 3, 0, 1200

    def setup(self):
        self.model = _ladder(10**5 if QUICK else 10**6)

    def time_plan(self):
        EliminationPlan(self.model, memory_limit=2**31)
