# make run   : install everything into .venv (when missing) and run the study
# make test  : install everything into .venv (when missing) and run the tests
PYTHON ?= python3
VENV := .venv
CORES ?= all

$(VENV)/.installed: pyproject.toml
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/bin/python -m pip install --quiet -e ".[test]"
	touch $@

$(VENV)/.slurm: $(VENV)/.installed
	$(VENV)/bin/python -m pip install --quiet -e ".[test,slurm]"
	touch $@

.PHONY: install run test test-slurm test-openmpi dry-run lint
install: $(VENV)/.installed

run: install
	$(VENV)/bin/snakemake --cores $(CORES) --profile profiles/default

test: install
	$(VENV)/bin/python -m pytest -q -rs

# the whole pipeline through profiles/slurm-like settings on a real local SLURM (installs slurm-wlm; root)
test-slurm: $(VENV)/.slurm
	bash tests/slurm/run.sh

# trees, default rules and rules files against Debian's real OpenMPI (installs openmpi-bin; root)
test-openmpi: install
	bash tests/openmpi/run.sh

dry-run: install
	$(VENV)/bin/snakemake -n --profile profiles/default

lint: install
	$(VENV)/bin/snakemake --lint
