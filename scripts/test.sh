#!/usr/bin/env bash
# Set up, then run pytest from the repo root in two worker processes (pytest-xdist, a file a worker;
# DMLGPU_TEST_WORKERS=N, or -n N among the arguments, says otherwise); arguments go to pytest
# (paths relative to the repo root). Fails if any test fails, and also if no tests were
# collected (pytest exit 5). The randomized tests draw hundreds of cases by default; .ci/run
# asks thousands (DMLGPU_FUZZ_CASES, DMLGPU_BAD_INPUT_CASES, DMLGPU_DASK_NUMPY_CASES).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
source scripts/runtime_dir.sh  # no Mesa "XDG_RUNTIME_DIR is invalid" lines
# On lavapipe (no GPU: CI, most contributors) the suite's time is mostly LLVM compiling the
# shaders it runs, each once (Mesa caches them on disk, ~/.cache/mesa_shader_cache): skipping
# LLVM's optimisation passes compiles them about a quarter faster and runs the same WGSL, a
# little slower. Set GALLIVM_PERF (even empty) to choose otherwise. Ignored by GPU drivers.
export GALLIVM_PERF="${GALLIVM_PERF-nopt}"
# And with llvmpipe's SIMD 4 lanes wide rather than the 8 of an AVX2 CPU: before Mesa 23 it loads
# and stores each lane of a vector on its own, behind a branch, so a shader's code grows with its
# lanes and LLVM's time faster than the code (the suite's costliest shaders compile 1.2-3x
# faster). Cold, in turns on 2 cores: pytest 169 and 165 s against 176 and 182 s. Shaders see
# subgroups of 4 lanes rather than 8. Set LP_NATIVE_VECTOR_WIDTH (even empty) to choose otherwise.
export LP_NATIVE_VECTOR_WIDTH="${LP_NATIVE_VECTOR_WIDTH-128}"
# Each test file goes whole to one worker (--dist loadfile): its module fixtures (devices of its
# own tunings, a browser, a Dask cluster) are set up once, and the shaders its tests share are
# compiled by one worker, not by both at once. Cold, on 2 cores, pytest took 193 s and 191 s where
# xdist's default (tests dealt out one by one) took 222 s and 200 s, in two back-to-back pairs.
# Files go out in collection order (--no-loadscope-reorder), which tests/conftest.py makes the
# longest first (LONGEST_FIRST), so that the workers end together.
# The plugins are named (-p) rather than found through the installed packages' entry points:
# pytest rewrites the asserts of every module of a package that brings a plugin, so Hypothesis
# (which does) was rewritten whole in each worker, 1.1-1.5 s of its collection every run where
# bytecode is not written (PYTHONDONTWRITEBYTECODE). Add -p NAME for another plugin you want.
plugins=(--disable-plugin-autoload -p xdist -p hypothesispytest)
# Bytecode: every process of the suite (its two workers, its CLI, Dask and stress subprocesses)
# imports NumPy, Dask, pandas, ...; where bytecode is not written (PYTHONDONTWRITEBYTECODE, as on
# CI machines) each of them compiled all of it from source, 25 s of a cold run. So the suite
# writes it, under .venv (PYTHONPYCACHEPREFIX: nothing in the checkout), on first import.
export PYTHONPYCACHEPREFIX="${PYTHONPYCACHEPREFIX:-$PWD/.venv/pycache}"
unset PYTHONDONTWRITEBYTECODE
rc=0
echo "[test] pytest ${plugins[*]} -n ${DMLGPU_TEST_WORKERS:-2} --dist loadfile --no-loadscope-reorder $*"
.venv/bin/python -m pytest "${plugins[@]}" -n "${DMLGPU_TEST_WORKERS:-2}" --dist loadfile --no-loadscope-reorder "$@" || rc=$?
if [ "$rc" -eq 5 ]; then
  echo "[test] FAIL: pytest collected no tests" >&2
fi
exit "$rc"
