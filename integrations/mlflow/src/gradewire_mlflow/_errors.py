"""What an MLflow failure means for the caller: invalid data, or a call to repeat."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from gradewire import GradewireError, InvalidInputError, SinkError

__all__ = ["mlflow_errors"]


@contextlib.contextmanager
def mlflow_errors(tracking_uri: str, action: str) -> Iterator[None]:
    """Raise what fails inside as `InvalidInputError` (MLflow refused the data) or `SinkError`.

    ``action`` says what was being done ("log 3 step(s) ending at step 12"), for the message.
    """
    try:
        yield
    except GradewireError:
        raise
    except Exception as exc:
        text = f"{type(exc).__name__}: {exc}"
        if getattr(exc, "error_code", None) == "INVALID_PARAMETER_VALUE":
            raise InvalidInputError(
                f"MLflow at {tracking_uri} refused to {action} ({text}); fix the "
                "data or the run (a deleted run or experiment cannot be logged to)"
            ) from exc
        raise SinkError(
            f"could not {action} at MLflow {tracking_uri} ({text}); nothing of this "
            "call counts as written, so it can be repeated (points already stored are "
            "not doubled): check the server, or wrap the sink in gradewire.BackgroundSink "
            "to retry in the background"
        ) from exc
