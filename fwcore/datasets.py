"""The example models shipped inside the package, reachable from any installation.

    >>> import fwcore.datasets
    >>> fwcore.datasets.names()
    ('clique10', 'grid5x5')
    >>> model = fwcore.datasets.load("grid5x5")          # a PairwiseMRF
    >>> path = fwcore.datasets.path("grid5x5")           # its UAI file, for other tools

- ``grid5x5``: a 5x5 grid from the Barrier FW paper's family (unary [θ_i, −θ_i],
  θ_i ~ U[−1, 1]; couplings ~ U[−4, 4]).
- ``clique10``: a 10-variable clique with strong mixed couplings (θ = 3), the hard case
  of the paper's Sec. 5.

Both are written by ``python/make_example_models.py`` (a test checks that they match it);
the command line reads them with ``fwcore infer --example NAME``.
"""
from pathlib import Path

__all__ = ["names", "path", "load"]

_DATA = Path(__file__).resolve().parent / "data"


def names():
    """The names of the shipped example models, sorted."""
    return tuple(sorted(p.stem for p in _DATA.glob("*.uai")))


def path(name):
    """The UAI file of the example model ``name`` (a `pathlib.Path`)."""
    known = names()
    if name not in known:
        raise ValueError(f"unknown example model {name!r}; valid names: {', '.join(known)}")
    return _DATA / f"{name}.uai"


def load(name):
    """The example model ``name`` as a `fwcore.PairwiseMRF`."""
    from .io.uai import read_uai
    return read_uai(path(name))
