"""render_schema: a pydantic model as the short, readable schema judge prompts show."""

from __future__ import annotations

import enum
import types
from typing import Any, Literal, TypeGuard, Union, get_args, get_origin

from pydantic import BaseModel

from gradewire.core._errors import InvalidInputError, InvalidTypeError

__all__ = ["render_schema"]

_TYPE_WORDS = ("str", "int", "float", "bool")
_TYPE_PREFIXES = ("Literal[", "Union[", "Optional[", "Dict[", "Tuple[", "Set[", "Enum[")
_Shape = Union[str, list[Any], dict[str, Any]]  # noqa: UP007 - a runtime alias on 3.10


def render_schema(pydantic_model: type[BaseModel], with_field_descriptions: bool = True) -> str:
    """The fields of ``pydantic_model`` as a compact JSON-like schema, for a prompt.

    Each field shows its type in Python's words (``str``, ``Literal["PASS", "FAIL"]``,
    ``Optional[int]``, a nested model as its own block, a list as ``[item]``); then, with
    ``with_field_descriptions``, one ``name: description`` line per field (nested fields as
    ``parent.child`` and ``parent[].child``). Adaptive Harmony's ``render_schema`` output,
    except that ``X | None`` reads ``Optional[X]`` there too.

    Example:
        >>> from pydantic import Field
        >>> class Verdict(BaseModel):
        ...     reasoning: str = Field(description="Why")
        ...     score: Literal["PASS", "FAIL"] = Field(description="The verdict")
        >>> print(render_schema(Verdict))
        {
          "reasoning": str,
          "score": Literal["PASS", "FAIL"]
        }
        <BLANKLINE>
        reasoning: Why
        score: The verdict

    Raises:
        InvalidInputError: A field has no description (``with_field_descriptions`` only):
            give it ``Field(description=...)``, the judge reads it.
    """
    if not (isinstance(pydantic_model, type) and issubclass(pydantic_model, BaseModel)):
        raise InvalidTypeError(
            f"render_schema takes a pydantic model class, not {type(pydantic_model).__name__}"
        )
    text = _format(_model_shape(pydantic_model), 0)
    if not with_field_descriptions:
        return text
    lines: list[str] = []
    for name, field in pydantic_model.model_fields.items():
        lines.append(f"{name}: {_description(pydantic_model, name, field.description, 'model')}")
    for name, field in pydantic_model.model_fields.items():
        annotation = field.annotation
        nested, marker, where = None, "", "nested model"
        if _is_model(annotation):
            nested = annotation
        elif get_origin(annotation) is list and get_args(annotation):
            item = get_args(annotation)[0]
            if _is_model(item):
                nested, marker, where = item, "[]", "list item model"
        if nested is not None:
            for inner, inner_field in nested.model_fields.items():
                about = _description(nested, inner, inner_field.description, where)
                lines.append(f"{name}{marker}.{inner}: {about}")
    return text + "\n\n" + "\n".join(lines)


def _description(model: type[BaseModel], name: str, description: str | None, where: str) -> str:
    if not description:
        raise InvalidInputError(
            f"Field '{name}' in {where} '{model.__name__}' is missing a description; give "
            "it Field(description=...), the judge reads it"
        )
    return description


def _is_model(annotation: object) -> TypeGuard[type[BaseModel]]:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _model_shape(model: type[BaseModel]) -> dict[str, Any]:
    return {name: _shape(field.annotation) for name, field in model.model_fields.items()}


def _inline(shape: _Shape) -> str:
    """A nested shape written inside a type expression (JSON quotes, one line)."""
    return str(shape).replace("'", '"') if isinstance(shape, (list, dict)) else shape


def _shape(annotation: Any) -> _Shape:
    """The display shape of a type: a type word, a list of one item shape, or a field dict."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is list:
        return [_shape(args[0])] if args else "array"
    if origin is dict:
        if len(args) == 2:
            return f"Dict[{_shape(args[0])}, {_shape(args[1])}]"
        return "dict"
    if origin is tuple:
        if not args:
            return "tuple"
        if len(args) == 2 and args[1] is Ellipsis:
            return f"Tuple[{_shape(args[0])}, ...]"
        return f"Tuple[{', '.join(str(_shape(arg)) for arg in args)}]"
    if origin is set:
        return f"Set[{_shape(args[0])}]" if args else "set"
    if origin is Literal:
        values = [f'"{arg}"' if isinstance(arg, str) else repr(arg) for arg in args]
        return f"Literal[{', '.join(values)}]"
    if origin is Union or origin is types.UnionType:
        if len(args) == 2 and type(None) in args:
            inner = next(arg for arg in args if arg is not type(None))
            return f"Optional[{_inline(_shape(inner))}]"
        return f"Union[{', '.join(_inline(_shape(arg)) for arg in args)}]"
    if origin is not None:
        return str(getattr(origin, "__name__", origin))
    if _is_model(annotation):
        return _model_shape(annotation)
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        members = ", ".join(f'"{member.value}"' for member in annotation)
        return f"Enum[{members}]"
    return str(getattr(annotation, "__name__", annotation))


def _format(value: _Shape, indent: int) -> str:
    pad = "  " * indent
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = [f'  {pad}"{key}": {_format(item, indent + 1)}' for key, item in value.items()]
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    if isinstance(value, list):
        if not value:
            return "[]"
        if len(value) == 1:
            return f"[{_format(value[0], indent)}]"
        items = [f"  {pad}{_format(item, indent + 1)}" for item in value]
        return "[\n" + ",\n".join(items) + f"\n{pad}]"
    if value.startswith(_TYPE_PREFIXES) or value in _TYPE_WORDS:
        return value
    return f'"{value}"'
