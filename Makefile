# Two commands do all the set-up on a fresh machine with Python 3.11:
#   make demo   - the main job: `duplexeval demo` on the built-in data
#   make test   - the test suite (everything; what CI runs), on 2 workers (pytest-xdist, one test file per worker
#                 at a time: a file's module fixtures are built once)
# and one for the edit loop:
#   make test-fast - the same without the slow end-to-end tests (marked `slow`)
PYTHON ?= python3.11
VENV ?= .venv
STAMP := $(VENV)/.installed
PIP_FLAGS ?= --progress-bar on

.PHONY: demo test test-fast lint venv clean

$(STAMP): pyproject.toml
	@echo "==> making $(VENV) and installing duplexeval with its test extras (first run only; about 2 minutes)"
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install $(PIP_FLAGS) --upgrade pip
	@# pipecat: the reference pipecat bot and the smart-turn EOT detector (pipecat-ai with its own dependencies;
	@# the base pins soxr and soundfile to the ranges pipecat-ai takes, so nothing is downgraded).
	$(VENV)/bin/python -m pip install $(PIP_FLAGS) -e '.[test,ray,dev,fdb-v15,pipecat]'
	@# The VAD reads Silero's sequence model (silero_vad_16k_sequence.onnx, same probabilities, less CPU) from the
	@# silero-vad wheel by path; the wheel declares torch, which nothing here needs (never imported).
	$(VENV)/bin/python -m pip install $(PIP_FLAGS) --no-deps 'silero-vad==6.2.3'
	@# FDB v1.5 reproduces the official numbers with Silero v5, the model torch.hub served when v1.5 was published;
	@# the silero-vad 5.1.2 wheel ships it. It cannot be installed beside 6.2.3, so it goes to its own folder and is
	@# found there by path (fdb/tasks/overlap/silero.py; the file's SHA-256 is checked before use).
	$(VENV)/bin/python -m pip install $(PIP_FLAGS) --no-deps --target $(VENV)/opt/silero-vad-5.1.2 'silero-vad==5.1.2'
	touch $(STAMP)
	@echo "==> installed"

venv: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/duplexeval demo

test: $(STAMP)
	$(VENV)/bin/python -m pytest -q -p no:cacheprovider -n 2 --dist loadfile

test-fast: $(STAMP)
	$(VENV)/bin/python -m pytest -q -p no:cacheprovider -m "not slow" -n 2 --dist loadfile

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks scripts examples
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV)
