"""fwcore: inference and learning in discrete graphical models through MAP solvers,
built on Frank-Wolfe."""
try:
    from . import _kernels  # noqa: F401  (the compiled core: missing in an unbuilt source tree)
except ImportError as _missing:
    from pathlib import Path as _Path
    _here = _Path(__file__).resolve().parent
    if (_here / "_kernels.pyx").is_file():
        raise ImportError(
            f"fwcore is being imported from its source tree ({_here.parent}), whose compiled "
            "extensions are not built: run Python from another folder to use the installed "
            "fwcore, or build them here with 'python setup.py build_ext --inplace'") from _missing
    raise
from .model import PairwiseMRF
from .factor_graph import FactorGraph
from .io import (read_model, read_uai, write_uai, read_mar, write_mar, read_pr, write_pr,
                 read_map, write_map, read_evid, write_evid, apply_evidence, from_networkx,
                 from_pgmpy, from_pyagrum)
from .generators import (grid, complete, bipartite, random_clique, random_grid, random_rbm,
                         potts_grid, frustrated_clique, segmentation_crf, skip_grid)
from .exact import ExactResult, exact_inference, exact_map
from .oracles import MapOracle, available_oracles, resolve_oracle
from .results import MapResult, Record, Result, Status, Trace
from .matching import (MatchingMarginals, bethe_bp, exact_matching_marginals, log_permanent,
                       matching_marginals, max_weight_bipartite_matching,
                       max_weight_perfect_matching, permanent)
from .map import infer_map
from .fw import frank_wolfe, block_coordinate_frank_wolfe, FWResult
from .marginals import (ConditionedResult, MarginalMethod, MarginalResult, MeanFieldResult,
                        PerturbResult, available_methods, choose_conditioning,
                        clamp, conditioned, conditioned_anytime, fixed_by_evidence, infer,
                        infer_many, loopy_bp, mean_field_lower_bound, perturb_and_map,
                        register_method, trbp, weighted_mini_bucket)
from .marginals.barrier_fw import barrier_fw
from .lp_relax import CardinalityFactor, Factor, LPResult, infer_lp
from .learn import MLEStruct, SSVM, CRFExample
from . import datasets
from .io import (read_bif, write_bif, read_xmlbif, write_xmlbif, to_pgmpy, to_pyagrum,
                 read_query)
from .queries import QueryResult, query
from .sampling import SampleResult, sample
from .mmap import MMAPResult, infer_mmap

__version__ = "0.1.0"

__all__ = [
    "PairwiseMRF", "FactorGraph",
    "read_model", "read_uai", "write_uai", "read_mar", "write_mar", "read_pr", "write_pr",
    "read_map", "write_map", "read_evid", "write_evid", "apply_evidence", "from_networkx",
    "from_pgmpy", "from_pyagrum",
    "grid", "complete", "bipartite", "random_clique", "random_grid", "random_rbm",
    "potts_grid", "frustrated_clique", "segmentation_crf", "skip_grid",
    "ExactResult", "exact_inference", "exact_map",
    "MapOracle", "available_oracles", "resolve_oracle",
    "MapResult", "Record", "Result", "Status", "Trace",
    "MatchingMarginals", "bethe_bp", "exact_matching_marginals", "log_permanent",
    "matching_marginals", "max_weight_bipartite_matching", "max_weight_perfect_matching",
    "permanent",
    "infer_map", "frank_wolfe", "block_coordinate_frank_wolfe", "FWResult",
    "MarginalResult", "PerturbResult", "infer", "infer_many", "loopy_bp", "perturb_and_map",
    "available_methods", "register_method", "MarginalMethod", "barrier_fw",
    "trbp", "weighted_mini_bucket", "clamp", "fixed_by_evidence", "conditioned",
    "conditioned_anytime", "choose_conditioning", "ConditionedResult", "mean_field_lower_bound",
    "MeanFieldResult",
    "CardinalityFactor", "Factor", "LPResult", "infer_lp",
    "MLEStruct", "SSVM", "CRFExample",
    "datasets",
    "read_bif", "write_bif", "read_xmlbif", "write_xmlbif", "to_pgmpy", "to_pyagrum",
    "QueryResult", "query", "SampleResult", "sample", "MMAPResult", "infer_mmap", "read_query",
]
