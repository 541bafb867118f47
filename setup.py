"""Build the Cython kernels. Compiler directives are set once here; compiler flags are
chosen per compiler when the build starts (MSVC takes none of GCC's and clang's).

Set FWCORE_DEBUG=1 to build with bounds checking and wraparound on, unoptimised and with
debug information (debug test runs). A release build carries no debug information and,
on Linux, stripped extensions.
"""
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
import setuptools
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CompileError

if int(setuptools.__version__.split(".")[0]) < 77:  # pip's isolated builds get a new one
    sys.exit(f"fwcore's pyproject.toml (an SPDX license string) needs setuptools >= 77, "
             f"found {setuptools.__version__}: pip install -U 'setuptools>=77'")

DEBUG = os.environ.get("FWCORE_DEBUG", "0") not in ("", "0")

directives = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": not DEBUG,
}

# compiler_type -> (compile flags, link flags), release and debug. -g0 comes after the
# interpreter's own CFLAGS (often -g) and wins; -fopenmp-simd turns on the `omp simd`
# reductions in the TRW kernels without an OpenMP runtime. MSVC's /O2 is its release
# optimisation; its `omp simd` needs /openmp:experimental, which fwcore does not ask for.
_FLAGS = {
    "msvc": {False: (["/O2"], []), True: (["/Od", "/Zi"], ["/DEBUG"])},
    "unix": {False: (["-O3", "-g0", "-fopenmp-simd"],
                     ["-s"] if sys.platform.startswith("linux") else []),
             True: (["-O0", "-g", "-fopenmp-simd"], [])},
}
_FLAGS["mingw32"] = _FLAGS["unix"]


class BuildExt(build_ext):
    """Adds the flags of the compiler this build uses to every extension, keeping only the
    GCC-style ones it accepts (Apple's clang or an old GCC may lack one)."""

    def _accepts(self, flag):
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp, "probe.c")
            src.write_text("int main(void) { return 0; }\n")
            try:
                self.compiler.compile([str(src)], output_dir=tmp, extra_postargs=[flag])
            except CompileError:
                return False
        return True

    def build_extensions(self):
        kind = self.compiler.compiler_type
        compile_args, link_args = _FLAGS[kind][DEBUG] if kind in _FLAGS else ([], [])
        if kind != "msvc":
            compile_args = [f for f in compile_args if self._accepts(f)]
        if hasattr(self.compiler, "linker_so"):
            # the interpreter's own rpath (pyenv's LDSHARED has one): the extensions link
            # no library of it
            self.compiler.linker_so = [a for a in self.compiler.linker_so
                                       if not a.startswith("-Wl,-rpath")]
        for ext in self.extensions:
            ext.extra_compile_args = compile_args + ext.extra_compile_args
            ext.extra_link_args = link_args + ext.extra_link_args
        super().build_extensions()


extensions = [
    Extension(
        f"fwcore.{path.stem}",
        [str(path)],
        include_dirs=[np.get_include()],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    )
    for path in sorted(Path("fwcore").glob("*.pyx"))  # _kernels.pyx and its siblings
]

setup(ext_modules=cythonize(extensions, compiler_directives=directives),
      cmdclass={"build_ext": BuildExt})
