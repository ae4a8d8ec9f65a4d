# Two commands do all the set-up on a fresh machine with Python 3.11:
#   make demo   - the main job: `duplexeval demo` on the built-in data
#   make test   - the test suite
PYTHON ?= python3.11
VENV ?= .venv
STAMP := $(VENV)/.installed

.PHONY: demo test venv clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/bin/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/duplexeval demo

test: $(STAMP)
	$(VENV)/bin/python -m pytest -q -p no:cacheprovider

clean:
	rm -rf $(VENV)
