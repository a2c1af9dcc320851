"""OpenAI Evals' data rows (``{"item": {...}, "sample": {...}}``) as rows of gradewire's shape.

This is the shape of an Evals *data set* row (the JSONL a user uploaded, or a row with
the model's sample beside it); an exported run's *output items* (``datasource_item_id``,
``results``) are another shape, read as a run by `gradewire.eval.runs._evals_output_items`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gradewire.eval.runs._row_shape import DataError, RowShape, canonical_json

__all__ = ["evals_completion", "evals_fields", "is_evals_row"]


def is_evals_row(fields: Mapping[str, Any], shape: RowShape) -> bool:
    """Whether a row is in OpenAI Evals' JSONL shape: ``{"item": {...}, "sample": {...}}``.

    An object ``item`` and no conversation of the row's own (no ``messages``, and no
    top-level prompt or completion field of `RowShape`; a dotted key such as
    ``sample.output_text`` points into the row).
    """
    own = {"messages", shape.prompt_key, shape.completion_key}
    return isinstance(fields.get("item"), Mapping) and not (own & set(fields))


def evals_fields(
    original: Mapping[str, Any], fields: Mapping[str, Any], where: str, shape: RowShape
) -> dict[str, Any]:
    """An OpenAI Evals row as a row of gradewire's shape.

    ``item`` becomes the metadata as it is (the ``item`` namespace of OpenAI graders, so
    ``{{item.reference}}`` finds it), its ``id`` the sample's id. The completion is a
    dotted ``completion_key`` when given (``sample.output_text``), else
    ``sample.output_text``, else ``sample.output_json`` as JSON text, with
    ``sample.output_tools`` as the tool calls of the assistant turn. The prompt is a
    dotted ``prompt_key`` when given (``item.question``), else ``sample.input`` (text or
    messages), else the item's ``prompt`` or ``input``; a row with none is graded on its
    completion alone. The sample's other fields (``model``, ``usage``, ...) are kept in
    the metadata under ``sample``. ``fields`` is the row with dotted keys lifted
    (``_plucked`` in `gradewire.eval.runs._samples`); ``original`` the row as read.
    """
    item = dict(original["item"])
    sample = original.get("sample")
    if sample is not None and not isinstance(sample, Mapping):
        raise DataError(f"{where}: field 'sample' must be an object, not {type(sample).__name__}")
    sample = dict(sample or {})
    out: dict[str, Any] = {
        key: value for key, value in original.items() if key not in ("item", "sample", "metadata")
    }
    metadata = dict(original["metadata"]) if isinstance(original.get("metadata"), Mapping) else {}
    metadata.update(item)
    if "id" in item and "id" not in out:
        out["id"] = item["id"]
    completion: Any = fields.get(shape.completion_key)
    if completion is None:
        completion = evals_completion(sample, where)
    elif isinstance(completion, str):
        completion = [{"role": "assistant", "content": completion}]
    prompt = fields.get(shape.prompt_key)
    if prompt is None:
        prompt = sample.get("input")
    if prompt is None:
        prompt = item.get("prompt", item.get("input"))
    if prompt is not None and not isinstance(prompt, (str, list)):
        prompt = None  # an item's structured input stays in the item, as it is
    rest = {
        key: value
        for key, value in sample.items()
        if key not in ("output_text", "output_json", "output_tools", "input")
    }
    if rest:
        metadata["sample"] = rest
    out["metadata"] = metadata
    if prompt is None:
        if completion is not None:
            out["messages"] = completion
        else:
            out[shape.prompt_key] = ""
        return out
    out[shape.prompt_key] = prompt
    if completion is not None:
        out[shape.completion_key] = completion
    return out


def evals_completion(sample: Mapping[str, Any], where: str) -> list[Any] | None:
    """The assistant turn of an Evals ``sample``: its text (or JSON) and tool calls."""
    text = sample.get("output_text")
    if text is None and sample.get("output_json") is not None:
        text = canonical_json(sample["output_json"])
    tools = sample.get("output_tools")
    if text is None and not tools:
        return None
    if text is not None and not isinstance(text, str):
        raise DataError(
            f"{where}: field 'sample.output_text' must be a string, not {type(text).__name__}"
        )
    turn: dict[str, Any] = {"role": "assistant", "content": text or ""}
    if tools:
        if not isinstance(tools, list):
            raise DataError(f"{where}: field 'sample.output_tools' must be a list of tool calls")
        turn["tool_calls"] = tools
    return [turn]
