#!/usr/bin/env bash
# The SLURM test: install and start a single-node SLURM, run tests/test_slurm.py, always stop it.
set -euo pipefail
cd "$(dirname "$0")/../.."
here=$PWD
base=$(mktemp -d /tmp/collat-slurm.XXXXXX)
cleanup() { bash "$here/tests/slurm/cluster.sh" stop "$base"; }
trap cleanup EXIT INT TERM
bash tests/slurm/cluster.sh install
# a launch group of stage measure runs real OSU under mpirun: Debian's OpenMPI and OSU 7.3 from source
if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openmpi-bin libopenmpi-dev >/dev/null
fi
osu_tar=$(ls ../shared/tools/osu/osu-micro-benchmarks-*.tar.gz | head -n 1)
tar -xzf "$osu_tar" -C "$base"
osu=$(ls -d "$base"/osu-micro-benchmarks-*/ | head -n 1)
if ! (cd "$osu" && ./configure CC=mpicc CXX=mpicxx && make -j"$(nproc)") >"$base/osu-build.log" 2>&1; then
  tail -n 30 "$base/osu-build.log"; echo "building OSU from $osu_tar failed (its log above)"; exit 1
fi
export COLLAT_OSU_BUILD="$osu"
bash tests/slurm/cluster.sh start "$base"
COLLAT_SLURM_BASE="$base" timeout -k 20 1800 .venv/bin/python -m pytest -q -x -p no:cacheprovider tests/test_slurm.py
