# Every target creates (or reuses) the virtual environment .venv with the package and its extras.
#   make demo     train English->German on Multi30k (~30 min on a CPU) and print sacreBLEU on test2016
#   make copy     train the copy-task model (about a minute) and print its held-out accuracy
#   make bench    time 50-token decoding with the key/value cache against full recomputation
#   make test     everything CI runs: unit tests, every notebook (smoke scale), sync check, book, offline check
#   make export   regenerate annotated_transformer/*.py and the book/*.ipynb twins from the chapters
#   make check    fail if the package or a notebook twin differs from the chapters; lint
#   make book     build the HTML book into _build/html (AT_SCALE as set, default laptop)

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: help demo copy bench test export check book book-check clean

help:
	@sed -n 's/^#   //p' $(MAKEFILE_LIST)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[book,dev]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m annotated_transformer.train $(ARGS)

copy: $(STAMP)
	$(BIN)/python -m annotated_transformer.train --task copy

bench: $(STAMP)
	$(BIN)/python -m annotated_transformer.benchmark $(ARGS)

test: $(STAMP)
	AT_SCALE=smoke $(BIN)/python -m pytest --nbmake tests book
	$(MAKE) check
	AT_SCALE=smoke $(MAKE) book
	$(MAKE) book-check

export: $(STAMP)
	$(BIN)/python -m annotated_transformer._literate export

check: $(STAMP)
	$(BIN)/python -m annotated_transformer._literate check
	$(BIN)/ruff check annotated_transformer tests tools

book: $(STAMP)
	$(BIN)/jupyter-book build . -W --keep-going

book-check: $(STAMP)
	$(BIN)/python tools/check_offline_book.py

clean:
	rm -rf _build .pytest_cache
