"""The contracts between the learners and the models they fit (DESIGN.md "Learning").

A learner's ``model`` is a `ModelFamily` (`fwcore.learn.CRF`, `fwcore.learn.Matching`, or
a string naming one's default object): the family and its options as the user gives them,
with the ``rho`` its entropy may take; ``fit`` builds it on the training data into a
`LearnerModel`, which gives the FW loops of `fwcore.learn.MLEStruct` and `fwcore.learn.SSVM`
everything example-specific; `CRFModel` (`fwcore.learn.crf`) and `MatchingModel`
(`fwcore.learn.matching_model`) implement it. Its ``decoder(ex)`` is a `VertexDecoder` (a
MAP oracle returning dense vertices) and its ``entropy(ex, rho)`` a `BlockEntropy` (the
block objective −<θ, τ> − H_ρ(τ) of MLE-Struct's dual). Everything is declared here, so
the learners never probe a model for what it can do.

Time limits: the learners' ``max_time`` is one `fwcore.loop.Deadline`, handed down to
every per-example call (a decoder call gets the time left as its ``time_limit``); a call
that finds no time left, or stops at that limit before finishing, raises
`fwcore.loop.TimeUp`, and the learner ends the fit with the last measured iterate.
"""
import abc


from ..checks import check_params
from ..marginals.rho import ENTROPY, entropy_rho
from ..marginals.batch import dask_client

__all__ = ["ModelFamily", "LearnerModel", "VertexDecoder", "BlockEntropy", "run_tasks"]


class VertexDecoder(abc.ABC):
    """A MAP oracle on one example's structure. Picklable, so it travels to process
    workers of an executor."""

    #: a call returns a true maximiser over the polytope the learner moves on (the local
    #: polytope for an LP oracle), so a duality gap computed from its vertices is a proof
    exact = False

    @abc.abstractmethod
    def vertex(self, scores, time_limit=None):
        """A dense vertex μ (float64, the example's flat layout) maximising <scores, μ>.
        ``time_limit`` (seconds, None: none) bounds the call: one that stops there before
        it finishes raises `fwcore.loop.TimeUp` (a decoder that cannot stop early may ignore it)."""

    @abc.abstractmethod
    def assignment(self, scores):
        """A maximising labelling (or matching) as an int array."""


class BlockEntropy(abc.ABC):
    """The block objective −<θ, τ> − H_ρ(τ) of one example (MLE-Struct eq. 6) with its
    edge weights ``rho``."""

    rho = None

    @abc.abstractmethod
    def value_grad(self, theta, tau):
        """(value, gradient) at τ."""

    @abc.abstractmethod
    def line_derivs(self, theta, tau, d, t):
        """(φ'(t), φ''(t)) of φ(t) = value at τ + t d (App. D.2 / E.2.1)."""

    def fw_gaps(self, vertex, grad, tau):
        """Scalars of the decoder's ``vertex`` v at τ with gradient ``grad``, computed where
        the MAP call ran: the FW gap <−grad, v − τ> over the true polytope, then whatever
        `fw_vertex` needs."""
        return (float(grad @ tau) - float(grad @ vertex),)

    def fw_vertex(self, vertex, gaps, state):
        """The vertex the FW step moves toward: the decoder's ``vertex`` here (a contraction
        overrides it), given its `fw_gaps`; None for a call whose vertex is not kept.
        Runs for every MAP call of the example, in call order, with ``state``, the
        example's dict that stays where the example lives: an entropy that adapts across
        calls (an adaptive contraction) keeps its values there."""
        return vertex


class ModelFamily(abc.ABC):
    """A family of structured outputs and its options, as a learner's ``model`` takes it:
    it holds what the user gave (nothing is computed before ``build``) and declares the
    ``rho`` of MLE-Struct's reweighted entropy in this family (`fwcore.marginals.rho`)."""

    #: the constraints of ``rho`` with entropy="trw" (`fwcore.checks.check_params`)
    RHO: list[object]
    #: ``rho`` with entropy="trw" when it is None
    DEFAULT_RHO: object

    @abc.abstractmethod
    def build(self, X, Y):
        """(`LearnerModel`, prepared examples, labels) from training inputs X and labels Y,
        validated. The learners call it on the first example of the training set, after
        `settled`: what the model needs from all the labellings comes from `summary`."""

    def summary(self, Y):
        """What the family must know of the labellings Y of a part of the training set
        before it builds its model (picklable: computed where the part lives); None:
        nothing. `settled` merges the parts'."""
        return None

    def settled(self, summaries):
        """The family with the options that the training set fixes (`summary` of each
        part) set; this family when none."""
        return self

    def rho(self, entropy, rho):
        """The ρ the built model's ``entropy`` and ``marginals`` take for the learner's
        ``entropy`` and ``rho`` (1.0 for "bethe"), checked against `RHO`."""
        p = check_params({"entropy": ENTROPY, "rho": self.RHO}, entropy=entropy, rho=rho)
        return entropy_rho(p["entropy"], p["rho"], self.DEFAULT_RHO)


class LearnerModel(abc.ABC):
    """A parametric family of structured outputs, linear in the parameters w (length
    ``dim``): θ = Φ w per example. Examples are the model's own prepared inputs (``check``
    turns user inputs into them)."""

    dim = None

    @abc.abstractmethod
    def check(self, X):
        """Validate inputs X against this model; the list of prepared examples."""

    @abc.abstractmethod
    def prepare(self, X, Y, first=0):
        """(prepared examples, labels) of training inputs X and labellings Y, validated
        (errors name them X[first], X[first + 1], ...: their place in the training set)."""

    def exact(self, ex):
        """Whether the decoder of example ``ex`` is exact."""
        return self.decoder(ex).exact

    @abc.abstractmethod
    def scores(self, ex, w):
        """θ = Φ w, the flat scores of example ``ex`` (float64, its model's layout) for
        the parameters ``w`` (float64[dim])."""

    @abc.abstractmethod
    def features(self, ex, mu):
        """Φᵀμ, the expected features under flat marginals μ (the adjoint of ``scores``)."""

    @abc.abstractmethod
    def truth(self, ex, y):
        """The vertex μ(y) of the labelling (or matching) ``y``: the empirical marginals
        the learners match in expectation (MLE-Struct eq. 4)."""

    @abc.abstractmethod
    def start(self, ex):
        """A fresh start point τ⁰ (float64 array) inside the example's polytope."""

    @abc.abstractmethod
    def decoder(self, ex):
        """The `VertexDecoder` of the example (the learners make one for each call: it
        holds buffers of the example's size and no state they rely on)."""

    @abc.abstractmethod
    def entropy(self, ex, rho):
        """The `BlockEntropy` of the example for ``rho`` (`ModelFamily.rho`)."""

    @abc.abstractmethod
    def hamming(self, ex, y):
        """The flat vector a with <a, μ(y')> the normalised Hamming loss of y' against
        ``y`` (the SSVM's loss-augmented scores add it)."""

    @abc.abstractmethod
    def marginals(self, examples, w, rho, tol, executor=None):
        """Marginals of each example under w with entropy weights ``rho``, FW gap <= tol."""


def run_tasks(executor, fn, *columns):
    """[fn(*row) for row in zip(*columns)], on ``executor`` when given (results in order;
    a dask client runs them on its ``get_executor()``)."""
    if executor is None:
        return [fn(*row) for row in zip(*columns)]
    client = dask_client(executor)
    if client is not None:
        executor = client.get_executor()
    return list(executor.map(fn, *[list(c) for c in columns]))
