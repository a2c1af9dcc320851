from rich.console import Console

from gradewire.eval import GradeOutcome, RichDisplay


def test_display_shows_progress_running_means_and_failures():
    console = Console(record=True, width=120, force_terminal=True)
    display = RichDisplay(console=console, refresh_per_second=50)
    display.start(3, ["judge"], skipped=2)
    grade = {"value": 1.0, "grader_key": "judge", "children": [], "info": {}}
    display.outcome("judge", GradeOutcome("ok", "h", grade))
    display.outcome("judge", GradeOutcome("ok", "h", {**grade, "value": 0.5}))
    display.outcome("judge", GradeOutcome("error", "h", None, "TimeoutError: slow"))
    for _ in range(3):
        display.sample_done()
    display.stopping(1)
    display.stop()
    text = console.export_text()
    assert "3/3" in text
    assert "0.7500" in text  # the running mean of the scored samples
    assert "2 sample(s) already graded" not in text  # replaced by the stopping note
    assert "stopping: finishing the 1 sample(s) in flight" in text
    lines = [line for line in text.splitlines() if line.startswith("judge")]
    assert lines[-1].split() == ["judge", "2", "0.7500", "1", "0"]


def test_grader_keys_are_shown_as_text_not_markup():
    console = Console(record=True, width=120, force_terminal=True)
    display = RichDisplay(console=console, refresh_per_second=50)
    keys = ["judge [/v2]", "f1[macro]", "[bold red]x"]
    display.start(1, keys, skipped=0)
    grade = {"value": 1.0, "grader_key": "k", "children": [], "info": {}}
    for key in keys:
        display.outcome(key, GradeOutcome("ok", "h", grade))
    display.sample_done()
    display.stop()
    text = console.export_text()
    for key in keys:
        assert key in text


def test_display_escapes_control_characters_in_grader_keys():
    console = Console(record=True, width=120, force_terminal=True)
    display = RichDisplay(console=console, refresh_per_second=50)
    key = "judge\x1b]0;owned\x07\x1b[2J"
    display.start(1, [key], skipped=0)
    display.outcome(key, GradeOutcome("error", "h", None, "RuntimeError: x"))
    display.sample_done()
    display.stop()
    text = console.export_text(styles=False)
    assert "\x07" not in text
    assert "]0;owned" not in text.replace("\\x1b]0;owned", "")
    assert "judge\\x1b]0;owned\\x07\\x1b[2J" in text
