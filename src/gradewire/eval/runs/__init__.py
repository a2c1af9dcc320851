"""What a run is: its samples, its records on disk, and reading it back.

The data a user hands over (`load_samples`: JSONL, CSV, Parquet, a saved Hugging Face
dataset, an Inspect AI log) becomes `EvalSample`s; each graded sample is a `SampleRecord`
of `GradeOutcome`s in a run folder that gradewire alone writes (`RunFolderError`
otherwise); `load_run` / `open_run` read a folder, an lm-eval sample log or a tracker's run
back as an `EvalRun`, and `GraderSummary` is a grader's figures over one run.
"""
