"""OpenAI grader configs (Evals testing criteria, RFT graders) run unchanged.

`openai_grader` builds a grader from an OpenAI grader object (``string_check``,
``text_similarity``, ``score_model``, ``label_model``, ``python``, ``multi``); grader files
holding such objects are read by `gradewire.specs.load_graders`. Each error is counted under
OpenAI's kind (`ErrorKind`) as ``score/<kind>_count``. Imports `core`, `models`, `judges`
and `tools`; each name is imported when first used.
"""

from gradewire.core._lazy import attach

TYPE_CHECKING = False  # typing's, without importing typing: type checkers take it as true

# The public names, one line each: from <module> import <Name> as <Name> (gradewire.core._lazy).
if TYPE_CHECKING:
    from gradewire.openai._base import OpenAIGrader as OpenAIGrader
    from gradewire.openai._errors import ErrorKind as ErrorKind
    from gradewire.openai._errors import FormulaError as FormulaError
    from gradewire.openai._errors import OpenAIGraderError as OpenAIGraderError
    from gradewire.openai._errors import PythonGraderRuntimeError as PythonGraderRuntimeError
    from gradewire.openai._errors import SampleParseError as SampleParseError
    from gradewire.openai._errors import TemplateVariableError as TemplateVariableError
    from gradewire.openai._errors import UnresponsiveRewardError as UnresponsiveRewardError
    from gradewire.openai._openai_grader import openai_grader as openai_grader
    from gradewire.openai._settings import OpenAIGraderSettings as OpenAIGraderSettings

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(__name__)
