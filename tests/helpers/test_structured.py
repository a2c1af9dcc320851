from __future__ import annotations

import datetime as dt
import json
from typing import Literal

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, PydanticUserError, RootModel, model_validator

from gradewire import (
    GradewireError,
    InvalidTypeError,
    OutputParserException,
    pydantic_parse,
)
from gradewire.helpers._json_candidates import candidates
from gradewire.helpers._json_repair import repairs


class OutputExpectation(BaseModel):
    reasoning: str
    category: Literal["A", "B", "C", "D", "E"]


class Verdict(BaseModel):
    category: Literal["A", "B", "C"]
    score: int


class Address(BaseModel):
    city: str
    zip_code: str


class Person(BaseModel):
    name: str
    age: int
    address: Address
    tags: list[str] = []


class Loose(BaseModel):
    a: int | None = None
    b: list[str] = []


class Small(BaseModel):
    name: str
    score: int
    ok: bool
    tags: list[str]
    ratio: float | None = None


IntList = RootModel[list[int]]

ANSWER = '{"reasoning": "The text is about sports.", "category": "B"}'
EXPECTED = OutputExpectation(reasoning="The text is about sports.", category="B")


def parse_error(text: str, model: type[BaseModel] = OutputExpectation) -> OutputParserException:
    with pytest.raises(OutputParserException) as info:
        pydantic_parse(text, model)
    return info.value


# --- where the JSON sits ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        ANSWER,
        f"  \n{ANSWER}\n\n",
        f"Sure! Here is the answer: {ANSWER}",
        f"{ANSWER}\nLet me know if you need anything else {{or not}}.",
        f"Sure! Here it is:\n{ANSWER}\nHope that helps [really].",
        f'He said "hi" and it\'s fine: {ANSWER} (done)',
    ],
    ids=["plain", "whitespace", "prose-before", "prose-after", "prose-both", "quotes-in-prose"],
)
def test_finds_json_among_prose(text):
    assert pydantic_parse(text, OutputExpectation) == EXPECTED


@pytest.mark.parametrize(
    "text",
    [
        f"```json\n{ANSWER}\n```",
        f"```JSON\n{ANSWER}\n```",
        f"```Json\n{ANSWER}\n```",
        f"```\n{ANSWER}\n```",
        f"~~~json\n{ANSWER}\n~~~",
        f"~~~\n{ANSWER}\n~~~",
        f"````json\n{ANSWER}\n````",
        f"Here you go:\n```json\n{ANSWER}\n```\nAnything else?",
        f"Inline: ```json {ANSWER}``` done",
        f"```json   \r\n{ANSWER}\r\n```",
    ],
    ids=[
        "json",
        "JSON",
        "Json",
        "no-tag",
        "tilde-json",
        "tilde",
        "four-backticks",
        "prose-around",
        "inline",
        "crlf",
    ],
)
def test_fenced_blocks(text):
    assert pydantic_parse(text, OutputExpectation) == EXPECTED


def test_several_fences_are_tried_in_order():
    schema = '```json\n{"reasoning": "string", "category": "one of A-E"}\n```'
    text = f"The schema is:\n{schema}\nMy answer:\n```json\n{ANSWER}\n```"
    assert pydantic_parse(text, OutputExpectation) == EXPECTED
    other = '```json\n{"reasoning": "second", "category": "C"}\n```'
    assert pydantic_parse(f"```json\n{ANSWER}\n```\n{other}", OutputExpectation) == EXPECTED


def test_fence_beats_prose_json():
    text = f'Draft: {{"reasoning": "draft", "category": "A"}}\n```json\n{ANSWER}\n```'
    assert pydantic_parse(text, OutputExpectation) == EXPECTED


def test_unterminated_final_fence():
    assert pydantic_parse(f"```json\n{ANSWER}", OutputExpectation) == EXPECTED
    cut = '```json\n{"reasoning": "The text is about sports.", "category": "B", "note": "wh'
    assert pydantic_parse(cut, OutputExpectation) == EXPECTED


def test_backticks_inside_a_json_string_do_not_close_the_fence():
    code = {"reasoning": "Use ```python\nprint(1)\n``` here", "category": "D"}
    text = f"```json\n{json.dumps(code)}\n```"
    assert pydantic_parse(text, OutputExpectation).reasoning == code["reasoning"]


# --- reasoning blocks ------------------------------------------------------------------------

DECOY = '{"reasoning": "decoy", "category": "A"}'


@pytest.mark.parametrize(
    "text",
    [
        f"<think>Maybe {DECOY}? No.</think>\n{ANSWER}",
        f"<THINK>{DECOY}</THINK>{ANSWER}",
        f"<Think >\n```json\n{DECOY}\n```\n</Think>\n```json\n{ANSWER}\n```",
        f"<thinking>{DECOY}</thinking> The answer: {ANSWER}",
        f"<think>{DECOY}</think> <think>{DECOY}</think> {ANSWER}",
        f"I start reasoning right away {DECOY} and forget the tag.</think>\n{ANSWER}",
        f"<think>a</think> still reasoning {DECOY}</think>{ANSWER}",
        f"<think>outer <think> inner {DECOY}</think>{ANSWER}",
    ],
    ids=[
        "think",
        "upper",
        "fenced-decoy",
        "thinking",
        "two-blocks",
        "missing-open-tag",
        "last-close-tag-wins",
        "nested-open-tag",
    ],
)
def test_json_inside_reasoning_never_wins(text):
    assert pydantic_parse(text, OutputExpectation) == EXPECTED


def test_answer_after_reasoning_is_reported_not_the_decoy():
    text = f'<think>{DECOY}</think>{{"reasoning": "real", "category": "Z"}}'
    error = parse_error(text)
    assert "got 'Z'" in error.message
    assert error.llm_output == text


def test_unclosed_think_block_drops_the_rest():
    assert pydantic_parse(f"{ANSWER}\n<think>and then {DECOY}", OutputExpectation) == EXPECTED


def test_reasoning_only_output_says_so():
    error = parse_error(f"<think>I would answer {ANSWER}</think>")
    assert "reasoning" in error.message
    assert error.message.startswith("no JSON object found in the model output")


# --- trailing commas -------------------------------------------------------------------------


def test_trailing_commas_are_dropped():
    text = '{"name": "Ann", "age": 3, "address": {"city": "X", "zip_code": "1",}, "tags": ["a",],}'
    assert pydantic_parse(text, Person) == Person(
        name="Ann", age=3, address=Address(city="X", zip_code="1"), tags=["a"]
    )


def test_trailing_comma_lookalikes_inside_strings_survive():
    text = '{"reasoning": "keep ,} and ,] and , } as is", "category": "A",}'
    assert pydantic_parse(text, OutputExpectation).reasoning == "keep ,} and ,] and , } as is"


# --- truncated output ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1, "b": ["x", "y', Loose(a=1, b=["x", "y"])),
        ('{"a": 1, "b": ["x",', Loose(a=1, b=["x"])),
        ('{"a": 1, "b"', Loose(a=1)),
        ('{"a": 1, "b":', Loose(a=1)),
        ('{"a": 1, "b": ', Loose(a=1)),
        ('{"a": 1, "b": [', Loose(a=1, b=[])),
        ('{"a": 1, "c": tru', Loose(a=1)),
        ('{"a": 1, "c": nul', Loose(a=1)),
        ('{"a": 1, "c": 12.', Loose(a=1)),
        ('{"a": 1, "c": -', Loose(a=1)),
        ('{"a": 1, "c": {"d": [1, {"e": "f', Loose(a=1)),
        ('{"b": ["cut \\u00', Loose(b=["cut "])),
        ('{"b": ["cut \\', Loose(b=["cut "])),
        ('{"b": ["kept \\\\', Loose(b=["kept \\"])),
        ('{"a": 7, "b": ["x",],', Loose(a=7, b=["x"])),
        ('Result: {"a": 4, "b": ["x"', Loose(a=4, b=["x"])),
        ('{"b": ["x"], "a": 12', Loose(b=["x"])),
        ('{"b": ["x"], "a": 12 ', Loose(a=12, b=["x"])),
        ('{"b": ["\\u00e9\\ud83c\\udf89", "\\u00e9\\ud83c\\udf8', Loose(b=["é🎉", "é"])),
        ('{"b": ["x"], "c": true', Loose(b=["x"])),
    ],
)
def test_truncated_objects_are_repaired(text, expected):
    assert pydantic_parse(text, Loose) == expected


def test_truncated_answer_of_the_adaptive_style_model():
    text = 'Sure.\n```json\n{"reasoning": "It is \\"mostly\\" about sports, and ma'
    assert pydantic_parse(text + '", "category": "B"}\n```', OutputExpectation).category == "B"
    with_category = '{"category": "C", "reasoning": "It is about sports, and ma'
    parsed = pydantic_parse(with_category, OutputExpectation)
    assert parsed == OutputExpectation(category="C", reasoning="It is about sports, and ma")


def test_repair_backs_off_to_an_earlier_member():
    # The last complete member has an invalid escape, so the first repair is not JSON.
    text = '{"a": 2, "b": ["bad \\x escape"], "c": tr'
    assert repairs(text)[0] == '{"a": 2, "b": ["bad \\x escape"]}'
    assert pydantic_parse(text, Loose) == Loose(a=2)


def test_repairs_only_cut_off_values():
    assert repairs('{"a": 1}') == []
    assert repairs('{"a": 1} {"b": 2') == []
    assert repairs('{"a" 1, "b": 2') == []
    assert repairs("prose {") == []
    assert repairs('{"a": {"b": 1, "c": tr') == ['{"a": {"b": 1}}', '{"a": {}}', "{}"]


def test_a_number_cut_off_at_the_end_is_dropped_not_guessed():
    # "score": 1 might have been 10: a missing field is safer than a wrong score.
    error = parse_error('```json\n{"category": "A", "score": 1', Verdict)
    assert error.message == "output does not match Verdict: score: Field required"
    assert pydantic_parse('{"category": "A", "score": 10\n', Verdict).score == 10


def test_truncated_output_missing_a_required_field_reports_it():
    error = parse_error('{"reasoning": "a long thought that got cu')
    assert error.message == "output does not match OutputExpectation: category: Field required"


# --- Python literals -------------------------------------------------------------------------


def test_python_literal_dicts_are_a_last_resort():
    text = "Answer: {'name': 'Ann', 'age': 3, 'address': {'city': 'X', 'zip_code': '1'}}"
    assert pydantic_parse(text, Person).address.city == "X"
    assert pydantic_parse("{'a': None, 'b': ['it\\'s']}", Loose) == Loose(b=["it's"])


def test_python_literal_booleans_and_none():
    class Flags(BaseModel):
        on: bool
        off: bool
        nothing: None

    assert pydantic_parse("{'on': True, 'off': False, 'nothing': None}", Flags) == Flags(
        on=True, off=False, nothing=None
    )


def test_python_literal_does_not_run_code(tmp_path):
    target = tmp_path / "pwned"
    text = f"{{'reasoning': open({str(target)!r}, 'w').write('x'), 'category': 'A'}}"
    parse_error(text)
    assert not target.exists()
    parse_error("{'reasoning': __import__('os').getcwd(), 'category': 'A'}")


def test_python_literal_with_non_json_values_is_refused():
    parse_error("{'a': {1, 2}}", Loose)
    parse_error("{'a': b'1'}", Loose)
    parse_error("{(1, 2): 3}", Loose)


def test_python_literal_candidates_are_bounded():
    huge = "{'reasoning': '" + "x" * 200_000 + "', 'category': 'A'}"
    error = parse_error(huge)
    assert error.llm_output == huge


# --- several JSON values ---------------------------------------------------------------------


def test_first_validating_candidate_wins():
    text = f'Example: {{"foo": 1}}. Also [1, 2]. Final: {ANSWER} and {DECOY}'
    assert pydantic_parse(text, OutputExpectation) == EXPECTED


def test_validation_error_of_a_json_candidate_is_reported():
    text = 'See [1]. Answer: {"reasoning": "r", "category": "F"}'
    error = parse_error(text)
    assert error.message == (
        "output does not match OutputExpectation: category: Input should be 'A', 'B', 'C', "
        "'D' or 'E' (got 'F')"
    )
    assert error.llm_output == text
    assert error.__cause__ is not None


def test_stray_open_bracket_in_prose():
    text = f"Scores lie in [0, 10). The answer is {ANSWER}"
    assert pydantic_parse(text, OutputExpectation) == EXPECTED


def test_candidate_order():
    # Fences, the whole text, complete {...} then [...] spans, then brackets left open.
    text = 'x [0] ```json\n{"f": 1}\n``` {"o": 2} [3] {"t": [4'
    assert candidates(text) == ['{"f": 1}', text, '{"o": 2}', "[0]", "[3]", '{"t": [4', "[4"]


def test_candidates_skip_reasoning():
    assert candidates(f"<think>{DECOY}</think>{ANSWER}") == [ANSWER]


def test_root_model_accepts_arrays():
    assert pydantic_parse("The list: [1, 2, 3] as requested", IntList).root == [1, 2, 3]
    assert pydantic_parse("```json\n[4, 5,]\n```", IntList).root == [4, 5]


# --- content ---------------------------------------------------------------------------------


def test_nested_models_and_lists():
    text = (
        'Result:\n{"name": "Zoë", "age": 41, "address": {"city": "Zürich", "zip_code": "8001"},'
        ' "tags": ["a", "b"]}'
    )
    assert pydantic_parse(text, Person) == Person(
        name="Zoë", age=41, address=Address(city="Zürich", zip_code="8001"), tags=["a", "b"]
    )


def test_unicode_and_escapes():
    value = {"reasoning": 'He said "{not json}" \\ then 日本語 🎉 \u2028 [x]', "category": "E"}
    text = f"答え: {json.dumps(value, ensure_ascii=False)} 以上"
    assert pydantic_parse(text, OutputExpectation).reasoning == value["reasoning"]
    assert pydantic_parse(json.dumps(value), OutputExpectation).reasoning == value["reasoning"]


def test_raw_newlines_inside_strings_are_accepted():
    text = '{"reasoning": "line one\nline two\tend", "category": "A"}'
    assert pydantic_parse(text, OutputExpectation).reasoning == "line one\nline two\tend"


def test_strict_models_validate_in_json_mode():
    class Event(BaseModel):
        model_config = ConfigDict(strict=True)
        when: dt.date

    assert pydantic_parse('{"when": "2024-05-01"}', Event).when == dt.date(2024, 5, 1)
    assert pydantic_parse("{'when': '2024-05-01'}", Event).when == dt.date(2024, 5, 1)


# --- errors ----------------------------------------------------------------------------------


def test_validation_message_names_every_field():
    text = '{"category": "Z"}'
    error = parse_error(text, Verdict)
    assert error.message == (
        "output does not match Verdict: category: Input should be 'A', 'B' or 'C' (got 'Z'); "
        "score: Field required"
    )
    assert error.llm_output == text
    assert isinstance(error, GradewireError)
    assert isinstance(error, ValueError)


def test_validation_message_gives_nested_locations():
    text = 'ok: {"name": "A", "age": "old", "address": {"city": "X"}, "tags": ["a", 5]}'
    message = parse_error(text, Person).message
    assert "age: Input should be a valid integer" in message
    assert "(got 'old')" in message
    assert "address.zip_code: Field required" in message
    assert "tags.1: Input should be a valid string (got 5)" in message


def test_long_offending_values_are_shortened():
    text = json.dumps({"reasoning": "r", "category": "Q" * 10_000})
    message = parse_error(text).message
    assert len(message) < 300
    assert len(parse_error(text).llm_output) == len(text)


def test_no_json_message_shows_the_start_of_the_output():
    text = "I cannot answer that. " * 20
    error = parse_error(text)
    assert error.message.startswith(
        "no JSON object found in the model output; ask the model to answer with a JSON object "
        "matching OutputExpectation (output starts with: 'I cannot answer that. "
    )
    assert error.message.endswith("'...)")
    assert error.llm_output == text


def test_empty_output():
    error = parse_error("   ")
    assert "output is empty" in error.message
    assert error.llm_output == "   "


def test_malformed_json_is_explained():
    error = parse_error('{"reasoning": "x" "category": "A"}')
    assert error.message.startswith("no JSON object found in the model output")
    assert "not valid JSON: Expecting ',' delimiter" in error.message


def test_validator_errors_of_any_kind_become_parser_errors():
    class Picky(BaseModel):
        value: int

        @model_validator(mode="before")
        @classmethod
        def needs_key(cls, data: object) -> object:
            assert isinstance(data, dict)
            data["value"] = data["number"] * 2  # KeyError when "number" is missing
            return data

    assert pydantic_parse('{"number": 2}', Picky).value == 4
    error = parse_error('{"other": 2}', Picky)
    assert "KeyError" in error.message
    assert isinstance(error.__cause__, KeyError)


def test_broken_model_definitions_are_not_hidden():
    class Broken(BaseModel):
        child: Undefined  # type: ignore[name-defined]  # noqa: F821

    with pytest.raises(PydanticUserError):
        pydantic_parse('{"child": 1}', Broken)


@pytest.mark.parametrize("bad_text", [b'{"a": 1}', None, 42, {"a": 1}])
def test_text_must_be_a_string(bad_text):
    with pytest.raises(InvalidTypeError, match="needs the model output as a str"):
        pydantic_parse(bad_text, Loose)


@pytest.mark.parametrize("bad_model", [dict, list[int], "Loose", None, int])
def test_model_must_be_a_model_class(bad_model):
    with pytest.raises(InvalidTypeError, match="pydantic BaseModel subclass"):
        pydantic_parse("{}", bad_model)


def test_model_instance_is_refused_with_a_hint():
    with pytest.raises(InvalidTypeError, match=r"instance of Loose; pass the class itself"):
        pydantic_parse("{}", Loose())  # type: ignore[arg-type]


# --- robustness ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "{" * 100_000,
        "[" * 10_000,
        "[" * 10_000 + "]" * 10_000,
        '{"a": ' * 50_000,
        '{"a": [' * 20_000 + "1" + "]}" * 20_000,
        "}" * 100_000 + "]" * 100_000,
        '"\\' * 200_000,
        "```" * 100_000,
        "<think>" * 50_000,
        "{'a': " * 5_000,
        "x" * 1_000_000,
        "[]" * 300_000,
    ],
    ids=lambda text: f"{text[:8]!r}x{len(text)}",
)
def test_adversarial_inputs_raise_parser_errors(text):
    error = parse_error(text)
    assert error.llm_output == text


def test_large_inputs_still_parse():
    prose = "lorem ipsum dolor sit amet, " * 40_000
    assert pydantic_parse(prose + ANSWER + prose, OutputExpectation) == EXPECTED
    big = {"reasoning": "x" * 1_000_000, "category": "A"}
    assert pydantic_parse(json.dumps(big), OutputExpectation).reasoning == big["reasoning"]


# --- properties ------------------------------------------------------------------------------

JSONISH_TOKENS = [
    *'{}[]",:\\ \n',
    *"abtrufnl0123456789.-eE'`~<>/",
    "true",
    "false",
    "null",
    "None",
    "True",
    "```",
    "```json\n",
    "<think>",
    "</think>",
    '"a":',
    '"b":',
    "\\u00",
]
jsonish_text = st.lists(st.sampled_from(JSONISH_TOKENS), max_size=60).map("".join)
any_model = st.sampled_from([Loose, OutputExpectation, Person, IntList])


@settings(deadline=None, max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text() | jsonish_text, model=any_model)
def test_any_text_gives_a_model_or_a_parser_error(text, model):
    outcome: object
    try:
        outcome = pydantic_parse(text, model)
    except OutputParserException as error:
        outcome = error
    if isinstance(outcome, OutputParserException):
        assert outcome.llm_output == text
        assert outcome.message
    else:
        assert isinstance(outcome, model)


prose_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="{}[]`<>"),
    max_size=40,
)
small_models = st.builds(
    Small,
    name=st.text(),
    score=st.integers(),
    ok=st.booleans(),
    tags=st.lists(st.text(max_size=10), max_size=3),
    ratio=st.none() | st.floats(allow_nan=False, allow_infinity=False),
)
FENCES = [None, ("```json", "```"), ("```JSON", "```"), ("```", "```"), ("~~~", "~~~")]


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    instance=small_models,
    prefix=prose_text,
    suffix=prose_text,
    fence=st.sampled_from(FENCES),
    thoughts=st.lists(st.tuples(prose_text, st.none() | small_models), max_size=2),
)
def test_round_trip_through_prose_fences_and_reasoning(instance, prefix, suffix, fence, thoughts):
    dumped = instance.model_dump_json()
    body = dumped if fence is None else f"{fence[0]}\n{dumped}\n{fence[1]}"
    reasoning = "".join(
        f"<think>{words} {'' if decoy is None else decoy.model_dump_json()}</think>"
        for words, decoy in thoughts
    )
    text = f"{reasoning}{prefix}{body}{suffix}"
    assume(text.lower().count("think") == 2 * len(thoughts))
    assert pydantic_parse(text, Small) == instance


@settings(deadline=None, max_examples=30, suppress_health_check=[HealthCheck.too_slow])
@given(
    depth=st.integers(min_value=1_000, max_value=20_000),
    opener=st.sampled_from(["{", "[", '{"a":', '[{"a":', "{'a': ["]),
    closed=st.booleans(),
)
def test_deep_nesting_raises_parser_errors(depth, opener, closed):
    closer = "".join({"{": "}", "[": "]"}.get(char, "") for char in reversed(opener))
    text = opener * depth + (closer * depth if closed else "")
    with pytest.raises(OutputParserException):
        pydantic_parse(text, Loose)


class _Text(BaseModel):
    text: str


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ('{"text": "cut \\ud83d"}', "cut \ufffd"),
        ('{"text": "\\ude00 low half first"}', "\ufffd low half first"),
        ('```json\n{"text": "x\\ud83d\\ud83d y"}\n```', "x\ufffd\ufffd y"),
        ('{"text": "raw \ud83d"}', "raw \ufffd"),
        ("{'text': 'python \\ud83d'}", "python \ufffd"),
        ('{"text": "pair \\ud83d\\ude00 kept"}', "pair \U0001f600 kept"),
        ('{"text": "cut at the end \\ud83d', "cut at the end "),
    ],
)
def test_lone_surrogate_escapes_are_read(output: str, expected: str) -> None:
    """Half an emoji (valid JSON, refused by pydantic's JSON mode) becomes U+FFFD."""
    assert pydantic_parse(output, _Text).text == expected


# -- an answer that is JSON as it stands is read without the candidate scan ---------------


class _Judged(BaseModel):
    reasoning: str
    score: int


@pytest.mark.parametrize(
    ("text", "reasoning"),
    [
        ('{"reasoning": "ok", "score": 3}', "ok"),
        ('  \n{"reasoning": "ok", "score": 3}\n', "ok"),
        ('{"reasoning": "ok", "score": 3,}', "ok"),  # a trailing comma, repaired
        ('{"reasoning": "a ``` b", "score": 3}', "a ``` b"),  # a fence run: the whole scan
        ('<think>{"reasoning": "no", "score": 1}</think>{"reasoning": "ok", "score": 3}', "ok"),
    ],
)
def test_whole_answers_parse_as_through_the_candidates(text, reasoning):
    assert pydantic_parse(text, _Judged) == _Judged(reasoning=reasoning, score=3)
    # The same answer after prose goes through the candidate scan: the same value.
    assert pydantic_parse("Here it is: " + text, _Judged) == pydantic_parse(text, _Judged)


def test_a_whole_answer_that_does_not_validate_still_names_the_field():
    text = '{"reasoning": "ok", "score": "many"}'
    with pytest.raises(OutputParserException, match="score") as caught:
        pydantic_parse(text, _Judged)
    assert caught.value.llm_output == text
