"""Every automatic choice fwcore makes, beside its measured thresholds and why:

- `exact_method`: `fwcore.exact_inference` / `fwcore.exact_map` with method="auto";
- `infer_method`: the method `fwcore.infer` runs (method="auto" / "approximate"), with
  `infer_exact_method`: its exact shortcut; `barrier_fw_oracle`: the oracle Barrier FW
  calls;
- `exact_oracle`: the oracle "exact" names for a model, and `auto_oracle`: the one "auto"
  names (`fwcore.resolve_oracle`, so `infer_map`, the learners and the CLI);
- `portfolio_members`: the members of the "portfolio" oracle by default;
- `TIME_SHARES`: how a run splits its ``max_time`` between its parts.

The choices read the model's structure and the cost of exact methods (`EliminationPlan`'s
table entries, `binary_cover`'s size); they import nothing that imports them back.
"""
import math

import numpy as np

from .elimination import EliminationPlan
from .model import binary_cover

__all__ = ["TIME_SHARES", "exact_method", "infer_method", "infer_exact_method", "barrier_fw_oracle",
           "exact_oracle", "auto_oracle", "portfolio_members", "fits_bruteforce",
           "AUTO_BRUTEFORCE_STATES",
           "AUTO_EXACT_ENTRIES", "AUTO_EXACT_BYTES", "AUTO_ELIMINATION_VARS",
           "AUTO_ELIMINATION_BYTES", "AUTO_COVER_VARS", "PORTFOLIO_MEMBERS"]

# -- exact inference ------------------------------------------------------------------------

#: method="auto" and the "exact" oracle enumerate state spaces up to this size
AUTO_BRUTEFORCE_STATES = 2**12


def fits_bruteforce(model):
    """At most AUTO_BRUTEFORCE_STATES joint states (counted in log2: the exact product of a
    million cards is a slow million-bit integer)?"""
    return float(np.log2(model.card.astype(np.float64)).sum()) <= math.log2(AUTO_BRUTEFORCE_STATES)


def exact_method(model, tree=True):
    """method="auto" of `fwcore.exact_inference` (and of `fwcore.exact_map`, which has no
    ``tree``): "bruteforce" up to AUTO_BRUTEFORCE_STATES joint states, "tree" on a forest
    (two-pass sum-product, linear in the model's size), else "elimination"."""
    if fits_bruteforce(model):
        return "bruteforce"
    return "tree" if tree and model.is_forest() else "elimination"


# -- infer's method (`fwcore.infer`) -------------------------------------------------------


def infer_method(model, method, max_time):
    """The registered method `fwcore.infer` runs for ``method`` on ``model`` (a
    `PairwiseMRF` or a `FactorGraph`) with ``max_time`` seconds left: a registered name as
    given; "approximate": "wmb"; "auto": "exact" where `infer_exact_method` finds exact
    marginals cheap (always on a model without variables), else "wmb". The options a
    user gives never change the choice (an option the chosen method does not take is a
    TypeError at `fwcore.infer`).

    Why "wmb" past exact reach (bench/beyond.py --held-out, max_time=60, 2 busy cores: the
    5 models of uai2014-beyond and 14 held-out UAI 2014 models): marginal error ζ below
    both loopy BP's and TRBP's on 17 of 19 (a tie on DBN_14, linkage_14 .0074 against
    loopy BP's .0055), exact on 12; ObjectDetection_13/16 .0036 / .0002 against loopy
    BP's .022 / .005, linkage_12/13 .021 / .015 against .042 / .105; bound − log Z at most
    Merlin's WMB at the same wall time on 19 of 19 (ObjectDetection_13 +0.08 against
    +0.20, linkage_12/13 +10.1 / +5.1 against +25 / +31.6, linkage_14 +1.5 against +7.2),
    and below TRBP's (uncertified) TRW value wherever that is above log Z. Barrier FW's
    marginals were the worst of these before (ζ .15 to .34 on uai2014-beyond).
    Conditioning (`fwcore.marginals.condition`) wrapped around it loosened the bound at
    equal time on linkage and ObjectDetection (more branches, less time each), so it is
    not part of the default."""
    if method == "approximate":
        return "wmb"
    if method != "auto":
        return method
    pairwise = getattr(model, "reduced", model)
    return "exact" if infer_exact_method(pairwise, max_time) else "wmb"


# -- infer's exact shortcut (`fwcore.infer`, method="auto") ------------------------------

#: method="auto" returns exact marginals when variable elimination takes at most this many
#: table entries and AUTO_EXACT_BYTES of memory, or the model has at most
#: AUTO_BRUTEFORCE_STATES joint states, or is a forest. An entry costs about 30 ns
#: (_SECONDS_PER_ENTRY, the `fwcore._elim` kernel): 20x20 binary grid 1.5e8 entries, 4 s
#: (1.2-1.7x TRBP), where Barrier FW with the portfolio took longer for marginals 0.1 off;
#: its stored messages take 600 MB
AUTO_EXACT_ENTRIES = 2e8
AUTO_EXACT_BYTES = 2**30
_SECONDS_PER_ENTRY = 3e-8


def infer_exact_method(model, max_time):
    """Whether `fwcore.infer` (method "auto") answers ``model`` (pairwise) exactly: brute
    force, tree, or elimination within AUTO_EXACT_ENTRIES table entries (and half of
    ``max_time``) and AUTO_EXACT_BYTES. A model without variables is answered exactly (log
    Z = 0: there is nothing to optimise)."""
    if model.n_vars == 0 or exact_method(model) != "elimination":
        return True
    budget = AUTO_EXACT_ENTRIES
    if max_time is not None:
        budget = min(budget, 0.5 * max_time / _SECONDS_PER_ENTRY)
    try:  # refuses a model over the budget quickly (`fwcore.elimination.EliminationPlan`)
        plan = EliminationPlan(model, min(8 * budget, AUTO_EXACT_BYTES))
    except ValueError:
        return False
    return plan.work <= budget


def barrier_fw_oracle(oracle, domain):
    """The oracle spec Barrier FW resolves past the exact shortcut: over L ("local"),
    "auto" and "exact" are the local-polytope LP ("lp"); over M, "auto" is the approximate
    "portfolio" (an exact MAP call would cost about as much as exact inference, and
    Barrier FW makes dozens); anything else as given."""
    if isinstance(oracle, str) and oracle in ("auto", "exact"):
        if domain == "local":
            return "lp"
        if oracle == "auto":
            return "portfolio"
    return oracle


# -- the exact oracle for a model ("exact", and "auto" where it is cheap) --------------------

#: "exact" uses variable elimination up to this many variables and table bytes
AUTO_ELIMINATION_VARS = 1000
AUTO_ELIMINATION_BYTES = 2**26
#: "exact" enumerates a binary vertex cover of up to this many variables (2^22 Gray steps)
AUTO_COVER_VARS = 22
#: past those, in order of preference: toulbar2 when installed (3x faster per call than
#: HiGHS on the paper's 5x5 grids), else the integer program (HiGHS, always there)
_EXACT_SEARCH = ("toulbar2", "ilp")


def exact_oracle(model, installed):
    """The name of the cheapest exact oracle for ``model``: 'tree' on a forest,
    'bruteforce' up to AUTO_BRUTEFORCE_STATES joint states, 'elimination' when the model
    has at most AUTO_ELIMINATION_VARS variables and its tables fit AUTO_ELIMINATION_BYTES,
    unless 'cover' (a binary vertex cover of at most AUTO_COVER_VARS variables: 2^k Gray
    steps of cost ~ its degree) costs fewer table entries (rbm_20: 0.19 s a call,
    elimination 0.47 s), else 'cover' when it fits, else the first of _EXACT_SEARCH whose
    backend is ``installed(name)`` (the registry knows: `fwcore.oracles.exact_choice`)."""
    if model.is_forest():
        return "tree"
    if fits_bruteforce(model):
        return "bruteforce"
    cover = binary_cover(model)
    cover_work = np.inf
    if cover is not None and cover[0].size <= AUTO_COVER_VARS:
        cover_work = 2.0**cover[0].size * max(1.0, float(np.mean(
            np.diff(model.adj_start)[cover[0]]))) if cover[0].size else 1.0
    if model.n_vars <= AUTO_ELIMINATION_VARS:
        try:  # refuses a model over the limit quickly (`fwcore.elimination.EliminationPlan`)
            if EliminationPlan(model, AUTO_ELIMINATION_BYTES).work <= cover_work:
                return "elimination"
        except ValueError:
            pass
    if np.isfinite(cover_work):
        return "cover"
    return next(name for name in _EXACT_SEARCH if installed(name))


def auto_oracle(model, installed):
    """The oracle "auto" names: `exact_oracle` when it is cheap (tree, brute force,
    elimination, cover) or when an edge table forbids pairs of states (-inf, as in a
    `FactorGraph`'s reduction: one-variable moves cannot go from one feasible labelling
    to another, so local search and message passing decode -inf there), else the
    approximate "portfolio"."""
    name = exact_oracle(model, installed)
    hard = np.isneginf(model.theta[model.node_off[-1]:]).any()
    return "portfolio" if name in _EXACT_SEARCH and not hard else name


# -- the portfolio's members -----------------------------------------------------------------

#: built in (no extra), in order of preference: qpbo (binary models only: persistent
#: labels, exact on submodular models, the roof-dual bound), trws (a certified bound on
#: any model), icm (cheap local moves from the unary argmax)
PORTFOLIO_MEMBERS = ("qpbo", "trws", "icm")


def portfolio_members(model):
    """The default members of the "portfolio" oracle for ``model``: PORTFOLIO_MEMBERS,
    without qpbo unless every variable is binary."""
    binary = bool((model.card == 2).all())
    return [m for m in PORTFOLIO_MEMBERS if m != "qpbo" or binary]


# -- time shares ---------------------------------------------------------------------------

#: how runs split the time they have left (`fwcore.loop.Deadline.share`), each beside the
#: measurement that set it:
#:
#: - "barrier-fw/tree-decomposition bound": with an approximate oracle, Barrier FW's FW
#:   steps stop at 1 − 0.2 of max_time and `fwcore.marginals.trw_dual.trw_dual_bound`
#:   minimises the certified tree-decomposition bound in the rest, for as long again as
#:   the run at most (`fwcore.marginals.barrier_fw`: its least bound against its time on
#:   random grids is measured there);
#: - "wmb/order search": weighted mini-bucket's search for an elimination order starts
#:   no new try after 0.1 of the time left (so that the first pass ends within a short
#:   max_time; `fwcore.marginals.wmb`);
#: - "wmb/mean field": weighted mini-bucket's passes stop at 1 − 0.05 of the time left,
#:   the rest raises the lower bound by mean field from the best labelling and the
#:   marginals;
#: - "conditioned/mean field": each branch of `fwcore.conditioned` leaves 0.1 of its
#:   time to its mean-field lower bounds (given only what the branch's bound left, they
#:   got no sweep after a bound that used all its time: ObjectDetection_13 at 60 s, 78.5
#:   nats below log Z instead of 2.45).
TIME_SHARES = {
    "barrier-fw/tree-decomposition bound": 0.2,
    "wmb/order search": 0.1,
    "wmb/mean field": 0.05,
    "conditioned/mean field": 0.1,
}
