"""What a person reads about runs and comparisons.

The HTML report of a run, the compare page, terminal-safe text, and the trackers (MLflow,
W&B through entry points) runs and comparisons are logged to.
"""
