"""OpenAI grader configs (Evals testing criteria, RFT graders) run unchanged.

`openai_grader` builds a grader from an OpenAI grader object (``string_check``,
``text_similarity``, ``score_model``, ``label_model``, ``python``, ``multi``); grader files
holding such objects are read by `gradewire.specs.load_graders`. Each error is counted under
OpenAI's kind (`ErrorKind`) as ``score/<kind>_count``. Imports `core`, `models`, `judges`
and `tools`; each name is imported when first used.
"""

from typing import TYPE_CHECKING

from gradewire.core._lazy import attach

if TYPE_CHECKING:
    from gradewire.openai._base import OpenAIGrader
    from gradewire.openai._errors import (
        ErrorKind,
        FormulaError,
        OpenAIGraderError,
        PythonGraderRuntimeError,
        SampleParseError,
        TemplateVariableError,
        UnresponsiveRewardError,
    )
    from gradewire.openai._openai_grader import openai_grader
    from gradewire.openai._settings import OpenAIGraderSettings

__all__ = [
    "ErrorKind",
    "FormulaError",
    "OpenAIGrader",
    "OpenAIGraderError",
    "OpenAIGraderSettings",
    "PythonGraderRuntimeError",
    "SampleParseError",
    "TemplateVariableError",
    "UnresponsiveRewardError",
    "openai_grader",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(
        __name__,
        {
            "._base": ["OpenAIGrader"],
            "._errors": [
                "ErrorKind",
                "FormulaError",
                "OpenAIGraderError",
                "PythonGraderRuntimeError",
                "SampleParseError",
                "TemplateVariableError",
                "UnresponsiveRewardError",
            ],
            "._openai_grader": ["openai_grader"],
            "._settings": ["OpenAIGraderSettings"],
        },
    )
