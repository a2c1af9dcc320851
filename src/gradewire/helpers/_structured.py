"""Pull a JSON object out of free-form model output and validate it with a pydantic model.

`pydantic_parse` reads answers the way models actually write them:

* Reasoning is dropped first: `<think>...</think>` and `<thinking>...</thinking>` blocks (any
  case) are removed, an unclosed opening tag drops everything after it, and a closing tag with
  no opening tag (some models omit it) drops everything before it. JSON written while reasoning
  never competes with the answer.
* Candidates, in priority order:

  1. the contents of fenced code blocks (```` ``` ```` or `~~~`, any language tag or none, in
     order, the last one possibly unterminated),
  2. the whole remaining text,
  3. balanced top-level `{...}` spans, then `[...]` spans, in order of appearance, found by one
     linear scan that tracks strings and depth only inside brackets (prose quotes and
     apostrophes outside brackets never matter; a stray closing bracket is ignored and a
     closing bracket of the wrong kind closes the enclosing bracket of its kind),
  4. a bracket still open at the end of the text (output cut off by `max_tokens`),
  5. balanced spans inside a bracket that is never closed (`see [1 ... {"a": 1}`).

  At most about 32 candidates are kept, which bounds the work on inputs full of brackets.
* Candidates 1 to 3 are read as JSON, then again with trailing commas (outside strings)
  removed. The first value that validates against the model wins. Only then are the cut-off
  ones (4, and an unterminated last fence) repaired: an open string is closed (a half-written
  escape trimmed), a dangling key, colon, comma or partial literal is dropped and open
  brackets are closed. A number ending the text is dropped too unless whitespace follows it,
  as `"score": 1` may have been `10`. The first repair that is JSON decides (if none is, the
  repair backs off to earlier complete members a few times). Candidates 5 come next, and as a
  last resort any candidate under 100,000 characters is read as a Python literal
  (`{'a': True, 'b': None}`) with `ast.literal_eval`, which evaluates literals only and never
  runs code.
* Validation always goes through pydantic's JSON mode, whatever path produced the value, so a
  strict model behaves the same for every way of writing the answer.

Every failure is an `OutputParserException` carrying the raw text in `llm_output`. When some
candidate was valid JSON but did not validate, the message names each failing field; otherwise
it says no JSON was found and shows the start of the output.

Not handled, on purpose: a literal `<think>` or `</think>` inside a JSON string is still taken
as a reasoning tag; brackets inside single-quoted Python strings can mislead the span scan; JSON
with comments, unquoted keys or single-quoted strings mixed with `true`/`null` is not repaired;
JSON nested deeper than the `json` module's recursion limit is refused. A broken model class
(for example one not fully defined) raises pydantic's own `PydanticUserError`, since no output
could fix it.
"""

from __future__ import annotations

import json
import reprlib
from typing import Generic, TypeVar

from pydantic import BaseModel, PydanticUserError, RootModel, ValidationError

from gradewire.core._errors import InvalidTypeError, OutputParserException
from gradewire.helpers._json_candidates import collect, holds_tags_or_fences, strip_reasoning
from gradewire.helpers._json_repair import FAILED, loads, python_literal, repairs

__all__ = ["pydantic_parse"]

M = TypeVar("M", bound=BaseModel)

_SNIPPET_CHARS = 80
_MAX_REPORTED_ERRORS = 10


def _make_short_repr() -> reprlib.Repr:
    short = reprlib.Repr()
    short.maxstring = 60
    short.maxother = 60
    short.maxlist = 5
    short.maxdict = 4
    short.maxlevel = 2
    return short


# Bounded in both length and cost, unlike `repr` of a huge offending value.
_SHORT_REPR = _make_short_repr()


def pydantic_parse(text: str, model: type[M]) -> M:
    r"""Extract a JSON object from a model's answer and validate it with a pydantic model.

    Reasoning blocks (`<think>...</think>`) are ignored. Fenced code blocks are tried first,
    then the whole text, then each balanced `{...}` or `[...]` in it; the first one that
    validates wins. Trailing commas, output truncated mid-object and Python-style dicts
    (`{'a': True}`) are repaired when nothing parses as-is.

    Args:
        text: The model's raw answer.
        model: The pydantic model class the answer must match.

    Returns:
        A validated instance of `model`.

    Raises:
        OutputParserException: No candidate validated. The message names each failing field
            when some JSON was found, and `llm_output` holds the full `text`.
        InvalidTypeError: `text` is not a str or `model` is not a pydantic model class.

    Example:
        >>> from pydantic import BaseModel
        >>> class Verdict(BaseModel):
        ...     label: str
        ...     score: int
        >>> pydantic_parse('Sure! ```json\n{"label": "B", "score": 7,}\n```', Verdict)
        Verdict(label='B', score=7)
    """
    _check_arguments(text, model)
    if not holds_tags_or_fences(text):
        # No reasoning and no fences: the whole text is the first candidate, and an answer
        # that validates as it stands (what a server constraining the output sends) is
        # found without scanning for the others.
        found = _Search(model, text).try_json(text.strip(), record_parse_error=False)
        if found is not None:
            return found
    answer, reasoning_only = strip_reasoning(text)
    search = _Search(model, text)
    candidates = collect(answer)

    for candidate in candidates:
        if candidate.kinds & _COMPLETE_KINDS:
            found = search.try_json(candidate.text, record_parse_error=True)
            if found is not None:
                return found
    for candidate in candidates:
        if candidate.kinds & _TRUNCATED_KINDS:
            found = search.try_repair(candidate.text)
            if found is not None:
                return found
    for candidate in candidates:
        if "orphan" in candidate.kinds and not candidate.kinds & _COMPLETE_KINDS:
            found = search.try_json(candidate.text, record_parse_error=False)
            if found is not None:
                return found
    for candidate in candidates:
        if candidate.kinds & _LITERAL_KINDS:
            found = search.try_python_literal(candidate.text)
            if found is not None:
                return found

    raise search.failure(has_candidates=bool(candidates), reasoning_only=reasoning_only)


def _check_arguments(text: object, model: object) -> None:
    if not isinstance(text, str):
        raise InvalidTypeError(
            f"pydantic_parse() needs the model output as a str, got {type(text).__name__}; "
            "pass the text of the model's answer (decode bytes first)"
        )
    if isinstance(model, BaseModel):
        name = type(model).__name__
        raise InvalidTypeError(
            f"pydantic_parse() needs a pydantic model class, got an instance of {name}; "
            f"pass the class itself, e.g. pydantic_parse(text, {name})"
        )
    try:
        is_model_class = isinstance(model, type) and issubclass(model, BaseModel)
    except TypeError:
        # Generic aliases such as list[int] pass isinstance(type) on some versions but are
        # refused by issubclass.
        is_model_class = False
    if not is_model_class:
        raise InvalidTypeError(
            f"pydantic_parse() needs a pydantic BaseModel subclass, got {_SHORT_REPR.repr(model)}"
            "; pass a class such as `class Verdict(BaseModel): ...` (wrap other types in a "
            "RootModel)"
        )


# Which candidate kinds take part in which pass of `pydantic_parse`. Only text that runs to
# the end of the output can have been cut off, so only that is repaired.
_COMPLETE_KINDS = frozenset({"fence", "open_fence", "whole", "object", "array"})
_TRUNCATED_KINDS = frozenset({"open_fence", "truncated"})
_LITERAL_KINDS = _COMPLETE_KINDS | {"orphan"}


class _Search(Generic[M]):
    """Tries candidates against one model and remembers the most useful failure."""

    def __init__(self, model: type[M], text: str) -> None:
        self.model = model
        self.text = text
        self.expects_object = not issubclass(model, RootModel)
        self.mismatch: tuple[int, str, Exception] | None = None
        self.parse_error: str | None = None

    def try_json(self, candidate: str, *, record_parse_error: bool) -> M | None:
        value, error = loads(candidate)
        if value is FAILED:
            if record_parse_error and self.parse_error is None and candidate[0] in "{[":
                self.parse_error = (
                    f"found JSON-like text starting with {_snippet(candidate, 30)} but it is "
                    f"not valid JSON: {error}"
                )
            return None
        return self._validate(value)

    def try_repair(self, candidate: str) -> M | None:
        for completion in repairs(candidate):
            value, _ = loads(completion)
            if value is not FAILED:
                # Backing off further only drops data, so the first parse is the answer.
                return self._validate(value)
        return None

    def try_python_literal(self, candidate: str) -> M | None:
        value = python_literal(candidate)
        if value is FAILED:
            return None
        return self._validate(value)

    def _validate(self, value: object) -> M | None:
        try:
            payload = _json_text(value)
        except (TypeError, ValueError, RecursionError):
            return None
        try:
            # JSON mode, so strict models accept what JSON can express (dates as strings...).
            return self.model.model_validate_json(payload)
        except ValidationError as exc:
            message = _describe_mismatch(self.model.__name__, exc)
            error: Exception = exc
        except PydanticUserError:
            raise  # the model itself is broken (not fully defined...): no output can fix that
        except Exception as exc:
            # A user validator that fails with something other than ValueError still means
            # this output does not fit the model.
            message = (
                f"output does not match {self.model.__name__}: validating it raised "
                f"{type(exc).__name__}: {_shorten(str(exc), _SNIPPET_CHARS)}"
            )
            error = exc
        # A mismatch of a value of the expected shape explains more than one of, say, a
        # `[1]` footnote, so it is preferred; otherwise the first mismatch is kept.
        rank = 0 if isinstance(value, dict) or not self.expects_object else 1
        if self.mismatch is None or rank < self.mismatch[0]:
            self.mismatch = (rank, message, error)
        return None

    def failure(self, *, has_candidates: bool, reasoning_only: bool) -> OutputParserException:
        if self.mismatch is not None:
            _, message, cause = self.mismatch
            failure = OutputParserException(message, llm_output=self.text)
            failure.__cause__ = cause
            return failure
        name = self.model.__name__
        if reasoning_only:
            detail = " (it holds only a <think> reasoning block, and reasoning is ignored)"
        elif has_candidates and self.parse_error is not None:
            detail = f" ({self.parse_error})"
        else:
            detail = ""
        stripped = self.text.strip()
        shown = f"starts with: {_snippet(stripped, _SNIPPET_CHARS)}" if stripped else "is empty"
        return OutputParserException(
            f"no JSON object found in the model output{detail}; ask the model to answer with "
            f"a JSON object matching {name} (output {shown})",
            llm_output=self.text,
        )


def _json_text(value: object) -> str:
    r"""``value`` as JSON that pydantic's parser accepts: lone surrogates become U+FFFD.

    Output cut inside an emoji leaves half a surrogate pair (``"\ud83d"``, or the raw
    character). `json` reads it but pydantic's JSON mode refuses it, so it is replaced the
    way a UTF-8 decoder replaces a cut character, and the rest of the answer is kept.
    """
    text = json.dumps(value, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # Through UTF-16, so two halves that do make a pair become their one character.
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def _snippet(text: str, limit: int) -> str:
    if len(text) <= limit:
        return repr(text)
    return repr(text[:limit]) + "..."


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def _describe_mismatch(model_name: str, exc: ValidationError) -> str:
    errors = exc.errors(include_url=False, include_context=False)
    parts: list[str] = []
    for error in errors[:_MAX_REPORTED_ERRORS]:
        location = ".".join(str(part) for part in error["loc"])
        part = f"{location}: {error['msg']}" if location else error["msg"]
        # For a missing field the input is the whole enclosing object: not worth showing.
        if error["type"] != "missing":
            part += f" (got {_SHORT_REPR.repr(error['input'])})"
        parts.append(part)
    if len(errors) > _MAX_REPORTED_ERRORS:
        parts.append(f"and {len(errors) - _MAX_REPORTED_ERRORS} more errors")
    return f"output does not match {model_name}: " + "; ".join(parts)
