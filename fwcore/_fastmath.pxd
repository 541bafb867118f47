# Branch-free exp and log for loops that GCC vectorises (fdlibm's reductions and
# polynomials, error < 1 ulp), and the macros of runtime-dispatched clones for
# x86-64-v4/v3 on Linux (FW_CLONES) and forced inlining (FW_INLINE): one definition for
# the TRW passes and BP sweeps (`fwcore._kernels`) and the end of a BP run (`fwcore._bp`).
cdef extern from *:
    """
    #include <math.h>
    #include <stdint.h>
    #include <string.h>
    #include <stddef.h>
    /* ifunc dispatch needs glibc (musl has none; Python.h has included <features.h>) */
    #if defined(__GNUC__) && __GNUC__ >= 12 && !defined(__clang__) && defined(__x86_64__) \
        && defined(__linux__) && defined(__GLIBC__)
    #define FW_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
    #else
    #define FW_CLONES
    #endif
    #if defined(__GNUC__)
    #define FW_INLINE static inline __attribute__((always_inline))
    #else
    #define FW_INLINE static inline
    #endif
    /* log(x) for x > 0, else floor_. fdlibm's e_log.c reduction and polynomial (error
       < 1 ulp), written branch-free so that loops calling it vectorise; subnormals are
       rescaled by 2^54. */
    FW_INLINE double fw_log(double x, double floor_) {
        const double Lg1 = 6.666666666666735130e-01, Lg2 = 3.999999999940941908e-01,
                     Lg3 = 2.857142874366239149e-01, Lg4 = 2.222219843214978396e-01,
                     Lg5 = 1.818357216161805012e-01, Lg6 = 1.531383769920937332e-01,
                     Lg7 = 1.479819860511658591e-01,
                     ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
        int sub = x < 2.2250738585072014e-308;
        double xs = x * (sub ? 18014398509481984.0 : 1.0);
        uint64_t u; memcpy(&u, &xs, 8);
        u += 0x00095F6200000000ULL;
        uint64_t e = (u >> 52) | 0x4330000000000000ULL;
        double de; memcpy(&de, &e, 8);
        double dk = (de - 4503599627370496.0) - (sub ? 1077.0 : 1023.0);
        u = (u & 0x000FFFFFFFFFFFFFULL) + 0x3fe6a09e00000000ULL;
        double m; memcpy(&m, &u, 8);
        double f = m - 1.0, hfsq = 0.5 * f * f, s = f / (2.0 + f), z = s * s, w = z * z;
        double R = z * (Lg1 + w * (Lg3 + w * (Lg5 + w * Lg7))) + w * (Lg2 + w * (Lg4 + w * Lg6));
        double r = s * (hfsq + R) + dk * ln2_lo - hfsq + f + dk * ln2_hi;
        return x > 0.0 ? r : floor_;
    }
    /* exp(x) for x in [-708, 709] (clamped there): fdlibm's e_exp.c reduction and
       polynomial (error < 1 ulp), branch-free; 2^k built from its bits. */
    FW_INLINE double fw_exp(double x) {
        const double P1 = 1.66666666666666019037e-01, P2 = -2.77777777770155933842e-03,
                     P3 = 6.61375632143793436117e-05, P4 = -1.65339022054652515390e-06,
                     P5 = 4.13813679705723846039e-08, inv_ln2 = 1.44269504088896338700e+00,
                     ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10,
                     shifter = 6755399441055744.0;
        x = x < -708.0 ? -708.0 : (x > 709.0 ? 709.0 : x);
        double big = x * inv_ln2 + shifter, kd = big - shifter;
        uint64_t u; memcpy(&u, &big, 8);
        uint64_t scale_bits = (uint64_t)((int64_t)(int32_t)(uint32_t)u + 1023) << 52;
        double scale; memcpy(&scale, &scale_bits, 8);
        double hi = x - kd * ln2_hi, lo = kd * ln2_lo, r = hi - lo, t = r * r;
        double c = r - t * (P1 + t * (P2 + t * (P3 + t * (P4 + t * P5))));
        return (1.0 - ((lo - (r * c) / (2.0 - c)) - hi)) * scale;
    }
    """
    double fw_log(double x, double floor_) noexcept nogil
    double fw_exp(double x) noexcept nogil
