"""The README examples' world (tests/readme_examples.py), for the Markdown files at the root."""

pytest_plugins = ["readme_examples"]
