"""TruncatedOutputError: a reply cut at the token limit is an error, not a repaired answer."""

from __future__ import annotations

from gradewire.core._errors import OutputParserException
from gradewire.core._failure_records import attach_log_fields
from gradewire.core._log_buffer import TRUNCATED

__all__ = ["TruncatedOutputError"]


class TruncatedOutputError(OutputParserException):
    """The model stopped at its token limit (``finish_reason == "length"``) before finishing.

    Whatever part of a JSON answer came back could be "repaired" into something that parses,
    but it is not what the model would have said, so by default it is not used: the sample
    is an error, counted in ``score/error_count`` and in ``score/truncated_count``.

    Attributes:
        completion_tokens: Tokens the reply had when it was cut (0 if not reported).
        max_tokens: The limit in force (None when the server's own applied).
    """

    def __init__(
        self,
        message: str,
        llm_output: str = "",
        *,
        completion_tokens: int = 0,
        max_tokens: int | None = None,
    ) -> None:
        super().__init__(message, llm_output)
        self.completion_tokens = completion_tokens
        self.max_tokens = max_tokens
        attach_log_fields(self, {TRUNCATED: f"cut after {completion_tokens} tokens"})

    @classmethod
    def of(cls, text: str, completion_tokens: int, max_tokens: int | None) -> TruncatedOutputError:
        """The error for a reply ``text`` cut at ``max_tokens``."""
        limit = f"max_tokens={max_tokens}" if max_tokens is not None else "the server's limit"
        return cls(
            f"the judge's reply was cut at the token limit ({limit}, finish_reason 'length' "
            f"after {completion_tokens} tokens) before its answer was complete; raise "
            "max_tokens (on the judge or the model), or ask for a shorter reply",
            text,
            completion_tokens=completion_tokens,
            max_tokens=max_tokens,
        )

    def __reduce__(self) -> tuple[object, ...]:  # type: ignore[override]
        return (_rebuild, (self.message, self.llm_output, self.completion_tokens, self.max_tokens))


def _rebuild(
    message: str, llm_output: str, completion_tokens: int, max_tokens: int | None
) -> TruncatedOutputError:
    return TruncatedOutputError(
        message, llm_output, completion_tokens=completion_tokens, max_tokens=max_tokens
    )
