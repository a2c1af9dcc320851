"""ServerSettings: the reward server's settings, declared once, for the API and the CLI alike."""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import math
import typing
from pathlib import Path
from typing import Any

import httpx
import pytest

from gradewire import BaseGrader, InvalidInputError, InvalidTypeError, StringThread
from gradewire.cli._main import main
from gradewire.server import ServerSettings, create_app, serve
from gradewire.server._cli import TOKEN_ENV, add_serve_parser, setting_flags, settings_from
from gradewire.server._middlewares import SETTINGS
from gradewire.server._settings import AppOptions, ServerOptions
from support.reward_server_helpers import running

FIELDS = [field.name for field in dataclasses.fields(ServerSettings)]
CONNECTIONS = ["header_timeout", "keepalive_timeout", "max_connections"]


def exact() -> BaseGrader:
    return BaseGrader.from_function("exact", lambda sample: 1.0)


def documented(cls: type) -> list[str]:
    """The names the Attributes section of ``cls``'s docstring documents, in order."""
    doc = inspect.getdoc(cls) or ""
    section = doc[doc.index("Attributes:") :].splitlines()[1:]
    return [line.split(":")[0].strip() for line in section if line[4:5] not in (" ", "")]


# -- one declaration ------------------------------------------------------------------------


def test_the_keywords_are_the_fields_with_the_same_types():
    # The TypedDicts only type **options: they must not drift from the fields.
    # (failure_reward, the old name of failure_value, is an InitVar: no field, no keyword.)
    hints = {k: v for k, v in typing.get_type_hints(ServerSettings).items() if k in FIELDS}
    assert typing.get_type_hints(ServerOptions) == hints
    assert list(typing.get_type_hints(ServerOptions)) == FIELDS
    app = typing.get_type_hints(AppOptions)
    assert app == {name: hints[name] for name in FIELDS if name not in CONNECTIONS}
    assert ServerOptions.__required_keys__ == AppOptions.__required_keys__ == frozenset()


def test_each_field_is_documented_once_in_the_class_docstring():
    assert documented(ServerSettings) == FIELDS


def test_the_defaults():
    settings = ServerSettings()
    assert (settings.token, settings.allowed_hosts, settings.label_key) == (
        None,
        frozenset(),
        "label",
    )
    assert (settings.max_batch, settings.max_body_bytes) == (4096, 64 * 1024 * 1024)
    assert (settings.max_concurrency, settings.failure_value) == (64, 0.0)
    assert (settings.max_log_records, settings.max_log_bytes) == (10_000, 16 * 1024 * 1024)
    assert (settings.body_timeout, settings.header_timeout, settings.keepalive_timeout) == (
        60.0,
        15.0,
        75.0,
    )
    assert settings.max_connections is None


def test_the_token_is_kept_out_of_the_repr():
    settings = ServerSettings(token=" s3cret ")
    assert settings.token == "s3cret"
    assert "s3cret" not in repr(settings)
    assert "max_batch=4096" in repr(settings)


# -- the API: keywords or a settings object ----------------------------------------------------


def test_keywords_and_a_settings_object_make_the_same_app():
    by_keywords = create_app(exact(), max_batch=3, allowed_hosts=["RM-1"], token="t")
    given = ServerSettings(max_batch=3, allowed_hosts=["rm-1"], token="t")
    by_object = create_app(exact(), settings=given)
    assert by_keywords[SETTINGS] == by_object[SETTINGS] == given
    assert given.allowed_hosts == frozenset({"rm-1"})


def test_keywords_override_the_settings_object():
    base = ServerSettings(max_batch=3, max_concurrency=2)
    app = create_app(exact(), settings=base, max_batch=5)
    assert app[SETTINGS] == dataclasses.replace(base, max_batch=5)
    assert base.max_batch == 3


def test_create_app_takes_no_connection_setting_as_a_keyword():
    for name in CONNECTIONS:
        with pytest.raises(InvalidTypeError, match=rf"create_app\(\) takes no {name}.*serve\(\)"):
            create_app(exact(), **{name: 5})
    # In a settings object they are carried, for serve(), and change nothing in the app.
    create_app(exact(), settings=ServerSettings(header_timeout=5, max_connections=9))


def test_an_unknown_keyword_or_a_settings_of_another_type_is_refused():
    with pytest.raises(TypeError, match="max_bach"):
        create_app(exact(), max_bach=3)  # type: ignore[call-arg]
    with pytest.raises(InvalidTypeError, match="settings must be a ServerSettings, not dict"):
        create_app(exact(), settings={"max_batch": 3})  # type: ignore[arg-type]


BAD: list[tuple[str, Any, type[Exception], str]] = [
    ("token", 5, InvalidTypeError, "token must be a str"),
    ("token", "t\u2713", InvalidInputError, "token must be Latin-1"),
    ("allowed_hosts", ["http://rm-1"], InvalidInputError, "allowed_hosts takes host names"),
    ("allowed_hosts", 5, InvalidTypeError, "allowed_hosts must be a list of host names"),
    ("max_batch", 0, InvalidInputError, "max_batch must be a positive int"),
    ("max_body_bytes", 1.5, InvalidInputError, "max_body_bytes must be a positive int"),
    ("failure_value", math.nan, InvalidInputError, "failure_value must be finite"),
    ("failure_value", "0", InvalidTypeError, "failure_value must be a number"),
    ("label_key", " ", InvalidInputError, "label_key must not be empty"),
    ("max_concurrency", True, InvalidInputError, "max_concurrency must be a positive int"),
    ("max_log_records", 1, InvalidInputError, "max_log_records must be an int >= 2"),
    ("max_log_bytes", 100, InvalidInputError, "max_log_bytes must be an int >= 40000"),
    ("body_timeout", 0, InvalidInputError, "body_timeout must be a positive, finite"),
    ("header_timeout", math.inf, InvalidInputError, "header_timeout must be a positive, finite"),
    ("keepalive_timeout", "5", InvalidTypeError, "keepalive_timeout must be a number of seconds"),
    ("max_connections", -1, InvalidInputError, "max_connections must be a positive int"),
]


def test_every_field_has_a_bad_value_below():
    assert {name for name, _, _, _ in BAD} == set(FIELDS)


@pytest.mark.parametrize(("name", "value", "error", "message"), BAD)
async def test_a_bad_value_is_refused_naming_its_field_every_way(name, value, error, message):
    with pytest.raises(error, match=message):
        ServerSettings(**{name: value})
    with pytest.raises(error, match=message):
        await serve(exact(), port=0, **{name: value})  # before anything binds
    if name not in CONNECTIONS:
        grader = exact()
        with pytest.raises(error, match=message):
            create_app(grader, **{name: value})
        assert grader.max_log_records is None  # a refused configuration changes no grader


async def test_a_settings_object_reaches_the_running_server():
    settings = ServerSettings(max_batch=2, failure_value=-1.0)
    thread = StringThread([("user", "q"), ("assistant", "a")]).to_dict()
    async with (
        running(exact(), settings=settings) as url,
        httpx.AsyncClient(base_url=url) as client,
    ):
        body = json.dumps({"grader": "exact", "threads": [thread] * 3}).encode()
        headers = {"Content-Type": "application/json"}
        refused = await client.post("/v1/grade_batch", content=body, headers=headers)
        assert refused.status_code == 413
        assert "limit of 2" in refused.json()["error"]


async def test_a_public_host_needs_a_token_from_the_settings_too():
    with pytest.raises(InvalidInputError, match="without a token"):
        await serve(exact(), host="0.0.0.0", port=0, settings=ServerSettings(token="  "))


# -- the command line: one flag per field ------------------------------------------------------


def parse(*flags: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_serve_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["serve", "graders.toml", *flags])


# A value other than the default for every field, as typed and as the field holds it.
GIVEN: dict[str, tuple[list[str], object]] = {
    "token": (["--token", " tok "], "tok"),
    "allowed_hosts": (["--allow-host", "RM-1", "--allow-host", "10.0.0.5"], {"rm-1", "10.0.0.5"}),
    "max_batch": (["--max-batch", "8"], 8),
    "max_body_bytes": (["--max-body-bytes", "2000"], 2000),
    "failure_value": (["--failure-value", "-1.5"], -1.5),
    "label_key": (["--label-key", "answer"], "answer"),
    "max_concurrency": (["--max-concurrency", "3"], 3),
    "max_log_records": (["--max-log-records", "4"], 4),
    "max_log_bytes": (["--max-log-bytes", "50000"], 50_000),
    "body_timeout": (["--body-timeout", "2.5"], 2.5),
    "header_timeout": (["--header-timeout", "1"], 1.0),
    "keepalive_timeout": (["--keepalive-timeout", "9"], 9.0),
    "max_connections": (["--max-connections", "32"], 32),
}


def test_every_field_has_a_flag_and_a_value_below():
    assert [flag.field for flag in setting_flags()] == FIELDS
    assert set(GIVEN) == set(FIELDS)


@pytest.mark.parametrize("name", FIELDS)
def test_each_flag_sets_its_field_and_only_it(name, monkeypatch):
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    flags, value = GIVEN[name]
    settings = settings_from(parse(*flags))
    assert getattr(settings, name) == value
    assert settings != ServerSettings()
    assert dataclasses.replace(settings, **{name: getattr(ServerSettings(), name)}) == (
        ServerSettings()
    )


def test_no_flag_gives_the_defaults_and_the_token_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    assert settings_from(parse()) == ServerSettings()
    monkeypatch.setenv(TOKEN_ENV, "from-env")
    assert settings_from(parse()).token == "from-env"
    assert settings_from(parse("--token", "flag")).token == "flag"  # the flag wins


@pytest.mark.parametrize("name", ["max_log_records", "max_log_bytes", "max_connections"])
def test_zero_on_the_command_line_is_none(name):
    flag = "--" + name.replace("_", "-")
    assert getattr(settings_from(parse(flag, "0")), name) is None


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--max-batch", "0"], "--max-batch: max_batch must be a positive int, not 0"),
        (["--failure-value", "nan"], "--failure-value: failure_value must be finite"),
        (["--body-timeout", "inf"], "--body-timeout: body_timeout must be a positive, finite"),
        (["--header-timeout", "0"], "--header-timeout: header_timeout must be a positive"),
        (["--max-log-bytes", "5"], "--max-log-bytes: max_log_bytes must be an int >= 40000"),
        (["--max-connections", "-3"], "--max-connections: max_connections must be a positive"),
        (["--allow-host", "rm-1:80"], "--allow-host: allowed_hosts takes host names"),
        (["--token", "t\u2713"], "--token: the token must be Latin-1"),
    ],
)
def test_a_bad_value_fails_naming_the_flag(tmp_path, capsys, flags, message):
    path = tmp_path / "graders.json"
    path.write_text(json.dumps({"graders": []}))
    assert main(["serve", str(path), "--port", "0", *flags]) == 2
    assert message in capsys.readouterr().err


def test_a_bad_token_from_the_environment_names_the_variable(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(TOKEN_ENV, "t\u2713")
    assert main(["serve", str(tmp_path / "graders.toml"), "--port", "0"]) == 2
    assert f"${TOKEN_ENV}: the token must be Latin-1" in capsys.readouterr().err


def test_a_value_of_the_wrong_kind_fails_naming_the_flag(capsys):
    with pytest.raises(SystemExit):
        main(["serve", "graders.toml", "--max-concurrency", "many"])
    assert "argument --max-concurrency: invalid int value: 'many'" in capsys.readouterr().err


def test_the_help_is_each_fields_doc_with_its_default(capsys):
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    out = " ".join(capsys.readouterr().out.split())  # argparse wraps lines anywhere
    squeezed = "".join(out.split())  # even after a hyphen (rm-node-1)
    for flag in setting_flags():
        assert flag.flag in out
        assert "".join(flag.help.replace("%%", "%").split()) in squeezed
    assert "Most samples in one /v1/grade_batch or /get_reward request" in out
    assert "(default: 4096)" in out
    assert "(default: 15)" in out  # --header-timeout
    assert "``" not in out
    assert "%%" not in out
    assert "where to listen" in out
    assert "server settings" in out


def test_the_serve_command_serves_with_the_flags_settings(tmp_path, monkeypatch):
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    path = Path(tmp_path / "graders.json")
    path.write_text(
        json.dumps(
            {
                "graders": [
                    {
                        "type": "custom",
                        "key": "l",
                        "function": "support.custom_graders:length_score",
                    }
                ]
            }
        )
    )
    seen: dict[str, Any] = {}

    async def fake_serve(graders, **options):  # type: ignore[no-untyped-def]
        seen.update(options)

    monkeypatch.setattr("gradewire.server._server.serve", fake_serve)
    assert (
        main(["serve", str(path), "--port", "0", "--max-batch", "8", "--max-connections", "20"])
        == 0
    )
    assert seen["settings"] == ServerSettings(max_batch=8, max_connections=20)
    assert (seen["host"], seen["port"], seen["insecure"]) == ("127.0.0.1", 0, False)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("failure_value", "failure_value must be finite"),
        ("body_timeout", "body_timeout must be a positive, finite number of seconds"),
        ("header_timeout", "header_timeout must be a positive, finite number of seconds"),
        ("keepalive_timeout", "keepalive_timeout must be a positive, finite number of seconds"),
    ],
)
def test_a_number_past_the_floats_is_refused(name, message):
    with pytest.raises(InvalidInputError, match=message):
        ServerSettings(**{name: 10**400})
    with pytest.raises(InvalidInputError, match=message):
        ServerSettings(**{name: -(10**400)})


def test_a_count_of_the_wrong_type_is_a_type_error_like_the_sinks():
    for name, value in [("max_batch", 1.5), ("max_concurrency", True), ("max_connections", "8")]:
        with pytest.raises(InvalidTypeError, match=f"{name} must be a positive int"):
            ServerSettings(**{name: value})
    with pytest.raises(InvalidInputError, match="max_connections must be a positive int or None"):
        ServerSettings(max_connections=0)


def test_the_old_name_failure_reward_still_works_and_warns_with_the_new_one():
    with pytest.warns(DeprecationWarning, match="pass failure_value"):
        settings = ServerSettings(failure_reward=-1.0)
    assert settings.failure_value == -1.0
    with pytest.warns(DeprecationWarning, match="pass failure_value"):
        replaced = dataclasses.replace(ServerSettings(max_batch=3), failure_reward=-2.0)
    assert (replaced.failure_value, replaced.max_batch) == (-2.0, 3)
    with pytest.warns(DeprecationWarning, match="pass failure_value"):
        create_app(exact(), failure_reward=-1.5)
    assert settings_from(parse("--failure-reward", "-0.5")).failure_value == -0.5
    assert "failure_reward" not in {f.name for f in dataclasses.fields(ServerSettings)}
