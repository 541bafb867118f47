"""The learners' memory per training example in their own process (issue 40): SSVM-BCFW and
MLE-BCFW fitted for one pass, serially, on N and 3N generated 100x100 segmentation images
held in lists, each fit in a fresh process; prints the peak resident memory (VmHWM) above
what the images themselves take, and its slope per image.

    python bench/learn_memory.py [--n 20] [--size 100]
    PYTHONPATH=<a checkout of an older commit> python bench/learn_memory.py   # to compare
"""
import argparse
import json
import subprocess
import sys

CHILD = """
import json, os, sys
os.environ["OPENBLAS_NUM_THREADS"] = "1"
import fwcore
from fwcore.learn import CRF, SSVM, MLEStruct
from fwcore.learn.datasets import segmentation_images
from fwcore.learn.features import segmentation_features
def status(key):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith(key))
name, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
images, masks = segmentation_images(n, size, seed=0)
X, Y = [segmentation_features(im) for im in images], [m.ravel() for m in masks]
del images
data = status("VmRSS:")
learner = (SSVM(reg=1e6, model=CRF(oracle="qpbo"), max_iter=1, tol=0.0) if name == "ssvm" else
           MLEStruct(reg=0.005 * n * size * size, rho=0.5, model=CRF(oracle="qpbo"), max_iter=1,
                     tol=0.0))
learner.fit(X, Y)
print(json.dumps({"fwcore": os.path.dirname(fwcore.__file__),
                  "above_data": status("VmHWM:") - data}))
"""


def fit(name, n, size):
    out = subprocess.run([sys.executable, "-c", CHILD, name, str(n), str(size)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=20)
    parser.add_argument("--size", type=int, default=100)
    args = parser.parse_args(argv)
    print("learner  peak above the data: N images, 3N images  per image")
    for name in ("ssvm", "mle"):
        small, large = fit(name, args.n, args.size), fit(name, 3 * args.n, args.size)
        slope = (large["above_data"] - small["above_data"]) / (2 * args.n)
        a, b = small["above_data"] / 2**20, large["above_data"] / 2**20
        print(f"{name:7s}  {a:7.1f} MiB, {b:7.1f} MiB  {slope / 2**20:6.2f} MiB  "
              f"({small['fwcore']})", flush=True)


if __name__ == "__main__":
    main()
