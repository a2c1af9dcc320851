"""Adaptive Harmony's structured-output helpers and judge building blocks.

`pydantic_parse` / `OutputParserException`, `render_schema` (the schema text judge prompts
show), `BinaryJudgeShot` and the `FaithfulnessGrader` signature. Runs against
adaptive-harmony and gradewire alike (see `compat_targets`).
"""

from __future__ import annotations

import enum
from typing import Literal, Optional, Union

import pytest
from ah_target import (
    BinaryJudgeShot,
    FaithfulnessGrader,
    OutputParserException,
    StringThread,
    pydantic_parse,
    render_schema,
)
from compat_targets import REAL
from pydantic import BaseModel, Field


class Verdict(BaseModel):
    reasoning: str = Field(description="Reasoning to support the score")
    score: Literal["PASS", "FAIL", "NA"] = Field(description="The score for the sample")


# --- pydantic_parse --------------------------------------------------------------------
@pytest.mark.parametrize(
    "text",
    [
        '{"reasoning": "ok", "score": "PASS"}',
        '  {"reasoning": "ok", "score": "PASS"}  ',
        '```json\n{"reasoning": "ok", "score": "PASS"}\n```',
        '<think>let me see</think>{"reasoning": "ok", "score": "PASS"}',
        '{"reasoning": "ok", "score": "PASS"',  # cut off before the closing brace
    ],
)
def test_pydantic_parse_reads_what_judges_write(text):
    assert pydantic_parse(text, Verdict) == Verdict(reasoning="ok", score="PASS")


@pytest.mark.parametrize("text", ["no json here", '{"reasoning": "ok", "score": "MAYBE"}'])
def test_pydantic_parse_failures_keep_the_output(text):
    with pytest.raises(OutputParserException) as raised:
        pydantic_parse(text, Verdict)
    assert raised.value.llm_output is not None
    assert raised.value.llm_output != ""


# --- render_schema ---------------------------------------------------------------------
class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Claim(BaseModel):
    statement_idx: int = Field(description="The index of the sentence")
    score: Literal["1", "0"] = Field(description="1 if supported")


class Report(BaseModel):
    summary: str = Field(description="One sentence")
    claims: list[Claim] = Field(description="One entry per sentence")
    best: Claim = Field(description="The strongest claim")
    tags: list[str] = Field(description="Keywords")
    note: Optional[int] = Field(description="An optional number")  # noqa: UP045
    either: Union[int, str] = Field(description="A number or a word")  # noqa: UP007
    color: Color = Field(description="A color")
    counts: dict[str, int] = Field(description="Counts by word")
    pair: tuple[int, str] = Field(description="A pair")
    many: tuple[float, ...] = Field(description="Some floats")
    unique: set[int] = Field(description="Distinct ids")
    ok: bool = Field(description="Whether it is fine")
    ratio: float = Field(description="A ratio")
    level: Literal[1, 2] = Field(description="A level")


VERDICT_SCHEMA = """{
  "reasoning": str,
  "score": Literal["PASS", "FAIL", "NA"]
}"""

REPORT_SCHEMA = """{
  "summary": str,
  "claims": [{
    "statement_idx": int,
    "score": Literal["1", "0"]
  }],
  "best": {
    "statement_idx": int,
    "score": Literal["1", "0"]
  },
  "tags": [str],
  "note": Optional[int],
  "either": Union[int, str],
  "color": Enum["red", "blue"],
  "counts": Dict[str, int],
  "pair": Tuple[int, str],
  "many": Tuple[float, ...],
  "unique": Set[int],
  "ok": bool,
  "ratio": float,
  "level": Literal[1, 2]
}"""


def test_render_schema_of_a_verdict():
    assert render_schema(Verdict, with_field_descriptions=False) == VERDICT_SCHEMA
    assert render_schema(Verdict) == (
        VERDICT_SCHEMA
        + "\n\nreasoning: Reasoning to support the score\nscore: The score for the sample"
    )


def test_render_schema_of_nested_models_and_every_kind_of_type():
    assert render_schema(Report, with_field_descriptions=False) == REPORT_SCHEMA
    descriptions = render_schema(Report).split("\n\n", 1)[1].splitlines()
    assert descriptions[:2] == ["summary: One sentence", "claims: One entry per sentence"]
    assert descriptions[-4:] == [
        "claims[].statement_idx: The index of the sentence",
        "claims[].score: 1 if supported",
        "best.statement_idx: The index of the sentence",
        "best.score: 1 if supported",
    ]


def test_render_schema_of_a_pep_604_union():
    class Modern(BaseModel):
        note: int | None = Field(description="An optional number")

    shown = render_schema(Modern, with_field_descriptions=False)
    # Adaptive Harmony reads only typing.Union, so ``int | None`` shows as "UnionType".
    assert shown == ('{\n  "note": "UnionType"\n}' if REAL else '{\n  "note": Optional[int]\n}')


def test_render_schema_needs_every_description():
    class Bare(BaseModel):
        value: int

    with pytest.raises(ValueError, match=r"'value'.*missing a description"):
        render_schema(Bare)
    assert render_schema(Bare, with_field_descriptions=False) == '{\n  "value": int\n}'


# --- BinaryJudgeShot -------------------------------------------------------------------
def test_binary_judge_shot_fields():
    thread = StringThread([("user", "How many masts has a ketch?"), ("assistant", "Two")])
    shot = BinaryJudgeShot(thread=thread, reasoning=None, score="FAIL", criteria="In French")
    assert (shot.thread, shot.reasoning, shot.score, shot.criteria) == (
        thread,
        None,
        "FAIL",
        "In French",
    )
    plain = BinaryJudgeShot(thread, "It is correct", "PASS")
    assert plain.criteria is None
    assert tuple(plain) == (thread, "It is correct", "PASS", None)
    assert plain._replace(score="NA").score == "NA"


# --- FaithfulnessGrader's signature -----------------------------------------------------
class JudgeModel:
    """Stands for the judge model: the graders only keep it until they grade."""

    async def complete(self, messages, **options):  # the call gradewire's judges make
        raise AssertionError("not called by these tests")


def test_faithfulness_grader_takes_a_language():
    grader = FaithfulnessGrader(model=JudgeModel(), language="fr", grader_key="faithful")
    assert (grader.grader_key, grader.language) == ("faithful", "fr")
    default = FaithfulnessGrader(model=JudgeModel())
    assert default.grader_key == "faithfulness_judge"
    model_first = FaithfulnessGrader(JudgeModel(), language="de")
    assert (model_first.grader_key, model_first.language) == ("faithfulness_judge", "de")
