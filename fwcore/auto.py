"""Every automatic choice fwcore makes, beside its measured thresholds and why:

- `exact_method`: `fwcore.exact_inference` / `fwcore.exact_map` with method="auto";
- `infer_method`: the method `fwcore.infer` runs (method="auto" / "approximate"), with
  `infer_exact_method`: its exact shortcut; `barrier_fw_oracle`: the oracle Barrier FW
  calls;
- `exact_oracle`: the oracle "exact" names for a model, and `auto_oracle`: the one "auto"
  names (`fwcore.resolve_oracle`, so `infer_map`, the learners and the CLI);
- `portfolio_members`: the members of the "portfolio" oracle by default;
- `choose_marginals`: which marginals a weighted mini-bucket run returns (its beliefs,
  its importance samples', or loopy BP's);
- `TIME_SHARES`: how a run splits its ``max_time`` between its parts.

The choices read the model's structure and the cost of exact methods (`EliminationPlan`'s
table entries, `binary_cover`'s size); they import nothing that imports them back.
"""
import math

import numpy as np

from .elimination import EliminationPlan
from .model import binary_cover

__all__ = ["TIME_SHARES", "PHASE_COSTS", "SLOW_CORE", "choose_marginals", "REFEREE_ESS",
           "exact_method", "infer_method",
           "infer_exact_method", "barrier_fw_oracle",
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


# -- the marginals past exact reach (`fwcore.weighted_mini_bucket`, issue 36) ---------------

#: the samples referee only from this effective sample size on: below it their error
#: estimate (`fwcore.marginals.estimate.Tally.noise`) is too low (a product of 50 binary
#: variables, ESS 27: estimated .065 for a measured .097; ESS 62: .044 for .050; ESS
#: 1100-2000: within 3%)
REFEREE_ESS = 100


def choose_marginals(candidates, sampled, noise, ess, node_off):
    """The name of the marginals a run returns among ``candidates`` ({name: flat node
    marginals}, the decomposition's beliefs first) and its importance samples'
    (``sampled``, flat, with their estimated error ``noise`` in ζ and effective sample
    size ``ess``; None: no samples), by their distance to the samples, never to the
    answers: the samples' marginals are unbiased (as the samples grow) and their error
    ``noise`` is known, so a candidate's distance to them, d(c) = mean over variables of
    ½‖c_i − ŝ_i‖₁, ranks the candidates' errors (the samples' error adds about as much to
    each: a candidate of error e is at distance about sqrt(e² + noise²)), so its error is
    estimated as sqrt(d² − noise²) and the samples' as their noise; the least wins (the
    first among equals). The first candidate when there are no samples or ``ess`` <
    `REFEREE_ESS`. Measured at 1 s and 10 s
    (bench/marginal_rule.py; ζ of beliefs / samples / loopy BP / TRBP): CSP_11 .043 /
    .029 / .029 / .156 (ESS 114), linkage_14 .0135 / .0067 / .0055 / .063 (ESS 2823),
    ObjectDetection_11 .0075 / .0133 / .0135 / .057 (ESS 5225), linkage_12 .020 / .063 /
    .042 / .077 (ESS 26, below the referee's)."""
    names = list(candidates)
    if sampled is None or noise is None or ess < REFEREE_ESS:
        return names[0]
    starts = np.asarray(node_off[:-1], dtype=np.intp)
    scores = {name: float(0.5 * np.add.reduceat(np.abs(mu - sampled), starts).mean())
              for name, mu in candidates.items()}
    errors = {name: math.sqrt(max(d * d - noise * noise, 0.0)) for name, d in scores.items()}
    errors["samples"] = noise
    return min(errors, key=lambda name: (errors[name], name != names[0]))


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
#: past those, on models without -inf edge tables: toulbar2 when installed (3x faster per
#: call than HiGHS on the paper's 5x5 grids), else the integer program (HiGHS, always
#: there)
_EXACT_SEARCH = ("toulbar2", "ilp")
#: the oracles cheap enough to be "auto"'s answer whatever the model
_CHEAP = ("tree", "bruteforce", "elimination", "cover")


def _hard(model):
    """Whether an edge table forbids pairs of states (-inf), as the pairwise reduction of
    every `FactorGraph` with a factor over three or more variables does."""
    return bool(np.isneginf(model.theta[model.node_off[-1]:]).any())


def exact_oracle(model, installed):
    """The name of the cheapest exact oracle for ``model``: 'tree' on a forest,
    'bruteforce' up to AUTO_BRUTEFORCE_STATES joint states, 'elimination' when the model
    has at most AUTO_ELIMINATION_VARS variables and its tables fit AUTO_ELIMINATION_BYTES,
    unless 'cover' (a binary vertex cover of at most AUTO_COVER_VARS variables: 2^k Gray
    steps of cost ~ its degree) costs fewer table entries (rbm_20: 0.19 s a call,
    elimination 0.47 s), else 'cover' when it fits; past those, AND/OR search ('aobb') on
    a model with -inf edge tables or factors over three or more variables (`auto_oracle`
    says why), else the first of _EXACT_SEARCH whose backend is ``installed(name)`` (the
    registry knows: `fwcore.oracles.exact_choice`)."""
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
    if _hard(model):
        return "aobb"
    return next(name for name in _EXACT_SEARCH if installed(name))


def auto_oracle(model, installed):
    """The oracle "auto" names: `exact_oracle` when it is cheap (tree, brute force,
    elimination, cover); else on a model with -inf edge tables (factors over three or
    more variables, constraints) AND/OR branch and bound with the mini-bucket heuristic
    ("aobb", `fwcore.oracles.search`): one-variable moves cannot go from one feasible
    labelling to another there, so local search and message passing decode -inf, and
    the search both finds and proves. Measured by bench/map_search.py at 20 s (wall, 2
    busy cores, one run, toulbar2 1.4 and Merlin's jglp at i-bound 10 beside it) on the
    10 models of uai2014-higher-order and uai2014-beyond with their evidence: optimal and
    proven on 8 (as toulbar2; linkage_14 in 4.5 s, ObjectDetection_13/16 in 0.4-0.5 s),
    linkage_12 / linkage_13 -307.1 / -283.1 against toulbar2's -304.2 / -278.0 (neither
    proven) and jglp's -326.4 / -304.7; the integer program chosen before scored -501 on
    linkage_12 and proved nothing. Else the approximate "portfolio", ahead of toulbar2
    at equal time on pairwise grids (bench/benchmarks/map_anytime.py)."""
    name = exact_oracle(model, installed)
    if name in _CHEAP:
        return name
    return "aobb" if _hard(model) else "portfolio"


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
#: - "wmb/order search": weighted mini-bucket's search for an elimination order takes at
#:   most 0.1 of the time left, the first order found before the first pass and the rest
#:   of the search after it, starting no new try once its share is spent
#:   (`fwcore.marginals.wmb`);
#: - "wmb/lower bound, least" and "wmb/lower bound, most": weighted mini-bucket's passes
#:   leave between 0.05 and 0.35 of the time left to the lower bound (block mean field on
#:   a pairwise model, given the predicted time of 8 sweeps within these; naive mean field
#:   from the marginals and the best labelling otherwise): on 20x20 grids its gap per
#:   variable is 0.026 with 4-level strips, against naive mean field's 0.072
#:   (`fwcore.marginals.wmb.BlockMeanField`);
#: - "trbp/matrix-tree rho, most": `fwcore.trbp`'s default rho is the matrix-tree rule when
#:   its cost (about 2e-8 E^1.5 s: 1.4 s at E = 1.8e5, 52 s and 2.8 GB at 2e6 on 2 cores)
#:   is at most 0.1 of max_time (and 0.5 s: Ctrl-C cannot stop it), else balanced
#:   spanning trees drawn within that 0.1;
#: - "portfolio/first annealing run", "portfolio/later annealing runs": an anytime call of
#:   the portfolio gives its first annealing run 0.5 of the time left (annealing improves
#:   with the length of its cooling schedule), later runs 0.125 of the first one's;
#: - "ilp and lp/HiGHS": HiGHS gets 0.8 of a call's time limit (scipy's set-up and HiGHS's
#:   coarse time checks take the rest: measured +0.8 s past a 5 s limit on a 100x100 grid
#:   ILP);
#: - "aobb/order search": AND/OR search's choice of an elimination order (its pseudo-tree
#:   and mini-bucket tree) starts no new try after 0.1 of the time left
#:   (`fwcore.oracles.search.PseudoTree`);
#: - "aobb/mini-bucket bound": its heuristic takes the largest table cap whose weighted
#:   mini-bucket pass is predicted to take at most 0.2 of the time limit;
#: - "wmb/sampling": after the passes, importance sampling from the last pass's
#:   proposal (`fwcore.marginals.wmb._Run.sample`) until 0.1 of max_time is left for the
#:   phases after it (the time the passes leave comes too): ObjectDetection_13 at 10 s
#:   drew 22k samples (effective 20k) for a 95% interval 0.013 nats wide, Promedus_17 and
#:   Pedigree_11 (2^20-entry stages, 10 s) 0.006 nats, a 30x30 grid (couplings U[−1, 1],
#:   10 s) 0.25 nats where the certified interval is 8.0 wide, a 100x100 one 59 against
#:   174; linkage_12 (2600 samples/s, effective 26 of 26k) 10 nats: the weights' bound U
#:   is 13.7 nats above log Z there and the interval needs about e^(U − log Z) samples.
#:   The passes lose that time: a 300x300 grid's upper bound at 20 s rose 24 nats (0.02%);
#: - "wmb/loopy bp": then loopy BP, a candidate for the marginals when the samples can
#:   referee (`choose_marginals`), until 0.05 is left: it converged or ran its sweeps in
#:   0.03-1.1 s on the UAI models (linkage 0.6-1.1 s);
#: - "wmb/lower bound, mixed": then, on a model whose tables are finite, the lower bound of
#:   mixed signs (`fwcore.marginals.wmb._Run.mixed_lower`) until the mean field's share is
#:   left (on a pairwise model whose block mean field is planned, that one takes it): on
#:   Grids_15 at 2^12 entries a mini-bucket 100 passes (3.1 s) reach log Z − 2.62 where
#:   the upper bound's tree gives + 4.33; at 2^16, 40 passes (11 s) − 3.04 against + 1.80;
#:   on random factor graphs of 9 variables at i-bound 1 (tests/test_wmb_estimate.py)
#:   0.58 nats below on average against 2.07 above;
#: - "wmb/lower bound, conditioning": on a model with zeros (where the bound of mixed
#:   signs is −inf), after loopy BP, the lower bound by conditioning
#:   (`fwcore.marginals.wmb._Run.condition_lower`: the exact sums of the cutset
#:   assignments the samples drew) until mean field's share less 0.05 is left: it takes
#:   its 0.05 from mean field's least share (none when block mean field is planned: that
#:   does better on ObjectDetection), so that the passes, the samples and loopy BP keep
#:   their time (naive mean field from the best labelling added nothing on linkage_12,
#:   13, 14 at 60 s: their lower bounds were the labellings' scores). Measured in pairs
#:   with main on a loaded machine, `infer(m, max_time=60)`, log Z − lower (main's):
#:   linkage_12 8.85 (148.7), linkage_13 3.42 (114.1), linkage_14 0.27 (62.3), the upper
#:   bounds as main's within the machine's noise (10.83 / 10.83, 5.24 / 5.47, 1.69 /
#:   1.49); at 10 s 18.8, 7.9, 3.9 (148.4, 114.4, 123.6), upper bounds equal. Taken from
#:   the passes instead (0.15), the upper bounds were looser in pairs (linkage_12 at 60
#:   s 12.38 against 11.94; at 10 s 19.6 against 15.2, though main alone ranges 13.3 to
#:   17.9 there); taken from the samples, ζ rose (linkage_14 at 60 s .0044 to .0076);
#: - "conditioned/mean field": each branch of `fwcore.conditioned` leaves 0.1 of its
#:   time to its mean-field lower bounds (given only what the branch's bound left, they
#:   got no sweep after a bound that used all its time: ObjectDetection_13 at 60 s, 78.5
#:   nats below log Z instead of 2.45).
#: what the parts of a run whose time is not a share are predicted to cost, and the
#: margin that keeps the prediction when the process gets a third of a core (two copies
#: and a busy loop on 2 cores), so that the call still ends by ``max_time``:
#:
#: - "wmb/result": seconds per entry of μ (the node and edge marginals, and a factor
#:   graph's factor beliefs) to build weighted mini-bucket's result after its phases,
#:   which end this long (times `SLOW_CORE`) before ``max_time``
#:   (`fwcore.marginals.wmb._Run.result`): on a Potts-8 1000x1000 grid (μ 1.36e8
#:   entries, 1.1 GB) the result took 0.5 s at load 4 once μ became the beliefs' own
#:   array (2.4 s with the copy before), 0.2 s for uniform marginals (two fills); so 2.0 s
#:   are kept at Potts-8 10^6, 0.15 s at a binary 10^6 grid. The phases before it poll
#:   their deadline in their kernels, each every few milliseconds of work; what they do
#:   outside kernels is under a second at 10^6 (measured per phase: their progress lines).
#:   Before this rule the Potts-8 10^6 call ended at 62.6-63.7 s at load 1-4 (the result
#:   and the mean field after the phases' end) and 68.4 s at load 4-8.
SLOW_CORE = 3.0
PHASE_COSTS = {
    "wmb/result": 5e-9,
}
TIME_SHARES = {
    "portfolio/first annealing run": 0.5,
    "portfolio/later annealing runs": 0.125,
    "ilp and lp/HiGHS": 0.8,
    "trbp/matrix-tree rho, most": 0.1,
    "barrier-fw/tree-decomposition bound": 0.2,
    "wmb/order search": 0.1,
    "wmb/lower bound, least": 0.05,
    "wmb/lower bound, most": 0.35,
    "wmb/sampling": 0.1,
    "wmb/loopy bp": 0.05,
    "wmb/lower bound, mixed": 0.2,
    "wmb/lower bound, conditioning": 0.05,
    "conditioned/mean field": 0.1,
    "aobb/order search": 0.1,
    "aobb/mini-bucket bound": 0.2,
}
