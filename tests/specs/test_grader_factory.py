"""The grader factory: specs as data, built, remembered, logged and rebuilt."""

from __future__ import annotations

import functools
import json
import sys
import types

import pytest

import gradewire as gw
from gradewire import (
    CombinedGrader,
    CommandGrader,
    InvalidInputError,
    MissingDependencyError,
    OpenAIChatModel,
    StringThread,
    run_sync,
)
from gradewire.judges._binary_judge import BinaryJudgeGrader
from gradewire.judges._rag_judges import (
    AnswerRelevancyGrader,
    ContextRelevancyGrader,
    FaithfulnessGrader,
)
from gradewire.judges._range_judge import RangeJudgeGrader
from gradewire.judges._rubric_judge import RubricJudgeGrader
from gradewire.specs import _factory
from gradewire.specs._factory import grader_config, load_graders
from gradewire.tools._endpoint_grader import EndpointGrader

# The specs of these tests are written here, so their code is trusted (the refusal of
# untrusted code has tests of its own: tests/specs/test_trust_code.py).
build_grader = functools.partial(_factory.build_grader, trust_code=True)

SAMPLE = StringThread([("user", "Say yes"), ("assistant", "yes indeed")], metadata={"label": "x"})


@pytest.fixture
def env(monkeypatch):
    monkeypatch.setenv("JUDGE_KEY", "judge-secret-value")
    monkeypatch.setenv("RM_TOKEN", "rm-secret-value")
    return monkeypatch


def every_type(judge_url: str) -> list[dict]:
    judge = {"model": "judge", "base_url": judge_url, "api_key_env": "JUDGE_KEY"}
    return [
        {"type": "binary_judge", "key": "helpful", "criteria": "Answers it", "judge_model": judge},
        {
            "type": "binary_judge",
            "key": "shot",
            "criteria": "Answers it",
            "judge_model": judge,
            "shots": [{"question": "2+2?", "completion": "5", "verdict": "FAIL"}],
            "temperature": 0.5,
            "max_tokens": 64,
            "system_prompt": "You judge.",
            "sample_tables": False,
        },
        {"type": "prebuilt_judge", "key": "faith", "judge": "FAITHFULNESS", "judge_model": judge},
        {
            "type": "prebuilt_judge",
            "key": "ctx",
            "judge": "context-relevancy",
            "judge_model": judge,
        },
        {"type": "prebuilt_judge", "key": "ans", "judge": "Answer Relevancy", "judge_model": judge},
        {
            "type": "rubric_judge",
            "key": "rubric",
            "criteria": ["Correct", ["Cites", 2.0], {"requirement": "Rude", "weight": -1}],
            "judge_model": judge,
        },
        {
            "type": "range_judge",
            "key": "range",
            "criteria": "Quality",
            "low": 0,
            "high": 10,
            "use_logprobs": False,
            "judge_model": judge,
        },
        {
            "type": "external_endpoint",
            "key": "rm",
            "url": "http://127.0.0.1:9/v1/grade",
            "token_env": "RM_TOKEN",
            "timeout": 5,
            "payload": "gradewire",
        },
        {
            "type": "command",
            "key": "sh",
            "command": "true",
            "timeout": 10,
            "completion_via": "stdin",
        },
        {"type": "custom", "key": "len", "function": "support.custom_graders:length_score"},
        {
            "type": "combined",
            "key": "reward",
            "graders": [
                {"type": "custom", "key": "kw", "function": "support.custom_graders:KeywordGrader"},
                {
                    "type": "custom",
                    "key": "len2",
                    "function": "support.custom_graders:length_score",
                },
            ],
            "weights": [3, 1],
            "aggregation": "sum",
        },
    ]


def test_every_type_builds(env, judge_server):
    classes = [
        BinaryJudgeGrader,
        BinaryJudgeGrader,
        FaithfulnessGrader,
        ContextRelevancyGrader,
        AnswerRelevancyGrader,
        RubricJudgeGrader,
        RangeJudgeGrader,
        EndpointGrader,
        CommandGrader,
        type(
            build_grader(
                {"type": "custom", "key": "f", "function": "support.custom_graders:label_match"}
            )
        ),
        CombinedGrader,
    ]
    specs = every_type(judge_server.base_url)
    graders = [build_grader(spec) for spec in specs]
    assert [type(g) for g in graders] == classes
    assert [g.grader_key for g in graders] == [spec["key"] for spec in specs]
    assert graders[3].spec["judge"] == "CONTEXT_RELEVANCY"
    assert graders[4].spec["judge"] == "ANSWER_RELEVANCY"
    assert graders[1].sample_tables is False
    assert graders[0].sample_tables is True  # the judge's own default
    assert graders[8].completion_via == "stdin"
    assert graders[10].weights == (3.0, 1.0)
    assert graders[10].aggregation == "sum"


async def test_a_built_judge_calls_the_configured_server(env, judge_server):
    judge_server.handler = lambda request: '{"reasoning": "it answers", "verdict": "PASS"}'
    [spec] = [s for s in every_type(judge_server.base_url) if s["key"] == "helpful"]
    grade = await build_grader(spec).grade(SAMPLE)
    assert grade.value == 1.0
    [request] = judge_server.chat_requests
    assert request.headers["authorization"] == "Bearer judge-secret-value"
    assert request.json["model"] == "judge"


async def test_common_judge_options_pass_through(env, judge_server):
    judge_server.handler = lambda request: '{"reasoning": "no", "verdict": "FAIL"}'
    [spec] = [s for s in every_type(judge_server.base_url) if s["key"] == "shot"]
    assert (await build_grader(spec).grade(SAMPLE)).value == 0.0
    body = judge_server.chat_requests[0].json
    assert body["temperature"] == 0.5
    assert body["max_tokens"] == 64
    assert body["messages"][0] == {"role": "system", "content": "You judge."}
    assert any("2+2?" in m["content"] for m in body["messages"])  # the shot is shown


async def test_range_and_rubric_judges_grade_through_the_server(env, judge_server):
    def answer(request):
        text = json.dumps(request.json["messages"])
        if "score" in text and "Quality" in text:
            return '{"reasoning": "good", "score": 8}'
        return '{"reasoning": "ok", "verdict": "MET"}'

    judge_server.handler = answer
    specs = {s["key"]: s for s in every_type(judge_server.base_url)}
    assert (await build_grader(specs["range"]).grade(SAMPLE)).value == 0.8
    rubric = await build_grader(specs["rubric"]).grade(SAMPLE)
    assert [c.weight for c in rubric.children] == [1.0, 2.0, -1.0]


async def test_prebuilt_judge_abstains_without_documents_through_the_factory(env, judge_server):
    [spec] = [s for s in every_type(judge_server.base_url) if s["key"] == "ctx"]
    grader = build_grader(spec)
    assert await grader.grade_many([SAMPLE]) == [None]
    assert grader.get_logs()["score/abstained_count"] == 1
    assert judge_server.chat_requests == []


def test_judges_sharing_an_endpoint_share_one_model(env, judge_server, tmp_path):
    path = tmp_path / "graders.json"
    specs = [s for s in every_type(judge_server.base_url) if s["type"].endswith("judge")]
    specs.append(
        {"type": "binary_judge", "key": "other", "criteria": "c", "judge_model": "other-model"}
    )
    path.write_text(json.dumps({"judge": {"base_url": judge_server.base_url}, "graders": specs}))
    graders = load_graders(path)
    models = {id(g.model) for g in graders[:-1]}
    assert len(models) == 1
    assert graders[-1].model is not graders[0].model
    assert isinstance(graders[0].model, OpenAIChatModel)
    assert graders[-1].model.base_url == judge_server.base_url  # from the [judge] defaults


def test_a_typo_is_an_error_naming_the_field():
    spec = {"type": "binary_judge", "key": "k", "critera": "x", "judge_model": "m"}
    with pytest.raises(InvalidInputError) as info:
        build_grader(spec)
    message = str(info.value)
    assert "'critera'" in message
    assert "did you mean 'criteria'?" in message
    assert "field 'criteria' is required" in message  # the other problem, listed too
    assert "grader 'k' (binary_judge)" in message


def test_a_typo_deep_in_a_combination_names_its_path():
    spec = {
        "type": "combined",
        "key": "c",
        "graders": [
            {"type": "custom", "key": "a", "function": "support.custom_graders:length_score"},
            {"type": "bash", "key": "b", "command": "true", "cwdd": "/tmp"},
        ],
    }
    with pytest.raises(
        InvalidInputError, match=r"'cwdd' in the command spec at graders\[1\] \(did you mean 'cwd'"
    ):
        build_grader(spec)
    spec["graders"][1] = {"type": "bashh", "key": "b"}
    with pytest.raises(InvalidInputError, match=r"unknown grader type 'bashh'; use one of"):
        build_grader(spec)
    spec["graders"][1] = {"key": "b"}
    with pytest.raises(InvalidInputError, match=r"needs a 'type' field"):
        build_grader(spec)


def test_a_typo_in_the_judge_model_table_names_its_fields():
    spec = {"type": "binary_judge", "key": "k", "criteria": "c", "judge_model": {"modle": "m"}}
    with pytest.raises(
        InvalidInputError,
        match=r"'modle' in the binary_judge spec at judge_model \(did you mean 'model'",
    ):
        build_grader(spec)


def test_secrets_in_the_spec_are_refused_without_being_echoed():
    spec = {"type": "external_endpoint", "key": "rm", "url": "http://h/x", "token": "tok-123456789"}
    with pytest.raises(InvalidInputError, match="token_env") as info:
        build_grader(spec)
    assert "tok-123456789" not in str(info.value)
    spec = {
        "type": "binary_judge",
        "key": "k",
        "criteria": "c",
        "judge_model": {"model": "m", "api_key_env": "sk-abcdefghijklmnop"},
    }
    with pytest.raises(InvalidInputError, match="NAME of an environment variable") as info:
        build_grader(spec)
    assert "sk-abcdefghijklmnop" not in str(info.value)


def test_an_unset_environment_variable_is_named(monkeypatch):
    monkeypatch.delenv("NOT_SET_ANYWHERE", raising=False)
    spec = {"type": "external_endpoint", "key": "rm", "url": "http://h/x"}
    with pytest.raises(InvalidInputError, match="NOT_SET_ANYWHERE"):
        build_grader({**spec, "token_env": "NOT_SET_ANYWHERE"})


def test_a_judge_without_a_model_says_where_to_put_one():
    with pytest.raises(InvalidInputError, match=r"needs judge_model.*\[judge\]"):
        build_grader({"type": "binary_judge", "key": "k", "criteria": "c"})


async def test_the_spec_rebuilds_an_equivalent_grader(env, judge_server):
    for spec in every_type(judge_server.base_url):
        grader = build_grader(spec)
        again = build_grader(grader.spec)
        assert type(again) is type(grader)
        assert again.spec == grader.spec
        assert again is not grader
    combined = build_grader(every_type(judge_server.base_url)[-1])
    again = build_grader(combined.spec)
    assert await again.grade(SAMPLE) == await combined.grade(SAMPLE)
    assert (await again.grade(SAMPLE)).value == 4.0  # 3 * "yes" found + 1 * length 1.0


def test_judge_defaults_are_merged_into_the_remembered_spec(env):
    grader = build_grader(
        {"type": "binary_judge", "key": "k", "criteria": "c"},
        judge_defaults={
            "model": "m",
            "base_url": "http://127.0.0.1:1/v1",
            "api_key_env": "JUDGE_KEY",
            "max_concurrency": 4,
        },
    )
    assert grader.spec["judge_model"] == {
        "model": "m",
        "base_url": "http://127.0.0.1:1/v1",
        "api_key_env": "JUDGE_KEY",
        "max_concurrency": 4,
    }
    again = build_grader(grader.spec)  # needs no defaults any more
    assert again.model.base_url == "http://127.0.0.1:1/v1"
    assert again.model.max_concurrency == 4


def test_every_judge_default_reaches_the_model(env):
    # Each option of the [judge] table, structured_output and the model's own settings
    # included, is passed on to every judge model that does not set it.
    grader = build_grader(
        {"type": "binary_judge", "key": "k", "criteria": "c", "judge_model": {"model": "m"}},
        judge_defaults={
            "base_url": "http://127.0.0.1:1/v1",
            "api_key_env": "JUDGE_KEY",
            "structured_output": "prompt",
            "temperature": 0.4,
            "max_tokens": 77,
        },
    )
    assert grader.model.structured_output == "prompt"
    assert (grader.model.temperature, grader.model.max_tokens) == (0.4, 77)
    assert (grader.temperature, grader.max_tokens) == (None, None)  # left to the model


def test_load_graders_json_and_toml_build_the_same(env, tmp_path, judge_server):
    toml = tmp_path / "graders.toml"
    toml.write_text(
        f"""
[judge]
base_url = "{judge_server.base_url}"
api_key_env = "JUDGE_KEY"

[[graders]]
type = "binary_judge"
key = "helpful"
criteria = "The response answers the question"
judge_model = "judge"

[[graders]]
type = "rubric_judge"
key = "rubric"
judge_model = {{ model = "judge", max_concurrency = 8 }}
criteria = ["Correct", ["Cites a source", 2.0], {{ requirement = "Rude", weight = -1 }}]

[[graders]]
type = "external_endpoint"
key = "rm"
url = "http://127.0.0.1:9/get_reward"
token_env = "RM_TOKEN"
payload = "openrlhf"

[[graders]]
type = "combined"
key = "reward"
weights = [0.7, 0.3]

[[graders.graders]]
type = "custom"
key = "len"
function = "support.custom_graders:length_score"

[[graders.graders]]
type = "command"
key = "sh"
command = ["true"]
"""
    )
    from_toml = load_graders(toml)
    assert [g.grader_key for g in from_toml] == ["helpful", "rubric", "rm", "reward"]
    assert from_toml[0].spec["judge_model"]["api_key_env"] == "JUDGE_KEY"
    assert from_toml[1].model.max_concurrency == 8
    assert from_toml[2].payload == "openrlhf"
    assert [g.grader_key for g in from_toml[3].graders] == ["len", "sh"]
    as_json = tmp_path / "graders.json"
    as_json.write_text(json.dumps(grader_config(from_toml)))
    from_json = load_graders(as_json)
    assert [g.spec for g in from_json] == [g.spec for g in from_toml]
    bare_list = tmp_path / "list.json"
    bare_list.write_text(json.dumps([from_toml[3].spec]))
    assert load_graders(bare_list)[0].spec == from_toml[3].spec


def test_grader_config_is_json_and_holds_no_secrets(env, judge_server):
    graders = [build_grader(spec) for spec in every_type(judge_server.base_url)]
    config = grader_config(graders)
    text = json.dumps(config)
    assert "judge-secret-value" not in text
    assert "rm-secret-value" not in text
    assert '"token_env": "RM_TOKEN"' in text
    assert '"api_key_env": "JUDGE_KEY"' in text
    assert [spec["key"] for spec in config["graders"]] == [g.grader_key for g in graders]
    config["graders"][0]["key"] = "edited"
    assert graders[0].spec["key"] == "helpful"  # a copy
    assert grader_config(graders[0]) == {"graders": [graders[0].spec]}


def test_grader_config_refuses_a_hand_built_grader():
    grader = CommandGrader("sh", "true")
    with pytest.raises(InvalidInputError, match="not built from a spec"):
        grader_config([grader])


def test_a_custom_target_must_name_module_and_attribute():
    with pytest.raises(InvalidInputError, match=r"is not 'package\.module:attr'"):
        build_grader({"type": "custom", "key": "k", "function": "custom_graders.length_score"})


def test_custom_targets():
    def build(function: str, **fields):
        return build_grader({"type": "custom", "key": "k", "function": function, **fields})

    assert build("support.custom_graders:KeywordGrader", options={"word": "no"}).word == "no"
    assert (
        build("support.custom_graders:make_keyword", factory=True, options={"word": "w"}).word
        == "w"
    )
    shared = build_grader(
        {"type": "custom", "key": "shared", "function": "support.custom_graders:SHARED"}
    )
    from support import custom_graders

    assert shared is custom_graders.SHARED
    assert build("support.custom_graders:length_score", sample_tables=True).sample_tables is True


@pytest.mark.parametrize(
    ("function", "fields", "message"),
    [
        ("no_such_module_xyz:f", {}, "no module named 'no_such_module_xyz'"),
        ("support.custom_graders:missing", {}, "has no attribute 'missing'"),
        ("support.custom_graders:NOT_CALLABLE", {}, "is a int"),
        (
            "support.custom_graders:length_score",
            {"options": {"a": 1}},
            "a scoring function takes none",
        ),
        ("support.custom_graders:make_wrong_key", {"factory": True}, "keyed 'other-key'"),
        ("support.custom_graders:SHARED", {}, "keyed 'shared'"),
        ("support.custom_graders:not_a_factory", {"factory": True}, "returned float"),
        ("support.custom_graders:length_score", {"factory": True}, r"length_score\('k'\) failed"),
        ("support.custom_graders:KeywordGrader", {"options": {"wrd": 1}}, "unexpected keyword"),
    ],
)
def test_custom_errors_are_clear(function, fields, message):
    spec = {"type": "custom", "key": "k", "function": function, **fields}
    with pytest.raises(InvalidInputError, match=message):
        build_grader(spec)


def test_a_custom_module_with_a_missing_dependency_says_so(tmp_path, monkeypatch):
    (tmp_path / "needs_missing_dep.py").write_text("import not_installed_pkg_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(InvalidInputError, match="imports 'not_installed_pkg_xyz'"):
        build_grader({"type": "custom", "key": "k", "function": "needs_missing_dep:f"})


def test_duplicate_keys_in_a_file_are_refused(tmp_path):
    path = tmp_path / "g.json"
    spec = {"type": "custom", "key": "same", "function": "support.custom_graders:length_score"}
    path.write_text(json.dumps({"graders": [spec, spec]}))
    with pytest.raises(InvalidInputError, match="share the key 'same'"):
        load_graders(path)


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("g.yaml", "graders: []", "must end in .json or .toml"),
        ("g.json", "{not json", "is not valid JSON"),
        ("g.toml", "[[graders]\n", "is not valid TOML"),
        ("g.json", '"a string"', "holds a 'graders' list"),
        ("g.json", '{"graders": [], "extra": 1}', "unknown field 'extra'"),
        ("g.json", '{"judge": {"base_ur": "x"}, "graders": []}', "did you mean 'base_url'"),
    ],
)
def test_bad_files_are_clear_errors(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(InvalidInputError, match=message) as info:
        load_graders(path)
    assert str(path) in str(info.value) or name.endswith(".yaml")


def test_a_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(InvalidInputError, match="cannot read the grader file"):
        load_graders(tmp_path / "absent.toml")


def test_toml_on_python_310_without_tomli_names_the_package(tmp_path, monkeypatch):
    import gradewire.specs._factory as factory

    fake_sys = types.SimpleNamespace(version_info=(3, 10, 0))
    monkeypatch.setattr(factory, "sys", fake_sys)
    monkeypatch.setitem(sys.modules, "tomli", None)
    path = tmp_path / "g.toml"
    path.write_text("[[graders]]\n")
    with pytest.raises(MissingDependencyError, match="pip install 'tomli'"):
        load_graders(path)


def test_a_combination_spec_carries_on_error():
    spec = {
        "type": "combined",
        "key": "c",
        "on_error": "zero",
        "graders": [
            {"type": "custom", "key": "a", "function": "support.custom_graders:length_score"}
        ],
    }
    grader = build_grader(spec)
    assert isinstance(grader, CombinedGrader)
    assert grader.on_error == "zero"
    assert build_grader(grader.spec).on_error == "zero"  # type: ignore[attr-defined]
    with pytest.raises(InvalidInputError, match="on_error"):
        build_grader({**spec, "on_error": "ignore"})


def test_timeout_is_a_field_of_every_spec_type(env, judge_server):
    specs = {spec["key"]: spec for spec in every_type(judge_server.base_url)}
    judge = build_grader({**specs["helpful"], "timeout": 12.5})
    assert judge.timeout == 12.5
    assert judge.spec["timeout"] == 12.5  # type: ignore[attr-defined]
    custom = build_grader(
        {
            "type": "custom",
            "key": "f",
            "function": "support.custom_graders:length_score",
            "timeout": 3,
        }
    )
    assert custom.timeout == 3.0
    factory = build_grader(
        {
            "type": "custom",
            "key": "kw",
            "function": "support.custom_graders:make_keyword",
            "factory": True,
            "options": {"word": "yes"},
            "timeout": 2,
        }
    )
    assert factory.timeout == 2.0
    # command's timeout bounds the grade, as everywhere (a command out of time is a timeout
    # outcome); external_endpoint's is each HTTP attempt's (EndpointGrader.attempt_timeout).
    command = build_grader({"type": "command", "key": "b", "command": "true", "timeout": 7})
    assert command.timeout == 7.0
    assert command._timeout == 7.0  # type: ignore[attr-defined]
    combined = build_grader({**specs["reward"], "timeout": 60})
    assert combined.timeout == 60.0
    assert all(sub.timeout is None for sub in combined.graders)  # type: ignore[attr-defined]
    assert build_grader(grader_config(custom)["graders"][0]).timeout == 3.0


@pytest.mark.parametrize("bad", [0, -1, "inf", "nan", "soon"])
def test_a_bad_timeout_is_a_spec_error_naming_the_field(bad):
    spec = {"type": "custom", "key": "f", "function": "support.custom_graders:length_score"}
    with pytest.raises(InvalidInputError, match="'timeout'"):
        build_grader({**spec, "timeout": bad})


def test_threads_says_where_a_custom_functions_sync_calls_run():
    spec = {"type": "custom", "key": "f", "function": "support.custom_graders:length_score"}
    assert build_grader({**spec, "threads": False}).threads is False  # type: ignore[attr-defined]
    assert build_grader(spec).threads is None  # type: ignore[attr-defined]
    with pytest.raises(InvalidInputError, match="threads applies to a scoring function"):
        build_grader(
            {
                "type": "custom",
                "key": "kw",
                "function": "support.custom_graders:KeywordGrader",
                "threads": True,
            }
        )


@pytest.fixture
def fresh_modules(tmp_path):
    """The test's own modules (files under its tmp_path) are forgotten after it.

    Only those: forgetting a gradewire module first imported during the test would leave a
    second copy of it for later tests, whose classes and patch targets are not the first's.
    """
    before = set(sys.modules)
    path = list(sys.path)
    yield
    for name in set(sys.modules) - before:
        where = getattr(sys.modules[name], "__file__", None) or ""
        if where.startswith(str(tmp_path)):
            del sys.modules[name]
    assert sys.path == path  # the grader file's folder is not left on the path


def test_a_module_beside_the_grader_file_is_found_first(tmp_path, fresh_modules, monkeypatch):
    monkeypatch.chdir("/")  # not from the working directory: from the file's folder
    (tmp_path / "gw_beside_helpers.py").write_text("WORD = 'yes'\n")
    (tmp_path / "gw_beside_graders.py").write_text(
        "import gw_beside_helpers\n\n"
        "def correct(sample):\n"
        "    return float(gw_beside_helpers.WORD in sample.completion())\n"
    )
    package = tmp_path / "gw_beside_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "scoring.py").write_text("def short(sample):\n    return 1.0\n")
    file = tmp_path / "graders.toml"
    file.write_text(
        '[[graders]]\ntype = "custom"\nkey = "correct"\nfunction = "gw_beside_graders:correct"\n'
        '\n[[graders]]\ntype = "custom"\nkey = "short"\nfunction = "gw_beside_pkg.scoring:short"\n'
    )
    correct, short = load_graders(file)
    assert run_sync(correct.grade(SAMPLE)).value == 1.0
    assert run_sync(short.grade(SAMPLE)).value == 1.0
    assert sys.modules["gw_beside_graders"].__file__ == str(tmp_path / "gw_beside_graders.py")


def test_a_module_of_the_same_name_imported_from_elsewhere_is_a_clear_error(
    tmp_path, fresh_modules
):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "gw_twice.py").write_text("def f(sample):\n    return 0.0\n")
    sys.path.insert(0, str(elsewhere))
    try:
        import gw_twice  # noqa: F401
    finally:
        sys.path.remove(str(elsewhere))
    folder = tmp_path / "graders"
    folder.mkdir()
    (folder / "gw_twice.py").write_text("def f(sample):\n    return 1.0\n")
    file = folder / "graders.json"
    file.write_text(json.dumps([{"type": "custom", "key": "f", "function": "gw_twice:f"}]))
    with pytest.raises(InvalidInputError, match="already imported from") as caught:
        load_graders(file)
    assert str(folder / "gw_twice.py") in str(caught.value)


def test_a_module_not_beside_the_file_is_imported_as_before(tmp_path):
    file = tmp_path / "graders.json"
    installed = {"type": "custom", "key": "f", "function": "support.custom_graders:label_match"}
    file.write_text(json.dumps([installed]))
    (grader,) = load_graders(file)
    assert grader.grader_key == "f"
    missing = tmp_path / "missing.json"
    missing.write_text(json.dumps([{"type": "custom", "key": "f", "function": "gw_nowhere:f"}]))
    with pytest.raises(InvalidInputError, match="beside the grader file") as caught:
        load_graders(missing)
    assert str(tmp_path) in str(caught.value)


def test_a_data_folder_beside_the_file_does_not_shadow_an_installed_package(tmp_path):
    (tmp_path / "support").mkdir()  # no __init__.py: a namespace package at most
    file = tmp_path / "graders.json"
    installed = {"type": "custom", "key": "f", "function": "support.custom_graders:label_match"}
    file.write_text(json.dumps([installed]))
    (grader,) = load_graders(file)
    assert grader.grader_key == "f"


ADAPTIVE_JUDGE = """
[judge]
base_url = "{url}"
api_key_env = "JUDGE_KEY"

[[graders]]
type = "binary_judge"
key = "helpful-judge"
criteria = "The response directly answers the user's question without going off-topic"
judge_model = "llama-3.1-8b-instruct"
feedback_key = "helpfulness"
"""


async def test_adaptives_binary_judge_spec_writes_its_scores_under_the_feedback_key(
    env, judge_server, tmp_path
):
    """Adaptive's binary_judge, as its reference writes it, with feedback_key."""
    judge_server.handler = lambda request: '{"reasoning": "it answers", "verdict": "PASS"}'
    file = tmp_path / "graders.toml"
    file.write_text(ADAPTIVE_JUDGE.format(url=judge_server.base_url))
    (judge,) = load_graders(file, trust_code=False)
    assert judge.grader_key == "helpfulness"  # logs, summaries and trackers use it
    assert judge.spec["key"] == "helpful-judge"
    assert judge.spec["feedback_key"] == "helpfulness"
    logger = gw.RewardLogger(judge)
    assert [g.value for g in await logger.grade([SAMPLE])] == [1.0]
    logs = logger.step(1)
    assert logs["rewards/helpfulness/score/mean"] == 1.0
    assert not any("helpful-judge" in name for name in logs)
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps({"prompt": "Say yes", "completion": "yes indeed"}) + "\n")
    result = await gw.run_eval(data, [judge], tmp_path / "run")
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert "helpfulness" in json.dumps(summary)
    assert result is not None
    again = build_grader(grader_config(judge)["graders"][0])
    assert again.grader_key == "helpfulness"


def test_two_graders_writing_under_one_feedback_key_are_refused(env, tmp_path):
    judge = {
        "type": "binary_judge",
        "criteria": "Answers it",
        "judge_model": {"model": "judge", "base_url": "http://127.0.0.1:9/v1"},
        "feedback_key": "helpfulness",
    }
    file = tmp_path / "graders.json"
    file.write_text(json.dumps([{**judge, "key": "a"}, {**judge, "key": "b"}]))
    with pytest.raises(InvalidInputError, match="'helpfulness'"):
        load_graders(file)
    file.write_text(json.dumps([{**judge, "key": "a"}, {**judge, "key": "a", "feedback_key": "x"}]))
    with pytest.raises(InvalidInputError, match="two graders share the key 'a'"):
        load_graders(file)


def test_bash_is_read_as_command_its_old_name() -> None:
    # Grader files written before CommandGrader's rename say type = "bash": they still
    # build, and are logged (and rebuilt) under the canonical name.
    old = build_grader({"type": "bash", "key": "b", "command": "true", "timeout": 5})
    assert isinstance(old, CommandGrader)
    assert old.spec["type"] == "command"  # type: ignore[attr-defined]
    assert old.timeout == 5.0
    rebuilt = build_grader(old.spec)  # type: ignore[attr-defined]
    assert rebuilt.spec == old.spec  # type: ignore[attr-defined]
    with pytest.raises(InvalidInputError, match=r"unknown field 'cwdd' in the command spec"):
        build_grader({"type": "bash", "key": "b", "command": "true", "cwdd": "/"})


def test_a_spec_declares_its_score_range_and_a_combined_finds_its_own():
    spec = {
        "type": "combined",
        "key": "reward",
        "weights": [0.8, 0.2],
        "graders": [
            {"type": "custom", "key": "a", "function": "math:fabs", "score_range": [0, 1]},
            {"type": "custom", "key": "b", "function": "math:fabs", "score_range": [-1, 2]},
        ],
    }
    combined = gw.build_grader(spec, trust_code=True)
    assert [g.score_range for g in combined.graders] == [(0.0, 1.0), (-1.0, 2.0)]
    assert combined.score_range == (-1.0, 2.0)
    rebuilt = gw.build_grader(combined.spec, trust_code=True)  # kept in the logged spec
    assert rebuilt.graders[1].score_range == (-1.0, 2.0)


@pytest.mark.parametrize("bad", [[1, 0], [0], [0, float("inf")], "0,1", [True, 2], [0, "1"]])
def test_a_score_range_that_is_not_two_finite_rising_numbers_is_refused(bad):
    spec = {"type": "custom", "key": "a", "function": "math:fabs", "score_range": bad}
    with pytest.raises(gw.InvalidInputError, match="score_range"):
        gw.build_grader(spec, trust_code=True)
