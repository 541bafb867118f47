"""Model and answer files (`fwcore.io.uai`), Bayesian networks in BIF and XMLBIF
(`fwcore.io.bif`), converters to and from other libraries' objects (`fwcore.io.convert`),
and `read_model`, which picks the reader from a file's suffix."""
from __future__ import annotations

import os
from pathlib import Path

from ..factor_graph import FactorGraph
from ..model import PairwiseMRF
from .bif import read_bif, read_xmlbif, write_bif, write_xmlbif
from .convert import from_networkx, from_pgmpy, from_pyagrum, to_pgmpy, to_pyagrum
from .uai import (COMPRESSED, STDIO, PathArg, apply_evidence, read_evid, read_map, read_mar,
                  read_pr, read_query, read_uai, write_evid, write_map, write_mar, write_pr,
                  write_uai)

__all__ = ["read_model", "read_uai", "write_uai", "read_mar", "write_mar", "read_pr",
           "write_pr", "read_map", "write_map", "read_evid", "write_evid", "apply_evidence",
           "from_networkx", "from_pgmpy", "from_pyagrum", "read_bif", "write_bif",
           "read_xmlbif", "write_xmlbif", "to_pgmpy", "to_pyagrum", "read_query"]

#: model file readers by suffix (lower case)
MODEL_READERS = {".uai": read_uai, ".bif": read_bif, ".xml": read_xmlbif,
                 ".xmlbif": read_xmlbif, ".bifxml": read_xmlbif}


def read_model(path: PathArg) -> PairwiseMRF | FactorGraph:
    """The model in the file ``path``, read by the reader its suffix names
    (`MODEL_READERS`: ``.uai``, the UAI competitions' MARKOV and BAYES formats;
    ``.bif``; ``.xml``, ``.xmlbif``, ``.bifxml``: XMLBIF), after a compression suffix
    (``.gz``, ``.xz``, ``.bz2``); ``-``: a UAI model on standard input."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a file path (str or os.PathLike) or {STDIO!r} for "
                        f"standard input; got {type(path).__name__}")
    if os.fspath(path) == STDIO:
        return read_uai(path)
    name = Path(path)
    if name.suffix.lower() in COMPRESSED:
        name = name.with_suffix("")
    suffix = name.suffix.lower()
    if suffix not in MODEL_READERS:
        raise ValueError(f"path {os.fspath(path)!r}: no model reader for suffix {suffix!r}; "
                         f"supported: {', '.join(sorted(MODEL_READERS))}")
    return MODEL_READERS[suffix](path)
