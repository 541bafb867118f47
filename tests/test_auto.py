"""The automatic choices (fwcore.auto), each where its callers meet it."""
import numpy as np

import fwcore
from fwcore.auto import (barrier_fw_oracle, exact_method, infer_exact_method, infer_method,
                         portfolio_members)
from fwcore.generators import grid, potts_grid, random_grid
from fwcore.oracles import resolve_oracle


def test_exact_method_by_state_space_and_graph():
    chain = grid(1, 30)
    assert exact_method(grid(3, 3)) == "bruteforce"
    assert exact_method(chain) == "tree" and exact_method(chain, tree=False) == "elimination"
    assert exact_method(grid(5, 5)) == "elimination"


def test_infer_method_answers_exactly_only_where_it_is_cheap():
    model, big = random_grid(6, seed=0), random_grid(40, seed=0)
    assert infer_exact_method(model, None) and not infer_exact_method(big, None)
    assert not infer_exact_method(model, 1e-6)  # half of max_time bounds elimination's work
    assert infer_method(model, "auto", None) == "exact"
    assert infer_method(big, "auto", None) == infer_method(model, "approximate", None) == "wmb"
    assert infer_method(model, "trbp", None) == "trbp"


def test_barrier_fw_oracle():
    oracle = fwcore.oracles.MapOracle
    assert barrier_fw_oracle("auto", "local") == barrier_fw_oracle("exact", "local") == "lp"
    assert barrier_fw_oracle("auto", "marginal") == "portfolio"
    assert barrier_fw_oracle("exact", "marginal") == "exact"
    assert barrier_fw_oracle("icm", "local") == "icm" and barrier_fw_oracle(oracle, "x") is oracle


def test_portfolio_members_take_qpbo_on_binary_models_only():
    binary, potts = random_grid(3, seed=0), potts_grid(3, 3, n_labels=3, seed=0)
    assert portfolio_members(binary) == ["qpbo", "trws", "icm"]
    assert portfolio_members(potts) == ["trws", "icm"]
    oracle = resolve_oracle("portfolio", potts)
    oracle.argmax(potts.theta)
    assert set(oracle.member_scores) == {"trws", "icm"}
    assert np.isfinite(list(oracle.member_scores.values())).all()
