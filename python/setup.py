"""Builds the attnc wheel: the pure-Python package plus the project's CMake
install tree as attnc/_prefix (see pyproject.toml and docs/python.md).

Environment:
  ATTNC_BUILD_DIR        the CMake build tree (default: ../build beside this
                         directory); configured as scripts/build.sh does
                         (Ninja, Release) when it has no build.ninja
  ATTNC_SKIP_CMAKE_BUILD=1  do not run `cmake --build` (the tree is built);
                         `cmake --install` still runs
"""
import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)


class BinaryDistribution(Distribution):
    """The wheel holds executables and shared objects: platform-specific."""

    def has_ext_modules(self):
        return True


class BuildWithCMake(build_py):
    def run(self):
        super().run()
        build = os.path.abspath(os.environ.get("ATTNC_BUILD_DIR") or os.path.join(SRC, "build"))
        if not os.path.isfile(os.path.join(build, "build.ninja")) and \
                not os.path.isfile(os.path.join(build, "CMakeCache.txt")):
            if not os.path.isfile(os.path.join(SRC, "CMakeLists.txt")):
                raise SystemExit(f"attnc: no CMake build tree at {build} and no source tree "
                                 f"at {SRC}: set ATTNC_BUILD_DIR")
            self.announce(f"attnc: configuring {build}", 2)
            subprocess.check_call(["cmake", "-G", "Ninja", "-S", SRC, "-B", build,
                                   "-DCMAKE_BUILD_TYPE=Release"])
        if os.environ.get("ATTNC_SKIP_CMAKE_BUILD", "") not in ("1", "ON", "yes", "true"):
            subprocess.check_call(["cmake", "--build", build])
        prefix = os.path.join(os.path.abspath(self.build_lib), "attnc", "_prefix")
        shutil.rmtree(prefix, ignore_errors=True)
        subprocess.check_call(["cmake", "--install", build, "--prefix", prefix],
                              stdout=subprocess.DEVNULL)
        # The package itself and the docs are already elsewhere in the wheel.
        for d in (("share", "attnc", "python"), ("share", "doc")):
            shutil.rmtree(os.path.join(prefix, *d), ignore_errors=True)


setup(cmdclass={"build_py": BuildWithCMake}, distclass=BinaryDistribution)
