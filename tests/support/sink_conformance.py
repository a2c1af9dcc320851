"""The conformance suite every sink must pass.

Subclass `SinkConformance` in a ``Test...`` class and fill in two hooks:

- ``make_sink(tmp_path)`` returns a fresh sink writing under ``tmp_path``;
- ``read_back(sink, tmp_path)`` is called after ``sink.close()`` and returns a `Readback`:
  what the sink stored, normalised (numbers per step, tables per key and step with the
  sink's own additions such as a step column removed, every HTML page it rendered).

The same inputs go through every sink. The standard run is recorded once per test class
and shared by its tests, so `make_sink` must not depend on a function-scoped fixture
(monkeypatch and the like): pass directories and settings to the sink explicitly.
A sink that documents another treatment of NaN overrides `check_nan`.

The contract checked here: numbers round-trip (bools as 0/1), tables round-trip on headers
and rows (floats within a tolerance, None and NaN interchangeable), histograms on edges and
counts, config keys of several
calls are all kept (as values or their ``str``), `close()` is idempotent and final (a
later `log` or `log_config` raises `SinkError`), steps must not decrease (a lower step
raises `InvalidInputError` and writes nothing; the same step again adds to it), bad input
raises before anything is written, input is never mutated, and every HTML is escaped.

Example (an integration's test module)::

    from support.sink_conformance import Readback, SinkConformance

    class TestMySink(SinkConformance):
        def make_sink(self, tmp_path):
            return MySink(directory=tmp_path)

        def read_back(self, sink, tmp_path):
            steps, config, pages = load_what_my_sink_wrote(tmp_path)
            return Readback.from_steps(steps, config, pages)

This module lives in ``tests/``; a test outside that folder imports it once ``tests`` is on
``sys.path`` (pytest's ``pythonpath`` setting).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from gradewire import Histogram, InvalidInputError, InvalidTypeError, SinkError, Table
from gradewire.core._logging_core import LogValue
from gradewire.sinks._sink import Sink

__all__ = ["SCRIPT", "Readback", "SinkConformance", "assert_table_matches", "canonical_steps"]

SCRIPT = "<script>alert(1)</script>"
HEADERS = ["Prompt", "Completion", "Q&A", "Score"]
CONFIG_FIRST: dict[str, Any] = {"grader": "judge", "learning_rate": 1e-5}
CONFIG_SECOND: dict[str, Any] = {"epochs": 3, "use_cache": True}
NAN_AT = (2, "judge/score/std")
HISTOGRAM_AT = (5, "judge/score/histogram")


def canonical_steps() -> list[tuple[int, dict[str, LogValue]]]:
    """The logs every sink gets (fresh objects on every call)."""
    first = Table(initial_headers=HEADERS)
    first.add_row(["What is 2+2?", "4", "math & logic", 1.0])
    first.add_row(["Say hi", SCRIPT, "greeting", 0.0])
    first.add_row(["Résumé ✓ — naïve", "line one\nline two", "unicode", 0.5])
    second = Table(initial_headers=HEADERS)
    second.add_row(["x", f'He said "hi" & {SCRIPT}', "quotes", 0.25])
    second.add_row(["y", "", "empty", None])
    return [
        (
            1,
            {
                "judge/score/mean": 0.75,
                "judge/score/std": 0.125,
                "judge/score/count": 4,
                "judge/score/error_count": 0,
                "judge/passed": True,
            },
        ),
        (
            2,
            {
                "judge/score/mean": 0.5,
                "judge/score/std": math.nan,
                "judge/score/count": 1,
                "judge/score/scored_samples": first,
            },
        ),
        (
            5,
            {
                "judge/score/mean": 1.0,
                "judge/score/count": 2,
                "judge/score/scored_samples": second,
                "judge/score/histogram": Histogram.of(
                    [0.1, 0.6, 0.6, 0.9, 1.0], edges=[0.0, 0.25, 0.5, 0.75, 1.0]
                ),
            },
        ),
    ]


@dataclass
class Readback:
    """What a sink stored, normalised so that sinks can be compared.

    Attributes:
        config: The run configuration as stored (values may be their ``str``).
        metrics: step -> key -> number.
        tables: (key, step) -> table, as stored.
        histograms: (key, step) -> histogram, as stored (edges and counts).
        html: Every HTML page the sink rendered, if any.
    """

    config: dict[str, Any] = field(default_factory=dict)
    metrics: dict[int, dict[str, float]] = field(default_factory=dict)
    tables: dict[tuple[str, int], Table] = field(default_factory=dict)
    histograms: dict[tuple[str, int], Histogram] = field(default_factory=dict)
    html: list[str] = field(default_factory=list)

    @classmethod
    def from_steps(
        cls,
        steps: Iterable[tuple[int, Mapping[str, LogValue]]],
        config: Mapping[str, Any] | None = None,
        html: Iterable[str] = (),
    ) -> Readback:
        """Build one from ``(step, logs)`` pairs; pairs of the same step are merged."""
        readback = cls(config=dict(config or {}), html=list(html))
        for step, logs in steps:
            for key, value in logs.items():
                if isinstance(value, Table):
                    readback.tables[(key, step)] = value
                elif isinstance(value, Histogram):
                    readback.histograms[(key, step)] = value
                else:
                    readback.metrics.setdefault(step, {})[key] = float(value)
        return readback


def _cell_matches(stored: object, expected: object) -> bool:
    def missing(value: object) -> bool:
        return value is None or (isinstance(value, float) and math.isnan(value))

    if missing(expected):
        return missing(stored)
    if isinstance(expected, str):
        return stored == expected
    if isinstance(expected, bool):
        return stored == expected
    if isinstance(stored, bool) or not isinstance(stored, int | float):
        return False
    if not isinstance(expected, int | float):
        return stored == expected
    return math.isclose(float(stored), float(expected), rel_tol=1e-6, abs_tol=1e-12)


def assert_table_matches(stored: Table, expected: Table, where: str = "") -> None:
    """Same headers and rows; floats within a tolerance, None and NaN interchangeable."""
    assert stored.headers == expected.headers, where
    assert len(stored) == len(expected), where
    for r, (got, want) in enumerate(zip(stored.rows, expected.rows, strict=True)):
        for c, (a, b) in enumerate(zip(got, want, strict=True)):
            assert _cell_matches(a, b), (
                f"{where} row {r} column {expected.headers[c]!r}: {a!r} != {b!r}"
            )


def _config_matches(stored: object, expected: object) -> bool:
    return stored == expected or str(stored) == str(expected)


@dataclass
class Recorded:
    readback: Readback
    steps: list[tuple[int, dict[str, LogValue]]]
    snapshot: list[tuple[int, dict[str, LogValue]]]


_RECORDED: dict[type, Recorded] = {}


class SinkConformance:
    """The tests; subclasses provide `make_sink` and `read_back`."""

    def make_sink(self, tmp_path: Path) -> Sink:
        """A fresh sink that writes under ``tmp_path``."""
        raise NotImplementedError

    def read_back(self, sink: Sink, tmp_path: Path) -> Readback:
        """What ``sink`` (already closed) stored."""
        raise NotImplementedError

    def check_nan(self, readback: Readback, step: int, key: str) -> None:
        """How the sink keeps a NaN metric; the default: stored as NaN."""
        value = readback.metrics.get(step, {}).get(key)
        assert value is not None, f"NaN under {key!r} at step {step} was not stored"
        assert math.isnan(value), value

    # --- the standard run, recorded once per sink class ---------------------------------

    @pytest.fixture
    def recorded(self, tmp_path_factory: pytest.TempPathFactory) -> Recorded:
        # Recorded once per test class (a tracker run costs a second or more); memoised
        # by hand because class-scoped fixtures on instances are deprecated in pytest.
        cls = type(self)
        if cls not in _RECORDED:
            _RECORDED[cls] = self._record(tmp_path_factory.mktemp(cls.__name__))
        return _RECORDED[cls]

    def _record(self, tmp_path: Path) -> Recorded:
        sink = self.make_sink(tmp_path)
        assert isinstance(sink, Sink)
        steps = canonical_steps()
        snapshot = copy.deepcopy(steps)
        sink.log_config(dict(CONFIG_FIRST))
        for step, logs in steps:
            sink.log(logs, step)
        sink.log_config(dict(CONFIG_SECOND))
        sink.close()
        return Recorded(self.read_back(sink, tmp_path), steps, snapshot)

    def test_numbers_round_trip(self, recorded: Recorded) -> None:
        metrics = recorded.readback.metrics
        for step, logs in canonical_steps():
            for key, value in logs.items():
                if isinstance(value, Table | Histogram) or (step, key) == NAN_AT:
                    continue
                assert key in metrics.get(step, {}), f"{key!r} missing at step {step}"
                assert math.isclose(metrics[step][key], float(value), rel_tol=1e-9), (step, key)

    def test_bool_is_stored_as_an_int(self, recorded: Recorded) -> None:
        assert recorded.readback.metrics[1]["judge/passed"] == 1

    def test_nan_is_handled_as_documented(self, recorded: Recorded) -> None:
        self.check_nan(recorded.readback, *NAN_AT)

    def test_tables_round_trip(self, recorded: Recorded) -> None:
        tables = recorded.readback.tables
        for step, logs in canonical_steps():
            for key, value in logs.items():
                if isinstance(value, Table):
                    assert (key, step) in tables, f"table {key!r} missing at step {step}"
                    assert_table_matches(tables[(key, step)], value, f"{key} @ {step}")

    def test_histograms_round_trip(self, recorded: Recorded) -> None:
        # Edges and counts: what every tracker can hold (W&B shows no out-of-range counts).
        step, key = HISTOGRAM_AT
        expected = canonical_steps()[2][1][key]
        assert isinstance(expected, Histogram)
        stored = recorded.readback.histograms.get((key, step))
        assert stored is not None, f"histogram {key!r} missing at step {step}"
        assert stored.edges == pytest.approx(expected.edges)
        assert stored.counts == expected.counts
        assert recorded.readback.metrics[step].keys() == {"judge/score/mean", "judge/score/count"}

    def test_config_keys_of_every_call_are_kept(self, recorded: Recorded) -> None:
        config = recorded.readback.config
        for key, value in {**CONFIG_FIRST, **CONFIG_SECOND}.items():
            assert key in config, key
            assert _config_matches(config[key], value), (key, config[key])

    def test_rendered_html_is_escaped(self, recorded: Recorded) -> None:
        pages = recorded.readback.html
        for page in pages:
            assert "<script" not in page.lower()
        if pages:
            assert any("&lt;script&gt;alert(1)&lt;/script&gt;" in page for page in pages)
            assert any("Q&amp;A" in page for page in pages)

    def test_input_is_not_mutated(self, recorded: Recorded) -> None:
        assert len(recorded.steps) == len(recorded.snapshot)
        for (step, logs), (old_step, old_logs) in zip(
            recorded.steps, recorded.snapshot, strict=True
        ):
            assert step == old_step
            assert list(logs) == list(old_logs)
            for key, value in logs.items():
                before = old_logs[key]
                if isinstance(value, Table | Histogram):
                    assert value == before, key
                else:
                    assert type(value) is type(before), key
                    assert value == before or (math.isnan(value) and math.isnan(before)), key

    # --- contract tests with their own sink -------------------------------------------

    def test_close_is_idempotent_and_final(self, tmp_path: Path) -> None:
        sink = self.make_sink(tmp_path)
        sink.log({"loss": 0.5}, 0)
        sink.close()
        sink.close()
        with pytest.raises(SinkError, match="closed"):
            sink.log({"loss": 0.25}, 1)
        with pytest.raises(SinkError, match="closed"):
            sink.log_config({"late": True})
        readback = self.read_back(sink, tmp_path)
        assert readback.metrics[0]["loss"] == pytest.approx(0.5)
        assert 1 not in readback.metrics
        assert "late" not in readback.config

    def test_steps_must_not_decrease(self, tmp_path: Path) -> None:
        sink = self.make_sink(tmp_path)
        sink.log({"a": 1.0}, 3)
        with pytest.raises(InvalidInputError, match="lower"):
            sink.log({"a": 2.0, "b": 2.0}, 2)
        sink.log({"b": 3.0}, 3)  # the same step again adds to it
        sink.log({"a": 4.0}, 4)
        sink.close()
        metrics = self.read_back(sink, tmp_path).metrics
        assert 2 not in metrics
        assert metrics[3] == pytest.approx({"a": 1.0, "b": 3.0})
        assert metrics[4] == pytest.approx({"a": 4.0})

    def test_bad_input_raises_before_writing(self, tmp_path: Path) -> None:
        sink = self.make_sink(tmp_path)
        with pytest.raises(InvalidTypeError, match="'text'"):
            sink.log({"ok": 1.0, "text": "hello"}, 1)
        with pytest.raises(InvalidTypeError, match="key"):
            sink.log({1: 1.0}, 1)  # type: ignore[dict-item]
        with pytest.raises(InvalidTypeError, match="step"):
            sink.log({"ok": 1.0}, 1.5)  # type: ignore[arg-type]
        with pytest.raises(InvalidInputError, match="step"):
            sink.log({"ok": 1.0}, -1)
        with pytest.raises(InvalidTypeError):
            sink.log_config(["not", "a", "mapping"])  # type: ignore[arg-type]
        sink.log({"ok": 2.0}, 1)
        sink.close()
        metrics = self.read_back(sink, tmp_path).metrics
        assert list(metrics) == [1]
        assert metrics[1]["ok"] == pytest.approx(2.0)
        assert "text" not in metrics[1]

    def test_log_many_matches_log(self, tmp_path: Path) -> None:
        sink = self.make_sink(tmp_path)
        log_many = getattr(sink, "log_many", None)
        if log_many is None:
            pytest.skip("this sink has no log_many (optional in the Sink protocol)")
        steps = canonical_steps()
        log_many(steps[:2])
        log_many(steps[2:])
        with pytest.raises(InvalidInputError, match="lower"):
            log_many([(6, {"a": 1.0}), (4, {"a": 2.0})])
        sink.close()
        readback = self.read_back(sink, tmp_path)
        assert sorted(readback.metrics) == [1, 2, 5]
        assert readback.metrics[5] == pytest.approx(
            {"judge/score/mean": 1.0, "judge/score/count": 2}
        )
        assert_table_matches(
            readback.tables[("judge/score/scored_samples", 5)],
            steps[2][1]["judge/score/scored_samples"],  # type: ignore[arg-type]
        )
