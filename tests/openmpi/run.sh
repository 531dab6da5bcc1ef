#!/usr/bin/env bash
# The OpenMPI conformance suite (make test-openmpi): install Debian's OpenMPI when missing, build
# the probes of tests/openmpi/ and OSU 7.3 (../shared/tools/osu/) against it, run
# tests/test_openmpi.py. Needs root (apt-get, mpirun --allow-run-as-root) and about six minutes on
# 2 cores.
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
  echo "installing Debian's openmpi-bin and libopenmpi-dev"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openmpi-bin libopenmpi-dev >/dev/null
fi
build=$(mktemp -d /tmp/collat-openmpi.XXXXXX)
trap 'rm -rf "$build"' EXIT INT TERM
mpicc -O1 -Wall -o "$build/topo" tests/openmpi/topo.c
mpicc -O1 -Wall -o "$build/colls" tests/openmpi/colls.c
mpicc -O1 -Wall -o "$build/monitor" tests/openmpi/monitor.c
mpicc -O1 -Wall -o "$build/decide" tests/openmpi/decide.c -ldl
mpicc -O1 -Wall -shared -fPIC -o "$build/record.so" tests/openmpi/record.c -ldl
# the real OSU 7.3 benchmarks, from the BSD source beside the project (../shared/tools/osu/)
osu_tar=$(ls ../shared/tools/osu/osu-micro-benchmarks-*.tar.gz | head -n 1)
tar -xzf "$osu_tar" -C "$build"
osu=$(ls -d "$build"/osu-micro-benchmarks-*/ | head -n 1)
if ! (cd "$osu" && ./configure CC=mpicc CXX=mpicxx && make -j"$(nproc)") >"$build/osu-build.log" 2>&1; then
  tail -n 30 "$build/osu-build.log"; echo "building OSU from $osu_tar failed (its log above)"; exit 1
fi
export COLLAT_OSU_BUILD="$osu"
COLLAT_OPENMPI_BUILD="$build" timeout -k 20 1200 .venv/bin/python -m pytest -q -x -p no:cacheprovider tests/test_openmpi.py
