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
osu=$(bash tests/osu_build.sh "$base")
bash tests/slurm/cluster.sh start "$base"
COLLAT_OSU_BUILD="$osu" COLLAT_SLURM_BASE="$base" timeout -k 20 1800 .venv/bin/python -m pytest -q -x -p no:cacheprovider tests/test_slurm.py
