"""The formula language of a multi grader's ``calculate_output``, evaluated without ``eval``.

The formula is parsed with Python's `ast` and walked over a whitelist: numbers, the
sub-graders' names, ``+ - * / // % **``, unary ``+ -``, parentheses, and calls of ``min``,
``max``, ``abs``, ``floor``, ``ceil``, ``exp``, ``sqrt`` and ``log``. Anything else
(attributes, subscripts, comparisons, other names or calls) is refused when the grader is
built, naming what is not allowed.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from gradewire.core._errors import InvalidInputError
from gradewire.openai._errors import FormulaError

__all__ = ["Formula"]

_BINARY: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[float], float]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}
_FUNCTIONS: dict[str, Callable[..., float]] = {
    "min": min,
    "max": max,
    "abs": abs,
    "floor": math.floor,
    "ceil": math.ceil,
    "exp": math.exp,
    "sqrt": math.sqrt,
    "log": math.log,
}
_ARITY: dict[str, tuple[int, int | None]] = {
    "min": (1, None),
    "max": (1, None),
    "abs": (1, 1),
    "floor": (1, 1),
    "ceil": (1, 1),
    "exp": (1, 1),
    "sqrt": (1, 1),
    "log": (1, 2),
}
# Exponents this large only overflow or hang (2 ** 10**9 is a billion-bit integer).
_MAX_EXPONENT = 1024.0

MAX_FORMULA_CHARS = 10_000
"""The longest ``calculate_output`` taken, in characters."""

MAX_FORMULA_DEPTH = 100
"""The deepest nesting of operations and calls taken (``a + b + c`` is 2 deep).

Parsing, checking and evaluating a formula recurse once per level: a bound well inside
Python's recursion limit, however deep the caller's stack (a server's, an eval's), keeps
a formula from ending the run with a RecursionError; no real formula comes near it.
"""


class Formula:
    """A parsed ``calculate_output`` formula over named values."""

    __slots__ = ("_tree", "names", "source")

    def __init__(self, source: str, names: Iterable[str], where: str) -> None:
        """Parse and check ``source``; its variables must be among ``names``.

        Raises:
            InvalidInputError: The formula does not parse, or uses something the formula
                language does not have; the message names it.
        """
        self.source = source
        known = set(names)
        if not isinstance(source, str) or not source.strip():
            raise InvalidInputError(f"{where}: calculate_output must be a non-empty formula")
        if len(source) > MAX_FORMULA_CHARS:
            raise InvalidInputError(
                f"{where}: calculate_output has {len(source):,} characters, more than the "
                f"{MAX_FORMULA_CHARS:,} a formula may have"
            )
        shown = _cut(source)
        try:
            tree = ast.parse(source.strip(), mode="eval")
        except SyntaxError as exc:
            if "nested" in str(exc.msg) or "too complex" in str(exc.msg):
                raise _too_deep(where, shown, None) from None
            raise InvalidInputError(
                f"{where}: calculate_output {shown!r} does not parse: {exc.msg}"
            ) from None
        except (RecursionError, MemoryError):  # CPython's parser on very deep nesting
            raise _too_deep(where, shown, None) from None
        depth = _depth(tree.body)
        if depth > MAX_FORMULA_DEPTH:
            raise _too_deep(where, shown, depth)
        used: set[str] = set()
        _check(tree.body, known, used, where, source)
        self._tree = tree.body
        self.names = frozenset(used)

    def evaluate(self, values: Mapping[str, float]) -> float:
        """The formula's value; `FormulaError` when it has none (division by zero...)."""
        try:
            result = float(_evaluate(self._tree, values))
        except (ArithmeticError, ValueError) as exc:
            raise FormulaError(
                f"calculate_output {self.source!r} has no value for "
                f"{_shown(values)}: {exc or type(exc).__name__}"
            ) from None
        if not math.isfinite(result):
            raise FormulaError(f"calculate_output {self.source!r} is {result} for {_shown(values)}")
        return result


def _cut(source: str) -> str:
    return source if len(source) <= 200 else f"{source[:80]}...{source[-40:]}"


def _too_deep(where: str, shown: str, depth: int | None) -> InvalidInputError:
    deep = f"nested {depth} deep" if depth is not None else "nested too deep to parse"
    return InvalidInputError(
        f"{where}: calculate_output {shown!r} is {deep}; a formula may nest operations "
        f"and calls at most {MAX_FORMULA_DEPTH} deep"
    )


def _depth(root: ast.AST) -> int:
    """The deepest nesting of operations and calls in the tree, without recursion."""
    deepest = 0
    stack: list[tuple[ast.AST, int]] = [(root, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.Call)):
            depth += 1
        deepest = max(deepest, depth)
        stack.extend((child, depth) for child in ast.iter_child_nodes(node))
    return deepest


def _shown(values: Mapping[str, float]) -> str:
    return ", ".join(f"{name}={value:g}" for name, value in values.items())


def _check(node: ast.AST, known: set[str], used: set[str], where: str, source: str) -> None:
    def refuse(what: str) -> InvalidInputError:
        return InvalidInputError(
            f"{where}: calculate_output {_cut(source)!r}: {what} is not part of the formula "
            "language (numbers, the graders' names, + - * / // % **, parentheses, and "
            "min, max, abs, floor, ceil, exp, sqrt, log)"
        )

    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            raise refuse(f"the constant {node.value!r}")
    elif isinstance(node, ast.Name):
        if node.id not in known:
            names = ", ".join(sorted(known)) or "none"
            raise InvalidInputError(
                f"{where}: calculate_output {source!r} uses {node.id!r}, which is not one of "
                f"the graders' names ({names})"
            )
        used.add(node.id)
    elif isinstance(node, ast.BinOp):
        if type(node.op) not in _BINARY:
            raise refuse(f"the operator {type(node.op).__name__}")
        _check(node.left, known, used, where, source)
        _check(node.right, known, used, where, source)
    elif isinstance(node, ast.UnaryOp):
        if type(node.op) not in _UNARY:
            raise refuse(f"the operator {type(node.op).__name__}")
        _check(node.operand, known, used, where, source)
    elif isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCTIONS:
            raise refuse(f"the call {ast.unparse(node.func)}()")
        if node.keywords:
            raise refuse("a keyword argument")
        low, high = _ARITY[node.func.id]
        count = len(node.args)
        if count < low or (high is not None and count > high):
            takes = f"{low} or more" if high is None else f"{low} to {high}"
            raise InvalidInputError(
                f"{where}: calculate_output {source!r}: {node.func.id}() takes "
                f"{low if high == low else takes} arguments, not {count}"
            )
        for argument in node.args:
            if isinstance(argument, ast.Starred):
                raise refuse("a starred argument")
            _check(argument, known, used, where, source)
    else:
        raise refuse(f"'{ast.unparse(node)}'")


def _evaluate(node: ast.AST, values: Mapping[str, float]) -> float:
    if isinstance(node, ast.Constant):
        number: Any = node.value  # _check let only ints and floats through
        return float(number)
    if isinstance(node, ast.Name):
        return float(values[node.id])
    if isinstance(node, ast.BinOp):
        left = _evaluate(node.left, values)
        right = _evaluate(node.right, values)
        if isinstance(node.op, ast.Pow) and abs(right) > _MAX_EXPONENT:
            raise ValueError(f"the exponent {right:g} is out of range")
        result: Any = _BINARY[type(node.op)](left, right)
        if isinstance(result, complex):  # a negative number to a fractional power
            raise ValueError(f"{left:g} ** {right:g} is not a real number")
        return float(result)
    if isinstance(node, ast.UnaryOp):
        return _UNARY[type(node.op)](_evaluate(node.operand, values))
    assert isinstance(node, ast.Call)
    assert isinstance(node.func, ast.Name)
    arguments: Any = [_evaluate(argument, values) for argument in node.args]
    return float(_FUNCTIONS[node.func.id](*arguments))
