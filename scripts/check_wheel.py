"""Check a built wheel (and sdist) holds what dmlgpu needs at run time: every shader of
shaders/, every suite of benchmarks/suites/, py.typed, the runner of exported modules
(dmlgpu/export_runner.js), and the compiled hot loop
(dmlgpu/runtime/_hot.so) unless the wheel was built without it (``--no-hot``: then its reason
file instead); the sdist holds the sources that build them. A wheel with the hot loop is tagged
py3-none-<platform>, and on Linux the platform is a manylinux one (``auditwheel repair`` gives
it; a package index refuses ``linux_x86_64``). Exit 1 naming what is missing.

    python scripts/check_wheel.py dist/dmlgpu-*.whl [dist/dmlgpu-*.tar.gz] [--no-hot]
"""

from __future__ import annotations

import pathlib
import sys
import tarfile
import zipfile

ROOT = pathlib.Path(__file__).resolve().parent.parent


def wanted_in_wheel(hot: bool) -> set[str]:
    names = {f"dmlgpu/shaders/{p.name}" for p in (ROOT / "shaders").glob("*.wgsl")}
    names |= {f"dmlgpu/suites/{p.name}" for p in (ROOT / "benchmarks" / "suites").glob("*.json")}
    names |= {"dmlgpu/py.typed", "dmlgpu/__init__.py", "dmlgpu/runtime/__init__.py", "dmlgpu/export_runner.js"}
    names.add("dmlgpu/runtime/_hot.so" if hot else "dmlgpu/runtime/_hot_missing.txt")
    names.add("dmlgpu/bench/_round_trips.so" if hot else "dmlgpu/bench/_round_trips_missing.txt")
    return names


def main(argv: list[str]) -> int:
    hot = "--no-hot" not in argv
    files = [a for a in argv if not a.startswith("--")]
    missing = []
    for path in files:
        if path.endswith(".whl"):
            held = set(zipfile.ZipFile(path).namelist())
            missing += [f"{path}: {n}" for n in sorted(wanted_in_wheel(hot) - held)]
            if hot and "dmlgpu/runtime/_hot_missing.txt" in held:
                missing.append(f"{path}: a compiled hot loop, but it says why it has none")
            tag = pathlib.Path(path).stem.split("-")[-3:]
            if hot and tag[:2] != ["py3", "none"]:
                missing.append(f"{path}: the tag py3-none-<platform>, not {'-'.join(tag)}")
            if hot and tag[2].startswith("linux_"):
                missing.append(f"{path}: a manylinux platform tag (auditwheel repair), not {tag[2]}, "
                               f"which a package index refuses")
        else:
            top = pathlib.Path(path).name.removesuffix(".tar.gz")
            held = {n.removeprefix(top + "/") for n in tarfile.open(path).getnames()}
            sources = {"setup.py", "pyproject.toml", "README.md", "LICENSE", "dmlgpu/runtime/_hot.c",
                       "dmlgpu/bench/_round_trips.c", "dmlgpu/export_runner.js"}
            sources |= {f"shaders/{p.name}" for p in (ROOT / "shaders").glob("*.wgsl")}
            missing += [f"{path}: {n}" for n in sorted(sources - held)]
    for line in missing:
        print(f"[check_wheel] missing {line}", file=sys.stderr)
    print(f"[check_wheel] {'FAIL' if missing else 'ok'}: {', '.join(files)}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
