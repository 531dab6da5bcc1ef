#!/usr/bin/env bash
# Debian's OpenMPI (installed when missing; root) and the real OSU 7.3 benchmarks built against it
# from the BSD source beside the project (../shared/tools/osu/), for make test-openmpi and
# make test-slurm:
#
#   osu=$(bash tests/osu_build.sh DIR)    # prints the build tree (the folder holding c/mpi/)
#
# Without ../shared/tools/osu it prints nothing, says so on stderr, and the tests that need OSU skip.
set -euo pipefail
dir=${1:?usage: osu_build.sh DIR}
if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
  echo "installing Debian's openmpi-bin and libopenmpi-dev" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openmpi-bin libopenmpi-dev >/dev/null
fi
osu_tar=$(ls "$(dirname "$0")"/../../shared/tools/osu/osu-micro-benchmarks-*.tar.gz 2>/dev/null | head -n 1 || true)
if [ -z "$osu_tar" ]; then
  echo "no OSU source in ../shared/tools/osu: the tests that run OSU are skipped" >&2
  exit 0
fi
tar -xzf "$osu_tar" -C "$dir"
osu=$(ls -d "$dir"/osu-micro-benchmarks-*/ | head -n 1)
if ! (cd "$osu" && ./configure CC=mpicc CXX=mpicxx && make -j"$(nproc)") >"$dir/osu-build.log" 2>&1; then
  tail -n 30 "$dir/osu-build.log" >&2
  echo "building OSU from $osu_tar failed (its log above)" >&2
  exit 1
fi
echo "$osu"
