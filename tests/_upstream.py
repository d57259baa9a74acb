"""Another project's own tests run against dmlgpu (``test_numpy_upstream``, ``test_dask_upstream``).

The tests are imported from the installed package (NumPy and Dask ship theirs: nothing is
downloaded or copied here) and wrapped so that the few functions they test reach dmlgpu's:

- the name the test module calls the package by (``np``, ``da``) is, while a test runs, a
  module whose routed functions are dmlgpu's and whose every other name is the package's;
- parameters (``@pytest.mark.parametrize``) and class attributes that hold a routed function
  hold dmlgpu's instead; a case whose parameters hold another of the package's functions
  (``np.nanmin`` beside ``np.nanargmin``) tests that function, and is not collected;
- a test passes only if it called dmlgpu (the routed functions count their calls);
- a ``TypeError`` from dmlgpu refusing a type it does not take (complex, datetime, object,
  strings, longdouble...) ends the test as xfailed, naming the type: refusing them is the
  documented behaviour. A refusal of a type dmlgpu takes fails the test;
- a documented deviation (a ``deviation``: the failure's message and the reason) ends the test
  as xfailed where it fails with that message, and fails it where it passes (the deviation is
  gone, and the entry must go too).

Not a test module (pytest collects ``test_*.py`` only).
"""

from __future__ import annotations

import functools
import importlib
import importlib.machinery
import importlib.util
import re
import sys
import types

import pytest

from dmlgpu.numpy import SUPPORTED

ParameterSet = type(pytest.param())  # what pytest.param makes (pytest's own module is private)

#: dmlgpu's refusal of a type (``dmlgpu.numpy`` and ``dmlgpu.dask.numpy`` word it alike).
REFUSAL = re.compile(r"^dmlgpu\.(?:dask\.)?numpy\.\w+ cannot take (\S+) input")
#: Marks kept on a wrapped test; others (a project's own, such as NumPy's leaks_references)
#: mean nothing here.
KEPT_MARKS = ("parametrize", "skip", "skipif", "xfail", "filterwarnings", "usefixtures")


def first_module(*names: str) -> types.ModuleType:
    """The first of ``names`` that imports (test modules move between releases)."""
    for name in names[:-1]:
        try:
            return _import_as_installed(name)
        except ImportError:
            continue
    return _import_as_installed(names[-1])


def _import_as_installed(name: str) -> types.ModuleType:
    """The module ``name`` imported as Python imports it, from the bytecode installed with it,
    not through pytest's assertion rewriting: rewriting NumPy's and Dask's test modules (some
    20,000 lines) took 1.5-2 s of each worker's collection, every run, since rewritten modules are
    not kept where bytecode is not written (PYTHONDONTWRITEBYTECODE). Their asserts still fail
    a test; its report shows the failing line without the values pytest would add."""
    if name in sys.modules:
        return sys.modules[name]
    package = importlib.import_module(name.rpartition(".")[0])
    spec = importlib.machinery.PathFinder.find_spec(name, package.__path__)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


class Reroute:
    """The functions ``routes`` ({the package's: dmlgpu's}) of ``package``, which tests call as
    ``alias`` (``np``), rerouted to dmlgpu in the tests this makes."""

    def __init__(self, package: types.ModuleType, alias: str, routes: dict):
        self.package, self.alias, self.calls = package, alias, 0
        self.routes = {theirs: self._counted(ours) for theirs, ours in routes.items()}
        self.proxy = types.ModuleType(package.__name__, f"{package.__name__}, its {len(routes)} functions dmlgpu's")
        self.proxy.__getattr__ = lambda name: getattr(package, name)  # type: ignore[method-assign]
        for theirs, ours in self.routes.items():
            setattr(self.proxy, theirs.__name__, ours)

    def _counted(self, ours):
        @functools.wraps(ours)
        def call(*args, **kwargs):
            self.calls += 1
            return ours(*args, **kwargs)
        return call

    def route(self, value):
        try:
            return self.routes.get(value, value)
        except TypeError:  # not hashable: not a function
            return value

    def _foreign(self, value) -> bool:
        """A function of the package that is not routed: the case tests something else."""
        return callable(value) and not isinstance(value, type) and value not in self.routes.values() \
            and getattr(self.package, getattr(value, "__name__", ""), None) is value

    def _parametrize(self, mark, names_routed):
        """The mark with routed values, less the cases about other functions; None if none is left."""
        argnames, argvalues = mark.args[0], list(mark.args[1])
        names = [n.strip() for n in argnames.split(",")] if isinstance(argnames, str) else list(argnames)
        kwargs = dict(mark.kwargs)
        ids = kwargs.get("ids")
        kept, kept_ids = [], []
        for i, case in enumerate(argvalues):
            values = case.values if isinstance(case, ParameterSet) else tuple(case) if len(names) > 1 else (case,)
            routed = tuple(self.route(v) if names_routed is None or n in names_routed else v
                           for n, v in zip(names, values))
            if any(self._foreign(v) for n, v in zip(names, routed) if names_routed is None or n in names_routed):
                continue
            if isinstance(case, ParameterSet):
                kept.append(pytest.param(*routed, marks=case.marks, id=case.id))
            else:
                kept.append(routed if len(names) > 1 else routed[0])
            if isinstance(ids, (list, tuple)):
                kept_ids.append(ids[i])
        if not kept:
            return None
        if isinstance(ids, (list, tuple)):
            kwargs["ids"] = kept_ids
        return pytest.mark.parametrize(argnames, kept, **kwargs).mark

    def test(self, fn, module: types.ModuleType, names_routed=None, deviation: tuple[str, str] | None = None):
        """``fn`` (a test of ``module``) calling dmlgpu; None if none of its cases does.
        ``deviation``: (a regex of the failure it ends in, why dmlgpu deviates there)."""
        marks = []
        for mark in getattr(fn, "pytestmark", []):
            if mark.name == "parametrize":
                mark = self._parametrize(mark, names_routed)
                if mark is None:
                    return None
            if mark.name in KEPT_MARKS:
                marks.append(mark)

        @functools.wraps(fn)
        def test(*args, **kwargs):
            before, expected = self.calls, None
            saved = module.__dict__[self.alias]
            module.__dict__[self.alias] = self.proxy
            try:
                fn(*args, **kwargs)
            except TypeError as err:
                refused = REFUSAL.match(str(err))
                if refused is None or refused.group(1) in SUPPORTED:
                    raise
                expected = f"{refused.group(1)}: not a type dmlgpu's operators take, refused with TypeError"
            except pytest.fail.Exception as err:
                if deviation is None or not re.search(deviation[0], str(err)):
                    raise
                expected = deviation[1]
            finally:
                module.__dict__[self.alias] = saved
            if expected is not None:  # out of the except: no traceback through the test's module to show
                pytest.xfail(expected)
            assert self.calls > before, f"{fn.__qualname__} never called dmlgpu: it tests nothing here"
            if deviation is not None:
                pytest.fail(f"{fn.__qualname__} passed, but it is listed as deviating ({deviation[1]}): drop the entry")

        test.pytestmark = marks  # type: ignore[attr-defined]
        return test

    def test_class(self, cls: type, names=None, skip=(), names_routed=None) -> type:
        """A subclass of the test class ``cls`` whose tests (``names``, default all but
        ``skip``) call dmlgpu; ``names_routed``: per test, the parameters rerouted (default all)."""
        module = importlib.import_module(cls.__module__)
        body: dict = {}
        for name in dir(cls):
            if not name.startswith("test"):
                continue
            wanted = (names is None or name in names) and name not in skip
            body[name] = self.test(getattr(cls, name), module, (names_routed or {}).get(name)) if wanted else None
        for name, value in vars(cls).items():  # e.g. nanfuncs = [np.nanargmin, np.nanargmax]
            if isinstance(value, (list, tuple)) and any(self.route(v) is not v for v in value):
                body[name] = type(value)(self.route(v) for v in value)
        return type(cls.__name__, (cls,), body)
