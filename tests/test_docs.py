"""The documentation held to the code, where that is cheap (no GPU, no docs build).

- ``docs/architecture.md`` names only module files that exist, names every module of the
  package (a new module without a place on the page fails here), and the import rules it
  states hold.
- The API reference has a ``:::`` entry for every public name.
- Every page is in ``mkdocs.yml``'s nav, and the README's links lead to pages and headings
  that exist (the README is not part of the built site, so ``mkdocs build --strict`` does not
  check it).
- The performance tables of the README and of ``docs/benchmarks.md`` are what
  ``benchmarks/readme_table.py`` writes from the run they name.
- Every file path that the README, the pages, the package's docstrings, comments and messages,
  and the command's help cite exists in the repository (with its heading, where one is named).

The build itself (``bash scripts/docs.sh``, ``mkdocs build --strict``) checks the rest: links
and anchors between pages, and that every ``:::`` entry resolves.
"""

from __future__ import annotations

import ast
import importlib.util
import io
import json
import pathlib
import re
import subprocess
import tokenize

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "dmlgpu"
DOCS = ROOT / "docs"
ARCHITECTURE = DOCS / "architecture.md"
REFERENCE = DOCS / "reference"
README = ROOT / "README.md"

#: Folders at the repository's root that the architecture page names files in; any other path
#: on the page is relative to dmlgpu/.
ROOT_FOLDERS = ("shaders", "tests", "benchmarks", "scripts", "docs")
_FILE = re.compile(r"(?<![\w/.*-])((?:[\w-]+/)*[\w-]+\.(?:py|c|wgsl))\b")

#: The rooms that the architecture page says import neither wgpu nor the runtime.
PURE_ROOMS = ("desc", "tensor_desc", "axes", "types", "errors", "layout", "plan", "tuning", "pieces", "wgsl", "oracle",
              "explainer", "exporter", "kernels/__init__", "kernels/base", "kernels/rows", "kernels/segments",
              "kernels/columns", "kernels/thread", "kernels/merge")
#: What the runtime may import from the rest of the library (the page says so).
RUNTIME_MAY_IMPORT = {"dmlgpu.errors", "dmlgpu.plan", "dmlgpu.kernels"}


#: Files of the repository's root the page may name (they are not modules of the package).
ROOT_FILES = ("setup.py", "pyproject.toml")


def named_files(text: str) -> set[pathlib.Path]:
    """Every file path the text names, resolved against the repository."""
    found = set()
    for name in _FILE.findall(text):
        name = name.removeprefix("dmlgpu/")
        first = name.split("/")[0]
        if name.endswith(".wgsl") and "/" not in name:
            found.add(ROOT / "shaders" / name)
        elif first in ROOT_FOLDERS or name in ROOT_FILES:
            found.add(ROOT / name)
        else:
            found.add(PACKAGE / name)
    return found


def package_modules() -> list[pathlib.Path]:
    """Every module file of the package, subpackages included (``__init__.py`` aside)."""
    files = [p for p in PACKAGE.rglob("*.py") if p.name != "__init__.py"] + list(PACKAGE.rglob("*.c"))
    return sorted(p for p in files if "__pycache__" not in p.parts)


def test_architecture_names_only_files_that_exist():
    missing = sorted(str(p.relative_to(ROOT)) for p in named_files(ARCHITECTURE.read_text()) if not p.is_file())
    assert not missing, f"docs/architecture.md names files that do not exist: {missing}"


def test_architecture_names_every_module():
    named = named_files(ARCHITECTURE.read_text())
    unnamed = [str(p.relative_to(ROOT)) for p in package_modules() if p not in named]
    assert not unnamed, (f"modules with no place on docs/architecture.md: {unnamed}; name each in the room "
                         f"tables (and on a call's route if a call goes through it)")


def _imports(path: pathlib.Path) -> set[str]:
    """The absolute names of the modules a file imports, relative imports resolved, imports
    inside functions included."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            names.add(base)
            names |= {f"{base}.{alias.name}" for alias in node.names}  # "from . import layout"
    return names


@pytest.mark.parametrize("room", PURE_ROOMS)
def test_pure_rooms_import_neither_wgpu_nor_the_runtime(room):
    imported = _imports(PACKAGE / f"{room}.py")
    bad = sorted(n for n in imported if n.split(".")[0] == "wgpu" or n.startswith("dmlgpu.runtime"))
    assert not bad, f"dmlgpu/{room}.py imports {bad}, but docs/architecture.md says it imports neither"


def test_the_runtime_imports_only_errors_and_plan_from_the_library():
    for path in sorted((PACKAGE / "runtime").rglob("*.py")):
        outside = {n for n in _imports(path) if n.startswith("dmlgpu.") and not n.startswith("dmlgpu.runtime")}
        modules = {".".join(n.split(".")[:2]) for n in outside}
        assert modules <= RUNTIME_MAY_IMPORT, f"{path.relative_to(ROOT)} imports {sorted(modules)}"


def _outside(*rooms: str) -> list[pathlib.Path]:
    """The package's modules outside these subpackages."""
    return [p for p in package_modules() if p.suffix == ".py" and p.relative_to(PACKAGE).parts[0] not in rooms] + [
        p for p in PACKAGE.rglob("__init__.py") if "__pycache__" not in p.parts
        and p.relative_to(PACKAGE).parts[0] not in rooms]


def test_wgpu_is_imported_only_by_the_runtime():
    """The bench included: it times through the runtime's front door."""
    bad = {str(p.relative_to(ROOT)) for p in _outside("runtime") if any(n.split(".")[0] == "wgpu" for n in _imports(p))}
    assert not bad, f"these modules import wgpu, which only dmlgpu/runtime/ may: {sorted(bad)}"


def test_the_product_does_not_import_the_bench():
    """The bench measures the product; only the command that runs it (cli.py) imports it."""
    bad = {str(p.relative_to(ROOT)) for p in _outside("bench") if p.name != "cli.py"
           and any(n == "dmlgpu.bench" or n.startswith("dmlgpu.bench.") for n in _imports(p))}
    assert not bad, f"these modules import dmlgpu.bench: {sorted(bad)}"


def test_the_runtime_is_entered_by_its_front_door():
    """Outside dmlgpu/runtime/, the library (the bench included) imports the runtime's names from
    ``dmlgpu.runtime``, which names each in ``__all__``, never from one of its rooms."""
    import dmlgpu.runtime as runtime

    for path in _outside("runtime"):
        imported = {n for n in _imports(path) if n.startswith("dmlgpu.runtime.")}
        rooms = {n for n in imported if n.split(".")[2] in runtime._ROOMS.values()}
        names = {n.split(".")[2] for n in imported} - set(runtime._ROOMS.values())
        assert not rooms, f"{path.relative_to(ROOT)} imports the runtime's rooms: {sorted(rooms)}"
        assert names <= set(runtime.__all__), f"{path.relative_to(ROOT)} imports {sorted(names - set(runtime.__all__))}"
    assert sorted(runtime.__all__) == sorted(runtime._ROOMS)
    assert all(getattr(runtime, name) is not None for name in runtime.__all__)  # each name resolves in its room


#: Names of GPU models, which no library file names: a setting's comment says why it exists and
#: cites the LOG entry that measured it, and what a GPU needs comes from measuring it.
GPU_MODELS = re.compile(r"\b(H100|H200|A100|RTX|Radeon)s?\b")  # plurals too ("two H200s")


def test_no_library_file_names_a_gpu():
    files = [p for p in PACKAGE.rglob("*") if p.suffix in (".py", ".c", ".js") and "__pycache__" not in p.parts]
    files += list((ROOT / "shaders").glob("*.wgsl"))
    named = {f"{p.relative_to(ROOT)}:{n}" for p in files for n, line in enumerate(p.read_text().splitlines(), 1)
             if GPU_MODELS.search(line)}
    assert not named, f"library lines that name a GPU model: {sorted(named)}"


def _dunder_all(path: pathlib.Path) -> list[str] | None:
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return list(ast.literal_eval(node.value))
    return None


def _entries(page: pathlib.Path) -> list[str]:
    return re.findall(r"^::: ([\w.]+)", page.read_text(), re.M)


# (page of the API reference, a module whose public names (``__all__``) it must document)
REFERENCE_PAGES = [
    ("dmlgpu.md", "__init__.py"),
    ("numpy.md", "numpy.py"),
    ("dask.md", "dask/__init__.py"),
    ("dask.md", "dask/numpy.py"),
    ("explain.md", "explainer.py"),
    ("export.md", "exporter.py"),
    ("onnx_backend.md", "onnx_backend.py"),
]


def _aliases(tree: ast.Module) -> dict[str, str]:
    """Module-level ``name = Class.attribute`` assignments: name -> Class (the ONNX backend's
    functions are its class's methods, documented with the class)."""
    return {t.id: node.value.value.id for node in tree.body if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Attribute) and isinstance(node.value.value, ast.Name)
            for t in node.targets if isinstance(t, ast.Name)}


@pytest.mark.parametrize("page, module", REFERENCE_PAGES)
def test_the_api_reference_has_an_entry_for_every_public_name(page, module):
    """Every name of the module's ``__all__`` is a ``:::`` entry of its page, named in full
    (the package's own names: of any reference page, by any path), or an alias of a class
    that is."""
    pages = REFERENCE.glob("*.md") if module == "__init__.py" else [REFERENCE / page]
    prefix = f"dmlgpu.{_dotted(module)}."
    documented = {e.split(".")[-1] for p in pages for e in _entries(p)
                  if module == "__init__.py" or e.startswith(prefix) and "." not in e[len(prefix):]}
    tree = ast.parse((PACKAGE / module).read_text())
    public = _dunder_all(PACKAGE / module)
    if public is None:  # no __all__: the classes and functions not starting with _
        public = [n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))
                  and not n.name.startswith("_")]
    aliases = _aliases(tree)
    missing = [name for name in public if name not in documented and aliases.get(name) not in documented]
    assert not missing, f"docs/reference/{page} has no ::: entry for {missing}"


def test_every_public_module_has_a_reference_page():
    """The modules a user imports by name (beside ``dmlgpu`` itself) each have a page."""
    pages = {p.name for p in REFERENCE.glob("*.md")}
    assert {p for p, _ in REFERENCE_PAGES} <= pages
    assert all(f"::: dmlgpu.{_dotted(m)}\n" in (REFERENCE / p).read_text()
               for p, m in REFERENCE_PAGES if m != "__init__.py")


def _dotted(module: str) -> str:
    """A module file of the package as its dotted name below ``dmlgpu`` ("dask/__init__.py": "dask")."""
    return module.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def test_every_page_is_in_the_nav():
    nav = re.findall(r"^\s+- (?:[^:\n]+: )?(\S+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(), re.M)
    pages = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))
    assert sorted(nav) == pages


def slug(heading: str) -> str:
    """A heading's anchor as MkDocs' ``toc`` extension makes it."""
    text = re.sub(r"[^\w\s-]", "", heading.strip().lower())
    return re.sub(r"[-\s]+", "-", text).strip("-")


def anchors(page: pathlib.Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.M | re.S)  # no headings in code
    return {slug(h) for h in re.findall(r"^#+ (.+)$", text, re.M)}


def test_the_readme_links_lead_somewhere():
    for target in re.findall(r"\]\(([^)\s]+)\)", README.read_text()):
        if re.match(r"\w+://", target):
            continue
        path, _, anchor = target.partition("#")
        page = ROOT / path
        assert page.exists(), f"README.md links to {target}, which does not exist"
        if anchor:
            assert anchor in anchors(page), f"README.md links to {target}, but {path} has no such heading"


def test_the_readme_is_a_front_page():
    """What it is, the two commands (and how the tests get an adapter without a GPU), a tour
    that links each entry point's page, the headline numbers; the rest lives in docs/."""
    text = README.read_text()
    assert len(text.splitlines()) < 200
    for needed in ("bash scripts/demo.sh", "bash scripts/test.sh", "mesa-vulkan-drivers", "lavapipe",
                   "docs/python-api.md", "docs/numpy.md", "docs/onnx.md", "docs/dask.md", "docs/cli.md",
                   "docs/benchmarks.md", "docs/architecture.md", "<!-- bench-headline -->"):
        assert needed in text, needed


def _readme_table():
    spec = importlib.util.spec_from_file_location("readme_table", ROOT / "benchmarks" / "readme_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _block(path: pathlib.Path, name: str) -> str:
    text = path.read_text()
    start, end = f"<!-- {name} -->\n", f"\n<!-- /{name} -->"
    assert start in text and end in text, f"{path.name} has no {name} block"
    return text[text.index(start) + len(start):text.index(end)]


@pytest.mark.parametrize("path, name, writer", [
    (README, "bench-headline", "headline"),
    (DOCS / "benchmarks.md", "bench-tables", "page_tables"),
])
def test_the_bench_tables_are_those_of_the_runs_they_name(path, name, writer):
    """What ``python benchmarks/readme_table.py RUN.json RUN2.json --readme README.md`` writes:
    both blocks from the same committed runs, one a GPU, unedited."""
    block = _block(path, name)
    sources = list(dict.fromkeys(re.findall(r"`(benchmarks/results/[^`]+\.json)`", block)))
    assert len(sources) >= 2, "a run for each GPU (the H100's and the H200's)"
    runs = [(json.loads((ROOT / source).read_text()), source) for source in sources]
    assert block == getattr(_readme_table(), writer)(runs)
    other = _block(README if path != README else DOCS / "benchmarks.md",
                   "bench-tables" if path == README else "bench-headline")
    assert all(source in other for source in sources)


# --- every path cited exists ------------------------------------------------------------------

#: A file path as the docs cite one: folders, a name, one of these suffixes, and perhaps a heading
#: (``docs/semantics.md#worked-examples``); not a part of a longer path, a URL or a placeholder
#: (``shaders/<kind>_ceiling.wgsl``).
_CITED = re.compile(r"(?<![\w/.:<>*{-])((?:[\w.-]+/)*[\w-]+\.(?:md|py|sh|c|wgsl|json|toml|yml|txt|png|svg|csv))"
                    r"(?:#([\w.-]*\w))?(?![\w/*])")
#: Names that are not citations of the repository's files: what a command writes (``--json
#: out.json``) and files a build makes; placeholders in capitals (``OUT/full.json``,
#: ``benchmarks/results/RUN.json``) are not either, but ``SPEC.md`` is a citation.
NOT_CITATIONS = {"out.json", "out.png", "_hot_missing.txt"}


def _placeholder(path: str) -> bool:
    parts = pathlib.PurePath(path)
    capitals = [re.fullmatch(r"[A-Z][A-Z_-]*", p) for p in (*parts.parent.parts, parts.stem)]
    return any(capitals[:-1]) or bool(capitals[-1]) and parts.suffix != ".md"
#: The engineering log is history: it names files as they were when each entry was written.
HISTORY = {ROOT / "benchmarks" / "LOG.md"}


def _tracked_names() -> set[str]:
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    if listed.returncode != 0:  # not a git checkout (a copy of the tree): what is on disk
        return {p.name for p in ROOT.rglob("*") if ".venv" not in p.parts}
    return {pathlib.Path(f).name for f in listed.stdout.split()}


def _cited_missing(text: str, source: pathlib.Path, names: set[str]) -> list[str]:
    """The paths of ``text`` (from ``source``) that name no file, or a heading it lacks. A path
    with folders is resolved against the citing file's folder (a Markdown link), the repository
    and ``dmlgpu/`` (a module named from inside the package); a bare name must be some file's."""
    missing = []
    for match in _CITED.finditer(text):
        path, anchor = match.groups()
        name = pathlib.PurePath(path).name
        if name in NOT_CITATIONS or _placeholder(path):
            continue
        if "/" not in path:
            found = [p for p in (source.parent / path, ROOT / path) if p.is_file()]
            if not found and name in names:
                continue
        else:
            found = [p for p in (source.parent / path, ROOT / path, PACKAGE / path) if p.exists()]
        if not found:
            missing.append(path)
        elif anchor and found[0].suffix == ".md" and anchor not in anchors(found[0]) | set(_entries(found[0])):
            missing.append(f"{path}#{anchor} (no such heading)")
    return missing


def _strings_and_comments(path: pathlib.Path) -> str:
    """What a module says to a reader: its docstrings, messages and comments."""
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
    return "\n".join(t.string for t in tokens if t.type in (tokenize.STRING, tokenize.COMMENT))


def _cli_help() -> str:
    from dmlgpu import cli

    parser = cli._parser()
    subparsers = next(a for a in parser._actions if isinstance(a, type(parser._subparsers._group_actions[0])))
    return "\n".join([parser.format_help()] + [p.format_help() for p in subparsers.choices.values()])


def test_every_path_the_docs_docstrings_and_help_cite_exists():
    names = _tracked_names()
    pages = [README, ROOT / "CHANGELOG.md"] + sorted(DOCS.rglob("*.md")) + sorted((ROOT / "benchmarks").rglob("*.md"))
    missing = [f"{page.relative_to(ROOT)}: {m}" for page in pages if page not in HISTORY
               for m in _cited_missing(page.read_text(), page, names)]
    missing += [f"{module.relative_to(ROOT)}: {m}" for module in sorted(PACKAGE.rglob("*.py"))
                for m in _cited_missing(_strings_and_comments(module), module, names)]
    missing += [f"dmlgpu --help: {m}" for m in _cited_missing(_cli_help(), ROOT, names)]
    assert not missing, "cited, but not in the repository:\n" + "\n".join(missing)


@pytest.mark.parametrize("text, missing", [
    ("the rule: SPEC.md section 2", ["SPEC.md"]),
    ("see `docs/semantics.md#worked-examples`", []),
    ("see docs/semantics.md#no-such-heading", ["docs/semantics.md#no-such-heading (no such heading)"]),
    ("[limits](limits.md), runtime/hot.py, https://example.org/x.md, shaders/<kind>_ceiling.wgsl", []),
    ("benchmarks/results/RUN.json, OUT/full.json, out.json, but benchmarks/gone.py", ["benchmarks/gone.py"]),
    ("[argmax](reference/dmlgpu.md#dmlgpu.api.argmax), f\"{args.json}\"", []),
])
def test_the_citation_check_finds_what_is_missing(text, missing):
    assert _cited_missing(text, DOCS / "index.md", _tracked_names()) == missing
