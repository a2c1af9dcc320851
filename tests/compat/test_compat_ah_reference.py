"""Every code example of the Adaptive Harmony grader docs, run as written, on both sides.

Each example body is copied from the reference page; only its imports are changed, to
`ah_target` (Adaptive Harmony's names from adaptive-harmony or from gradewire, see
`compat_targets`). Names the page leaves undefined (samples, helper functions, a metrics
logger) are set up around the example, never inside it. What gradewire adds to the
results (statistics of every numeric key, error counts, escaped HTML) is checked apart.
"""

import math
from typing import Any

import pytest

# --- imports changed from adaptive_harmony to ah_target -----------------------------
from ah_target import (
    BaseGrader,
    CombinedGrader,
    Grade,
    OutputParserException,
    StringThread,
    Table,
    pydantic_parse,
)
from compat_targets import REAL

InferenceModel = Any  # the page types its judge model with Harmony's client class


# --- "Define your own recipe grader" ------------------------------------------------
class MyCustomGrader(BaseGrader):
    def __init__(self, grader_key: str, model: InferenceModel):
        """
        Initialize the grader with parameters like model keys, API endpoints, or other configuration.
        """
        super().__init__(grader_key)
        self.grader_key = grader_key
        self.model = model

    async def grade(self, sample: StringThread) -> Grade:
        """
        The main function that returns the grade.
        Must return a `Grade` object.
        """
        completion = sample.last_content()
        # you could judge the sample with the spawned LLM here
        # judge_thread: StringThread = format_completion_into_judge_prompt(completion)
        # self.model.generate(judge_prompt)
        score = 1
        reason = "Custom scoring logic which could come from LLM"
        return Grade(value=score, grader_key=self.grader_key, reasoning=reason)


async def test_custom_llm_judge_style_grader():
    grader = MyCustomGrader("my-judge", model=None)
    grade = await grader.grade(StringThread([("user", "hi"), ("assistant", "hello")]))
    assert (grade.value, grade.grader_key, grade.reasoning) == (
        1.0,
        "my-judge",
        "Custom scoring logic which could come from LLM",
    )
    assert type(grade.value) is float


# --- "Quick implementation from a simple function" -----------------------------------
from typing import Literal

from pydantic import BaseModel


class OutputExpectation(BaseModel):
    reasoning: str
    category: Literal["A", "B", "C", "D", "E"]


async def grade_fn(sample: StringThread) -> float:
    try:
        structured_output = pydantic_parse(sample.last_content(), OutputExpectation)
    except OutputParserException:
        return -1.0

    ground_truth = sample.metadata.get("category")

    if structured_output.category == ground_truth:
        return 1.0
    return 0.0


# Creates a grader with default logging
grader = BaseGrader.from_function("label-grader", grade_fn)


async def test_from_function_with_a_pydantic_output_model():
    def sample(completion: str) -> StringThread:
        return StringThread(
            [("user", "Classify this."), ("assistant", completion)], metadata={"category": "B"}
        )

    right = await grader.grade(
        sample('```json\n{"reasoning": "looks like B", "category": "B"}\n```')
    )
    wrong = await grader.grade(sample('{"reasoning": "A, surely", "category": "A"}'))
    malformed = await grader.grade(sample("I think it is B."))
    after_prose = await grader.grade(sample('Sure! {"reasoning": "B it is", "category": "B"}'))
    assert (right.value, wrong.value, malformed.value) == (1.0, 0.0, -1.0)
    # gradewire's pydantic_parse finds the JSON after the prose; Adaptive Harmony's does not.
    assert after_prose.value == (-1.0 if REAL else 1.0)
    logs = grader.get_logs(clear=True)
    assert logs["score/mean"] == (-0.25 if REAL else 0.25)
    assert logs["score/count"] == 4


# --- "Grade object" -----------------------------------------------------------------
def test_grade_object():
    grade = Grade(
        value=0.95,
        grader_key="my-custom-grader",
        reasoning="Response demonstrates excellent factual accuracy and relevance",
    )
    # Adaptive Harmony keeps the value as a 32-bit float; gradewire as the float given.
    assert grade.value == pytest.approx(0.95, rel=1e-7)
    assert (grade.value == 0.95) is not REAL
    assert grade.grader_key == "my-custom-grader"
    assert grade.reasoning.startswith("Response demonstrates")


# --- "Combine grades" ---------------------------------------------------------------
def constant(value: float):
    async def score(sample: StringThread) -> float:
        return value

    return score


async def test_combined_grader():
    grader_1 = BaseGrader.from_function("g1", constant(1.0))
    grader_2 = BaseGrader.from_function("g2", constant(0.5))
    grader_3 = BaseGrader.from_function("g3", constant(0.0))
    thread = StringThread([("user", "q"), ("assistant", "a")])
    printed: list[object] = []
    print = printed.append  # capture what the example prints

    combined_grader = CombinedGrader(
        grader_key="combined",
        graders=[grader_1, grader_2, grader_3],
        weights=[1.0, 2.0, 1.0],
    )

    # The page's snippet calls `combined_grade.grade(thread)`, a typo for the
    # `combined_grader` it just built; the alias below is the only line not on the page.
    combined_grade = combined_grader
    # Use the combined scorer
    grade = await combined_grade.grade(thread)
    print(grade)  # mean grade from all graders

    assert grade.value == pytest.approx((1.0 + 2 * 0.5 + 0.0) / 4)
    assert printed == [grade]


# --- "Logging and aggregation": add_log in grade(), get_logs(clear=True) per epoch ----
class Prediction(BaseModel):
    category: str


def parse_output(text: str) -> Prediction:
    return pydantic_parse(text, Prediction)


def compute_score(item: Prediction | StringThread) -> float:
    # Two examples on the page call a `compute_score` helper: one with a parsed
    # prediction, one with the sample itself.
    if isinstance(item, Prediction):
        return 1.0 if item.category == "A" else 0.0
    value = float(item.last_content())
    if math.isnan(value):
        raise ValueError("the completion is not a number")
    return value


class EpochGrader(BaseGrader):
    async def grade(self, sample: StringThread) -> Grade:
        prediction = parse_output(sample.last_content())
        score = compute_score(prediction)

        # Log data for this sample
        self.add_log({"score": score, "category": prediction.category})

        return Grade(value=score, grader_key=self.grader_key)


class MetricsLogger:
    def __init__(self) -> None:
        self.calls: list[tuple[dict[str, Any], int]] = []

    def log_metrics(self, metrics: dict[str, Any], step: int) -> None:
        self.calls.append((metrics, step))


async def test_logging_and_aggregation_across_epochs():
    grader = EpochGrader("category")
    logger = MetricsLogger()

    def batch(*categories: str) -> list[StringThread]:
        return [
            StringThread([("user", "?"), ("assistant", f'{{"category": "{c}"}}')])
            for c in categories
        ]

    batches = [batch("A", "B"), batch("A", "A")]

    # Training loop example
    for epoch in range(3):
        for batch in batches:
            for sample in batch:
                grade = await grader.grade(sample)  # Logs accumulate

        # Get stats for this epoch only
        epoch_logs = grader.get_logs(clear=True)  # Aggregates + clears buffer
        logger.log_metrics(epoch_logs, step=epoch)

        # Next epoch starts with empty buffer

    assert [step for _, step in logger.calls] == [0, 1, 2]
    for logs, _ in logger.calls:
        assert logs["score/count"] == 4  # only this epoch's samples
        assert logs["score/mean"] == 0.75
        assert logs["score/std"] == pytest.approx(0.5)
        assert (logs["score/min"], logs["score/max"]) == (0.0, 1.0)


# --- "Custom logging with tables": a Table of malformed outputs ----------------------
class MySchema(BaseModel):
    category: str


class MyGrader(BaseGrader):
    async def grade(self, sample: StringThread) -> Grade:
        try:
            prediction = pydantic_parse(sample.last_content(), MySchema)
            score = 1.0 if prediction.category == sample.metadata["category"] else 0.0

            self.add_log({
                "score": score,
                "valid_format": True,
                "completion": sample.last_content(),
                "predicted": prediction.category,
                "ground_truth": sample.metadata["category"]
            })  # fmt: skip
        except OutputParserException:
            score = -1.0
            self.add_log({
                "score": score,
                "valid_format": False,
                "completion": sample.last_content(),
                "predicted": None,
                "ground_truth": sample.metadata["category"]
            })  # fmt: skip

        return Grade(value=score, grader_key=self.grader_key)

    def get_logs(self, clear: bool = False) -> dict[str, float | Table]:
        # Get default statistics (mean, std, etc.)
        logs = super().get_logs(clear=False)

        # Filter logs for malformed samples
        malformed = [log for log in self._logs if not log.get("valid_format", True)]

        # Add custom metrics
        logs["score/malformed_count"] = len(malformed)
        logs["score/malformed_rate"] = len(malformed) / len(self._logs) if self._logs else 0

        # Create a table of malformed samples
        if malformed:
            malformed_table = (
                Table()
                .add_column("Completion", [log["completion"][:100] + "..." for log in malformed])
                .add_column("Ground Truth", [log["ground_truth"] for log in malformed])
            )
            logs["score/malformed_samples"] = malformed_table

        if clear:
            self.clear_logs()

        return logs


async def test_custom_get_logs_with_a_table_of_malformed_outputs():
    grader = MyGrader("format")
    completions = ['{"category": "A"}', "<script>alert(1)</script> no json", '{"category": "C"}']
    for completion in completions:
        await grader.grade(
            StringThread([("user", "?"), ("assistant", completion)], metadata={"category": "A"})
        )
    logs = grader.get_logs(clear=True)
    assert logs["score/mean"] == pytest.approx(0.0)  # 1, -1, 0
    assert logs["score/malformed_count"] == 1
    assert logs["score/malformed_rate"] == pytest.approx(1 / 3)
    table = logs["score/malformed_samples"]
    assert isinstance(table, Table)
    assert table.headers == ["Completion", "Ground Truth"]
    assert table.rows == [["<script>alert(1)</script> no json...", "A"]]
    assert grader.get_logs() == {"score/malformed_count": 0, "score/malformed_rate": 0}
    if not REAL:  # every numeric key is aggregated, and HTML is escaped
        assert logs["valid_format/mean"] == pytest.approx(2 / 3)
        assert "<script>" not in table.to_html()


# --- "Creating tables" ----------------------------------------------------------------
def test_creating_tables():
    # Build table column-by-column
    table = (
        Table()
        .add_column("Category", ["A", "B", "C"])
        .add_column("Score", [0.9, 0.7, 0.85])
        .add_column("Reason", ["Good", "Needs work", "Excellent"])
    )
    by_columns = table

    # Or build row-by-row
    table = Table(initial_headers=["Category", "Score", "Reason"])
    table.add_row(["A", 0.9, "Good"])
    table.add_row(["B", 0.7, "Needs work"])

    assert by_columns.rows[:2] == table.rows
    assert len(by_columns.rows) == 3


# --- "Helper: get_sample_tables()" ----------------------------------------------------
class SampleTableGrader(BaseGrader):
    async def grade(self, sample: StringThread) -> Grade:
        try:
            score = compute_score(sample)
            self.add_log({
                "score": score,
                "prompt": sample.get_turns()[0].content,
                "reasoning": "Some reasoning"
            })  # fmt: skip
            return Grade(value=score, grader_key=self.grader_key)
        except Exception as e:
            self.add_log({
                "error": str(e),
                "prompt": sample.get_turns()[0].content
            })  # fmt: skip
            return Grade(value=0.0, grader_key=self.grader_key)

    def get_logs(self, clear: bool = False) -> dict[str, float | Table]:
        logs = super().get_logs(clear=False)

        # Separate successful and failed samples
        successful = [log for log in self._logs if "score" in log and "error" not in log]
        failed = [log for log in self._logs if "error" in log]

        # Use helper to create tables
        table_logs = self.get_sample_tables(successful, failed)
        logs.update(table_logs)

        if clear:
            self.clear_logs()

        return logs


async def test_get_sample_tables_helper():
    grader = SampleTableGrader("numbers")
    for prompt, completion in [("one?", "1"), ("half?", "0.5"), ("nan?", "nan"), ("x?", "x")]:
        await grader.grade(StringThread([("user", prompt), ("assistant", completion)]))
    logs = grader.get_logs(clear=True)
    scored, unscored = logs["score/scored_samples"], logs["score/unscored_samples"]
    assert isinstance(scored, Table)
    assert isinstance(unscored, Table)
    assert scored.headers == ["Prompt", "Reasoning", "Score"]
    assert scored.rows == [["one?", "Some reasoning", 1.0], ["half?", "Some reasoning", 0.5]]
    assert unscored.headers == ["Prompt", "Error"]
    assert [row[0] for row in unscored.rows] == ["nan?", "x?"]
    assert logs["score/scored_samples_count"] == 2
    assert logs["score/unscored_samples_count"] == 2
    assert logs["score/mean"] == 0.75
    if not REAL:  # failed logs are counted, never averaged as 0
        assert logs["score/error_count"] == 2
    after_clear = grader.get_logs()
    assert "score/mean" not in after_clear
    assert after_clear["score/scored_samples_count"] == 0
