"""Chat models: one factory, a provider-neutral client core, providers as adapters.

What every grader that calls a model shares, below the judges: the `ChatModel` protocol and
its message, completion, usage and logprob types; `get_model("provider/name")`, which makes
any provider's client; `ModelClient`, their shared core (connections per event loop, one
concurrency limit per endpoint, identical calls in flight sent once, the sqlite
`JudgeCache`, retries, `ModelUsage` with the `ServedModel` each answer reported, pickling);
`OpenAIChatModel` for any OpenAI-compatible server and `AnthropicModel` for Anthropic's
Messages API, each a small wire-format adapter; the `ModelProfile` a model declares (its
structured-output dialects, negotiated and remembered per endpoint; logprobs; settings);
`complete_structured`, which asks for JSON that matches a pydantic model and parses it
(`TruncatedOutputError` when the reply was cut); and `ModelSettings`, the per-call settings
(temperature, max_tokens) with their precedence. Imports `core`, `helpers` and `http`; each
name is imported when first used.
"""

from gradewire.core._lazy import attach

TYPE_CHECKING = False  # typing's, without importing typing: type checkers take it as true

# The public names, one line each: from <module> import <Name> as <Name> (gradewire.core._lazy).
if TYPE_CHECKING:
    from gradewire.models._anthropic import AnthropicModel as AnthropicModel
    from gradewire.models._chat_model import ChatCompletion as ChatCompletion
    from gradewire.models._chat_model import ChatMessage as ChatMessage
    from gradewire.models._chat_model import ChatModel as ChatModel
    from gradewire.models._chat_model import TokenLogprob as TokenLogprob
    from gradewire.models._chat_model import Usage as Usage
    from gradewire.models._client import ModelClient as ModelClient
    from gradewire.models._get_model import get_model as get_model
    from gradewire.models._judge_cache import JudgeCache as JudgeCache
    from gradewire.models._model_settings import ModelSettings as ModelSettings
    from gradewire.models._model_settings import StructuredSettings as StructuredSettings
    from gradewire.models._model_usage import ModelUsage as ModelUsage
    from gradewire.models._model_usage import ServedModel as ServedModel
    from gradewire.models._openai_chat import OpenAIChatModel as OpenAIChatModel
    from gradewire.models._profile import ModelProfile as ModelProfile
    from gradewire.models._structured_call import complete_structured as complete_structured
    from gradewire.models._truncated import TruncatedOutputError as TruncatedOutputError

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(__name__)
