"""Measuring a judge on the user's own samples.

Re-tests, position and length audits, and agreement with human labels on a run.
"""
