"""One registry of integrations: one entry point group, the kind in each entry's name."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from gradewire.core import InvalidInputError
from gradewire.core._integrations import INTEGRATION_KINDS, INTEGRATIONS_GROUP, integrations
from support.declared_integrations import declared

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

PYPROJECT = Path(__file__).parents[2] / "pyproject.toml"


def test_pyproject_declares_one_group_of_known_kinds() -> None:
    groups = tomllib.loads(PYPROJECT.read_text())["project"]["entry-points"]
    assert list(groups) == [INTEGRATIONS_GROUP]
    for name in declared():
        kind, dot, integration = name.partition(".")
        assert kind in INTEGRATION_KINDS, name
        assert dot, name
        assert integration, name


@pytest.mark.parametrize("name", sorted(declared()))
def test_each_declared_part_is_what_the_registry_loads(name: str) -> None:
    kind, _, integration = name.partition(".")
    entry = integrations(kind)[integration]  # type: ignore[arg-type]
    assert entry.value == declared()[name]
    module, _, attribute = entry.value.partition(":")
    # Only that the target exists: loading it would import the outside system's package.
    assert importlib.util.find_spec(module) is not None
    assert attribute


def test_kinds_are_told_apart_and_an_unknown_kind_is_refused() -> None:
    assert sorted(integrations("spill_target")) == ["mlflow", "wandb"]
    assert sorted(integrations("eval_engine")) == ["ray"]
    assert sorted(integrations("eval_source")) == ["inspect", "mlflow"]
    with pytest.raises(InvalidInputError, match="no integration kind 'spill_targets'"):
        integrations("spill_targets")  # type: ignore[arg-type]


def test_a_third_party_integration_is_found_by_the_same_group(tmp_path, monkeypatch) -> None:
    info = tmp_path / "acme_gradewire-1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-gradewire\nVersion: 1\n")
    (info / "entry_points.txt").write_text(
        f"[{INTEGRATIONS_GROUP}]\neval_tracker.acme = json:dumps\nnokind = json:loads\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    found = integrations("eval_tracker")
    assert found["acme"].value == "json:dumps"
    assert "nokind" not in found
    assert "" not in found


def test_each_integration_folder_is_listed_wherever_tools_need_its_name() -> None:
    # The folder integrations/<name>/src/gradewire_<name> is the one place an integration
    # is named; pytest, mypy and ruff find it by glob. The tools that need package names
    # (the wheel, import-linter) must list each one, or its code goes unshipped or
    # unchecked: this names the place that was missed.
    config = tomllib.loads(PYPROJECT.read_text())
    root = PYPROJECT.parent
    packages = sorted(p.name for p in root.glob("integrations/*/src/gradewire_*") if p.is_dir())
    assert packages, "no integration folder found"
    wheel = config["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]
    linter = config["tool"]["importlinter"]
    contracts = {c["name"]: c for c in linter["contracts"]}
    never = next(c for n, c in contracts.items() if n.startswith("The package never imports"))
    acyclic = next(c for c in contracts.values() if c["type"] == "acyclic_siblings")
    for package in packages:
        assert any(path.endswith(f"/{package}") for path in wheel), f"{package}: wheel packages"
        assert package in linter["root_packages"], f"{package}: importlinter root_packages"
        assert package in never["forbidden_modules"], f"{package}: the core must not import it"
        assert package in acyclic["ancestors"], f"{package}: the acyclic contract's ancestors"
