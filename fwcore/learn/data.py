"""Training sets the learners read on demand (DESIGN.md "Learning"): a `Dataset` is a small
picklable description of examples and their labellings, which loads examples ``start`` to
``stop`` when asked. A learner's ``fit`` takes one in place of the lists X, Y, so that the
examples are loaded where they are used (by the workers of a dask cluster, once; in the
learner's process, a few at a time) and the learner's process holds only the weights and
the per-example state its method needs (`fwcore.learn.shards`).

- `InMemory`: lists X, Y (what ``fit(X, Y)`` wraps them in); its pickle carries them.
- `ExampleFolder`: a folder of ``.npz`` files, one example each (`write_examples`).
- `StackedArrays`: arrays with one row per example, e.g. memory-mapped ``.npy`` files
  (``np.load(path, mmap_mode="r")``; they pickle as their file names and are mapped only
  while a slice is read) or dask arrays (computed slice by slice).
- `DaskBag`: a dask bag of (x, y) pairs (the ``dask`` extra).

An example's arrays are named as the fields of its input: ``node_features``, ``edges``,
``edge_features`` (a `fwcore.learn.CRFExample`) or ``features`` and optionally ``allowed``
(a matching input, `fwcore.learn.matching_model`); its labelling is ``labels``.
"""
from __future__ import annotations

import abc
import os
from collections.abc import Sized
from pathlib import Path

import numpy as np

from ..checks import Interval, validate_params
from .crf import CRFExample

__all__ = ["Dataset", "InMemory", "ExampleFolder", "StackedArrays", "DaskBag", "as_dataset",
           "write_examples", "example_arrays", "example_from_arrays"]

#: the arrays of a CRF input, in `CRFExample`'s field order
CRF_FIELDS = ("node_features", "edges", "edge_features")


class Dataset(abc.ABC):
    """Examples and labellings, loaded ``start:stop`` at a time. Subclasses are picklable
    descriptions (their pickle holds no examples, `InMemory`'s excepted), so that a worker
    that receives one loads its part itself."""

    #: the object holds its examples (loading them copies nothing)
    in_memory = False

    @abc.abstractmethod
    def __len__(self):
        """The number of examples."""

    @abc.abstractmethod
    def load(self, start, stop):
        """(X, Y): lists of the inputs and labellings of examples start..stop-1."""

    def labels(self, start, stop):
        """The labellings of examples start..stop-1 (datasets that can read them alone
        override it)."""
        return self.load(start, stop)[1]


class InMemory(Dataset):
    """Inputs X and labellings Y held in lists (any sequences)."""

    in_memory = True

    def __init__(self, X, Y):
        if isinstance(X, (CRFExample, np.ndarray)) or not isinstance(X, Sized) or len(X) == 0:
            raise ValueError("X must be a non-empty list of examples (or a "
                             "fwcore.learn.data.Dataset, alone)")
        if not isinstance(Y, Sized) or len(Y) != len(X):
            raise ValueError(f"Y must hold one label array per example ({len(X)}); got "
                             f"{len(Y) if isinstance(Y, Sized) else type(Y).__name__}")
        self.X, self.Y, self.first = X, Y, 0

    def __len__(self):
        return self.first + len(self.X)

    def load(self, start, stop):
        a, b = start - self.first, stop - self.first
        return list(self.X[a:b]), list(self.Y[a:b])

    def rows(self, start, stop):
        """The examples start..stop-1 alone, still indexed as here (a shard's part)."""
        part = InMemory(self.X[start - self.first:stop - self.first],
                        self.Y[start - self.first:stop - self.first])
        part.first = start
        return part


def example_from_arrays(arrays, where):
    """The input made of the named ``arrays`` (a mapping) of the module docstring."""
    if "node_features" in arrays:
        return CRFExample(*(np.asarray(arrays[k]) for k in CRF_FIELDS))
    if "features" in arrays:
        if "allowed" in arrays:
            return np.asarray(arrays["features"]), np.asarray(arrays["allowed"])
        return np.asarray(arrays["features"])
    raise ValueError(f"{where} holds neither CRF arrays ({', '.join(CRF_FIELDS)}) nor matching "
                     f"features ('features'); found {', '.join(sorted(arrays)) or 'none'}")


def example_arrays(x):
    """{name: array} of an input (the inverse of `example_from_arrays`)."""
    if isinstance(x, CRFExample):
        return dict(zip(CRF_FIELDS, (x.node_features, x.edges, x.edge_features)))
    if isinstance(x, tuple) and len(x) == 3:
        return dict(zip(CRF_FIELDS, x))
    if isinstance(x, tuple) and len(x) == 2:
        return {"features": x[0], "allowed": x[1]}
    return {"features": x}


class ExampleFolder(Dataset):
    """The ``.npz`` files of a folder in name order, one example each: the arrays of its
    input and ``labels`` (`write_examples` makes such a folder). Only the file names are
    read at construction."""

    def __init__(self, path):
        self.path = Path(path)
        if not self.path.is_dir():
            raise ValueError(f"path {os.fspath(path)!r} is not a folder")
        files = sorted(p.name for p in self.path.glob("*.npz"))
        if not files:
            raise ValueError(f"path {os.fspath(path)!r} holds no .npz files")
        self.n = len(files)
        # the names `write_examples` gives are not kept (a description stays small)
        self.files = None if files == [_name(k) for k in range(self.n)] else files

    def __len__(self):
        return self.n

    def file(self, k):
        """The path of example k's file."""
        return self.path / (_name(k) if self.files is None else self.files[k])

    def _read(self, k, names=None):
        with np.load(self.file(k)) as f:
            return {n: f[n] for n in (f.files if names is None else names)}

    def load(self, start, stop):
        X, Y = [], []
        for k in range(start, min(stop, len(self))):
            a = self._read(k)
            if "labels" not in a:
                raise ValueError(f"{self.file(k)} has no 'labels' array")
            Y.append(a.pop("labels"))
            X.append(example_from_arrays(a, self.file(k)))
        return X, Y

    def labels(self, start, stop):
        return [self._read(k, ["labels"])["labels"] for k in range(start, min(stop, len(self)))]


@validate_params({"first": Interval(0, integer=True)}, unchecked=("path", "X", "Y"))
def write_examples(path, X, Y, first=0):
    """Write inputs X and labellings Y as examples ``first``, ``first`` + 1, ... of an
    `ExampleFolder` at ``path`` (created if missing; one uncompressed ``.npz`` per
    example, named by its index, so that a large set can be written in parts); returns
    the folder."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    data = InMemory(X, Y)
    for k, (x, y) in enumerate(zip(data.X, data.Y), first):
        np.savez(path / _name(k), labels=np.asarray(y), **example_arrays(x))
    return ExampleFolder(path)


def _name(k):
    return f"{k:09d}.npz"


class _Mapped:
    """A memory-mapped array as its file (`StackedArrays` pickles and opens it by this)."""

    def __init__(self, a):
        self.filename, self.dtype, self.shape = a.filename, a.dtype, a.shape
        self.offset = a.offset
        self.order = "F" if a.flags.f_contiguous and not a.flags.c_contiguous else "C"

    def rows(self, start, stop):
        a = np.memmap(self.filename, self.dtype, "r", self.offset, self.shape, self.order)
        return np.array(a[start:stop])  # a copy: the mapping closes with ``a``


class StackedArrays(Dataset):
    """Examples as rows of arrays: ``labels`` [N, ...] and the input arrays named as in the
    module docstring, each [N, ...] (``stacked``) or the same for every example
    (``shared``, e.g. the ``edges`` of images of one size). Memory-mapped arrays
    (``np.load(path, mmap_mode="r")``, `numpy.memmap`) are kept as their files and mapped
    only while rows are read; other arrays are sliced (a dask array computes the slice)."""

    def __init__(self, labels, shared=None, **stacked):
        self.shared = {k: np.asarray(v) for k, v in (shared or {}).items()}
        self.stacked = {"labels": labels, **stacked}
        for name, a in self.stacked.items():
            if not hasattr(a, "shape") or len(a.shape) < 1:
                raise TypeError(f"{name} must be an array with one row per example")
            if a.shape[0] != len(labels):
                raise ValueError(f"{name} has {a.shape[0]} rows, labels {len(labels)}")
            if isinstance(a, np.memmap):
                self.stacked[name] = _Mapped(a)
        example_from_arrays({**self.shared, **stacked}, "StackedArrays")  # names checked
        self.n = len(labels)

    def __len__(self):
        return self.n

    def _rows(self, name, start, stop):
        a = self.stacked[name]
        return a.rows(start, stop) if isinstance(a, _Mapped) else np.asarray(a[start:stop])

    def load(self, start, stop):
        rows = {name: self._rows(name, start, stop) for name in self.stacked}
        Y = list(rows.pop("labels"))
        X = [example_from_arrays({**self.shared, **{k: v[i] for k, v in rows.items()}},
                                 "StackedArrays") for i in range(len(Y))]
        return X, Y

    def labels(self, start, stop):
        return list(self._rows("labels", start, stop))


class DaskBag(Dataset):
    """A dask bag of (x, y) pairs (the ``dask`` extra): its partitions' lengths are counted
    once, and a load computes the partitions it covers. On a dask cluster each worker
    loads its shard of the examples so once and keeps it (`fwcore.learn.shards`);
    serially, every round computes its partitions again."""

    def __init__(self, bag):
        self.partitions = bag.to_delayed()
        self.sizes = np.asarray(bag.map_partitions(lambda p: [len(list(p))]).compute(),
                                dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(self.sizes)])

    def __len__(self):
        return int(self.offsets[-1])

    def load(self, start, stop):
        import dask
        first = int(np.searchsorted(self.offsets, start, side="right")) - 1
        last = int(np.searchsorted(self.offsets, stop, side="left"))
        parts = dask.compute(*self.partitions[first:last])
        pairs = [p for part in parts for p in part]
        base = int(self.offsets[first])
        chosen = pairs[start - base:stop - base]
        return [x for x, _ in chosen], [y for _, y in chosen]


def as_dataset(X, Y):
    """The `Dataset` of ``fit``'s arguments: X itself when it is one (Y must then be None),
    else `InMemory` (X, Y)."""
    if isinstance(X, Dataset):
        if Y is not None:
            raise TypeError("X is a Dataset (it holds the labellings): call fit(X) without Y")
        return X
    if Y is None:
        raise TypeError("fit needs Y, the labellings of X (or X a fwcore.learn.data.Dataset)")
    return InMemory(X, Y)
