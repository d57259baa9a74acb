"""Feature levels (docs/semantics.md#types-and-feature-levels, issue 13): which operators, types and dimension counts
each DirectML feature level has, checked at every boundary without a GPU; the table of the
docs' semantics page and ``dmlgpu info`` against the one table in ``types.py``.

A boundary is tested both ways: the descriptor is accepted at the level it needs and at
every level above, and refused at the level just below (with a message naming the field or
the operator, the value and the level needed) and at every level below that.
"""

from __future__ import annotations

import json
import pathlib
import re

import pytest

from dmlgpu import cli
from dmlgpu.desc import (
    ActivationHardmax1OperatorDesc,
    ActivationHardmaxOperatorDesc,
    ArgMaxOperatorDesc,
    ArgMinOperatorDesc,
    ReduceOperatorDesc,
    TensorDesc,
)
from dmlgpu.errors import DescriptorError
from dmlgpu.types import (
    DEFAULT_FEATURE_LEVEL,
    EXTENSION_TYPES,
    HARDMAX_TYPES,
    MODELLED_LEVELS,
    OPERATOR_SUPPORT,
    DataType,
    FeatureLevel,
    describe,
    introduced,
    level_table,
    support_changes,
)

L = FeatureLevel
#: The page that holds the feature-level table (``docs/semantics.md``, "Types and feature levels").
PAGE = pathlib.Path(__file__).resolve().parent.parent / "docs" / "semantics.md"


def rx(*parts: str) -> str:
    """A regex requiring each literal part, in this order, in one message."""
    return ".*".join(re.escape(p) for p in parts)


def t(data_type="FLOAT32", sizes=(2, 3), **kw) -> TensorDesc:
    return TensorDesc(data_type, sizes, **kw)


RANK4 = (1, 2, 3, 4)


def test_every_directml_level_in_order():
    """DirectML.h names 1_0, 2_0, 2_1, 3_0, 3_1, 4_0, 4_1, 5_0, 5_1, 5_2, 6_0 ... 6_4."""
    assert [level.value for level in FeatureLevel] == [
        "1.0", "2.0", "2.1", "3.0", "3.1", "4.0", "4.1", "5.0", "5.1", "5.2", "6.0", "6.1", "6.2", "6.3", "6.4"]
    assert [level.code for level in FeatureLevel] == [
        0x1000, 0x2000, 0x2100, 0x3000, 0x3100, 0x4000, 0x4100, 0x5000, 0x5100, 0x5200,
        0x6000, 0x6100, 0x6200, 0x6300, 0x6400]
    assert sorted(FeatureLevel, reverse=True) == list(reversed(FeatureLevel))
    assert L.FL_3_0 < L.FL_3_1 < L.FL_4_1 <= L.FL_4_1 < L.FL_5_0 and L.FL_6_4 > L.FL_5_1 >= L.FL_5_1


@pytest.mark.parametrize("level", list(FeatureLevel), ids=lambda level: level.value)
def test_every_level_parses_from_each_spelling(level):
    for spelling in (level, level.value, float(level.value), level.directml_name, level.directml_name.lower(),
                     level.value.replace(".", "_"), level.code):
        assert FeatureLevel.parse(spelling) is level, spelling


def test_modelled_levels_and_the_default():
    """Modelled: the levels at which some operator's table starts. The default is the
    highest, where every operator works (docs/semantics.md#types-and-feature-levels)."""
    assert MODELLED_LEVELS == (L.FL_1_0, L.FL_2_0, L.FL_2_1, L.FL_3_0, L.FL_4_1, L.FL_5_1)
    assert DEFAULT_FEATURE_LEVEL is L.FL_5_1
    assert all(introduced(operator) <= DEFAULT_FEATURE_LEVEL for operator in OPERATOR_SUPPORT)


@pytest.mark.parametrize("level, modelled", [
    (L.FL_1_0, L.FL_1_0), (L.FL_2_0, L.FL_2_0), (L.FL_2_1, L.FL_2_1), (L.FL_3_0, L.FL_3_0),
    (L.FL_3_1, L.FL_3_0), (L.FL_4_0, L.FL_3_0), (L.FL_4_1, L.FL_4_1), (L.FL_5_0, L.FL_4_1),
    (L.FL_5_1, L.FL_5_1), (L.FL_5_2, L.FL_5_1), (L.FL_6_0, L.FL_5_1), (L.FL_6_3, L.FL_5_1), (L.FL_6_4, L.FL_5_1),
], ids=lambda level: level.value)
def test_levels_between_behave_as_the_nearest_lower_modelled(level, modelled):
    assert level.modelled is modelled


def test_operators_appear_where_their_pages_say():
    """ARGMAX/ARGMIN: 3.0 (seeds 000, 001). HARDMAX1: 5.1 (seed 002). HARDMAX and REDUCE:
    1.0 (their own pages; the seeds do not say)."""
    assert {operator: introduced(operator).value for operator in OPERATOR_SUPPORT} == {
        "ARGMAX": "3.0", "ARGMIN": "3.0", "REDUCE": "1.0", "ACTIVATION_HARDMAX": "1.0", "ACTIVATION_HARDMAX1": "5.1"}


# --- boundaries: (descriptor, the lowest level that takes it, the message one level below)

BOUNDARIES = {
    "ARGMAX": (
        ArgMaxOperatorDesc(t(), axes=[1]), L.FL_3_0,
        rx("ARGMAX needs feature level 3.0, but the device's feature_level is 2.1")),
    "ARGMIN": (
        ArgMinOperatorDesc(t(), axes=[0], axis_direction="DECREASING"), L.FL_3_0,
        rx("ARGMIN needs feature level 3.0, but the device's feature_level is 2.1")),
    "ARGMAX INT64": (
        ArgMaxOperatorDesc(t("INT64"), axes=[1]), L.FL_4_1,
        rx("input_tensor.data_type is INT64, but ARGMAX at feature level 4.0 takes FLOAT32", "INT8",
           "(from feature level 4.1)")),
    "ARGMIN UINT64": (
        ArgMinOperatorDesc(t("UINT64"), t("INT64", (2, 1)), axes=[1]), L.FL_4_1,
        rx("input_tensor.data_type is UINT64, but ARGMIN at feature level 4.0", "(from feature level 4.1)")),
    "ACTIVATION_HARDMAX1": (
        ActivationHardmax1OperatorDesc(t(), axes=[1]), L.FL_5_1,
        rx("ACTIVATION_HARDMAX1 needs feature level 5.1, but the device's feature_level is 5.0")),
    "ACTIVATION_HARDMAX1 FLOAT16 rank 8": (
        ActivationHardmax1OperatorDesc(t("FLOAT16", (2,) * 8), axes=[0, 7]), L.FL_5_1,
        rx("ACTIVATION_HARDMAX1 needs feature level 5.1, but the device's feature_level is 5.0")),
    "ACTIVATION_HARDMAX rank 5": (
        ActivationHardmaxOperatorDesc(t(sizes=(1, 1, 1, 2, 3))), L.FL_2_0,
        rx("input_tensor has 5 dimensions, but ACTIVATION_HARDMAX at feature level 1.0 takes 4",
           "(from feature level 2.0)")),
    "ACTIVATION_HARDMAX rank 6": (
        ActivationHardmaxOperatorDesc(t("FLOAT16", (1,) * 4 + (2, 3))), L.FL_3_0,
        rx("input_tensor has 6 dimensions, but ACTIVATION_HARDMAX at feature level 2.1 takes 4 to 5",
           "(from feature level 3.0)")),
    "ACTIVATION_HARDMAX rank 3": (
        ActivationHardmaxOperatorDesc(t(sizes=(1, 2, 3))), L.FL_3_0,
        rx("input_tensor has 3 dimensions, but ACTIVATION_HARDMAX at feature level 2.1 takes 4 to 5",
           "(from feature level 3.0)")),
    "REDUCE INT8": (
        ReduceOperatorDesc("ARGMAX", t("INT8", RANK4), axes=[3]), L.FL_2_1,
        rx("input_tensor.data_type is INT8, but REDUCE at feature level 2.0 takes FLOAT32, FLOAT16",
           "(from feature level 2.1)")),
    "REDUCE INT64 output": (
        ReduceOperatorDesc("ARGMIN", t(sizes=RANK4), t("INT64", (1, 2, 3, 1)), axes=[3]), L.FL_3_0,
        rx("output_tensor.data_type is INT64, but REDUCE at feature level 2.1 writes UINT32",
           "(from feature level 3.0)")),
    "REDUCE rank 2": (
        ReduceOperatorDesc("ARGMAX", t(), axes=[1]), L.FL_3_0,
        rx("input_tensor has 2 dimensions, but REDUCE at feature level 2.1 takes 4", "(from feature level 3.0)")),
    "REDUCE INT64 input": (
        ReduceOperatorDesc("ARGMAX", t("INT64"), axes=[0]), L.FL_4_1,
        rx("input_tensor.data_type is INT64, but REDUCE at feature level 4.0", "(from feature level 4.1)")),
    # FLOAT64, beyond DirectML: wherever the operator exists, its first level included.
    "ARGMAX FLOAT64": (
        ArgMaxOperatorDesc(t("FLOAT64"), axes=[1]), L.FL_3_0,
        rx("ARGMAX needs feature level 3.0, but the device's feature_level is 2.1")),
    "ARGMIN FLOAT64 rank 8": (
        ArgMinOperatorDesc(t("FLOAT64", (2,) * 8), t("INT64", (1,) * 8), axes=list(range(8))), L.FL_3_0,
        rx("ARGMIN needs feature level 3.0, but the device's feature_level is 2.1")),
    "ACTIVATION_HARDMAX1 FLOAT64": (
        ActivationHardmax1OperatorDesc(t("FLOAT64"), axes=[0]), L.FL_5_1,
        rx("ACTIVATION_HARDMAX1 needs feature level 5.1, but the device's feature_level is 5.0")),
    "ACTIVATION_HARDMAX FLOAT64 rank 6": (
        ActivationHardmaxOperatorDesc(t("FLOAT64", (1,) * 4 + (2, 3))), L.FL_3_0,
        rx("input_tensor has 6 dimensions, but ACTIVATION_HARDMAX at feature level 2.1 takes 4 to 5")),
}


@pytest.mark.parametrize("desc, needed, match", BOUNDARIES.values(), ids=BOUNDARIES.keys())
def test_boundary(desc, needed, match):
    below = max(level for level in FeatureLevel if level < needed)
    with pytest.raises(DescriptorError, match=match):
        desc.check_feature_level(below)
    for level in FeatureLevel:
        if level < needed:
            with pytest.raises(DescriptorError, match=rf"feature.level.* {re.escape(level.value)}\b"):
                desc.check_feature_level(level)
        else:
            desc.check_feature_level(level)


@pytest.mark.parametrize("desc", [
    ActivationHardmaxOperatorDesc(t(sizes=RANK4)),
    ActivationHardmaxOperatorDesc(t("FLOAT16", RANK4)),
    ReduceOperatorDesc("ARGMAX", t(sizes=RANK4), axes=[3]),
    ReduceOperatorDesc("ARGMIN", t("FLOAT16", RANK4), t("UINT32", (1, 1, 1, 4)), axes=[1, 2]),
    ActivationHardmaxOperatorDesc(t("FLOAT64", RANK4)),
    ReduceOperatorDesc("ARGMAX", t("FLOAT64", RANK4), axes=[3]),
], ids=["HARDMAX FLOAT32", "HARDMAX FLOAT16", "REDUCE ARGMAX", "REDUCE ARGMIN", "HARDMAX FLOAT64", "REDUCE FLOAT64"])
def test_the_oldest_operators_at_every_level(desc):
    """ACTIVATION_HARDMAX and REDUCE are on DirectML's first level, 1.0, with 4 dimensions:
    taken at every level, from the lowest up."""
    for level in FeatureLevel:
        desc.check_feature_level(level)


def test_float64_is_in_no_directml_table_and_is_taken_beside_them():
    """DirectML's tables stay as the reference pages state them (no FLOAT64 in any); FLOAT64
    is the one extension, and a type refused at a level names it as beyond DirectML."""
    assert EXTENSION_TYPES == (DataType.FLOAT64,)
    for rows in OPERATOR_SUPPORT.values():
        for support in rows.values():
            assert DataType.FLOAT64 not in support.inputs + support.outputs
    assert DataType.FLOAT64 in HARDMAX_TYPES
    with pytest.raises(DescriptorError, match=rx("input_tensor.data_type is INT64, but ARGMAX at feature level 3.0",
                                                 "(from feature level 4.1) (and FLOAT64, beyond DirectML)")):
        ArgMaxOperatorDesc(t("INT64"), axes=[1]).check_feature_level("3.0")


def test_argmax_below_3_0_names_the_operator_at_each_level():
    for level in (L.FL_1_0, L.FL_2_0, L.FL_2_1):
        with pytest.raises(DescriptorError, match=rx(f"ARGMAX needs feature level 3.0, but the device's "
                                                     f"feature_level is {level.value}")):
            ArgMaxOperatorDesc(t(sizes=RANK4), axes=[0]).check_feature_level(level.directml_name)


# --- the semantics page's table and ``dmlgpu info`` say what the table in types.py says

def _row(level, operators, support) -> str:
    return f"| {level.value} | {', '.join(operators)} | {' | '.join(describe(support))} |"


def test_page_table_is_the_table_in_types():
    lines = PAGE.read_text().splitlines()
    header = lines.index("| from feature level | operators | input types | output types | dimensions |")
    rows = []
    for line in lines[header + 2:]:
        if not line.startswith("|"):
            break
        rows.append(line)
    assert rows == [_row(*change) for change in support_changes()]


def test_page_names_the_default_and_the_levels():
    text = PAGE.read_text()
    assert f"the default is {DEFAULT_FEATURE_LEVEL.value}" in text
    assert "DML_FEATURE_LEVEL_6_4" in text


def test_info_lists_each_level_with_its_operators(capsys):
    assert cli.main(["info"]) == 0
    out = capsys.readouterr().out
    section = out[out.index("feature levels"):].splitlines()
    assert section[0] == f"feature levels (Device(feature_level=...); the default is {DEFAULT_FEATURE_LEVEL.value}):"
    assert "  3.0 (also 3.1, 4.0, which behave as 3.0)" in section
    assert "  5.1 (also 5.2, 6.0, 6.1, 6.2, 6.3, 6.4, which behave as 5.1)" in section
    at_2_1 = section[section.index("  2.1") + 1:section.index("  3.0 (also 3.1, 4.0, which behave as 3.0)")]
    assert at_2_1 == [
        "    REDUCE: FLOAT32, FLOAT16, UINT32, UINT16, UINT8, INT32, INT16, INT8 -> UINT32; 4 dimensions",
        "    ACTIVATION_HARDMAX: FLOAT32, FLOAT16 -> the input's type; 4 to 5 dimensions",
    ]
    assert section[-2] == ("    ACTIVATION_HARDMAX, ACTIVATION_HARDMAX1: FLOAT32, FLOAT16 -> the input's type; "
                           "1 to 8 dimensions")
    assert section[-1] == "  beyond DirectML, at every level: FLOAT64 input to every operator there (HARDMAX: FLOAT64 out)"


def test_info_json_keeps_the_adapters_and_adds_the_levels(capsys):
    assert cli.main(["info", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert set(report) == {"adapters", "feature_levels"}
    assert report["adapters"] and all("device" in a and "limits" in a for a in report["adapters"])
    assert [a["index"] for a in report["adapters"]] == list(range(len(report["adapters"])))
    levels = report["feature_levels"]
    assert levels["default"] == "5.1"
    assert levels["levels"] == level_table()
    assert levels["extension_types"] == ["FLOAT64"]
    by_level = {entry["level"]: entry for entry in levels["levels"]}
    assert list(by_level) == [level.value for level in FeatureLevel]
    assert by_level["5.0"]["behaves_as"] == "4.1" and by_level["5.0"]["name"] == "DML_FEATURE_LEVEL_5_0"
    assert "ACTIVATION_HARDMAX1" not in by_level["5.0"]["operators"]
    assert by_level["5.1"]["operators"]["ACTIVATION_HARDMAX1"] == {
        "input_types": ["FLOAT32", "FLOAT16"], "output_types": ["FLOAT32", "FLOAT16"],
        "output_is_input_type": True, "dimensions": [1, 8]}
    assert set(by_level["2.1"]["operators"]) == {"REDUCE", "ACTIVATION_HARDMAX"}
    assert "INT64" in by_level["4.1"]["operators"]["ARGMAX"]["input_types"]
    assert "INT64" not in by_level["4.0"]["operators"]["ARGMAX"]["input_types"]


def test_list_adapters_shows_only_adapters(capsys):
    assert cli.main(["bench", "--list-adapters"]) == 0
    assert "feature levels" not in capsys.readouterr().out
