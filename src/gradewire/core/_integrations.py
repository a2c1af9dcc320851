"""The one registry of integrations: one entry point group, the kind of each part in its name.

An integration (``gradewire_mlflow``, ``gradewire_wandb``, ...) offers each part the core
finds at run time as an entry point of the group ``gradewire.integrations``, named
``<kind>.<integration>``::

    [project.entry-points."gradewire.integrations"]
    "spill_target.mlflow" = "gradewire_mlflow._spill_target:sink_for_target"

The kinds, and what each entry point is:

- ``demo_sink``: ``make(out_dir) -> (sink, lines)``, a sink ``gradewire demo`` also logs to.
- ``eval_tracker``: ``factory(folder) -> EvalTracker`` (``gradewire eval --sink``).
- ``eval_source``: ``reader(ref) -> EvalRun | None``, runs kept by another system.
- ``eval_engine``: ``factory(**options) -> GradingEngine`` (``gradewire eval --engine``).
- ``spill_target``: ``factory(target, *, closed, **overrides) -> Sink`` (``gradewire sync``).
- ``run_history``: ``reader(ref) -> list[(step, logs)] | None``, a tracked run's logged
  steps (``gradewire health``).

The core never imports an integration by name: each stage asks `integrations` for the
parts of its kind. Before this registry each kind had a group of its own
(``gradewire.spill_targets``, ...); those groups are not read any more: every entry
point in them shipped inside gradewire's own distribution, and none was documented for
other packages, so no third party can have used them.
"""

from __future__ import annotations

from importlib import metadata
from typing import Literal, get_args

from gradewire.core._errors import InvalidInputError

__all__ = ["INTEGRATIONS_GROUP", "INTEGRATION_KINDS", "IntegrationKind", "integrations"]

INTEGRATIONS_GROUP = "gradewire.integrations"

IntegrationKind = Literal[
    "demo_sink", "eval_tracker", "eval_source", "eval_engine", "spill_target", "run_history"
]
"""What an integration's entry point is (see the module's docs)."""

INTEGRATION_KINDS: tuple[IntegrationKind, ...] = get_args(IntegrationKind)


def integrations(kind: IntegrationKind) -> dict[str, metadata.EntryPoint]:
    """The installed integrations' entry points of ``kind``, by integration name, not loaded.

    Names are sorted, so a stage that tries each in turn does so in the same order on every
    machine; of two distributions offering the same name, the first found is kept.

    Raises:
        InvalidInputError: ``kind`` is not one of `INTEGRATION_KINDS`.
    """
    if kind not in INTEGRATION_KINDS:
        raise InvalidInputError(
            f"no integration kind {kind!r}; the kinds are {', '.join(INTEGRATION_KINDS)}"
        )
    found: dict[str, metadata.EntryPoint] = {}
    for entry in metadata.entry_points(group=INTEGRATIONS_GROUP):
        prefix, dot, name = entry.name.partition(".")
        if prefix == kind and dot and name:
            found.setdefault(name, entry)
    return dict(sorted(found.items()))
