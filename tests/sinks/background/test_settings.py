"""DeliverySettings: BackgroundSink's settings, declared once and taken two ways."""

from __future__ import annotations

import dataclasses
import inspect
import threading
import typing
from pathlib import Path

import pytest
from background_doubles import FAST, BatchingFlakySink, wait_until

from gradewire import BackgroundSink, InvalidInputError, InvalidTypeError, MemorySink, SinkError
from gradewire.sinks import DeliverySettings
from gradewire.sinks.background._settings import DeliveryOptions

FIELDS = [field.name for field in dataclasses.fields(DeliverySettings)]


def test_the_keywords_are_the_fields_with_the_same_types():
    # The TypedDict only types BackgroundSink's **options: it must not drift from the fields.
    assert typing.get_type_hints(DeliveryOptions) == typing.get_type_hints(DeliverySettings)
    assert DeliveryOptions.__required_keys__ == frozenset()
    assert list(typing.get_type_hints(DeliveryOptions)) == FIELDS


def documented(cls: type) -> list[str]:
    """The names the Attributes section of ``cls``'s docstring documents, in order."""
    doc = inspect.getdoc(cls) or ""
    section = doc[doc.index("Attributes:") :].splitlines()[1:]
    return [line.split(":")[0].strip() for line in section if line[4:5] not in (" ", "")]


def test_each_field_is_documented_once_in_the_class_docstring():
    assert documented(DeliverySettings) == FIELDS


def test_keywords_and_a_settings_object_make_the_same_sink(tmp_path):
    by_keywords = BackgroundSink(MemorySink(), spill_dir=tmp_path, max_queue=7, exit_timeout=None)
    given = DeliverySettings(spill_dir=tmp_path, max_queue=7, exit_timeout=None)
    by_object = BackgroundSink(MemorySink(), settings=given)
    try:
        assert by_keywords.settings == by_object.settings == given
        assert by_object.settings.spill_dir == tmp_path
        assert by_object.spill_dir == tmp_path
    finally:
        by_keywords.close()
        by_object.close()


def test_keywords_override_the_settings_object(tmp_path):
    base = DeliverySettings(max_queue=7, batch_size=3, exit_timeout=None)
    background = BackgroundSink(MemorySink(), settings=base, batch_size=5, spill_dir=tmp_path)
    try:
        assert background.settings == dataclasses.replace(base, batch_size=5, spill_dir=tmp_path)
        assert base.batch_size == 3  # the object given is left as it was
    finally:
        background.close()


def test_the_defaults_are_the_documented_ones():
    settings = DeliverySettings()
    assert (settings.max_queue, settings.batch_size, settings.flush_interval) == (10_000, 100, 0.5)
    assert (settings.initial_retry_delay, settings.max_retry_delay) == (0.5, 30.0)
    assert (settings.close_timeout, settings.exit_timeout, settings.stall_timeout) == (30, 5, 5)
    assert (settings.max_attempts, settings.when_full, settings.spill_dir) == (
        5,
        "drop_newest",
        None,
    )


def test_a_settings_object_reaches_the_worker(tmp_path):
    sink = BatchingFlakySink()
    sink.gate = threading.Event()
    settings = DeliverySettings(spill_dir=tmp_path, batch_size=3, **FAST)
    background = BackgroundSink(sink, settings=settings)
    try:
        background.log({"x": 0}, 0)
        wait_until(lambda: sink.threads, "the worker inside a call")  # it holds step 0
        for step in range(1, 8):
            background.log({"x": step}, step)
        sink.gate.set()
        assert background.flush(timeout=20).ok
        assert sink.steps == list(range(8))
        assert max(sink.batch_sizes) == 3  # batch_size came from the object
    finally:
        background.close()


BAD = [
    ("max_queue", 0, InvalidInputError),
    ("max_queue", 1.5, InvalidTypeError),
    ("batch_size", True, InvalidTypeError),
    ("flush_interval", -1, InvalidInputError),
    ("flush_interval", "1", InvalidTypeError),
    ("spill_dir", 3, InvalidTypeError),
    ("initial_retry_delay", float("inf"), InvalidInputError),
    ("max_retry_delay", float("nan"), InvalidInputError),
    ("close_timeout", None, InvalidTypeError),
    ("exit_timeout", -0.5, InvalidInputError),
    ("stall_timeout", [], InvalidTypeError),
    ("max_attempts", 0, InvalidInputError),
    ("when_full", "drop_oldest", InvalidInputError),
    ("max_spill_bytes", 0, InvalidInputError),
    ("deliver_after_close", 1, InvalidTypeError),
]


def test_every_field_has_a_bad_value_below():
    assert {name for name, _, _ in BAD} == set(FIELDS)


@pytest.mark.parametrize(("name", "value", "error"), BAD)
def test_a_bad_value_is_refused_naming_its_field_both_ways(name, value, error):
    with pytest.raises(error, match=name):
        DeliverySettings(**{name: value})
    with pytest.raises(error, match=name):
        BackgroundSink(MemorySink(), **{name: value})
    with pytest.raises(error, match=name):
        BackgroundSink(MemorySink(), settings=DeliverySettings(), **{name: value})


def test_the_retry_delays_are_checked_together():
    with pytest.raises(InvalidInputError, match="initial_retry_delay <= max_retry_delay"):
        DeliverySettings(initial_retry_delay=2.0, max_retry_delay=1.0)
    with pytest.raises(InvalidInputError, match="0 < initial_retry_delay"):
        DeliverySettings(initial_retry_delay=0)


def test_an_unknown_keyword_or_a_settings_of_another_type_is_refused():
    with pytest.raises(TypeError, match="max_qeue"):
        BackgroundSink(MemorySink(), max_qeue=3)  # type: ignore[call-arg]
    with pytest.raises(InvalidTypeError, match="settings must be a DeliverySettings, not dict"):
        BackgroundSink(MemorySink(), settings={"max_queue": 3})  # type: ignore[arg-type]


def test_settings_are_frozen_and_checked_values_normalised(tmp_path):
    settings = DeliverySettings(spill_dir=str(tmp_path), flush_interval=1, exit_timeout=None)
    assert settings.spill_dir == Path(tmp_path)
    assert isinstance(settings.flush_interval, float)
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.max_queue = 3  # type: ignore[misc]
    assert dataclasses.replace(settings) == settings


def test_when_full_raise_from_a_settings_object(tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the spill directory should be")
    sink = BatchingFlakySink()
    sink.down = True
    settings = DeliverySettings(max_queue=2, when_full="raise", spill_dir=blocker, **FAST)
    background = BackgroundSink(sink, settings=settings)
    try:
        with pytest.raises(SinkError, match="NOT kept"):  # noqa: PT012 - raises once full
            for step in range(50):
                background.log({"x": step}, step)
    finally:
        sink.down = False
        background.close()


SECONDS = ["flush_interval", "initial_retry_delay", "max_retry_delay", "close_timeout"]
SECONDS += ["exit_timeout", "stall_timeout"]


@pytest.mark.parametrize("name", SECONDS)
def test_an_int_of_seconds_past_the_floats_is_refused(name):
    with pytest.raises(InvalidInputError, match=f"{name} must be a finite number of seconds >= 0"):
        DeliverySettings(**{name: 10**400})


def test_a_timeout_past_the_floats_is_refused_by_flush_and_close(tmp_path):
    background = BackgroundSink(MemorySink(), spill_dir=tmp_path, exit_timeout=None)
    try:
        for wait in (background.flush, background.close):
            with pytest.raises(InvalidInputError, match="timeout must be a finite number"):
                wait(timeout=10**400)
            with pytest.raises(InvalidTypeError, match="timeout must be a number of seconds or"):
                wait(timeout="1")  # type: ignore[arg-type]
    finally:
        background.close()
    assert background.report is not None
    assert background.report.ok


@pytest.mark.parametrize(
    ("name", "value", "error", "message"),
    [
        ("max_queue", 0, InvalidInputError, "max_queue must be a positive int, not 0"),
        ("batch_size", 2.0, InvalidTypeError, "batch_size must be a positive int, not 2.0"),
        ("max_spill_bytes", 0, InvalidInputError, "max_spill_bytes must be a positive int or None"),
        ("exit_timeout", -1, InvalidInputError, "exit_timeout must be a finite number of seconds"),
        ("deliver_after_close", 1, InvalidTypeError, "deliver_after_close must be True or False"),
    ],
)
def test_the_message_of_a_shared_check_is_the_servers_too(name, value, error, message):
    # One wording per concept: a count here reads as ServerSettings' max_batch does.
    with pytest.raises(error) as caught:
        DeliverySettings(**{name: value})
    assert type(caught.value) is error
    assert str(caught.value).startswith(message)
