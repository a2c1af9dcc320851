"""The run folder: config, results appended line by line, summary and report.

``results.jsonl`` is append-only: each line holds one sample's input (with its hash and
the hash of its prompt part) and the outcomes of the graders that just graded it, each
recording the input it graded. Reading folds the lines in order, so a later outcome of
the same grader on the same sample (a retried error, a changed spec) wins; an outcome
of an input that has changed since is stale, whatever other graders did after it. A
line cut by a crash is dropped and the file is trimmed to its last full line before
appending; blank lines are skipped; any other malformed line is refused with its file
and line.

A folder is a run when its ``config.json`` carries gradewire's marker. gradewire writes
only into a new or empty folder or a run (`claim_run_folder`), and with ``force`` beside
other files, never over one of them. One eval at a time writes a run: `claim_run_folder`
holds an advisory lock (``flock`` on ``.gradewire.lock``, removed when released) that dies
with the process, even on SIGKILL. Every file is written through a temporary file of a
unique name in the same folder and moved into place, so a crash or a concurrent writer
never leaves half a file.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any, NamedTuple

from gradewire.core import InvalidInputError
from gradewire.eval.runs._records import GradeOutcome, JsonMapping, SampleRecord, outcome_map
from gradewire.eval.runs._samples import prompt_hash

__all__ = [
    "CONFIG",
    "LOCK",
    "MARKER",
    "OWNED",
    "REPORT",
    "RESULTS",
    "SUMMARY",
    "ResultLine",
    "ResultsWriter",
    "RunFolderError",
    "claim_run_folder",
    "is_run",
    "read_config",
    "read_lines",
    "read_records",
    "write_atomically",
    "write_json",
]

CONFIG = "config.json"
RESULTS = "results.jsonl"
SUMMARY = "summary.json"
REPORT = "report.html"
LOCK = ".gradewire.lock"
MARKER = "gradewire_eval"
# Every file gradewire may write in a run folder (the sinks' too): with --force a run
# goes beside other files, but never over a file of one of these names it did not write.
OWNED = (CONFIG, RESULTS, SUMMARY, REPORT, "logs.jsonl", "mlflow.json")


class RunFolderError(InvalidInputError):
    """A folder that cannot take this run: not a run, a clash, or another eval writing it."""


def is_run(config: Mapping[str, Any] | None) -> bool:
    """Whether a config is a gradewire run's (it carries the marker)."""
    return config is not None and config.get(MARKER) == 1


def read_config(folder: Path) -> dict[str, Any] | None:
    """The folder's ``config.json`` as an object, or None when there is none.

    Raises:
        InvalidInputError: It exists but is not a JSON object.
    """
    path = folder / CONFIG
    if not path.is_file():
        return None
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise InvalidInputError(f"{path} is not a readable run config: {exc}") from None
    if not isinstance(config, dict):
        raise InvalidInputError(f"{path} is not a run config (not a JSON object)")
    return config


def write_json(path: Path, data: Any) -> None:
    """Write JSON atomically (`write_atomically`), as ASCII: a lone surrogate stays an escape.

    An object is indented, but a long list in it (a run's sample ids) is written on one
    line: read as easily, and encoded by the C encoder in one piece, not one piece per
    element.
    """
    write_atomically(path, [_json_text(data), "\n"])


def _json_text(data: Any) -> str:
    def dump(value: Any, indent: int | None) -> str:
        return json.dumps(value, indent=indent, ensure_ascii=True, allow_nan=False)

    if not isinstance(data, dict) or not data:
        return dump(data, 2)
    items = [
        f"  {dump(str(key), None)}: "
        + (
            dump(value, None) if isinstance(value, list) and len(value) > 100 else dump(value, 2)
        ).replace("\n", "\n  ")
        for key, value in data.items()
    ]
    return "{\n" + ",\n".join(items) + "\n}"


def write_atomically(path: Path, chunks: Iterable[str]) -> None:
    """Write text through a uniquely named temporary file in the same folder, then move it.

    A crash never leaves half a file, and two writers never share a temporary file.
    """
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogatepass") as handle:
            # mkstemp makes the file private; the file it replaces keeps its own mode.
            os.fchmod(handle.fileno(), path.stat().st_mode & 0o777 if path.exists() else 0o644)
            for chunk in chunks:
                handle.write(chunk)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _guard(folder: Path, *, force: bool) -> dict[str, Any] | None:
    """The run's config, None for a folder that may become a run; else RunFolderError."""
    if folder.exists() and not folder.is_dir():
        raise RunFolderError(f"{folder} is a file, not a folder; give --out a folder")
    parent = folder.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise RunFolderError(
            f"cannot make the run folder {folder}: {parent} is a file, not a folder; give "
            "--out a folder"
        )
    try:
        config = read_config(folder)
    except InvalidInputError:
        config = None  # a config.json gradewire did not write
    if is_run(config):
        return config
    if not folder.exists():
        return None
    others = sorted(p.name for p in folder.iterdir() if p.name != LOCK)
    if not others:
        return None
    shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
    clashes = [name for name in OWNED if (folder / name).exists()]
    if not force:
        raise RunFolderError(
            f"{folder} is not a gradewire run and is not empty (it holds {shown}); choose a "
            "new or empty folder for --out, or pass --force (force=True) to put the run "
            "beside these files"
            + (
                f"; not this one even so: it holds {', '.join(clashes)}, which a run "
                "would write over"
                if clashes
                else ""
            )
        )
    if clashes:
        raise RunFolderError(
            f"{folder} is not a gradewire run, and it holds {', '.join(clashes)}, which "
            "gradewire did not write and would write over; even with --force it never "
            "writes over a file it did not create: choose another folder for --out"
        )
    return None


class _FolderLock:
    """An exclusive ``flock`` on the folder's lock file, held while a run is written.

    The file is removed on release, so a folder holds it only while an eval writes
    (or after one was killed: the next one takes it over). Whoever locks a file that was
    removed meanwhile tries again on the new one, so two processes never hold locks on
    two different files of one name.
    """

    def __init__(self, folder: Path) -> None:
        self.path = folder / LOCK
        self._fd: int | None = None

    def acquire(self) -> None:
        try:
            import fcntl
        except ImportError:  # no flock (Windows): one writer is the user's to ensure
            return
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                holder = _holder(fd)
                os.close(fd)
                raise RunFolderError(
                    f"another eval is writing this folder ({holder}): {self.path.parent}; "
                    "wait for it to finish (run the command again afterwards to resume) or "
                    "stop it, or choose another --out"
                ) from None
            try:
                same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)  # released and removed by its holder meanwhile: lock the new one
        stamp = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(stamp) + "\n").encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            # Removed while still locked, then unlocked by closing.
            with contextlib.suppress(OSError):
                os.unlink(self.path)
            os.close(fd)


def _holder(fd: int) -> str:
    try:
        stamp = json.loads(os.pread(fd, 4096, 0) or b"{}")
        return f"pid {stamp['pid']} on {stamp['host']}, started {stamp['started']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "pid unknown: it is just starting"


@contextlib.contextmanager
def claim_run_folder(folder: Path, *, force: bool = False) -> Iterator[dict[str, Any] | None]:
    """Check that ``folder`` may take a run, create it, and hold its lock meanwhile.

    Yields the run's config when the folder already holds a run, else None.

    Raises:
        RunFolderError: The folder is a file, or cannot be written; or it is not a run
            and not empty (unless ``force``); or it holds a file of a name gradewire
            writes that it did not write (even with ``force``); or another eval holds
            its lock.
    """
    _guard(folder, force=force)  # before anything is written, not even the lock file
    lock = _FolderLock(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        lock.acquire()
    except OSError as exc:
        raise RunFolderError(
            f"cannot write the run folder {folder}: {exc.strerror or exc}; choose a folder "
            "you can write to for --out"
        ) from None
    try:
        # Checked again under the lock: another process may have made it a run meanwhile.
        yield _guard(folder, force=force)
    finally:
        lock.release()


class ResultLine(NamedTuple):
    """One line of ``results.jsonl``, checked.

    Attributes:
        id: The sample id.
        input_hash: The hash of the input the line's outcomes graded.
        input: The input as `StringThread.to_dict` writes it.
        prompt_hash: The hash of the prompt part (None in lines of older runs).
        outcomes: The outcome per grader key (each knowing the input it graded).
    """

    id: str
    input_hash: str
    input: dict[str, Any]
    prompt_hash: str | None
    outcomes: dict[str, GradeOutcome]


def read_lines(
    folder: Path, *, shared: dict[bytes, JsonMapping] | None = None
) -> Iterator[ResultLine]:
    """Every line of the folder's results, checked, in order (blank lines skipped).

    Args:
        folder: The run folder.
        shared: Grades read so far by their JSON text, to share equal ones
            (`GradeOutcome.from_json`).

    Raises:
        InvalidInputError: A line is not a results line; the message names the file
            and line.
    """
    path = folder / RESULTS
    if not path.exists():
        return
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.endswith(b"\n"):
                return  # a line cut by a crash: it is trimmed before the next append
            if not raw.strip():
                continue
            try:
                line = _line(raw, shared)
            except (InvalidInputError, ValueError, RecursionError, UnicodeDecodeError) as exc:
                reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
                raise InvalidInputError(
                    f"{path}:{number}: not a results line ({reason}); the file was edited by "
                    "hand or is not gradewire's: fix or delete that line"
                ) from None
            yield line


def _line(raw: bytes, shared: dict[bytes, JsonMapping] | None) -> ResultLine:
    line = json.loads(raw)
    if not isinstance(line, dict):
        raise InvalidInputError(f"a line must be an object, not {type(line).__name__}")
    sample_id, input_hash = line.get("id"), line.get("input_hash")
    if not isinstance(sample_id, str) or not sample_id:
        raise InvalidInputError(f"'id' must be a non-empty string, not {sample_id!r}")
    if not isinstance(input_hash, str):
        raise InvalidInputError(f"'input_hash' must be a string, not {input_hash!r}")
    grades = line.get("grades")
    if not isinstance(grades, dict):
        raise InvalidInputError("'grades' must be an object of outcomes by grader key")
    thread = _input(line.get("input"))
    outcomes = {}
    for key, data in grades.items():
        try:
            outcome = GradeOutcome.from_json(data, input_hash=input_hash, shared=shared)
        except InvalidInputError as exc:
            raise InvalidInputError(f"grader {key!r}: {exc}") from None
        outcomes[sys.intern(key)] = outcome
    prompt = line.get("prompt_hash")
    if prompt is not None and not isinstance(prompt, str):
        raise InvalidInputError(f"'prompt_hash' must be a string, not {prompt!r}")
    return ResultLine(sample_id, input_hash, thread, prompt, outcomes)


def read_records(
    folder: Path, expected: Mapping[str, str] | None = None
) -> dict[str, SampleRecord]:
    """The samples of the folder, in order of first appearance, later outcomes winning.

    Args:
        folder: The run folder.
        expected: Sample id to the input hash of the data the run is of: only those
            samples, read with that input (others are not held for this data); None:
            every sample, with the input of its latest line.

    Raises:
        InvalidInputError: A line is not a results line; the message names the file
            and line.
    """
    records = _Records(expected)
    for line in read_lines(folder, shared=records.grades):
        records.fold(line)
    return records.held()


_NOT_HELD = JsonMapping(b"{}")  # no line of the sample holds the data's input (yet)


class _Records:
    """Folds results lines into records, keeping what it holds compact.

    Each sample is a `SampleRecord` from its first line on (replaced by a merged one
    when another line of it comes), so the fold never holds a second copy of the run.
    """

    def __init__(self, expected: Mapping[str, str] | None) -> None:
        self.expected = expected
        self.folded: dict[str, SampleRecord] = {}
        # Grades repeat (a 0/1 grader has two): equal JSON texts share one object; so do
        # the key tuples of records graded by the same graders.
        self.grades: dict[bytes, JsonMapping] = {}
        self.keys: dict[tuple[str, ...], tuple[str, ...]] = {}

    def fold(self, line: ResultLine) -> None:
        want = None if self.expected is None else self.expected.get(line.id)
        if self.expected is not None and want is None:
            return  # a sample of other data than the run's (checked all the same)
        input_hash, outcomes = line.input_hash, line.outcomes
        old = self.folded.get(line.id)
        if old is not None:
            outcomes = {**old.outcomes, **outcomes}
        record = SampleRecord(
            line.id,
            _NOT_HELD if old is None else old.input,
            input_hash if old is None else old.input_hash,
            outcome_map(outcomes, self.keys),
            "" if old is None else old.prompt_hash,
        )
        if want is None or want == input_hash:
            record = replace(
                record,
                input=JsonMapping.of(line.input),
                input_hash=input_hash,
                prompt_hash=line.prompt_hash or prompt_hash(line.input["turns"]),
            )
        self.folded[line.id] = record

    def held(self) -> dict[str, SampleRecord]:
        """The records of the samples a line of which holds the data's input."""
        for sample_id in [i for i, r in self.folded.items() if r.input is _NOT_HELD]:
            del self.folded[sample_id]
        self.grades.clear()
        return self.folded


def _input(thread: object) -> dict[str, Any]:
    """A line's input, checked."""
    if not isinstance(thread, dict):
        raise InvalidInputError(f"'input' must be an object, not {type(thread).__name__}")
    turns = thread.get("turns")
    metadata = thread.get("metadata", {})
    if not isinstance(turns, list) or not isinstance(metadata, dict):
        raise InvalidInputError("'input' must hold a 'turns' list and a 'metadata' object")
    for index, turn in enumerate(turns):
        if not (
            isinstance(turn, dict)
            and isinstance(turn.get("role"), str)
            and isinstance(turn.get("content"), str)
        ):
            raise InvalidInputError(f"'input.turns[{index}]' needs a string role and content")
    return thread


class ResultsWriter:
    """Appends result lines to ``results.jsonl``, each flushed as it is written."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / RESULTS
        _trim_torn_tail(path)
        self._handle: IO[str] = path.open("a", encoding="utf-8", errors="surrogatepass")
        self.lines = 0

    def write(
        self,
        sample_id: str,
        input_hash: str,
        thread: Mapping[str, Any],
        outcomes: Mapping[str, GradeOutcome],
        *,
        prompt: str | None = None,
    ) -> None:
        """Append one sample's outcomes (the graders that just graded it).

        Args:
            sample_id: The sample's id.
            input_hash: The hash of ``thread``, which the outcomes graded.
            thread: The input, as `StringThread.to_dict` writes it.
            outcomes: The outcome per grader key.
            prompt: The hash of the prompt part (`prompt_hash`); None: computed.
        """
        line = {
            "id": sample_id,
            "input_hash": input_hash,
            "prompt_hash": prompt if prompt is not None else prompt_hash(thread["turns"]),
            "input": thread,
            "grades": {key: outcome.to_json() for key, outcome in outcomes.items()},
        }
        # ensure_ascii keeps a lone surrogate (half an emoji) as an escape, not invalid UTF-8.
        self._handle.write(json.dumps(line, ensure_ascii=True, allow_nan=False) + "\n")
        # Flushed per line: a killed run keeps every sample graded before the kill.
        self._handle.flush()
        self.lines += 1

    def close(self) -> None:
        """Flush and close the file."""
        if not self._handle.closed:
            self._handle.flush()
            os.fsync(self._handle.fileno())
            self._handle.close()


def _trim_torn_tail(path: Path) -> None:
    """Cut a line left half-written by a crash, reading only the end of the file."""
    if not path.exists():
        return
    with path.open("rb+") as handle:
        end = handle.seek(0, os.SEEK_END)
        position = end
        while position > 0:
            start = max(0, position - 65536)
            handle.seek(start)
            block = handle.read(position - start)
            if position == end and block.endswith(b"\n"):
                return
            newline = block.rfind(b"\n")
            if newline >= 0:
                handle.truncate(start + newline + 1)
                return
            position = start
        handle.truncate(0)
