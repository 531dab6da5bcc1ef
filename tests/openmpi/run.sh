#!/usr/bin/env bash
# The OpenMPI conformance suite (make test-openmpi): install Debian's OpenMPI when missing, build
# the probes of tests/openmpi/ and OSU 7.3 (../shared/tools/osu/) against it, run
# tests/test_openmpi.py. Needs root (apt-get, mpirun --allow-run-as-root) and about six minutes on
# 2 cores.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=$(mktemp -d /tmp/collat-openmpi.XXXXXX)
trap 'rm -rf "$build"' EXIT INT TERM
# OpenMPI when missing, and OSU 7.3 from ../shared/tools/osu (the plan-measure test)
osu=$(bash tests/osu_build.sh "$build")
mpicc -O1 -Wall -o "$build/topo" tests/openmpi/topo.c
mpicc -O1 -Wall -o "$build/colls" tests/openmpi/colls.c
mpicc -O1 -Wall -o "$build/monitor" tests/openmpi/monitor.c
mpicc -O1 -Wall -o "$build/decide" tests/openmpi/decide.c -ldl
mpicc -O1 -Wall -shared -fPIC -o "$build/record.so" tests/openmpi/record.c -ldl
COLLAT_OSU_BUILD="$osu" COLLAT_OPENMPI_BUILD="$build" timeout -k 20 1200 .venv/bin/python -m pytest -q -x -p no:cacheprovider tests/test_openmpi.py
