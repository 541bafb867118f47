"""Learning to match point sets (MLE-Struct Sec. 4.1): MLEStruct (Bethe) and SSVM on
bipartite matchings with pairwise features −(p_i − q_j)² per coordinate; test Hamming error
and the learned marginals' confidence. Runs in a few seconds.

    python python/learn_matching.py [--plot FILE]

``--plot`` saves MLEStruct's marginal matrix P(i matched to j) for the first test pair,
with the true mates marked (needs the ``plot`` extra).
"""
import argparse

import numpy as np

from fwcore.learn import MLEStruct, SSVM
from fwcore.learn.datasets import noisy_point_matching

N_POINTS = 10


def save_marginals(path, P, mates):
    """The marginal matrix as an image, the true mate of each row circled."""
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(4.6, 3.8))
    image = ax.imshow(P, cmap="viridis", vmin=0.0, vmax=1.0)
    ax.scatter(mates, np.arange(len(mates)), s=120, facecolors="none", edgecolors="red")
    ax.set_xlabel("point j of the second set")
    ax.set_ylabel("point i of the first set")
    ax.set_title("MLEStruct (Bethe): P(i matched to j); circles: true mates", fontsize=9)
    fig.colorbar(image, ax=ax)
    fig.savefig(path, dpi=90, bbox_inches="tight")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--plot", metavar="FILE", help="save the learned marginal matrix")
    args = p.parse_args(argv)
    X, Y = noisy_point_matching(N_POINTS, seed=0)
    Xt, Yt = noisy_point_matching(N_POINTS, seed=1)
    learners = {"MLEStruct (Bethe)": MLEStruct(reg=0.01, entropy="bethe", model="bipartite",
                                               max_iter=30),
                "SSVM": SSVM(reg=0.01, model="bipartite", max_iter=30)}
    for name, learner in learners.items():
        learner.fit(X, Y)
        err = np.mean([np.mean(p != y) for p, y in zip(learner.predict(Xt), Yt)])
        print(f"{name:18s} coef={np.round(learner.coef_, 2)}  test Hamming error={err:.3f}")
    P = learners["MLEStruct (Bethe)"].predict_marginals(Xt[:1])[0]
    print("marginal of the true mate, first test pair:",
          np.round(P[np.arange(N_POINTS), Yt[0]], 3))
    if args.plot:
        save_marginals(args.plot, P, Yt[0])


if __name__ == "__main__":
    main()
