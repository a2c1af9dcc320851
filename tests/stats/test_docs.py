"""The examples in the docstrings of gradewire.stats run as written."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import gradewire.stats

MODULES = [
    f"gradewire.stats.{info.name}" for info in pkgutil.iter_modules(gradewire.stats.__path__)
]


@pytest.mark.parametrize("name", ["gradewire.stats", *MODULES])
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    failures, _ = doctest.testmod(module, raise_on_error=False, verbose=False)
    assert failures == 0


def test_the_stage_documents_every_statistic_it_reports():
    from gradewire.stats import Agreement

    names = set(Agreement.legend) - {"n"}
    assert names == set(Agreement.display_names) - {"n"}
    assert {"cohen_kappa", "krippendorff_alpha", "pearson", "spearman"} <= names
