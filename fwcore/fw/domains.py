"""Domains (feasible polytopes given by a linear minimisation oracle) and the contracted
vertex geometry the engine works with.

A domain subclasses `Domain`, which declares

    dim                       length of the iterate x
    atom_size                 length k of an atom (an int32 vector naming a vertex)
    lmo(g) -> int32[k]        an atom a minimising <g, v(a)>
    inner(g, atoms) -> [m]    <g, v(a)> for each row of int32[m, k], without dense vertices
    add(x, atom, w)           x += w * v(atom), in place
    u0                        a dense point in the relative interior (None: no contraction)
    exact                     lmo returns true minimisers (so the FW gap is a certificate)

and may override ``add_vertices`` (a kernel for the sum of many contracted vertices), so
the marginal polytope plugs in with assignments as atoms and the ``score_assignments``,
``add_assignment`` and ``add_vertices`` kernels. Atoms are never -1 filled: that row is
reserved for u0.
"""
import abc
from typing import Optional

import numpy as np

__all__ = ["Domain", "Simplex", "ProductDomain", "U0_ATOM"]

#: atoms whose first entry is this value stand for the interior point u0
U0_ATOM = -1


class Domain(abc.ABC):
    """A polytope given by its linear minimisation oracle (see the module docstring)."""

    dim: int  # each subclass sets these two
    atom_size: int
    u0: Optional[np.ndarray] = None
    exact = True

    @abc.abstractmethod
    def lmo(self, g):
        """The linear minimisation oracle: an atom (int32[atom_size]) minimising
        <g, v(atom)> over the domain's vertices."""

    @abc.abstractmethod
    def inner(self, g, atoms):
        """<g, v(a)> for each row a of ``atoms`` (int32[m, atom_size]), as float64[m],
        without building dense vertices."""

    @abc.abstractmethod
    def add(self, x, atom, w):
        """x += w v(atom), in place."""

    def add_vertices(self, x, atoms, weights, delta):
        """x += sum_a weights[a] v_delta(a) over the rows of ``atoms``, in place, atom by atom:
        v_delta(a) = (1 - delta) v(a) + delta u0 (u0 itself for a row of U0_ATOM)."""
        u0 = None if self.u0 is None else np.asarray(self.u0, dtype=np.float64)
        for atom, w in zip(atoms, weights):
            if atom[0] == U0_ATOM:
                x += w * u0
                continue
            self.add(x, atom, (1.0 - delta) * w)
            if delta:
                x += (delta * w) * u0


class Simplex(Domain):
    """The probability simplex in R^n; the atom ``[i]`` is the vertex e_i."""

    atom_size = 1

    def __init__(self, n):
        if int(n) != n or n < 1:
            raise ValueError(f"Simplex dimension n must be an integer >= 1; got {n!r}")
        self.dim = int(n)
        self.u0 = np.full(self.dim, 1.0 / self.dim)

    def lmo(self, g):
        return np.array([np.argmin(g)], dtype=np.int32)

    def inner(self, g, atoms):
        return g[atoms[:, 0]]

    def add(self, x, atom, w):
        x[atom[0]] += w


class ProductDomain(Domain):
    """Cartesian product of domains; x and the atoms are the blocks' concatenations."""

    def __init__(self, blocks):
        self.blocks = list(blocks)
        if not self.blocks:
            raise ValueError("ProductDomain needs at least one block")
        for b in self.blocks:
            check_domain(b, "a ProductDomain block")
        dims = np.cumsum([0] + [b.dim for b in self.blocks])
        sizes = np.cumsum([0] + [b.atom_size for b in self.blocks])
        self.slices = [slice(int(a), int(b)) for a, b in zip(dims[:-1], dims[1:])]
        self.atom_slices = [slice(int(a), int(b)) for a, b in zip(sizes[:-1], sizes[1:])]
        self.dim = int(dims[-1])
        self.atom_size = int(sizes[-1])
        u0s = [b.u0 for b in self.blocks]
        self.u0 = None if any(u is None for u in u0s) else np.concatenate(u0s)
        self.exact = all(b.exact for b in self.blocks)

    def lmo(self, g):
        return np.concatenate([b.lmo(g[s]) for b, s in zip(self.blocks, self.slices)])

    def inner(self, g, atoms):
        return sum(b.inner(g[s], atoms[:, a])
                   for b, s, a in zip(self.blocks, self.slices, self.atom_slices))

    def add(self, x, atom, w):
        for b, s, a in zip(self.blocks, self.slices, self.atom_slices):
            b.add(x[s], atom[a], w)


def check_domain(domain, name="domain"):
    """A `Domain` with dim >= 1, atom_size >= 1 and u0 None or of shape (dim,)."""
    if not isinstance(domain, Domain):
        raise TypeError(f"{name} must be a fwcore.fw.Domain (dim, atom_size, lmo(g), "
                        f"inner(g, atoms), add(x, atom, w), u0); got {type(domain).__name__}")
    if (domain.atom_size is None or domain.dim is None or int(domain.atom_size) < 1
            or int(domain.dim) < 1):
        raise ValueError(f"{name} needs dim >= 1 and atom_size >= 1")
    u0 = domain.u0
    if u0 is not None and np.shape(u0) != (domain.dim,):
        raise ValueError(f"{name}.u0 must have shape ({domain.dim},); got {np.shape(u0)}")


class Vertices:
    """Vertices of the contraction D_delta = (1 - delta) D + delta u0 (Barrier FW Sec. 3):
    atom a stands for (1 - delta) v(a) + delta u0, and the U0_ATOM row for u0 itself."""

    def __init__(self, domain, delta=0.0):
        self.domain = domain
        self.u0 = domain.u0
        if self.u0 is not None:
            self.u0 = np.ascontiguousarray(self.u0, dtype=np.float64)
        self.delta = float(delta)

    def scores(self, g, atoms):
        """<g, v_delta(a)> for each row of ``atoms``."""
        real = atoms[:, 0] != U0_ATOM
        if real.all():
            out = np.asarray(self.domain.inner(g, atoms), dtype=np.float64)
            return (1.0 - self.delta) * out + self.delta * (g @ self.u0) if self.delta else out
        gu = g @ self.u0
        out = np.full(atoms.shape[0], gu)
        start = 0  # the real atoms in the contiguous runs between u0 rows: no copy of atoms
        for stop in [*np.flatnonzero(~real).tolist(), atoms.shape[0]]:
            if stop > start:
                out[start:stop] = ((1.0 - self.delta) * self.domain.inner(g, atoms[start:stop])
                                   + self.delta * gu)
            start = stop + 1
        return out

    def add(self, x, atom, w):
        """x += w * v_delta(atom), in place."""
        self.domain.add_vertices(x, atom[None, :], np.array([w], dtype=np.float64), self.delta)

    def dense(self, atoms, weights):
        """sum_a w_a v_delta(a) as a dense vector."""
        x = np.zeros(self.domain.dim)
        self.domain.add_vertices(x, atoms, weights, self.delta)
        return x
