"""Build the Cython kernels. Compiler directives are set once here.

Set FWCORE_DEBUG=1 to build with bounds checking and wraparound on (debug test runs).
"""
import os
from pathlib import Path

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get("FWCORE_DEBUG", "0") not in ("", "0")

directives = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": not DEBUG,
}

extensions = [
    Extension(
        f"fwcore.{path.stem}",
        [str(path)],
        include_dirs=[np.get_include()],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        # -fopenmp-simd: `omp simd` reductions in the TRW kernels, no OpenMP runtime
        extra_compile_args=(["-O3"] if not DEBUG else ["-O0", "-g"]) + ["-fopenmp-simd"],
    )
    for path in sorted(Path("fwcore").glob("*.pyx"))  # _kernels.pyx and its siblings
]

setup(ext_modules=cythonize(extensions, compiler_directives=directives))
