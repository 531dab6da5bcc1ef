"""The package's own map: every name its equation index gives exists, and every stage of the
workflow has its folder."""

import importlib
import re
from pathlib import Path

import collat

REPO = Path(__file__).resolve().parents[1]


def _resolve(dotted: str):
    """The object a ``module.attr`` path of the index names, importing the longest module prefix."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module("collat." + ".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for name in parts[cut:]:
            obj = getattr(obj, name)
        return obj
    raise AssertionError(dotted)


def test_every_name_of_the_equation_index_exists():
    index = collat.__doc__.split("Where each equation lives:")[1]
    names = re.findall(r"``((?:model|nbft|pt2pt|regression|partitioned)\.[\w.]+)``", index)
    assert len(names) >= 18
    for name in names:
        assert callable(_resolve(name)), name


def test_every_stage_of_the_workflow_has_its_folder():
    stages = {p.stem for p in (REPO / "workflow" / "rules").glob("*.smk")} - {"common"}
    folders = {p.name for p in (REPO / "src" / "collat").iterdir() if (p / "__init__.py").exists()}
    assert stages <= folders, stages - folders
