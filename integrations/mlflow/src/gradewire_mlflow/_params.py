"""A run configuration as MLflow params: flat keys, str values within MLflow's limits."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from gradewire_mlflow._keys import KeyCleaner
from gradewire_mlflow._writer import MAX_PARAM_LENGTH, MAX_TAG_LENGTH

__all__ = ["CHANGED_PARAM_TAG", "ConfigBook", "ConfigPlan", "flatten"]

logger = logging.getLogger("gradewire")

CHANGED_PARAM_TAG = "gradewire.param/"
"""Prefix of the tag that holds the latest value of a param logged again with a new one."""


def flatten(config: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """``(key, value)`` pairs, nested mappings joined by ``/`` (``{"a": {"b": 1}}``: ``a/b``)."""
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            yield from flatten(value, f"{name}/")
        else:
            yield name, value


@dataclass
class ConfigPlan:
    """What one `log_config` call sends: new params, tags for changed ones, whole values."""

    params: list[tuple[str, str]] = field(default_factory=list)
    tags: dict[str, str] = field(default_factory=dict)
    files: list[tuple[str, str]] = field(default_factory=list)


class ConfigBook:
    """The params of one run: what was logged, and how a new config call maps onto them.

    Values are ``str(value)``, as ``mlflow.log_params`` stores them. A value over 6,000
    characters is cut, and kept whole as the artifact ``params/<key>.txt``. A key already
    logged with another value keeps its param (MLflow params cannot change) and its new
    value goes to the tag ``gradewire.param/<key>``. Each case is a WARNING, once per key.
    """

    def __init__(self) -> None:
        self.known: dict[str, str] = {}
        self._keys = KeyCleaner("param")
        self._files = KeyCleaner("param file", allow_colon=False)
        self._tags = KeyCleaner("tag")
        self._warned: set[tuple[str, str]] = set()

    def plan(self, config: Mapping[str, Any]) -> ConfigPlan:
        """The requests for ``config``; `known` changes only in `commit`."""
        plan = ConfigPlan()
        new: dict[str, str] = {}
        for raw, value in flatten(config):
            key = self._keys(raw)
            text = str(value)
            if len(text) > MAX_PARAM_LENGTH:
                path = f"params/{self._files(key)}.txt"
                plan.files.append((path, text))
                self._warn(
                    ("long", key),
                    "config value of %r has %d characters, over MLflow's %d for a param; the "
                    "param holds its first %d and the whole value is in the artifact %s",
                    raw,
                    len(text),
                    MAX_PARAM_LENGTH,
                    MAX_PARAM_LENGTH,
                    path,
                )
                text = text[:MAX_PARAM_LENGTH]
            old = new.get(key, self.known.get(key))
            if old is None:
                new[key] = text
                plan.params.append((key, text))
            elif old != text:
                tag = self._tags(CHANGED_PARAM_TAG + key)
                plan.tags[tag] = text[:MAX_TAG_LENGTH]
                self._warn(
                    ("changed", key),
                    "config %r changed from %r to %r, but MLflow params cannot change: the "
                    "param keeps its first value and the tag %r holds the latest",
                    raw,
                    old[:100],
                    text[:100],
                    tag,
                )
        return plan

    def commit(self, plan: ConfigPlan) -> None:
        """Record that ``plan`` was sent."""
        self.known.update(plan.params)

    def _warn(self, once: tuple[str, str], message: str, *args: object) -> None:
        if once not in self._warned:
            self._warned.add(once)
            logger.warning(message, *args)
