"""Exact reference inference: variable elimination and brute force on a few sizes."""
import fwcore
from fwcore.exact import exact_inference, exact_map

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
