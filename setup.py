"""The one thing pyproject.toml cannot say: the native path's hot loop (dmlgpu/runtime/_hot.c)
is compiled when the package is built, into dmlgpu/runtime/_hot.so inside the package, so that
an installed wheel carries it and nothing is compiled at run time.

It is plain C with no Python headers (dmlgpu loads it with cffi's dlopen; wgpu-native's
functions reach it as pointers), so it is built as a shared library, not a Python extension,
and the wheel is tagged py3-none-<platform>: one wheel per platform serves every Python.
Where it cannot be built (no C compiler, a platform without POSIX threads such as Windows, or
DMLGPU_BUILD_HOT=0) the build still succeeds: the reason is written to
dmlgpu/runtime/_hot_missing.txt, and at run time dmlgpu takes wgpu-py's public path with a
warning that says it.
"""

from __future__ import annotations

import os
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # setuptools < 70.1
    from wheel.bdist_wheel import bdist_wheel

_C = dict(extra_compile_args=["-O2", "-std=c11", "-pthread"], extra_link_args=["-pthread"])
HOT = Extension("dmlgpu.runtime._hot", sources=["dmlgpu/runtime/_hot.c"], **_C)
#: The benchmarks' bare round trip in C (``bench.gpu_timers``), which includes the hot loop's
#: code: the library never loads it.
ROUND_TRIPS = Extension("dmlgpu.bench._round_trips", sources=["dmlgpu/bench/_round_trips.c"],
                        depends=["dmlgpu/runtime/_hot.c"], **_C)


class BuildHot(build_ext):
    """Builds ``_hot.c`` as ``dmlgpu/runtime/_hot.so`` (a shared library named without
    Python's tag), and the benchmarks' ``_round_trips.c`` beside the bench, or writes why not
    next to where each would be (``_hot_missing.txt``, ``_round_trips_missing.txt``)."""

    def get_ext_filename(self, fullname: str) -> str:
        return os.path.join(*fullname.split(".")) + ".so"

    def build_extension(self, ext: Extension) -> None:
        target = self.get_ext_fullpath(ext.name)
        missing = os.path.join(os.path.dirname(target), ext.name.rsplit(".", 1)[1] + "_missing.txt")
        os.makedirs(os.path.dirname(target), exist_ok=True)
        reason = None
        if os.environ.get("DMLGPU_BUILD_HOT", "1").strip() == "0":
            reason = "it was built with DMLGPU_BUILD_HOT=0"
        elif sys.platform == "win32":
            reason = "_hot.c needs POSIX threads, which this platform (Windows) lacks"
        else:
            try:
                super().build_extension(ext)
            except Exception as err:  # (a compiler missing or failing: setuptools' errors vary)
                reason = f"no C compiler could build {ext.sources[0]} when it was installed ({err})"
        if reason is None:
            if os.path.exists(missing):
                os.remove(missing)
            return
        if os.path.exists(target):  # (an in-place build's library of an earlier build)
            os.remove(target)
        self.warn(f"dmlgpu: {ext.sources[0]} was not built: {reason}" + (
            "; dmlgpu will use wgpu-py's public path (slower small calls)" if ext is HOT else ""))
        with open(missing, "w") as f:
            f.write(reason + "\n")


class PlatformWheel(bdist_wheel):
    """A wheel for one platform that any Python 3 can use: the library it carries is plain C."""

    def finalize_options(self) -> None:
        super().finalize_options()
        self.root_is_pure = False

    def get_tag(self) -> tuple[str, str, str]:
        return "py3", "none", super().get_tag()[2]


setup(ext_modules=[HOT, ROUND_TRIPS], cmdclass={"build_ext": BuildHot, "bdist_wheel": PlatformWheel})
