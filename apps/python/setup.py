"""Builds the hetsgd Python package from this source tree, offline.

    /usr/bin/python3 -m pip install --no-build-isolation --break-system-packages apps/python

The extension module is built by the project's own CMake build (apps/python/CMakeLists.txt,
-DHETSGD_PYTHON=ON) in <repo>/build-python, with this interpreter; nothing is downloaded.
The build is CPU-only unless HETSGD_PYTHON_CUDA=1 asks for the CUDA backend (it needs nvcc
and compiles for much longer). Environment: HETSGD_PYTHON_CUDA (1: build the CUDA backend),
HETSGD_CMAKE_ARGS (extra configure flags, applied last), HETSGD_BUILD_DIR (another build
folder), HETSGD_JOBS (parallel compile jobs).
"""

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent


def configure_command(build, environ):
    """The CMake configure command for build folder `build` under the environment `environ`."""
    configure = ["cmake", "-S", str(ROOT), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
                 "-DHETSGD_PYTHON=ON", "-DHETSGD_BUILD_TESTS=OFF", "-DHETSGD_BUILD_APPS=ON",
                 f"-DPython_EXECUTABLE={sys.executable}"]
    # CMake's default (AUTO) builds the CUDA backend wherever nvcc is installed, even on a
    # machine without a GPU, and that multiplies the compile time: the package asks for it.
    cuda = environ.get("HETSGD_PYTHON_CUDA", "0").strip().lower()
    if cuda not in ("0", "1", "", "off", "on", "false", "true", "no", "yes"):
        raise RuntimeError(f"HETSGD_PYTHON_CUDA={cuda!r}: expected 1 (build the CUDA backend) "
                           "or 0 (CPU only, the default)")
    configure.append("-DHETSGD_CUDA=" + ("ON" if cuda in ("1", "on", "true", "yes") else "OFF"))
    if shutil.which("ninja") and not (Path(build) / "Makefile").exists():
        configure += ["-G", "Ninja"]
    if shutil.which("ccache"):
        configure += ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache",
                      "-DCMAKE_CUDA_COMPILER_LAUNCHER=ccache"]
    return configure + shlex.split(environ.get("HETSGD_CMAKE_ARGS", ""))


class CMakeBuild(build_ext):
    """Configures and builds the `_hetsgd` target, then copies the module into the wheel."""

    def build_extension(self, ext):
        if not (ROOT / "CMakeLists.txt").is_file() or not (ROOT / "core").is_dir():
            raise RuntimeError(
                f"{ROOT} is not a hetsgd source tree: install from a clone "
                "(pip install --no-build-isolation apps/python)")
        build = Path(os.environ.get("HETSGD_BUILD_DIR", ROOT / "build-python")).resolve()
        configure = configure_command(build, os.environ)
        jobs = os.environ.get("HETSGD_JOBS", str(os.cpu_count() or 2))
        subprocess.check_call(configure)
        subprocess.check_call(["cmake", "--build", str(build), "--target", "_hetsgd", "-j", jobs])
        suffix = Path(self.get_ext_filename(ext.name)).name
        built = build / "apps" / "python" / "hetsgd" / suffix
        if not built.is_file():
            raise RuntimeError(f"{built} was not built (is it the same Python as {sys.executable}?)")
        dest = Path(self.get_ext_fullpath(ext.name))
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(built, dest)


setup(
    name="hetsgd",
    version="0.1.0",
    description="Extreme multi-label training across heterogeneous devices (Adaptive SGD)",
    long_description=(HERE / "README.md").read_text(encoding="utf-8")
    if (HERE / "README.md").is_file() else "",
    long_description_content_type="text/markdown",
    packages=["hetsgd"],
    ext_modules=[Extension("hetsgd._hetsgd", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    python_requires=">=3.8",
    install_requires=["numpy", "scipy"],
    extras_require={"progress": ["tqdm"]},
    zip_safe=False,
)
