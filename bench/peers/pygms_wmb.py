"""pyGMs' weighted mini-bucket bound and its importance-sampling estimate (the peer of
issue 36), run in pyGMs' own virtual environment, printed as one JSON line.

    python3 -m venv /tmp/pygms-venv && /tmp/pygms-venv/bin/pip install pygms
    /tmp/pygms-venv/bin/python bench/peers/pygms_wmb.py M.uai [--evid M.uai.evid]
        [--ibound 10] [--seconds 60]

pyGMs (Ihler's Python toolbox, pure Python over NumPy factors): the model read by
``readUai`` and conditioned on the evidence; ``WMB(model, minfill order, iBound)``; forward
passes with moment matching and weight steps (``msgForward(0.5, 0.1)``, its defaults) and
backward passes while half of ``--seconds`` lasts (its least bound kept); then
``WMB.sample()`` draws from the mini-bucket mixture proposal until ``--seconds`` and the
estimate is log of the mean of F(x)/q(x). Printed: ``log_z_upper`` (natural log), the
estimate, the number of samples and passes, the seconds of each phase, and
``max_log_weight_minus_bound`` (pyGMs normalises each mini-bucket's conditional by its
maximum, not its sum, before mixing, so its weights are not bounded by its bound: no
finite-sample interval is computed from them).
"""
import argparse
import json
import math
import time

import numpy as np
import pygms as gm
from pygms.wmb import WMB


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("model")
    p.add_argument("--evid")
    p.add_argument("--ibound", type=int, default=10)
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    t0 = time.perf_counter()
    np.random.seed(a.seed)
    model = gm.GraphModel(gm.readUai(a.model))
    if a.evid:
        model.condition(gm.readEvidence14(a.evid))
    order, _ = gm.eliminationOrder(model, "minfill")
    wmb = WMB(model, order, iBound=a.ibound)
    built = time.perf_counter()
    bound, passes = math.inf, 0
    while passes == 0 or time.perf_counter() - t0 < a.seconds / 2:
        bound = min(bound, wmb.msgForward(0.5, 0.1))
        wmb.msgBackward()
        passes += 1
    last = wmb.msgForward(0.0, 0.0)          # the proposal's own bound, no step
    sampling = time.perf_counter()
    log_w = []
    while len(log_w) < 2 or time.perf_counter() - t0 < a.seconds:
        x, log_q = wmb.sample()
        config = [x.get(v, 0) for v in model.X]
        log_w.append(model.logValue(config) - log_q)
    log_w = np.array(log_w)
    top = log_w.max()
    estimate = (float(top + math.log(np.mean(np.exp(log_w - top)))) if np.isfinite(top)
                else -math.inf)
    print(json.dumps({"ibound": a.ibound, "log_z_upper": float(min(bound, last)),
                      "log_z_estimate": estimate, "n_samples": int(len(log_w)),
                      "passes": passes, "build_seconds": built - t0,
                      "pass_seconds": sampling - built,
                      "sample_seconds": time.perf_counter() - sampling,
                      "seconds": time.perf_counter() - t0,
                      "max_log_weight_minus_bound": float(top - last)}))


if __name__ == "__main__":
    main()
