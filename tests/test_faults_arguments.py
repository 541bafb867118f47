"""Small argument faults (issue 28): each gets a ValueError or TypeError that names the
argument, or the empty model its trivial answer."""
import math

import numpy as np
import pytest

import fwcore
from fwcore.checks import HIGHS_MAX_ABS_THETA


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(h=6, coupling=math.nan), ValueError, "coupling must be a number >= 0; got nan"),
    (dict(h=2.5), ValueError, "h must be an integer >= 1"),
    (dict(h=3, coupling=-1), ValueError, "coupling must be a number >= 0; got -1"),
    (dict(h=3, seed=-1), ValueError, "seed must be an int >= 0 or None; got -1"),
    (dict(h=3, seed=1.5), TypeError, "seed must be an int >= 0 or None; got float"),
    (dict(h=3, seed=True), TypeError, "seed must be an int >= 0 or None; got bool"),
])
def test_generator_arguments_are_named(kwargs, error, match):
    with pytest.raises(error, match=match):
        fwcore.random_grid(**kwargs)


def test_a_negative_seed_is_named_by_every_entry_point():
    with pytest.raises(ValueError, match="seed must be an int >= 0"):
        fwcore.infer(fwcore.random_grid(2, seed=0), seed=-1)


@pytest.mark.parametrize("card", [[True, 2], (2, np.True_), [False]])
def test_a_bool_cardinality_is_refused(card):
    with pytest.raises(TypeError, match="card must hold integers"):
        fwcore.PairwiseMRF(card)


@pytest.mark.parametrize("edges, where", [([(True, 1)], r"\(0, 0\)"),
                                          ([(0, 1), (1, np.True_)], r"\(1, 1\)"),
                                          ([np.array([0, 2]), [False, 1]], r"\(1, 0\)")])
def test_a_bool_among_the_edges_is_refused(edges, where):
    """numpy reads [(True, 1)] as [(1, 1)]: the bool is refused, and named."""
    with pytest.raises(TypeError, match=f"edges must hold integers; got the bool .* {where}"):
        fwcore.PairwiseMRF([2, 2, 2], edges=edges)
    with pytest.raises(TypeError, match="factors.0. scope must hold integers; got the bool"):
        fwcore.FactorGraph([2, 2, 2], [(edges[-1], np.zeros((2, 2)))])


def test_the_empty_model_has_its_trivial_answers():
    empty = fwcore.PairwiseMRF([])
    assert fwcore.exact_inference(empty).log_z == 0.0
    assert fwcore.infer(empty).log_z_upper == 0.0
    for method in ("ilp", "lp", "exact", "trws", "icm"):
        res = fwcore.infer_map(empty, method)
        assert res.assignment.shape == (0,) and res.score == 0.0, method


@pytest.mark.parametrize("method", ["ilp", "lp"])
def test_highs_refuses_potentials_it_cannot_solve(method):
    def model(big):
        return fwcore.PairwiseMRF([2, 2], [[big, -big], [0.0, 1.0]], [(0, 1)],
                                  [[[1.0, 0.0], [0.0, 1.0]]])
    with pytest.raises(ValueError, match=r"model has a log-potential of absolute value 1e\+100"):
        fwcore.infer_map(model(1e100), method)
    res = fwcore.infer_map(model(HIGHS_MAX_ABS_THETA), method)
    assert res.score == HIGHS_MAX_ABS_THETA + 1.0
