"""Where a WandbSink's run comes from: the one given, the active one, or a new one."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from gradewire import InvalidInputError, InvalidTypeError, MissingDependencyError, SinkError

if TYPE_CHECKING:
    import wandb

__all__ = ["PURPOSE", "RunSource", "call_wandb", "import_wandb", "update_config"]

logger = logging.getLogger("gradewire")

PURPOSE = "log grader output to Weights & Biases"
_MODES = ("online", "offline", "disabled", "shared")
_T = TypeVar("_T")


def import_wandb() -> Any:
    """The wandb module, imported now (it takes ~0.3-0.5 s the first time)."""
    try:
        import wandb
    except ImportError as exc:
        raise MissingDependencyError("wandb", extra="wandb", purpose=PURPOSE) from exc
    return wandb


def call_wandb(what: str, action: Callable[[], _T]) -> _T:
    """Run one W&B call; its failure becomes a `SinkError` saying what was being done."""
    try:
        return action()
    except Exception as exc:
        raise SinkError(
            f"W&B failed to {what} the run ({type(exc).__name__}: {exc}); check that the "
            "run is not finished and that W&B can write to its directory"
        ) from exc


def update_config(run: wandb.Run, config: Mapping[str, Any]) -> None:
    """Add ``config`` to the run; a later call may change a key on purpose."""
    update: Any = run.config.update  # untyped in wandb 0.31
    update(dict(config), allow_val_change=True)


def _init_kwargs(
    explicit: Mapping[str, object], init_kwargs: Mapping[str, Any] | None
) -> dict[str, Any]:
    if init_kwargs is not None and not isinstance(init_kwargs, Mapping):
        raise InvalidTypeError(
            "init_kwargs must be a mapping of wandb.init arguments such as "
            f"{{'entity': 'my-team'}}, not {type(init_kwargs).__name__}"
        )
    kwargs = dict(init_kwargs or {})
    if "config" in kwargs:
        raise InvalidInputError("pass the run configuration as config=..., not in init_kwargs")
    mode = explicit.get("mode")
    if mode is not None and mode not in _MODES:
        raise InvalidInputError(f"mode must be one of {_MODES} or None, not {mode!r}")
    for key, value in explicit.items():
        if value is None:
            continue
        if key in kwargs:
            raise InvalidInputError(
                f"{key!r} is given both as an argument and in init_kwargs; pass it once"
            )
        if key == "dir":
            if not isinstance(value, str | os.PathLike):
                raise InvalidTypeError(f"dir must be a str or Path, not {type(value).__name__}")
            value = os.fspath(value)
        kwargs[key] = value
    return kwargs


class RunSource:
    """The run a sink logs to, found or started on first use, and finished only if started.

    - ``run`` given: that run, never finished here.
    - else the active ``wandb.run`` at first use, never finished here (the init
      arguments are ignored, with a warning; ``config`` is still added to it);
    - else ``wandb.init(**init_kwargs, config=config)``, finished by `finish`.
    """

    def __init__(
        self,
        *,
        run: wandb.Run | None,
        explicit: Mapping[str, object],
        config: Mapping[str, Any] | None,
        init_kwargs: Mapping[str, Any] | None,
    ) -> None:
        if config is not None and not isinstance(config, Mapping):
            raise InvalidTypeError(
                f"config must be a mapping such as {{'learning_rate': 1e-5}}, "
                f"not {type(config).__name__}"
            )
        kwargs = _init_kwargs(explicit, init_kwargs)
        if run is not None and (kwargs or not hasattr(run, "log")):
            raise InvalidInputError(
                "run= takes a W&B run (the result of wandb.init()) and no wandb.init "
                "arguments, since the sink does not start that run: drop "
                f"{sorted(kwargs)} or drop run="
            )
        self.init_kwargs = kwargs
        self.given = run
        self._config = dict(config) if config is not None else None
        self.module: Any = None
        self.run: wandb.Run | None = None
        self.started = False

    def get(self) -> wandb.Run:
        """The run, importing wandb and finding or starting the run on the first call."""
        if self.run is not None:
            return self.run
        module = import_wandb()
        run: wandb.Run | None = self.given if self.given is not None else module.run
        started = run is None
        if run is None:
            init = dict(self.init_kwargs)
            if self._config is not None:
                init["config"] = self._config
            try:
                run = module.init(**init)
            except Exception as exc:
                raise SinkError(
                    f"could not start a W&B run ({type(exc).__name__}: {exc}); nothing was "
                    "logged: run `wandb login`, pass mode='offline', or start the run "
                    "yourself with wandb.init() before logging"
                ) from exc
        else:
            if self.init_kwargs:
                logger.warning(
                    "a W&B run is already active, so WandbSink logs to it and ignores %s",
                    sorted(self.init_kwargs),
                )
            config = self._config
            if config is not None:
                found = run
                call_wandb("add the config to", lambda: update_config(found, config))
        self.module, self.run, self.started = module, run, started
        return run

    def finish(self) -> None:
        """Finish the run if it was started here; leave any other run running."""
        if self.run is not None and self.started:
            call_wandb("finish", self.run.finish)
