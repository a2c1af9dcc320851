"""Comparing two runs: paired differences, one method per grader, verdicts and power.

`compare_runs` pairs samples by id (refusing pairs whose prompts differ and graders whose
spec changed) and gives each grader's mean difference with an interval and a p-value from
one procedure, a verdict in words, the smallest difference the run could see, and slices;
`judge_runs` asks a pairwise judge instead.
"""
