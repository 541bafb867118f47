"""Seeded fuzzing of the file readers: mutated valid files for read_uai, read_mar,
read_pr, read_map and read_evid (issue 12).

    python bench/fuzz_readers.py [--n 5000] [--seed 0] [--readers uai,mar,pr,map,evid]

Each mutated file is one to three edits of a valid file (byte flips, truncations,
duplicated spans or tokens, deleted or swapped tokens, numeric edits, huge, tiny and
negative numbers, nan/inf tokens, wrong counts). Each reader runs in its own worker
process, under a memory cap (1 GB above the worker's start) and a time cap (10 s a
file); a worker that dies is a crash on the file it was reading, and a new worker goes on
after it. A file either raises ValueError or parses; one that parses must pass the
reader's invariants (finite values, probabilities in [0, 1] summing to 1, states in
range, −inf only from a written zero, no negative number in the file, what was read
equal to the file's own numbers where that is easy to say, and write -> read giving it
back), else it is a silent misread. File ``i`` of a reader depends only on (seed, reader,
i). Prints one row per reader and examples; exits 1 if anything was found.
"""
import argparse
import decimal
import functools
import math
import os
import random
import re
import resource
import signal
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor

import numpy as np

READERS = ("uai", "mar", "pr", "map", "evid")
MAX_INDEX = 2**31 - 1
MEMORY_CAP = 2**30
TIME_CAP = 10.0
LN10 = math.log(10.0)

BIG = [b"1e400", b"1e308", b"-1e308", b"1e-400", b"-1e-400", b"1e-320", b"4.9e-324",
       b"2.2250738585072014e-308", b"1.7976931348623157e308", b"-1", b"-0", b"-0.5", b"0",
       b"0.0", b"0e-400", b"9" * 20, b"9" * 25, b"134217728", b"2147483647", b"2147483648",
       b"4294967296", b"1e99999999999999999", b"0.000000000000000000001e-300"]
NASTY = BIG + [b"nan", b"NaN", b"inf", b"-inf", b"Infinity", b"-Infinity", b"0x10", b"1_0",
               b"+2", b".", b"e5", b"1.5", b"\xd9\xa3", b"\x00", b"MARKOV", b"MAR", b"PR",
               b"MAP", b"1", b"2", b"3"]

_NUMBER = re.compile(rb"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
_NEGATIVE = re.compile(rb"-[0.]*[1-9]")


# -- valid files and their mutations -----------------------------------------------------

@functools.cache
def base_files(reader):
    """Valid files for ``reader``, as bytes."""
    from fwcore.io import uai
    from fwcore.generators import potts_grid
    from fwcore.model import PairwiseMRF

    if reader == "uai":
        rng = np.random.default_rng(3)
        card, edges = [3, 1, 4, 2, 2], [(2, 0), (3, 2), (1, 0), (0, 3)]
        unary = [rng.normal(size=c) for c in card]
        unary[0][1] = -np.inf
        pair = [rng.normal(size=(card[i], card[j])) for i, j in edges]
        pair[0][3, 1] = -np.inf
        hand = (b"MARKOV\n4\n2 3 2 2\n6\n1 0\n2 1 0\n1 0\n2 0 1\n2 2 1\n1 1\n\n2 0.5 2.0\n"
                b"6\n1 2\n3 4 0 6\n2 4.0 0.25\n6 1 0 0\n3 0 1\n6 1e0 2 3 4 5 0\n3 1 1 .5\n")
        return [_written(uai.write_uai, PairwiseMRF(card, unary, edges, pair)),
                _written(uai.write_uai, potts_grid(2, 2, n_labels=3, seed=1)), hand]
    if reader == "mar":
        return [_written(uai.write_mar, [[0.25, 0.75], [1.0], [0.1, 0.2, 0.7]], first=False),
                b"MAR\n1\n2 2 0.5 0.5 1 1.0\n"]
    if reader == "pr":
        return [_written(uai.write_pr, -12.5 * LN10, first=False), b"PR\n-inf\n",
                b"PR\n1\n3.25e2\n"]
    if reader == "map":
        return [_written(uai.write_map, [1, 0, 2, 1], first=False), b"MPE\n1\n3 0 1 1\n"]
    return [_written(uai.write_evid, {0: 1, 3: 2}, first=False), b"1\n1 4 0\n", b"0\n"]


def _written(write, value, first=True):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "f")
        write(value, path) if first else write(path, value)
        with open(path, "rb") as f:
            return f.read()


def _edit_number(rnd, tok):
    """A numeric edit of ``tok``: a wrong count, a scaled or signed copy, a new exponent."""
    if rnd.random() < 0.4:
        return rnd.choice(BIG)
    if re.fullmatch(rb"[0-9]+", tok):
        v = int(tok)
        return str(rnd.choice([v + rnd.randint(-3, 3), v * 2, v * 1000, v + 2**31,
                               -v])).encode()
    return rnd.choice([b"-" + tok, tok + b"0", tok + b"e5", tok + b"e-400", tok + b"e400",
                       tok[:-1] or b"0", b"0" + tok])


def mutate(base, rnd):
    """One to three edits of ``base``; returns (bytes, description)."""
    data, done = bytearray(base), []
    for _ in range(1 if rnd.random() < 0.6 else rnd.randint(2, 3)):
        op = rnd.choice(["flip", "truncate", "dup_span", "delete", "dup_token", "swap",
                         "insert", "replace", "number", "number"])
        toks = bytes(data).split()
        if op in ("flip", "truncate", "dup_span") or not toks:
            k = rnd.randrange(len(data) + 1)
            if op == "flip" and k < len(data):
                data[k] = (rnd.randrange(256) if rnd.random() < 0.5
                           else data[k] ^ (1 << rnd.randrange(8)))
            elif op == "dup_span":
                span = bytes(data[k:k + rnd.randint(1, 20)])
                data[k:k] = span
            else:
                del data[k:]
            done.append(f"{op}@{k}")
            continue
        k = rnd.randrange(len(toks))
        if op == "delete":
            del toks[k]
        elif op == "dup_token":
            toks.insert(k, toks[k])
        elif op == "swap":
            j = rnd.randrange(len(toks))
            toks[k], toks[j] = toks[j], toks[k]
        elif op in ("insert", "replace"):
            new = rnd.choice(NASTY)
            toks[k:k + (op == "replace")] = [new]
        else:
            numeric = [i for i, t in enumerate(toks) if _NUMBER.fullmatch(t)]
            k = rnd.choice(numeric) if numeric else k
            toks[k] = _edit_number(rnd, toks[k])
        done.append(f"{op}@token{k}")
        data = bytearray(rnd.choice([b" ", b"\n", b" \t\n"]).join(toks) + b"\n")
    return bytes(data), " ".join(done)


def mutated(seed, reader, i):
    rnd = random.Random(f"{seed}-{reader}-{i}")
    return mutate(rnd.choice(base_files(reader)), rnd)


# -- invariants of what a reader returns -------------------------------------------------

def misread(reader, out, raw, tmp):
    """Why ``out``, read from the bytes ``raw``, is wrong; None if it is not."""
    from fwcore.io import uai
    from fwcore.model import PairwiseMRF

    toks = raw.split()
    if reader != "pr" and any(_NEGATIVE.match(t) for t in toks):
        return "parsed a file with a negative number"
    back = os.path.join(tmp, "back")
    if reader == "uai":
        if not isinstance(out, PairwiseMRF):
            return f"returned {type(out).__name__}"
        th = out.theta
        if np.isnan(th).any() or np.isposinf(th).any() or th.size != out.dim:
            return "θ has NaN or +inf, or the wrong length"
        why = _differs_from_reference(out, toks)
        if why:
            return why
        try:
            uai.write_uai(out, back)
        except ValueError:  # θ outside exp's range (e.g. from 1e400): write refuses
            return None
        again = uai.read_uai(back)
        same = (np.array_equal(out.card, again.card) and np.array_equal(out.edges, again.edges)
                and np.array_equal(np.isneginf(th), np.isneginf(again.theta))
                and np.allclose(th[np.isfinite(th)], again.theta[np.isfinite(th)],
                                rtol=1e-12, atol=1e-14))
        return None if same else "write_uai -> read_uai gives another model"
    if reader == "mar":
        if not all(isinstance(p, np.ndarray) and p.ndim == 1 and p.size >= 1 for p in out):
            return "a marginal is not a non-empty 1-D array"
        if not all(np.isfinite(p).all() and (p >= 0).all() and (p <= 1).all()
                   and abs(p.sum() - 1) <= 1e-2 for p in out):
            return "a marginal is not a distribution"
        uai.write_mar(back, out)
        again = uai.read_mar(back)
        return (None if all(map(np.array_equal, out, again)) and len(out) == len(again)
                else "write_mar -> read_mar differs")
    if reader == "pr":
        if not isinstance(out, float) or math.isnan(out) or out == math.inf:
            return f"log Z = {out!r}"
        expect = -math.inf if toks[-1].lower().startswith(b"-inf") else float(toks[-1]) * LN10
        if out != expect:
            return f"read {out!r}, the file says {expect!r}"
        uai.write_pr(back, out)
        again = uai.read_pr(back)
        return (None if again == out or math.isclose(again, out, rel_tol=1e-15)
                else "write_pr -> read_pr differs")
    if reader == "map":
        if not (isinstance(out, np.ndarray) and out.ndim == 1 and out.dtype == np.int64):
            return "not a 1-D int64 array"
        if ((out < 0) | (out >= MAX_INDEX)).any():
            return "a state out of range"
        if out.size and [int(t) for t in toks[-out.size:]] != out.tolist():
            return "the states are not the file's last numbers"
        uai.write_map(back, out)
        return None if np.array_equal(uai.read_map(back), out) else "write_map -> read_map differs"
    if not all(isinstance(a, int) and 0 <= a < MAX_INDEX for kv in out.items() for a in kv):
        return "a variable or state out of range"
    pairs = [int(t) for t in toks[len(toks) - 2 * len(out):]] if out else []
    if dict(zip(pairs[::2], pairs[1::2])) != out:
        return "the pairs are not the file's last numbers"
    uai.write_evid(back, out)
    return None if uai.read_evid(back) == out else "write_evid -> read_evid differs"


def _ln(tok):
    """ln of a number token, exactly from its decimal text (-inf for zero)."""
    d = decimal.Decimal(tok.decode())
    return -math.inf if d == 0 else float(d.ln(decimal.Context(prec=30)))


def _differs_from_reference(m, toks):
    """Why the model ``m`` read from the MARKOV tokens ``toks`` (which the reader took)
    differs from a plain second reading of them; None if it does not."""
    n = int(toks[1])
    card = [int(t) for t in toks[2:2 + n]]
    pos, scopes = 3 + n, []
    for _ in range(int(toks[2 + n])):
        arity = int(toks[pos])
        scopes.append([int(t) for t in toks[pos + 1:pos + 1 + arity]])
        pos += 1 + arity
    unary = [np.zeros(c) for c in card]
    pair = {}
    for scope in scopes:
        size = int(toks[pos])
        table = np.array([_ln(t) for t in toks[pos + 1:pos + 1 + size]])
        pos += 1 + size
        if len(scope) == 1:
            unary[scope[0]] += table
            continue
        table = table.reshape([card[v] for v in scope])
        key = tuple(sorted(scope))
        table = table if scope[0] < scope[1] else table.T
        pair[key] = pair[key] + table if key in pair else table
    got = [m.unary(i) for i in range(m.n_vars)] + [m.pairwise(e) for e in range(m.n_edges)]
    want = unary + [pair.get(tuple(e), None) for e in m.edges.tolist()]
    if m.card.tolist() != card or sorted(pair) != sorted(map(tuple, m.edges.tolist())):
        return "the cardinalities or the edges differ from the file's"
    for a, b in zip(got, want):
        if not (np.array_equal(np.isneginf(a), np.isneginf(b))
                and np.allclose(a[np.isfinite(a)], b[np.isfinite(a)], rtol=1e-12, atol=1e-12)):
            return "θ differs from the logs of the file's tables"
    return None


# -- worker: read files start..n-1, one result line each -----------------------------------

class _Slow(Exception):
    pass


def _on_alarm(signum, frame):
    raise _Slow(f"over the {TIME_CAP:g} s cap")


def worker(reader, seed, start, n):
    from fwcore.io import uai
    read = getattr(uai, f"read_{reader}")
    with open("/proc/self/status") as f:
        vm = int(next(line for line in f if line.startswith("VmSize")).split()[1]) * 1024
    resource.setrlimit(resource.RLIMIT_AS, (vm + MEMORY_CAP, vm + MEMORY_CAP))
    signal.signal(signal.SIGALRM, _on_alarm)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "f")
        for i in range(start, n):
            raw, how = mutated(seed, reader, i)
            with open(path, "wb") as f:
                f.write(raw)
            signal.setitimer(signal.ITIMER_REAL, TIME_CAP)
            try:
                kind, detail = _check(read, reader, path, raw, tmp)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            print(f"{i}\t{kind}\t{how}\t{detail!r}", flush=True)


def _check(read, reader, path, raw, tmp):
    """(kind, detail) for one file: parsed, ValueError, exception or misread."""
    try:
        out = read(path)
    except ValueError as err:
        return "ValueError", str(err)[:200]
    except Exception as err:  # noqa: BLE001 - any other exception is a finding
        return "exception", f"{type(err).__name__}: {str(err)[:200]}"
    try:
        why = misread(reader, out, raw, tmp)
    except Exception as err:  # noqa: BLE001 - e.g. the round trip cannot read its own file
        why = f"checking it raised {type(err).__name__}: {str(err)[:200]}"
    return ("misread", why) if why else ("parsed", "")


# -- parent: one worker per reader, restarted after a crash ---------------------------------

def run(reader, seed, n):
    """Counts per kind and up to 3 examples per finding, from workers run until all ``n``
    files are read (after a crash, a new worker starts at the next file)."""
    counts, examples = Counter(), defaultdict(list)
    start = 0
    while start < n:
        proc = subprocess.run([sys.executable, __file__, "--worker", reader, "--seed",
                               str(seed), "--start", str(start), "--n", str(n)],
                              stdout=subprocess.PIPE, text=True)
        out = proc.stdout
        last = start - 1
        for line in out.splitlines():
            i, kind, how, detail = line.split("\t", 3)
            last = int(i)
            counts[kind] += 1
            if kind in ("exception", "misread") and len(examples[kind]) < 3:
                examples[kind].append((last, how, detail))
        if proc.returncode != 0 and last + 1 < n:
            counts["crash"] += 1
            if len(examples["crash"]) < 3:
                examples["crash"].append((last + 1, mutated(seed, reader, last + 1)[1],
                                          f"worker exit {proc.returncode}"))
        start = last + 2 if proc.returncode != 0 else n
    return counts, examples


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=5000, help="mutated files per reader")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--readers", default=",".join(READERS))
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--show", type=int, metavar="I",
                    help="print mutated file I of each reader given and exit")
    args = ap.parse_args()
    readers = args.readers.split(",")
    if args.worker:
        return worker(args.worker, args.seed, args.start, args.n)
    if args.show is not None:
        for r in readers:
            print(r, mutated(args.seed, r, args.show))
        return 0
    with ThreadPoolExecutor(len(readers)) as pool:  # the readers' workers side by side
        results = dict(zip(readers, pool.map(lambda r: run(r, args.seed, args.n), readers)))
    print(f"fuzz_readers: seed {args.seed}, {args.n} mutated files per reader")
    print(f"{'reader':8}{'files':>7}{'crashes':>9}{'non-ValueError':>16}{'misreads':>10}"
          f"{'parsed':>8}{'ValueError':>12}")
    found = 0
    for r in readers:
        c, ex = results[r]
        files = sum(c[k] for k in ("parsed", "ValueError", "exception", "misread", "crash"))
        print(f"{r:8}{files:>7}{c['crash']:>9}{c['exception']:>16}{c['misread']:>10}"
              f"{c['parsed']:>8}{c['ValueError']:>12}")
        found += c["crash"] + c["exception"] + c["misread"]
    for r in readers:
        for kind, items in results[r][1].items():
            for i, how, detail in items:
                print(f"  {r} {kind} file {i} ({how}): {detail}  "
                      f"[see it: --show {i} --readers {r} --seed {args.seed}]")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
