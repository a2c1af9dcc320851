"""OpenAI grader configs: string_check, templating, multi formulas, text similarity, errors.

Each expected value is computed in the test: string operations by their definition, the
similarity metrics by their reference library called directly, formulas by hand.
"""

from __future__ import annotations

import json
import math
import pickle
import re
import threading
from decimal import Decimal
from typing import Any

import hypothesis
import numpy as np
import pandas as pd
import pytest
from hypothesis import strategies as st

import gradewire as gw
from gradewire.eval.runs._samples import MESSAGE_FIELDS as EVAL_MESSAGE_FIELDS
from gradewire.openai import (
    FormulaError,
    OpenAIGraderError,
    SampleParseError,
    TemplateVariableError,
    openai_grader,
)
from gradewire.openai._sample import MESSAGE_FIELDS
from gradewire.openai._template import MAX_TEMPLATE_CHARS, variable_spans


def thread(completion: str, **item: Any) -> gw.StringThread:
    return gw.StringThread([("user", "question"), ("assistant", completion)], metadata=item)


def check(name: str, operation: str, reference: str = "{{item.answer}}") -> dict[str, Any]:
    return {
        "type": "string_check",
        "name": name,
        "input": "{{sample.output_text}}",
        "reference": reference,
        "operation": operation,
    }


CASES = [
    ("Paris", "Paris"),
    ("Paris", "paris"),
    ("The capital is Paris.", "Paris"),
    ("The capital is PARIS.", "paris"),
    ("Lyon", "Paris"),
    ("", ""),
    ("Straße", "STRASSE"),
]


@pytest.mark.parametrize(("completion", "answer"), CASES)
@pytest.mark.parametrize("operation", ["eq", "ne", "like", "ilike"])
async def test_string_check_operations_by_definition(operation, completion, answer):
    expected = {
        "eq": completion == answer,
        "ne": completion != answer,
        "like": answer in completion,
        "ilike": answer.casefold() in completion.casefold(),
    }[operation]
    grader = openai_grader(check("c", operation))
    grade = await grader.grade(thread(completion, answer=answer))
    assert grade.value == (1.0 if expected else 0.0)
    assert grade.info["passed"] is expected
    assert grader.get_logs()["passed/mean"] == (1.0 if expected else 0.0)


async def test_nested_item_paths_and_whitespace_in_braces():
    item = {"a": {"b": [{"c": "x"}, {"c": "deep", "d e": 7}]}, "n": 3, "flag": True}
    reference = (
        "{{ item.a.b[1].c }}/{{item.a.b.1['d e']}}/{{item.n}}/{{ item.flag }}/{{item.a.b[0]}}"
    )
    grader = openai_grader(check("nested", "eq", reference))
    expected = 'deep/7/3/true/{"c": "x"}'
    assert (await grader.grade(thread(expected, **item))).value == 1.0
    assert (await grader.grade(thread("deep/7/3/true", **item))).value == 0.0


async def test_sample_output_json_and_tools():
    grader = openai_grader(
        check("json", "eq", "{{item.want}}") | {"input": "{{sample.output_json.answer[0]}}"}
    )
    assert (await grader.grade(thread('{"answer": ["42", 1]}', want="42"))).value == 1.0
    with pytest.raises(SampleParseError):
        await grader.grade(thread("not json", want="42"))
    tools = openai_grader(
        check("tools", "eq", "get_weather") | {"input": "{{sample.output_tools[0].function.name}}"}
    )
    call = {"id": "1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
    sample = gw.StringThread(
        [("user", "weather?"), ("assistant", "")],
        metadata={MESSAGE_FIELDS: {"1": {"tool_calls": [call]}}},
    )
    assert (await tools.grade(sample)).value == 1.0
    # the eval runner keeps a row's tool calls under the same metadata key
    assert MESSAGE_FIELDS == EVAL_MESSAGE_FIELDS


async def test_a_missing_variable_is_an_error_of_its_own_kind_never_an_empty_string():
    grader = openai_grader(check("missing", "eq", "{{item.answer.text}}"))
    with pytest.raises(TemplateVariableError) as caught:
        await grader.grade(thread("", answer={"other": ""}))
    assert caught.value.kind == "invalid_variable_error"
    assert "item.answer has no key 'text'" in str(caught.value)
    assert await grader(thread("", answer={"other": ""})) is None
    logs = grader.get_logs()
    # a direct grade() call raises; a call of the grader (or grade_many) logs the failure
    assert logs["score/error_count"] == 1
    assert logs["score/invalid_variable_error_count"] == 1
    assert logs["score/sample_parse_error_count"] == 0
    assert "score/mean" not in logs or math.isnan(logs.get("score/mean", math.nan))
    failed = [r for r in grader._logs if "error" in r]
    assert failed[0]["error_kind"] == "invalid_variable_error"
    # the kind survives a trip to another process (Ray, the reward server's workers)
    again = pickle.loads(pickle.dumps(caught.value))
    assert type(again) is type(caught.value)  # DataVariableError: the data row lacks it
    assert isinstance(again, TemplateVariableError)
    assert again.kind == "invalid_variable_error"


@pytest.mark.parametrize(
    "null",
    [None, math.nan, np.float32("nan"), Decimal("NaN"), pd.NA, pd.NaT],
    ids=["None", "nan", "float32", "Decimal", "pd.NA", "pd.NaT"],
)
@pytest.mark.parametrize("operation", ["eq", "ne", "like", "ilike"])
async def test_a_null_reference_is_a_missing_variable_never_the_text_null(operation, null):
    """A null (or NaN, as a data frame stores a missing cell) is no value to compare."""
    grader = openai_grader(check("ref", operation))
    for completion in ("null", "NaN", "", "Paris"):
        with pytest.raises(TemplateVariableError, match=r"item\.answer is null") as caught:
            await grader.grade(thread(completion, answer=null))
        assert caught.value.kind == "invalid_variable_error"
        assert await grader(thread(completion, answer=null)) is None
    nested = openai_grader(check("nested", operation, "{{item.ref.answer}}"))
    with pytest.raises(TemplateVariableError, match=r"item\.ref\.answer is null"):
        await nested.grade(thread("null", ref={"answer": null}))
    logs = grader.get_logs()
    assert logs["score/error_count"] == 4
    assert logs["score/invalid_variable_error_count"] == 4
    assert "score/mean" not in logs


async def test_a_null_the_model_answered_is_graded_as_its_answer():
    """Only the data row's nulls are missing values: a model answering null is wrong."""
    grader = openai_grader(
        {**check("json", "eq"), "input": "{{sample.output_json.answer}}"},
        missing_variables="abstain",
    )
    grade = await grader.grade(thread('{"answer": null}', answer="Paris"))
    assert grade.value == 0.0
    assert (await grader.grade(thread('{"answer": "Paris"}', answer="Paris"))).value == 1.0
    # An output without the field is the model's failure: an error, never an abstention.
    with pytest.raises(TemplateVariableError, match="has no key 'answer'") as caught:
        await grader.grade(thread('{"other": 1}', answer="Paris"))
    assert not isinstance(caught.value, gw.IgnoreGradeException)


async def test_null_variables_can_be_declared_abstentions():
    grader = openai_grader(check("ref", "eq"), missing_variables="abstain")
    with pytest.raises(gw.IgnoreGradeException, match=r"item\.answer is null"):
        await grader.grade(thread("null", answer=None))
    assert await grader(thread("null", answer=None)) is None
    assert await grader(thread("x", other=1)) is None  # a missing key abstains too
    assert (await grader.grade(thread("Paris", answer="Paris"))).value == 1.0
    logs = grader.get_logs()
    assert logs["score/abstained_count"] == 2
    assert logs["score/error_count"] == 0
    multi = openai_grader(
        {
            "type": "multi",
            "name": "m",
            "graders": {"a": check("a", "eq"), "b": check("b", "ne", "x")},
            "calculate_output": "a + b",
        },
        missing_variables="abstain",
    )
    assert await multi(thread("null", answer=math.nan)) is None
    assert multi.get_logs()["score/abstained_count"] == 1
    with pytest.raises(gw.InvalidInputError, match="missing_variables"):
        openai_grader(check("ref", "eq"), missing_variables="skip")  # type: ignore[typeddict-item]


def test_a_grader_files_openai_table_declares_null_variables_abstentions(tmp_path):
    path = tmp_path / "graders.toml"
    path.write_text(
        '[openai]\nmissing_variables = "abstain"\n\n[[graders]]\ntype = "string_check"\n'
        'name = "ref"\ninput = "{{sample.output_text}}"\nreference = "{{item.answer}}"\n'
        'operation = "eq"\n'
    )
    (grader,) = gw.load_graders(path, trust_code=False)
    assert gw.run_sync(grader(thread("null", answer=None))) is None
    assert grader.get_logs()["score/abstained_count"] == 1


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("{{answer}}", "must start with a namespace"),
        ("{{ output.x }}", "must start with a namespace"),
        ("{{sample.completion}}", "names no sample variable"),
        ("{{sample.output_text.x}}", "sample.output_text is a string"),
    ],
)
def test_bad_templates_are_refused_when_built(template, message):
    with pytest.raises(gw.InvalidInputError, match=message):
        openai_grader(check("bad", "eq", template))


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (check("c", "equals"), r"field 'operation': Input should be 'eq', 'ne', 'like' or 'ilike'"),
        (
            {**check("c", "eq"), "refrence": "x"},
            r"unknown field 'refrence' \(did you mean 'reference'\?\)",
        ),
        ({k: v for k, v in check("c", "eq").items() if k != "input"}, "field 'input' is required"),
        ({"type": "string_chek", "name": "c"}, "unknown OpenAI grader type"),
        ({**check("c", "eq"), "pass_threshold": 0.5}, "unknown field 'pass_threshold'"),
        (
            {
                "type": "label_model",
                "name": "l",
                "model": "m",
                "input": [],
                "labels": ["a", "b"],
                "passing_labels": ["c"],
            },
            "passing_labels",
        ),
        (
            {"type": "score_model", "name": "s", "model": "m", "input": [], "range": [1, 0]},
            "field 'range'",
        ),
        (
            {
                "type": "score_model",
                "name": "s",
                "model": "m",
                "input": [{"role": "user", "content": {"type": "input_image", "image_url": "x"}}],
            },
            "text only",
        ),
        ({"type": "python", "name": "p", "source": "def grade(:"}, "does not parse"),
        ({"type": "python", "name": "p", "source": "def score(s, i): return 1"}, "defines no"),
    ],
)
def test_invalid_configs_name_the_field(config, message):
    with pytest.raises(gw.InvalidInputError, match=message):
        openai_grader(config)


def multi(formula: str, **graders: dict[str, Any]) -> dict[str, Any]:
    return {"type": "multi", "name": "m", "graders": graders, "calculate_output": formula}


async def test_multi_formula_by_hand_with_children():
    config = multi(
        "0.5 * exact + max(sim, 0.25) - abs(-0.1) + floor(1.7) + ceil(0.2) + sqrt(4) "
        "- exp(0) + log(e_like) + log(8, 2) ** 1 % 5 // 1",
        exact=check("exact", "eq"),
        sim={
            "type": "text_similarity",
            "name": "sim",
            "input": "{{sample.output_text}}",
            "reference": "{{item.answer}}",
            "evaluation_metric": "fuzzy_match",
        },
        e_like=check("e_like", "like", "Par"),
    )
    grader = openai_grader(config)
    grade = await grader.grade(thread("Paris", answer="Parks"))
    from rapidfuzz import fuzz

    exact, sim, e_like = 0.0, fuzz.ratio("Paris", "Parks") / 100, 1.0
    expected = (
        0.5 * exact
        + max(sim, 0.25)
        - abs(-0.1)
        + math.floor(1.7)
        + math.ceil(0.2)
        + math.sqrt(4)
        - math.exp(0)
        + math.log(e_like)
        + math.log(8, 2) ** 1 % 5 // 1
    )
    assert grade.value == pytest.approx(expected, abs=1e-12)
    assert [(c.grader_key, c.value) for c in grade.children] == [
        ("exact", exact),
        ("sim", pytest.approx(sim)),
        ("e_like", e_like),
    ]
    assert grade.info["sub_rewards"]["sim"] == pytest.approx(sim)
    logs = grader.get_logs()
    assert logs["score/mean"] == pytest.approx(expected)
    assert logs["exact/score/mean"] == exact
    assert logs["sim/score/mean"] == pytest.approx(sim)
    assert logs["score/formula_parse_error_count"] == 0


async def test_multi_takes_the_generated_single_grader_shape():
    config = {
        "type": "multi",
        "name": "m",
        "graders": check("only", "eq"),
        "calculate_output": "2 * only",
    }
    grade = await openai_grader(config).grade(thread("x", answer="x"))
    assert grade.value == 2.0


@pytest.mark.parametrize(
    ("formula", "message"),
    [
        ("__import__('os').system('true')", "not part of the formula language"),
        ("a.real", "not part of the formula language"),
        ("a if a else 1", "not part of the formula language"),
        ("a < 1", "not part of the formula language"),
        ("open('x')", "not part of the formula language"),
        ("b + 1", "'b', which is not one of the graders' names"),
        ("min()", "takes 1 or more arguments"),
        ("log(a, 2, 3)", "takes 1 to 2 arguments"),
        ("a +", "does not parse"),
        ("'text'", "not part of the formula language"),
        ("[a][0]", "not part of the formula language"),
    ],
)
def test_formulas_outside_the_language_are_refused(formula, message):
    with pytest.raises(gw.InvalidInputError, match=message):
        openai_grader(multi(formula, a=check("a", "eq")))


@pytest.mark.parametrize(
    ("formula", "message"),
    [
        ("-" * 5000 + "a", "nested"),
        ("-" * 150 + "a", "nested 150 deep"),
        ("+".join(["a"] * 100_000), "characters"),
        ("+".join(["a"] * 300), "nested 299 deep"),
        ("(" * 300 + "a" + ")" * 300, "nested"),
        ("min(" * 120 + "a" + ")" * 120, "nested"),
    ],
)
def test_a_formula_too_long_or_too_deep_is_refused_at_build(formula, message):
    """Such a formula ended eval and serve with RecursionError or MemoryError."""
    with pytest.raises(gw.InvalidInputError, match=message) as caught:
        openai_grader(multi(formula, a=check("a", "eq")))
    assert len(str(caught.value)) < 1000  # the formula is not echoed whole


async def test_a_formula_within_the_bounds_evaluates_at_any_stack_depth():
    deep = "-" * 98 + "a"  # an even count of minus signs: a itself
    grader = openai_grader(multi(deep, a=check("a", "eq")))

    async def nested(levels: int) -> float:
        if levels:
            return await nested(levels - 1)
        return (await grader.grade(thread("x", answer="x"))).value

    assert await nested(600) == 1.0  # however deep the caller's stack (a server's)
    long = "+".join(["a"] * 90)
    grader = openai_grader(multi(long, a=check("a", "eq")))
    assert (await grader.grade(thread("x", answer="x"))).value == 90.0


@pytest.mark.parametrize(
    "formula", ["a / (a - 1)", "log(a - 1)", "sqrt(a - 2)", "(a - 2) ** 0.5", "10 ** 10000"]
)
async def test_a_formula_without_a_value_is_a_formula_error(formula):
    grader = openai_grader(multi(formula, a=check("a", "eq")))
    with pytest.raises(FormulaError) as caught:
        await grader.grade(thread("x", answer="x"))
    assert caught.value.kind == "formula_parse_error"
    assert await grader(thread("x", answer="x")) is None
    assert grader.get_logs()["score/formula_parse_error_count"] == 1


async def test_a_failing_sub_grader_fails_the_multi_grader_with_its_kind():
    grader = openai_grader(multi("a + b", a=check("a", "eq"), b=check("b", "eq", "{{item.nope}}")))
    assert await grader(thread("x", answer="x")) is None
    logs = grader.get_logs()
    assert logs["score/invalid_variable_error_count"] == 1
    assert logs["b/score/invalid_variable_error_count"] == 1
    assert logs["a/score/count"] == 1


def similarity(metric: str, **extra: Any) -> dict[str, Any]:
    return {
        "type": "text_similarity",
        "name": metric,
        "input": "{{sample.output_text}}",
        "reference": "{{item.reference}}",
        "evaluation_metric": metric,
        **extra,
    }


PAIRS = [
    ("the cat sat on the mat", "the cat was sitting on the mat"),
    ("A quick brown fox jumps over the lazy dog.", "The quick brown dog jumps over a lazy fox!"),
    ("completely unrelated words here", "nothing in common at all"),
    ("identical sentence", "identical sentence"),
]


def reference_value(metric: str, text: str, reference: str) -> float:
    """Each metric from its library, called directly."""
    if metric == "fuzzy_match":
        from rapidfuzz import fuzz

        return fuzz.ratio(text, reference) / 100
    if metric == "bleu":
        import sacrebleu

        return min(sacrebleu.sentence_bleu(text, [reference]).score / 100, 1.0)
    if metric == "gleu":
        from nltk.translate.gleu_score import sentence_gleu

        return sentence_gleu([reference.split()], text.split())
    if metric == "meteor":
        from nltk.translate.meteor_score import meteor_score

        from gradewire.openai._metrics import _wordnet

        return meteor_score([reference.split()], text.split(), wordnet=_wordnet())
    from rouge_score.rouge_scorer import RougeScorer

    kind = "rougeL" if metric == "rouge_l" else f"rouge{metric[-1]}"
    return RougeScorer([kind]).score(reference, text)[kind].fmeasure


METRICS = [
    "fuzzy_match",
    "bleu",
    "gleu",
    "meteor",
    "rouge_1",
    "rouge_2",
    "rouge_3",
    "rouge_4",
    "rouge_5",
    "rouge_l",
]


@pytest.mark.parametrize(("text", "reference"), PAIRS)
@pytest.mark.parametrize("metric", METRICS)
async def test_each_metric_against_its_library(metric, text, reference):
    grader = openai_grader(similarity(metric))
    grade = await grader.grade(thread(text, reference=reference))
    assert grade.value == pytest.approx(reference_value(metric, text, reference), abs=1e-12)
    assert 0.0 <= grade.value <= 1.0
    assert "passed" not in grade.info


def test_meteor_uses_real_wordnet_synonyms():
    from gradewire.openai._metrics import _wordnet

    wordnet = _wordnet()
    assert wordnet.get_version() == "3.0"
    assert "hound" in {lemma.name() for s in wordnet.synsets("dog") for lemma in s.lemmas()}


async def test_pass_threshold_gives_a_pass_flag_beside_the_score():
    grader = openai_grader(similarity("rouge_1", pass_threshold=0.5))
    yes = await grader.grade(thread("the cat sat", reference="the cat sat down"))
    no = await grader.grade(thread("a dog", reference="the cat sat down"))
    assert yes.info["passed"] is True
    assert no.info["passed"] is False
    assert no.value < 0.5 <= yes.value
    assert grader.get_logs()["passed/mean"] == 0.5


async def test_cosine_through_an_embeddings_endpoint(judge_server):
    vectors = {"alpha beta": [1.0, 2.0, 2.0], "alpha gamma": [2.0, 1.0, 2.0]}

    def handler(request):
        assert request.path.endswith("/embeddings")
        body = request.json
        return {
            "object": "list",
            "data": [{"index": i, "embedding": vectors[t]} for i, t in enumerate(body["input"])],
            "model": body["model"],
        }

    judge_server.handler = handler
    grader = openai_grader(
        similarity("cosine", pass_threshold=0.9),
        base_url=judge_server.base_url,
        api_key="k",
        embedding_model="embedder",
    )
    grade = await grader.grade(thread("alpha beta", reference="alpha gamma"))
    a, b = vectors["alpha beta"], vectors["alpha gamma"]
    expected = sum(x * y for x, y in zip(a, b, strict=True)) / (math.hypot(*a) * math.hypot(*b))
    assert grade.value == pytest.approx(expected)
    assert grade.info["passed"] is False  # 8/9 < 0.9
    sent = judge_server.requests[0].json
    assert sent == {"model": "embedder", "input": ["alpha beta", "alpha gamma"]}
    # a text seen before is not embedded again
    await grader.grade(thread("alpha gamma", reference="alpha beta"))
    assert len(judge_server.requests) == 1


async def test_cosine_server_failure_is_a_model_grader_server_error(judge_server, sleeps):
    from support.judge_server import error

    judge_server.handler = lambda request: error(500)
    grader = openai_grader(similarity("cosine"), base_url=judge_server.base_url)
    from gradewire.http import RetryPolicy

    grader.embeddings.retry = RetryPolicy(max_attempts=2, sleep=sleeps, random=lambda: 0.0)
    assert await grader(thread("a", reference="b")) is None
    assert grader.get_logs()["score/model_grader_server_error_count"] == 1


def test_openai_error_is_a_grading_error():
    assert issubclass(OpenAIGraderError, gw.GradingError)


async def test_grader_files_hold_openai_objects_alone_in_lists_and_as_testing_criteria(tmp_path):
    one = check("exact", "eq")
    files = {
        "alone.json": one,
        "list.json": [one, similarity("rouge_l")],
        "eval.json": {
            "name": "my eval",
            "data_source_config": {"type": "custom"},
            "testing_criteria": [one, similarity("bleu", pass_threshold=0.3)],
        },
        "mixed.json": {
            "graders": [
                one,
                {
                    "type": "custom",
                    "key": "length",
                    "function": "support.custom_graders:length_score",
                },
            ]
        },
    }
    for name, data in files.items():
        (tmp_path / name).write_text(json.dumps(data))
    for name in files:
        graders = gw.load_graders(tmp_path / name)
        assert graders[0].grader_key == "exact"
        assert graders[0].spec == one
        assert (await graders[0].grade(thread("Paris", answer="Paris"))).value == 1.0
        # the logged run config rebuilds the same graders
        config = gw.grader_config(graders)
        (tmp_path / f"again-{name}").write_text(json.dumps(config))
        again = gw.load_graders(tmp_path / f"again-{name}")
        assert [g.spec for g in again] == [g.spec for g in graders]
    mixed = gw.load_graders(tmp_path / "mixed.json")
    assert [g.grader_key for g in mixed] == ["exact", "length"]


def test_a_bad_openai_object_in_a_file_names_the_file_and_field(tmp_path):
    path = tmp_path / "g.json"
    path.write_text(json.dumps({"testing_criteria": [check("a", "eq"), check("b", "equal")]}))
    with pytest.raises(gw.InvalidInputError, match=r"graders\[1\].*field 'operation'"):
        gw.load_graders(path)


def test_toml_files_map_configured_models_to_served_ones(tmp_path):
    path = tmp_path / "g.toml"
    path.write_text(
        '[judge]\nbase_url = "http://127.0.0.1:9/v1"\ntimeout = 5\n'
        '[openai]\nserved_models = {"gpt-4o" = "smollm2"}\npython_timeout = 3\n'
        '[[graders]]\ntype = "score_model"\nname = "s"\nmodel = "gpt-4o"\n'
        'input = [{role = "user", content = "Rate {{sample.output_text}}"}]\n'
        '[[graders]]\ntype = "python"\nname = "p"\n'
        'source = "def grade(sample, item):\\n    return 1"\n'
    )
    score, python = gw.load_graders(path)
    assert score.model.model == "smollm2"
    assert score.model.base_url == "http://127.0.0.1:9/v1"
    assert score.model.attempt_timeout == 5  # the [judge] timeout bounds each attempt
    assert python.process_timeout == 3


# The variables of a template as the former regex found them: the reference of the scan.
REFERENCE_VARIABLE = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)


@hypothesis.settings(max_examples=300, deadline=None)
@hypothesis.given(st.text(alphabet="{}a. \n", max_size=40))
def test_the_one_pass_scan_finds_the_variables_the_regex_finds(source):
    expected = [m.span() for m in REFERENCE_VARIABLE.finditer(source)]
    assert variable_spans(source) == expected


def test_unclosed_braces_parse_in_one_pass_and_a_template_has_a_size_bound():
    """40 KB of unclosed ``{{`` took 10 s to parse (quadratic); 900 KB must be quick."""
    near_bound = "{{item.answer}}" + "{{" * (MAX_TEMPLATE_CHARS // 2 - 10)
    built: list[object] = []
    worker = threading.Thread(
        target=lambda: built.append(openai_grader(check("big", "eq", near_bound))), daemon=True
    )
    worker.start()
    worker.join(60)  # a guard against a hang, not a timing: the parse is milliseconds
    assert built, "parsing a template near the size bound did not end"
    with pytest.raises(gw.InvalidInputError, match="more than the 1,000,000 a template"):
        openai_grader(check("huge", "eq", "{{" * (MAX_TEMPLATE_CHARS // 2 + 1)))


def _words(count: int, seed: int) -> str:
    import random

    rng = random.Random(seed)
    return " ".join(f"w{rng.randrange(3000)}" for _ in range(count))


async def test_a_long_rouge_l_times_out_while_other_grades_on_the_loop_go_on():
    # rougeL is quadratic in pure Python: 4,000 words a side take seconds. Run where the
    # timeout holds, it is a timeout outcome, and the loop keeps serving other grades.
    import asyncio

    slow = openai_grader(similarity("rouge_l"))
    slow.timeout = 1.0
    quick = openai_grader(similarity("rouge_1"))
    events: list[str] = []
    finished = asyncio.Event()

    async def long_one() -> None:
        outcome = await slow.grade_many([thread(_words(4000, 1), reference=_words(4000, 2))])
        events.append(f"slow:{outcome[0]}")
        finished.set()

    async def short_ones() -> None:
        while not finished.is_set():
            await quick.grade(thread("the cat sat", reference="the cat sat down"))
            events.append("quick")
            await asyncio.sleep(0.01)

    await asyncio.gather(long_one(), short_ones())
    slow_at = next(i for i, event in enumerate(events) if event.startswith("slow"))
    assert events[slow_at] == "slow:None"  # a timeout, not a late score
    # While the long grade ran, the loop kept grading (on a blocked loop: one at most).
    assert events[:slow_at].count("quick") >= 5, events[: slow_at + 1]
    logs = slow.get_logs()
    assert logs["score/timeout_count"] == 1
    assert logs["score/error_count"] == 1


async def test_a_metric_past_its_size_bound_is_refused_not_run():
    # A 1 MB completion would never finish under rougeL: it is an error, named, at once.
    grader = openai_grader(similarity("rouge_l"))
    outcome = await grader.grade_many([thread(_words(150_000, 3), reference=_words(2000, 4))])
    assert outcome == [None]
    logs = grader.get_logs()
    assert logs["score/error_count"] == 1
    assert logs.get("score/timeout_count", 0) == 0


@pytest.mark.parametrize("metric", METRICS)
async def test_long_texts_score_as_the_library_does_in_the_worker(metric, monkeypatch):
    # Long enough to go to the worker process; the number is the library's own.
    from gradewire.openai._text_similarity import metric_pool

    pool = metric_pool()
    calls: list[str] = []
    acall = pool.acall

    async def counted(args: tuple[Any, ...], timeout: float | None = None) -> Any:
        calls.append(args[0])
        return await acall(args, timeout)

    monkeypatch.setattr(pool, "acall", counted)
    words = (400, 300) if metric in ("rouge_l", "meteor") else (5000, 4000)
    text, reference = _words(words[0], 5), _words(words[1], 6)
    grader = openai_grader(similarity(metric))
    grade = await grader.grade(thread(text, reference=reference))
    assert calls == [metric]
    assert grade.value == pytest.approx(reference_value(metric, text, reference), abs=1e-12)
