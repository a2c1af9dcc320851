# Every target sets up its own environment: a fresh machine needs only Python 3.10+ and pip.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-dev

.PHONY: demo test lint bench clean

# One editable install: the core, every adapter and its extra, and the dev tools.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	# OpenRLHF's reward calling code, read by the tests from its release wheel (its own
	# dependencies, vLLM and DeepSpeed among them, are neither needed nor installed).
	$(PY) -m pip download --quiet --no-deps --dest $(VENV)/openrlhf openrlhf==0.11.2
	# veRL's reward loop and Tracking, which the Ray tests run as veRL does, from its release
	# wheel without its declared dependencies (its transformers pin conflicts with trl's; the
	# few modules its reward loop imports on CPU are in the dev extra).
	$(PY) -m pip install --quiet --no-deps verl==0.9.1
	touch $@

DEMO_DATA := src/gradewire/cli/_data

## Grade the bundled sample set and print/write the aggregated logs and an HTML table; then
## `gradewire eval` on the same samples: a run folder, its report and MLflow traces.
demo: $(STAMP)
	$(PY) -m gradewire demo
	MLFLOW_TRACKING_URI=sqlite:///$(CURDIR)/gradewire-demo/mlflow.db $(PY) -m gradewire eval \
		$(DEMO_DATA)/demo_samples.jsonl --graders $(DEMO_DATA)/demo_graders.toml \
		--out gradewire-demo/eval --sink mlflow

## Run every test (the core's and each integration's).
test: $(STAMP)
	RAY_USAGE_STATS_ENABLED=0 $(PY) -m pytest

## Lint, format check and strict type check.
lint: $(STAMP)
	$(PY) -m ruff check src tests bench integrations notebooks
	$(PY) -m ruff format --check src tests bench integrations notebooks
	$(PY) -m mypy
	$(VENV)/bin/lint-imports

## Benchmarks that back the README's performance figures.
bench: $(STAMP)
	$(PY) bench/core_overhead.py
	$(PY) bench/background_sink_overhead.py
	$(PY) bench/judge_throughput.py
	$(PY) bench/reward_server.py
	$(PY) integrations/wandb/bench/sink_overhead.py
	$(PY) bench/sink_overhead.py
	$(PY) integrations/mlflow/bench/outage_kill.py
	$(PY) bench/trl_reward.py
	$(PY) bench/eval_throughput.py
	$(PY) bench/compare.py
	$(PY) bench/ray_grading.py

clean:
	rm -rf $(VENV) gradewire-demo .pytest_cache .mypy_cache .ruff_cache
