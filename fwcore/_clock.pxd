# The kernels' monotonic clock (per-call time limits), portable: QueryPerformanceCounter
# on Windows, clock_gettime(CLOCK_MONOTONIC) elsewhere.
cdef extern from *:
    """
    #ifdef _WIN32
    #ifndef WIN32_LEAN_AND_MEAN
    #define WIN32_LEAN_AND_MEAN
    #endif
    #include <windows.h>
    static double fw_monotonic(void) {
        LARGE_INTEGER f, c;
        QueryPerformanceFrequency(&f);
        QueryPerformanceCounter(&c);
        return (double)c.QuadPart / (double)f.QuadPart;
    }
    #else
    #include <time.h>
    static double fw_monotonic(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    }
    #endif
    """
    double monotonic "fw_monotonic"() noexcept nogil
