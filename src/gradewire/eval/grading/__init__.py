"""Running an eval: grade every sample with every grader into a run folder.

`run_eval` validates the data and the folder before anything is spent, resumes what the
folder already holds, decides per grader outcome what is stale, grades on an engine
(in-process asyncio by default, Ray through its ``eval_engine.ray`` entry point) and
shows progress; it ends by writing the summary and the report of `reporting`.
"""
