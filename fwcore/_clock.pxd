from posix.time cimport CLOCK_MONOTONIC, clock_gettime, timespec


cdef inline double monotonic() noexcept nogil:
    """Monotonic clock in seconds (the kernels' per-call time limits)."""
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return ts.tv_sec + 1e-9 * ts.tv_nsec
