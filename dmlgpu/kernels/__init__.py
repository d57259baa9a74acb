"""The kernel families, one module each (``base`` says what a family's module holds).

``FIRST_PASS`` is the order the planner asks them in: the first whose ``cover`` takes a
simplified shape plans it (``thread`` takes any). ``merge`` is the second pass of a split.
"""

from __future__ import annotations

from types import ModuleType

from . import base, columns, merge, rows, segments, thread

#: The first-pass kernels, in the order the planner asks them.
FIRST_PASS: tuple[ModuleType, ...] = (rows, segments, columns, thread)
#: Every family's module, with the settings they own: what ``plan.Tuning`` is made of.
ALL: tuple[ModuleType, ...] = (base, *FIRST_PASS, merge)
BY_NAME = {k.NAME: k for k in FIRST_PASS}


def software_changes() -> dict:
    """A CPU adapter's changes to every family's GPU defaults."""
    return {name: value for k in ALL for name, value in k.SOFTWARE.items()}


def candidates(software: bool) -> dict[str, tuple[dict, ...]]:
    """What a calibration tries, by family (without its bits): each first-pass family's."""
    return {family: changes for k in FIRST_PASS
            for family, changes in (k.SOFTWARE_CANDIDATES if software else k.CANDIDATES).items()}


def owner(family: str) -> ModuleType:
    """The module whose kernel covers a family (``"rows"``, ``"short_rows"``, ...)."""
    return next(k for k in FIRST_PASS if family in k.CANDIDATES or family in k.SOFTWARE_CANDIDATES)
