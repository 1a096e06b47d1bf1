"""pycuda's own build of its _driver extension, cut to one of its sources.

Run in pycuda's unpacked sdist after its `configure.py` (which writes siteconf.py with
CUDA_ROOT = dirname(which nvcc)/.. and the library directories under it): pycuda's setup.py
runs as it does for `pip install`, computing the include directories, library directories,
libraries and flags of its `_driver` extension from that configuration; its call to setup()
is caught, and the extension is built by setuptools' build_ext with pycuda's own build
command and every one of those settings, from one of its real sources (src/cpp/cuda.cpp,
which includes <cuda.h>) instead of all of them and the shipped Boost (which take minutes
and read nothing of the toolkit). The compile and link lines are pycuda's.
"""

import os
import sys

deps = os.environ.get("BUILDDEPS")
if deps:
    sys.path.insert(0, deps)  # setuptools, for the interpreters that have none
sys.path.insert(0, os.getcwd())

import aksetup_helper  # noqa: E402

caught = {}
aksetup_helper.setup = lambda **kw: caught.update(kw)
sys.argv = ["setup.py"]
import setup as pycuda_setup  # noqa: E402

pycuda_setup.main()
driver = next(e for e in caught["ext_modules"] if e.name == "_driver")
driver.sources = ["src/cpp/cuda.cpp"]
print("pycuda _driver:", "include_dirs", driver.include_dirs, "library_dirs", driver.library_dirs,
      "libraries", driver.libraries, flush=True)

from setuptools import setup  # noqa: E402

setup(name="pycuda", ext_package=caught["ext_package"], ext_modules=[driver], cmdclass=caught["cmdclass"],
      script_args=["build_ext", "--build-temp", "build/temp", "--build-lib", "build/lib"])
