"""Learning to match point sets (MLE-Struct Sec. 4.1): MLEStruct (Bethe) and SSVM on
bipartite matchings with pairwise features −(p_i − q_j)² per coordinate; test Hamming error
and the learned marginals' confidence. Runs in a few seconds."""
import numpy as np

from fwcore.learn import MLEStruct, SSVM
from fwcore.learn.datasets import noisy_point_matching


if __name__ == "__main__":
    X, Y = noisy_point_matching(10, seed=0)
    Xt, Yt = noisy_point_matching(10, seed=1)
    for name, model in (("MLEStruct (Bethe)", MLEStruct(reg=0.01, rho="bethe", model="bipartite", max_iter=30)),
                        ("SSVM", SSVM(reg=0.01, model="bipartite", max_iter=30))):
        model.fit(X, Y)
        err = np.mean([np.mean(p != y) for p, y in zip(model.predict(Xt), Yt)])
        print(f"{name:18s} coef={np.round(model.coef_, 2)}  test Hamming error={err:.3f}")
    P = MLEStruct(reg=0.01, rho="bethe", model="bipartite", max_iter=30).fit(X, Y).predict_marginals(Xt[:1])[0]
    print("marginal of the true mate, first test pair:", np.round(P[np.arange(10), Yt[0]], 3))
