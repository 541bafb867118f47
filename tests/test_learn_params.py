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


@pytest.mark.parametrize("cls", [MLEStruct, SSVM])
def test_repr_shows_the_parameters_changed(cls):
    assert repr(cls()) == f"{cls.__name__}()"
    assert repr(cls(reg=0.1, max_iter=20)) == f"{cls.__name__}(max_iter=20, reg=0.1)"


def test_predict_before_fit_is_not_fitted_error():
    from fwcore.learn import NotFittedError
    X, _ = synthetic_segmentation(1, size=3, seed=0)
    with pytest.raises(NotFittedError, match="not fitted yet; call fit") as err:
        SSVM().predict(X)
    assert isinstance(err.value, ValueError) and isinstance(err.value, AttributeError)


def test_score_is_the_fraction_of_labels_right():
    X, Y = synthetic_segmentation(3, size=5, seed=0)
    learner = SSVM(reg=0.1, max_iter=3, model=CRF(oracle="qpbo")).fit(X, Y)
    predicted = learner.predict(X)
    assert learner.score(X, Y) == pytest.approx(np.mean([np.mean(p == y) for p, y in
                                                         zip(predicted, Y)]))
    assert learner.score(X, predicted) == 1.0
    with pytest.raises(ValueError, match="Y has 2 labellings for 3 inputs"):
        learner.score(X, Y[:2])


def test_sklearn_cross_validation_and_estimator_checks():
    pytest.importorskip("sklearn", reason="scikit-learn is not installed (pip install "
                        "'fwcore[sklearn]')")
    from sklearn.exceptions import NotFittedError
    from sklearn.model_selection import cross_val_score
    from sklearn.utils import estimator_checks as checks
    X, Y = synthetic_segmentation(6, size=5, seed=0)  # GridSearchCV: test_users_tools.py
    scores = cross_val_score(MLEStruct(max_iter=2, model=CRF(oracle="qpbo")), X, Y, cv=2)
    assert scores.shape == (2,) and ((0.0 <= scores) & (scores <= 1.0)).all()
    with pytest.raises(NotFittedError):  # scikit-learn's class, as its users catch it
        SSVM().predict(X)
    for cls in (MLEStruct, SSVM):
        for check in (checks.check_get_params_invariance, checks.check_set_params,
                      checks.check_no_attributes_set_in_init,
                      checks.check_parameters_default_constructible):
            check(cls.__name__, cls())
