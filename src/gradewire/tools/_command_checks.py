"""Checks of CommandGrader's settings and of what it puts in the environment.

Every bad setting fails at construction, saying what to pass.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence

from gradewire.core._errors import InvalidInputError, InvalidTypeError

__all__ = [
    "check_bool",
    "check_cwd",
    "check_env",
    "check_exit_codes",
    "check_name",
    "check_shell",
    "command_argv",
    "env_problem",
    "utf8_bytes",
]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Linux refuses one environment string ("NAME=value\0") longer than 32 pages; the same
# limit everywhere keeps a grader's behaviour the same on every host.
_ENV_STRING_MAX = 128 * 1024


def check_bool(value: object, what: str) -> None:
    if not isinstance(value, bool):
        raise InvalidTypeError(f"{what} must be True or False, not {value!r}")


def _no_nul(text: str, what: str) -> str:
    if "\0" in text:
        raise InvalidInputError(f"{what} contains a NUL character, which no command can take")
    return text


def _path(value: object, what: str) -> str:
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str):
        raise InvalidTypeError(f"{what} must be a str or a path, not {type(value).__name__}")
    return _no_nul(value, what)


def check_shell(shell: object) -> str:
    path = _path(shell, "shell")
    if not os.path.isabs(path):
        raise InvalidInputError(
            f"shell must be an absolute path such as '/bin/bash', not {path!r}, so the "
            "shell that runs does not depend on PATH"
        )
    return path


def command_argv(command: object, shell: str, login_shell: bool) -> tuple[str, ...]:
    if isinstance(command, str):
        if not command.strip():
            raise InvalidInputError(
                "command is empty; pass a shell string such as 'pytest -q' or an argument "
                "list such as ['pytest', '-q']"
            )
        return (shell, "-lc" if login_shell else "-c", _no_nul(command, "command"))
    if isinstance(command, (bytes, bytearray)) or not isinstance(command, Sequence):
        raise InvalidTypeError(
            f"command must be a shell string or a list of arguments, not {type(command).__name__}"
        )
    argv = tuple(_path(part, f"command[{index}]") for index, part in enumerate(command))
    if not argv or not argv[0]:
        raise InvalidInputError(
            "command is empty; an argument list needs a program first, e.g. ['pytest', '-q']"
        )
    if login_shell:
        raise InvalidInputError(
            "login_shell=True applies to shell strings, and an argument list runs without a "
            "shell; pass the command as one string, or run ['/bin/bash', '-lc', '...']"
        )
    return argv


def check_cwd(cwd: object) -> str | None:
    if cwd is None:
        return None
    path = _path(cwd, "cwd")
    if not path:
        raise InvalidInputError("cwd is empty; pass a directory, or None for the current one")
    return path


def check_name(name: object, what: str) -> str:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise InvalidInputError(
            f"{what} must be a variable name a shell can read (letters, digits, _; not "
            f"starting with a digit), not {name!r}"
        )
    return name


def check_env(env: object, reserved: Sequence[str]) -> dict[str, str | None]:
    if env is None:
        return {}
    if not isinstance(env, Mapping):
        raise InvalidTypeError(f"env must be a dict of str to str, not {type(env).__name__}")
    checked: dict[str, str | None] = {}
    for name, value in env.items():
        if not isinstance(name, str) or not name or "=" in name or "\0" in name:
            raise InvalidInputError(f"env has an invalid variable name {name!r}")
        if name in reserved:
            raise InvalidInputError(
                f"env sets {name!r}, which the grader sets for each sample; rename it, or "
                "change completion_env_var / prompt_env_var"
            )
        if value is not None:
            if not isinstance(value, str):
                raise InvalidTypeError(
                    f"env[{name!r}] must be a str (or None to unset it), not "
                    f"{type(value).__name__}; convert it with str()"
                )
            _no_nul(value, f"env[{name!r}]")
        checked[name] = value
    return checked


def check_exit_codes(codes: object) -> frozenset[int]:
    if isinstance(codes, (str, bytes)) or not isinstance(codes, Iterable):
        raise InvalidTypeError("error_exit_codes must be a collection of ints, e.g. (127,)")
    checked = frozenset(codes)
    for code in checked:
        if type(code) is not int or not 1 <= code <= 255:
            raise InvalidInputError(
                f"error_exit_codes must hold exit codes from 1 to 255, not {code!r}"
            )
    return checked


def utf8_bytes(text: str) -> bytes:
    """``text`` as the UTF-8 bytes a command receives, whatever it holds."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        # Lone surrogates (a cut emoji from a JSON API) become U+FFFD, so the command
        # always receives valid UTF-8.
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode("utf-8")


def env_problem(name: str, value: bytes) -> str | None:
    """Why ``value`` cannot be the environment variable ``name``, or None if it can."""
    if b"\0" in value:
        return "contains a NUL character, which no environment variable can hold"
    if len(name) + len(value) + 2 > _ENV_STRING_MAX:
        return f"is {len(value)} bytes, over the 128 KiB one environment variable can hold"
    return None
