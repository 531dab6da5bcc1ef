#!/usr/bin/env bash
# What the per-call temporary buffers of OpenMPI's reduce algorithms cost: osu_reduce at P ranks with
# each forced algorithm, under glibc's default malloc and under one that keeps freed memory (large
# blocks from the heap, never given back), so that a buffer a call allocates is not faulted in again
# by the next call. Prints one line per (algorithm, malloc, size): the average latency in us.
#
#   bash benchmarks/reduce_temporaries.sh [P] [OSU_BUILD]
#
# P defaults to 2; OSU_BUILD (the folder holding c/mpi/) defaults to a fresh build of
# ../shared/tools/osu by tests/osu_build.sh (which installs Debian's OpenMPI when missing; root).
set -euo pipefail
cd "$(dirname "$0")/.."
P=${1:-2}
source benchmarks/osu_reduce_bin.sh
osu_reduce_bin reduce_temporaries.sh "${2:-}"
echo "# $(mpirun --version | head -n 1); $bin; P=$P; osu_reduce -m 65536:1048576 -i 200 -x 20"
echo "algorithm malloc size avg_us"
keep="MALLOC_MMAP_THRESHOLD_=16777216 MALLOC_TRIM_THRESHOLD_=-1 MALLOC_TOP_PAD_=16777216"
for alg in 1 4 5 6 7; do
  for malloc in default keep; do
    settings=""
    [ "$malloc" = keep ] && settings=$keep
    # shellcheck disable=SC2086  # the settings are words for env
    env $settings mpirun --allow-run-as-root --oversubscribe -np "$P" --bind-to none \
      --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_reduce_algorithm "$alg" \
      "$bin" -m 65536:1048576 -i 200 -x 20 2>/dev/null \
      | awk -v a="$alg" -v m="$malloc" '/^[0-9]/ {print a, m, $1, $2}'
  done
done
