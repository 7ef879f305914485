# Each target creates (or reuses) the virtual environment .venv with what it needs: the main job
# (demo, copy, bench) only the package; the book and the tests also its [book,dev] extras. Inside the
# conda environment of environment.yml (CPU) or environment-gpu.yml, that environment is used
# instead of .venv.
#   make demo     train English->German on Multi30k and print sacreBLEU on test2016
#                 (the stored run took 0.20 PFLOP of training: about 69 minutes on a 2-core CPU
#                 that trained at 49 GFLOP/s, shared with other work)
#   make copy     train the copy-task model (about a minute) and print its held-out accuracy
#   make bench    time 50-token decoding with the key/value cache against full recomputation
#                 (ARGS="train" or ARGS="decode": the other modes of the benchmark command)
#   make lab      open the chapters in JupyterLab, each .md opening as a notebook on a double-click
#                 (AT_DATA_DIR, when set, reaches the chapters; Ctrl-C in the terminal stops it)
#   make test     everything CI runs: the tests (with every page run in JupyterLab, smoke scale), sync
#                 check, the benchmark command in its smoke setting, book, offline check
#   make export   regenerate the package's modules (and the explorer's script and page) and the
#                 book/*.ipynb twins from the chapters, and clean what saving a notebook from
#                 Jupyter leaves behind (outputs, a version line)
#   make check    fail if the package or a notebook twin differs from the chapters; lint; fail on
#                 code that ruff format (88 columns) would change
#   make format   lay out the chapters' code cells, the tests and the tools with ruff format, then export
#   make book     build the HTML book into _build/html (AT_SCALE as set, default laptop)
#   make fuzz     damage a tiny run and its model file at random for MINUTES (default 30) and run the
#                 commands on them; each damage that breaks a rule is kept in tests/fuzz-found/

PYTHON ?= python3
ifeq ($(CONDA_DEFAULT_ENV),annotated-transformer)
VENV ?= $(CONDA_PREFIX)
else
VENV ?= .venv
endif
BIN := $(VENV)/bin
CORE := $(VENV)/.installed-core
FULL := $(VENV)/.installed-full
LAB := $(VENV)/.installed-lab
AT_SCALE ?= laptop
# The chapters run inside book/: a data folder given relative to where make was called is passed
# on as an absolute path.
# (override: a value given on make's command line is made absolute too; a name with spaces
# stays one name; no shell reads the value, so a quote in it is only a character)
ifneq ($(AT_DATA_DIR),)
override AT_DATA_DIR := $(if $(patsubst /%,,$(firstword $(AT_DATA_DIR))),$(CURDIR)/$(AT_DATA_DIR),$(AT_DATA_DIR))
export AT_DATA_DIR
endif

.PHONY: help demo copy bench bench-smoke lab test export check format book book-check fuzz clean

help:
	@sed -n 's/^#   //p' $(MAKEFILE_LIST)

# On Linux without an NVIDIA driver, PyTorch's CPU build first: a fraction of the default download.
$(CORE): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV) || { echo "python3 -m venv failed: on Debian or Ubuntu, apt-get install python3-venv"; exit 1; }
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -c "import torch" 2>/dev/null || [ "$$(uname -s)" != Linux ] || command -v nvidia-smi >/dev/null || \
	  { echo "== installing PyTorch's CPU build (no NVIDIA driver found); pip prints each download's size"; \
	    $(BIN)/python -m pip install --timeout 20 --retries 0 "torch>=2.4,<2.15" --index-url https://download.pytorch.org/whl/cpu || \
	    echo "== PyTorch's CPU index could not be reached: pip installs its default build next, with CUDA (several GB)"; }
	@echo "== installing the package and what the main job needs (PyTorch too, unless it is installed)"
	$(BIN)/python -m pip install -e .
	touch $(CORE)

$(FULL): $(CORE) pyproject.toml
	@echo "== installing the book and test tools: jupyter-book, jupytext, altair, pytest, nbmake, ruff, CTranslate2"
	$(BIN)/python -m pip install -e ".[book,dev]"
	touch $(FULL)

# JupyterLab and jupyterlab-myst in the project's environment, with the chapters' .md files opening
# as notebooks on a double-click: the setting lives in that environment's overrides.json, not in your
# home folder.
$(LAB): $(CORE) tools/jupyterlab-overrides.json
	@echo "== installing JupyterLab, jupyterlab-myst, pytest and nbmake, and what the chapters import (the book extra)"
	@$(BIN)/python tools/install_size.py --summary
	$(BIN)/python -m pip install -e ".[book,lab]"
	mkdir -p $(VENV)/share/jupyter/lab/settings
	cp tools/jupyterlab-overrides.json $(VENV)/share/jupyter/lab/settings/overrides.json
	touch $(LAB)

# tools/jupyter_lab_config.py: each .md opens as the page the book shows (hidden cells folded,
# citations by author and year) and saves as it was, without outputs; the .ipynb twins are hidden
# from the file browser. JupyterLab refuses to run as root (a container, a cloud machine) unless
# told it may.
lab: $(LAB)
	$(BIN)/jupyter lab --config=tools/jupyter_lab_config.py --ServerApp.root_dir=book \
	  $$([ "$$(id -u)" = 0 ] && echo --allow-root) $(ARGS)

demo: $(CORE)
	$(BIN)/python -m annotated_transformer.train $(ARGS)

copy: $(CORE)
	$(BIN)/python -m annotated_transformer.train --task copy

bench: $(CORE)
	$(BIN)/python -m annotated_transformer.benchmark $(or $(ARGS),cache)

test: $(FULL)
	AT_SCALE=smoke $(BIN)/python -m pytest tests
	$(MAKE) check
	$(MAKE) bench-smoke
	AT_SCALE=smoke $(MAKE) book
	$(MAKE) book-check

# The benchmark command in its smallest setting: it runs end to end and writes its JSON (numbers from a
# few updates and sentences, not measurements).
bench-smoke: $(FULL)
	$(BIN)/python -m annotated_transformer.benchmark train --steps 2 --warmup-steps 1 --batch-tokens 600 \
	  --no-progress -o _build/benchmark/train.json
	$(BIN)/python -m annotated_transformer.benchmark decode --random-weights --limit 8 --max-extra 10 \
	  --no-progress -o _build/benchmark/decode.json
	$(BIN)/python -m annotated_transformer.benchmark data --pairs 20000 --batch-tokens 2000 --batches 5 \
	  --no-progress -o _build/benchmark/data.json

export: $(FULL)
	$(BIN)/python tools/literate.py export

check: $(FULL)
	$(BIN)/python tools/literate.py check
	$(BIN)/ruff check annotated_transformer tests tools conftest.py
	$(BIN)/ruff format --check annotated_transformer tests tools conftest.py

# The chapters' code cells through jupytext (only code cells change), then the package from them.
format: $(FULL)
	$(BIN)/ruff format conftest.py tests tools annotated_transformer/__init__.py \
	  annotated_transformer/*/__init__.py
	for chapter in book/[0-9][0-9]_*.md; do \
	  $(BIN)/jupytext --quiet --pipe "$(BIN)/ruff format -" $$chapter || exit 1; done
	$(BIN)/ruff format book/[0-9][0-9]_*.md
	$(BIN)/python tools/literate.py export

# Chapters are executed again only when their code changed (execute_notebooks: cache), or when AT_SCALE
# differs from the last build's, since the cache does not see environment variables. A page that
# trains gives its kernel as many threads as there are free cores (at_scale, in the preface), unless
# OMP_NUM_THREADS fixes the count: on a busy machine PyTorch's default count makes every thread wait
# for the core another program holds.
book: $(FULL)
	@mkdir -p _build
	@# another scale: every page is executed and read again (Sphinx re-reads only changed sources)
	@[ "$$(cat _build/.scale 2>/dev/null)" = "$(AT_SCALE)" ] || rm -rf _build/.jupyter_cache _build/.doctrees _build/html
	@echo "$(AT_SCALE)" > _build/.scale
	@# every kernel first runs the figure-text hook: each figure records its smallest text's size
	@mkdir -p _build/ipython/profile_default/startup
	@cp tools/figure_text_startup.py _build/ipython/profile_default/startup/
	@# the kernels talk to the build over local TCP: no warning about it on every page
	@echo 'c.IPKernelApp.log_level = "ERROR"' > _build/ipython/profile_default/ipython_kernel_config.py
	@# matplotlib's font list of its own, made by the build: one in the home folder may be
	@# unwritable or stale, and each kernel would then warn on standard error (a failed page)
	@mkdir -p _build/matplotlib
	IPYTHONDIR=$(CURDIR)/_build/ipython MPLCONFIGDIR=$(CURDIR)/_build/matplotlib AT_SCALE=$(AT_SCALE) \
	  $(BIN)/jupyter-book build . -W --keep-going

book-check: $(FULL)
	$(BIN)/python tools/check_glue_order.py
	$(BIN)/python tools/check_offline_book.py --self-test
	$(BIN)/python tools/book_weight.py --check

MINUTES ?= 30
fuzz: $(FULL)
	AT_FUZZ_MINUTES=$(MINUTES) $(BIN)/python -m pytest -p no:cacheprovider -q -rA \
	  tests/test_fuzz.py -k long_profile

clean:
	rm -rf _build .pytest_cache
