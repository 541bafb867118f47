"""Ctrl-C at random moments (issue 12): ``--runs`` subprocesses each run
``barrier_fw(random_grid(100, coupling=4, seed=0), oracle="trws")`` and get SIGINT a random
1-25 s after the model is built; each must print an interrupted result and exit 0.

    python bench/sigint.py [--runs 20] [--seed 0]
"""
import argparse
import os
import signal
import subprocess
import sys
import time

import numpy as np

_SCRIPT = """
import time, fwcore
m = fwcore.random_grid(100, coupling=4, seed=0)
print("ready", flush=True)
r = fwcore.barrier_fw(m, oracle="trws")
print("RESULT", r.status.value, r.log_z_upper, r.certified, flush=True)
"""


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    delays = np.sort(np.random.default_rng(args.seed).uniform(1.0, 25.0, args.runs))
    ok = 0
    for delay in delays:
        proc = subprocess.Popen([sys.executable, "-c", _SCRIPT], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        proc.stdout.readline()
        time.sleep(delay)
        sent = time.perf_counter()
        os.kill(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=120)
        after = time.perf_counter() - sent
        last = (out.strip().splitlines() or [""])[-1]
        good = proc.returncode == 0 and last.startswith("RESULT interrupted")
        ok += good
        print(f"SIGINT at {delay:5.1f} s: exit {proc.returncode}, {after:.2f} s after the "
              f"signal, {last or err.strip().splitlines()[-1]}", flush=True)
    print(f"{ok}/{args.runs} returned an interrupted result")


if __name__ == "__main__":
    main()
