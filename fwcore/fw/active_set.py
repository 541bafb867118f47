"""The active set: atoms with barycentric weights, struct of arrays (FrankWolfe.jl
``ActiveSet``). The iterate itself is cached by the solver; `ActiveSet.check` verifies
x == sum_a w_a v(a)."""
import numpy as np

from .domains import U0_ATOM

__all__ = ["ActiveSet"]


class ActiveSet:
    """Distinct atoms (rows of int32[m, k]) and weights (float64[m], >= 0, summing to 1).

    Zero-weight atoms may be kept (the correction polytope of FCFW remembers visited
    vertices); `n_active` counts the atoms with positive weight."""

    def __init__(self, atom_size, capacity=8):
        self._atoms = np.empty((capacity, int(atom_size)), dtype=np.int32)
        self._weights = np.empty(capacity)
        self._index = {}
        self.size = 0

    @classmethod
    def from_arrays(cls, atoms, weights):
        """Validated active set from ``atoms`` (int[m, k]) and ``weights`` (float[m])."""
        atoms = np.asarray(atoms)
        weights = np.asarray(weights, dtype=np.float64)
        if atoms.ndim != 2 or 0 in atoms.shape or not np.issubdtype(atoms.dtype, np.integer):
            raise ValueError(f"atoms must be a non-empty 2-D integer array; got {atoms.dtype} "
                             f"of shape {atoms.shape}")
        if weights.shape != (atoms.shape[0],):
            raise ValueError(f"weights must have shape ({atoms.shape[0]},); got {weights.shape}")
        if not np.isfinite(weights).all() or (weights < 0).any() or abs(weights.sum() - 1) > 1e-9:
            raise ValueError("weights must be finite, >= 0 and sum to 1")
        m = atoms.shape[0]
        self = cls(atoms.shape[1], capacity=max(8, m))
        self._atoms[:m] = atoms
        self._weights[:m] = weights
        # each row's bytes (its key in find and add), from a void view in one call
        keys = self._atoms[:m].view(np.dtype((np.void, 4 * self._atoms.shape[1]))).ravel()
        self._index = dict(zip(keys.tolist(), range(m)))
        if len(self._index) < m:
            raise ValueError("atoms must be distinct rows; merge duplicates and add their weights")
        self.size = m
        self.renormalize()
        return self

    @property
    def atoms(self):
        return self._atoms[:self.size]

    @property
    def weights(self):
        return self._weights[:self.size]

    def __len__(self):
        return self.size

    @property
    def n_active(self):
        return int(np.count_nonzero(self.weights > 0.0))

    def find(self, atom):
        """Index of ``atom`` or -1."""
        return self._index.get(np.ascontiguousarray(atom, dtype=np.int32).tobytes(), -1)

    def add(self, atom, weight=0.0):
        """Index of ``atom``, appended with ``weight`` if new (its weight is unchanged if not)."""
        atom = np.ascontiguousarray(atom, dtype=np.int32)
        key = atom.tobytes()
        i = self._index.get(key, -1)
        if i >= 0:
            return i
        if self.size == self._weights.shape[0]:
            self._atoms = np.concatenate([self._atoms, np.empty_like(self._atoms)])
            self._weights = np.concatenate([self._weights, np.empty_like(self._weights)])
        i = self.size
        self._atoms[i] = atom
        self._weights[i] = weight
        self._index[key] = i
        self.size += 1
        return i

    def remove(self, i):
        """Delete entry ``i`` (the last entry moves into its place)."""
        last = self.size - 1
        del self._index[self._atoms[i].tobytes()]
        if i != last:
            self._atoms[i] = self._atoms[last]
            self._weights[i] = self._weights[last]
            self._index[self._atoms[i].tobytes()] = i
        self.size = last

    def copy(self):
        other = ActiveSet(self._atoms.shape[1], capacity=max(8, self.size))
        other._atoms[:self.size] = self.atoms
        other._weights[:self.size] = self.weights
        other._index = dict(self._index)
        other.size = self.size
        return other

    # -- weight updates for the step types (Lacoste-Julien & Jaggi 2015) -----------------

    def fw_update(self, i, gamma):
        """x <- (1 - gamma) x + gamma v_i."""
        w = self.weights
        w *= 1.0 - gamma
        w[i] += gamma

    def away_update(self, i, gamma, drop):
        """x <- (1 + gamma) x - gamma v_i; ``drop`` when gamma is the maximal step."""
        w = self.weights
        w *= 1.0 + gamma
        w[i] = 0.0 if drop else w[i] - gamma

    def pairwise_update(self, i_to, i_from, gamma, drop):
        """x <- x + gamma (v_to - v_from); ``drop`` when gamma is the weight of v_from."""
        w = self.weights
        w[i_to] += gamma
        w[i_from] = 0.0 if drop else w[i_from] - gamma

    def contract(self, delta, new_delta):
        """Barrier FW eq. 6: weights for the vertices of D_new_delta that leave x unchanged
        when delta shrinks to ``new_delta``; the weight given up moves to u0."""
        ratio = (1.0 - delta) / (1.0 - new_delta)
        u0 = np.full(self._atoms.shape[1], U0_ATOM, dtype=np.int32)
        iu = self.add(u0)
        w = self.weights
        w *= ratio
        real_sum = w.sum() - w[iu]
        w[iu] = max(0.0, 1.0 - real_sum)

    def renormalize(self):
        """Rescale the weights to sum to exactly one (clears rounding drift)."""
        w = self.weights
        w /= w.sum()

    def purge(self, x, vertices, tol, keep_atoms=False):
        """Zero the weights <= ``tol`` (a DROP), moving x to the remaining atoms' hull exactly:
        x <- (x - sum_dropped w_a v(a)) / (1 - sum_dropped w_a). Atoms of weight zero are
        deleted unless ``keep_atoms``. Returns the number of weights zeroed."""
        w = self.weights
        small = np.flatnonzero(w <= tol)
        dropped = small[w[small] != 0.0] if keep_atoms else small
        if dropped.size:
            total = w[dropped].sum()
            for i in dropped:
                vertices.add(x, self._atoms[i], -w[i])
            w[dropped] = 0.0
            w /= 1.0 - total
            x /= 1.0 - total
        if not keep_atoms:
            for i in small[::-1]:
                self.remove(int(i))
        return int(dropped.size)

    def check(self, x, vertices, atol=1e-9):
        """Raise AssertionError unless weights >= 0, sum to 1 and x == sum_a w_a v(a)."""
        w = self.weights
        if self.size == 0:
            raise AssertionError("active set is empty")
        if (w < 0).any():
            raise AssertionError(f"negative weight {w.min():.3e} in the active set")
        if abs(w.sum() - 1.0) > atol:
            raise AssertionError(f"weights sum to {w.sum():.17g}, not 1")
        err = np.max(np.abs(vertices.dense(self.atoms, w) - x))
        if err > atol:
            raise AssertionError(f"x differs from the weighted atoms by {err:.3e}")
