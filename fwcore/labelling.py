"""Labellings of a model that every method makes (DESIGN.md "Marginal methods behind one
door": model-level services live in the model layer): the best node states of a score
vector (`node_argmax`) and the repair of a labelling that takes an impossible state
(`feasible_labelling`), through which every decoded labelling of the library passes."""
import numpy as np

from . import _kernels
from .checks import finite_penalty

__all__ = ["node_argmax", "feasible_labelling"]


def node_argmax(model, mu):
    """Per variable, the state with the largest node marginal (the first on ties, as
    `numpy.argmax`; state 0 when all are -inf), vectorised over the variables."""
    if model.n_vars == 0:
        return np.zeros(0, dtype=np.int64)
    starts = model.node_off[:-1]
    values = np.asarray(mu[:model.node_off[-1]], dtype=np.float64)
    var = np.repeat(np.arange(model.n_vars), model.card)
    top = np.maximum.reduceat(values, starts)
    state = np.arange(values.size) - starts[var]
    return np.minimum.reduceat(np.where(values == top[var], state, values.size),
                               starts).astype(np.int64)


#: ICM sweeps after `feasible_labelling`'s decoder
_REPAIR_SWEEPS = 100


def feasible_labelling(model, scores, x, penalised=None):
    """``x`` (as int32) when it scores finite under ``scores`` (``model``'s flat layout);
    else the better of two repairs, feasible whenever arc consistency, maintained variable
    by variable, finds a labelling (always on forests): ICM from x on ``penalised``
    (``scores`` with -inf replaced by `fwcore.checks.finite_penalty`, computed when None:
    every move off a -inf entry gains), the repair used before, which keeps more of x but
    finds no feasible labelling where single moves cannot reach one (ICM, annealing and
    the LP decodings on 12x12 plaquette factor graphs); and `fwcore._kernels.ac_decode`
    on the -inf entries of ``scores``, keeping x's states where it can, then the same ICM,
    under which a feasible labelling stays feasible. On a factor graph's reduction the
    user's variables come first: a labelling whose user part is feasible keeps it, and its
    auxiliary variables take the joint states of their scopes. Every decoded labelling of
    the library passes through here (`MapOracle.argmax`,
    `fwcore.lp_relax.regions.Regions.decode`, Ctrl-C in `fwcore.infer_map`)."""
    x = np.array(x, dtype=np.int32)
    if np.isfinite(model.score(x, scores)):
        return x
    penalised = finite_penalty(model, scores, 1.0) if penalised is None else penalised
    local = x.copy()
    _kernels.icm(penalised, model.graph, local, _REPAIR_SWEEPS)
    _kernels.ac_decode(scores, model.graph, x)
    _kernels.icm(penalised, model.graph, x, _REPAIR_SWEEPS)
    return local if model.score(local, scores) >= model.score(x, scores) else x
