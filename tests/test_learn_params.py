"""scikit-learn's parameter protocol on the learners: get_params / set_params, and
sklearn.base.clone when scikit-learn is installed (fwcore does not depend on it)."""
import numpy as np
import pytest

from fwcore.learn import CRF, SSVM, MLEStruct
from fwcore.learn.datasets import synthetic_segmentation


@pytest.mark.parametrize("cls", [MLEStruct, SSVM])
def test_get_params_lists_every_constructor_argument(cls):
    learner = cls(reg=2.5, max_iter=7)
    params = learner.get_params()
    assert params["reg"] == 2.5 and params["max_iter"] == 7 and params["model"] == "crf"
    assert cls(**params).get_params() == params
    assert learner.set_params(tol=0.5, model=CRF(oracle="qpbo")) is learner
    assert learner.get_params()["tol"] == 0.5 and learner.model == CRF(oracle="qpbo")
    assert cls(**learner.get_params()).get_params() == learner.get_params()
    with pytest.raises(ValueError, match="invalid parameter 'regularisation'.*valid parameters: "):
        learner.set_params(regularisation=1.0)


def test_set_params_are_checked_at_fit():
    X, Y = synthetic_segmentation(2, size=4, seed=0)
    with pytest.raises(ValueError, match="reg"):
        MLEStruct().set_params(reg=-1.0).fit(X, Y)


def test_sklearn_clone_gives_an_unfitted_copy():
    base = pytest.importorskip("sklearn.base")
    X, Y = synthetic_segmentation(3, size=5, seed=0)
    fitted = MLEStruct(reg=10.0, model=CRF(oracle="qpbo"), max_iter=3).fit(X, Y)
    copy = base.clone(fitted)
    assert copy is not fitted and copy.get_params() == fitted.get_params()
    assert not hasattr(copy, "coef_")
    np.testing.assert_array_equal(copy.fit(X, Y).coef_, fitted.coef_)
