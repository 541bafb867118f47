"""Where a fit's examples live and how the learners' per-example work runs on them.

A `Shard` holds examples of a `fwcore.learn.data.Dataset` where they are used, prepared for
the model (`LearnerModel.prepare`), and each example's state the method keeps (a dict per
example: MLE-Struct's marginals τ_m, the SSVM's φ(y_m)). The learners' per-example work is a
module-level function ``fn(shard, local, *args)`` that returns one small result per example
(an oracle answer, a block update: numbers of the weights' size) and may update the state.
A `Placement` runs such a function over a list of examples on the fit's ``executor``:

- `Here` (no executor, or any `concurrent.futures.Executor`): the shard is in the learner's
  process. Examples of an `InMemory` dataset stay prepared there; those of a lazy dataset
  are loaded for each call and dropped after it, so the process holds only the state. With
  an executor, a call sends each task a part of the shard (its examples, or the dataset's
  description and their indices, and their state) and takes the state back: any executor
  works (threads share the objects; a process pool pickles them each time).
- `Resident` (a ``distributed.Client`` or its ``get_executor()``, the ``dask`` extra):
  one shard per worker is built on its worker once (an `InMemory` part scattered to it, a
  lazy dataset loaded there from its description) and stays there with its state, a dask
  actor; a call sends the function, the example indices and the weights, and brings back
  the per-example results.

Results come back per example in the order asked, so every sum over examples runs in the
same order on every executor: a fit gives the same answer serially, on threads, on
processes and on dask (for an oracle that keeps no state between calls: a decoder is built
for each call, so TRW-S starts each call cold).
"""
from __future__ import annotations

import abc
import functools
import math
import os

import numpy as np

from ..loop import LOGGER
from ..marginals.batch import dask_client

__all__ = ["Shard", "Placement", "Pending", "Here", "Resident", "placement", "dask_client"]

#: parts of a call on a generic executor, per core of this machine (tasks to balance load)
PARTS_PER_CORE = 4
#: examples read at a time when a lazy shard validates its examples
READ_CHUNK = 64
#: the smallest glibc MALLOC_TRIM_THRESHOLD_ on a dask worker that keeps the learners'
#: per-example work at its speed: dask starts its workers with 65536, which fixes glibc's
#: mmap threshold at 128 KiB, so each array of an example's size is mapped and faulted in
#: afresh (measured: 17-33 ms an SSVM call on a 100x100 image against 2.7-6 ms without
#: it, one worker). `Resident` logs a warning naming the fix when a worker has less.
MALLOC_TRIM = 2**26


class Shard:
    """Examples ``index`` (global indices, increasing) of ``dataset``. With ``keep`` they
    are loaded once and kept (raw until `prepare`, then prepared); else read for each call.
    ``state[i]`` is the method's dict of local example i."""

    def __init__(self, dataset, index, keep):
        self.dataset, self.index = dataset, np.asarray(index, dtype=np.int64)
        self.model, self.items, self.state, self.settings = None, None, {}, {}
        self.raw = self._read(range(len(self.index))) if keep else None

    def configure(self, settings):
        """Set the fit's settings (``settings``: e.g. the learner's ρ and λ, sent once)."""
        self.settings = settings

    def _read(self, local):
        """(X, Y) of local examples ``local``, read in runs of consecutive indices."""
        X, Y = [], []
        glob = self.index[list(local)]
        cuts = np.flatnonzero(np.diff(glob) != 1) + 1
        for run in np.split(glob, cuts) if glob.size else []:
            x, y = self.dataset.load(int(run[0]), int(run[-1]) + 1)
            X += x
            Y += y
        return X, Y

    def survey(self, family):
        """[``family.summary``] of this shard's labellings (of each `READ_CHUNK` of them,
        for a lazy shard)."""
        if self.raw is not None:
            return [family.summary(self.raw[1])]
        first, stop = (int(self.index[0]), int(self.index[-1]) + 1) if self.index.size else (0, 0)
        return [family.summary(self.dataset.labels(a, min(a + READ_CHUNK, stop)))
                for a in range(first, stop, READ_CHUNK)]  # a shard's examples are consecutive

    def prepare(self, model):
        """Validate the examples for ``model`` (all of them, once: a lazy shard reads each);
        whether every decoder is exact."""
        self.model = model
        local = range(len(self.index))
        if self.raw is not None:
            self.items = self._prepare(local, *self.raw)
            self.raw = None
            return all(model.exact(ex) for ex, _ in self.items)
        exact = True
        for k in range(0, len(local), READ_CHUNK):
            exact &= all(model.exact(ex) for ex, _, _ in self.blocks(local[k:k + READ_CHUNK]))
        return exact

    def _prepare(self, local, X, Y):
        out = []
        for k, (x, y) in zip(local, zip(X, Y)):
            (ex,), (lab,) = self.model.prepare([x], [y], int(self.index[k]))
            out.append((ex, lab))
        return out

    def run(self, fn, local, args):
        """``fn(self, local, *args)`` (a call of `Resident`, on the shard's worker)."""
        return fn(self, local, *args)

    def blocks(self, local):
        """[(example, labelling, state)] of local examples ``local``."""
        if self.model is None:
            raise RuntimeError("a shard of the training set was built again (its dask worker "
                               "was lost?) and its examples' state with it: fit again")
        items = (self._prepare(local, *self._read(local)) if self.items is None
                 else [self.items[i] for i in local])
        return [(ex, y, self.state.setdefault(i, {})) for i, (ex, y) in zip(local, items)]

    def part(self, local):
        """A shard of local examples ``local`` only (for a task on an executor): their
        prepared examples, or the dataset's description and their indices; their state."""
        p = Shard.__new__(Shard)
        p.index, p.model, p.raw = self.index[list(local)], self.model, None
        p.settings = self.settings
        p.items = None if self.items is None else [self.items[i] for i in local]
        p.dataset = self.dataset if self.items is None else None
        p.state = {j: self.state.setdefault(i, {}) for j, i in enumerate(local)}
        return p

    def release(self):
        """Drop the examples (the state stays)."""
        self.items = self.raw = None
        self.dataset = None


def _run_part(part, fn, args):
    """(``fn``'s results, the part's state) for a task on a generic executor."""
    return fn(part, range(len(part.index)), *args), part.state


class Placement(abc.ABC):
    """The shards of a fit: contiguous ranges ``bounds[s]:bounds[s+1]`` of the dataset.
    ``outstanding``: the futures of calls not yet read (`close` cancels them)."""

    def __init__(self, n, n_shards):
        self.n, self.outstanding = n, []
        self.bounds = np.linspace(0, n, min(n_shards, n) + 1).round().astype(np.int64)

    def groups(self, indices):
        """[(shard, positions in ``indices``, local indices)] of the shards ``indices``
        touch, each in the order of ``indices``."""
        indices = np.asarray(indices, dtype=np.int64)
        which = np.searchsorted(self.bounds, indices, side="right") - 1
        out = []
        for s in np.unique(which):
            pos = np.flatnonzero(which == s)
            out.append((int(s), pos, (indices[pos] - self.bounds[s]).tolist()))
        return out

    def map(self, fn, indices, *args, data=True):
        """[``fn``'s result for example i, for i in ``indices``]. ``data``: ``fn`` reads
        the examples (False: only their state, e.g. applying a step)."""
        return self.submit(fn, indices, *args, data=data).result()

    def submit(self, fn, indices, *args, data=True):
        """`map` started: its `Pending` results. Calls submitted one after another on
        disjoint examples run in that order on each shard (a pass's rounds: the workers
        start the next while this process reads the last)."""
        self.outstanding = [f for f in self.outstanding if not f.done()]
        return Pending(len(indices), self._start(fn, self.groups(indices), args, data))

    @abc.abstractmethod
    def _start(self, fn, groups, args, data):
        """[(positions, a function returning the results)] of ``fn`` on each group, the
        work started (the futures that can be cancelled added to ``outstanding``)."""

    @abc.abstractmethod
    def each(self, name, *args):
        """[``Shard.<name>(*args)`` of every shard], in shard order."""

    def close(self):
        """Cancel the calls not yet read (a fit that ended on time or Ctrl-C) and drop the
        shards' examples, keeping their state (the fitted attributes read it)."""
        for f in self.outstanding:
            f.cancel()
        self.outstanding = []
        self.each("release")


class Pending:
    """The results of a submitted call: ``result()`` waits for them (in this process,
    serially: computes them) and returns them in the order asked."""

    def __init__(self, n, parts):
        self.n, self.parts = n, parts

    def result(self):
        out = [None] * self.n
        for pos, results in self.parts:
            for p, r in zip(pos, results()):
                out[p] = r
        return out


class Here(Placement):
    """One shard in this process; calls on ``executor`` (None: serially) take parts of it."""

    def __init__(self, dataset, executor):
        super().__init__(len(dataset), 1)
        self.shard = Shard(dataset, range(len(dataset)), dataset.in_memory)
        self.executor = executor

    def each(self, name, *args):
        return [getattr(self.shard, name)(*args)]

    def _start(self, fn, groups, args, data):
        parts = []
        for _, pos, local in groups:
            if self.executor is None or not data:
                parts.append((pos, functools.partial(fn, self.shard, local, *args)))
                continue
            size = math.ceil(len(local) / (PARTS_PER_CORE * (os.cpu_count() or 1)))
            chunks = [local[k:k + size] for k in range(0, len(local), size)]
            futures = [self.executor.submit(_run_part, self.shard.part(c), fn, args)
                       for c in chunks]
            self.outstanding += futures
            parts.append((pos, functools.partial(self._collect, chunks, futures)))
        return parts

    def _collect(self, chunks, futures):
        """The results of a call's parts, their state taken back."""
        results = []
        for c, f in zip(chunks, futures):
            part_results, state = f.result()
            for j, i in enumerate(c):
                self.shard.state[i] = state[j]
            results += part_results
        return results


class Resident(Placement):
    """Shards built on the workers of a dask ``client`` and kept there (module docstring):
    one per worker, as a dask actor, so that a call goes to its worker directly (not
    through the scheduler: a round trip of 9-21 ms against 51-117 ms for a task, 2 workers
    on a loaded 2-core machine) and the shard stays where it was built. A worker runs its
    actor's calls on one thread: give workers one thread each, as many as cores."""

    def __init__(self, dataset, client):
        workers = sorted(client.scheduler_info()["workers"])
        if not workers:
            raise ValueError("the dask client has no workers")
        super().__init__(len(dataset), len(workers))
        self.client, self.workers = client, workers[:len(self.bounds) - 1]
        trims = client.run(os.environ.get, "MALLOC_TRIM_THRESHOLD_")
        if any(t is not None and int(t) < MALLOC_TRIM for t in trims.values()):
            LOGGER.warning(
                "dask workers run with MALLOC_TRIM_THRESHOLD_=%s (dask's default), which "
                "makes the learners' per-example work several times slower; start the "
                "cluster after dask.config.set({'distributed.nanny.pre-spawn-environ."
                "MALLOC_TRIM_THRESHOLD_': None})", min(int(t) for t in trims.values() if t))
        self.handles = []  # the actors live as long as these futures
        for s, addr in enumerate(self.workers):
            index = np.arange(self.bounds[s], self.bounds[s + 1])
            source = dataset
            if dataset.in_memory:  # its rows go to the worker once, not through the scheduler
                rows = dataset.rows(int(index[0]), int(index[-1]) + 1)
                source = client.scatter(rows, workers=[addr], hash=False)
            self.handles.append(client.submit(Shard, source, index, True, workers=[addr],
                                              allow_other_workers=False, actor=True))
        self.shards = client.gather(self.handles)

    def each(self, name, *args):
        return [f.result() for f in [getattr(a, name)(*args) for a in self.shards]]

    def _start(self, fn, groups, args, data):
        futures = [self.shards[s].run(fn, local, args) for s, _, local in groups]
        return [(pos, f.result) for (_, pos, _), f in zip(groups, futures)]


def placement(dataset, executor):
    """The `Placement` of a fit on ``dataset`` with ``executor``."""
    client = dask_client(executor)
    return Here(dataset, executor) if client is None else Resident(dataset, client)
