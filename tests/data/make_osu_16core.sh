#!/usr/bin/env bash
# Real OSU 7.3 logs of a "16-core, one-socket, two-L3 node" for the end-to-end test of a user's own
# machine (tests/test_workflow.py::test_a_16_core_machine_from_a_short_config): written by the real
# binaries under Debian's OpenMPI, oversubscribed on whatever machine runs this (the timings mean
# nothing; the chain from logs to rules file is what the test checks). Named as the default path
# patterns want them (resources/osu_raw/README.md), so that the config needs no pattern.
#
#   bash tests/data/make_osu_16core.sh OSU_BUILD_DIR OUT_DIR
#
# OSU_BUILD_DIR: an OSU 7.3 tree built against mpicc (../shared/tools/osu/README.md).
set -euo pipefail
osu=$1
out=$2
mpi=(mpirun --allow-run-as-root --oversubscribe --bind-to none)
forced=(--mca coll_tuned_use_dynamic_rules 1)
run() { # file, then the command
  local file=$1; shift
  mkdir -p "$(dirname "$out/$file")"
  "$@" > "$out/$file" 2>&1
}
# point-to-point: receivers on core 0's L3 (cache) and on the other L3 (core)
for r in 1 5; do run "pt2pt/cache/recv$r.txt" "${mpi[@]}" -np 2 "$osu/c/mpi/pt2pt/standard/osu_latency" -m 1:65536 -i 200 -x 20; done
for r in 8 12; do run "pt2pt/core/recv$r.txt" "${mpi[@]}" -np 2 "$osu/c/mpi/pt2pt/standard/osu_latency" -m 1:65536 -i 200 -x 20; done
# NBFT: a flat tree (algorithm 1) whose receivers sit on one channel
for op in bcast reduce; do
  for ch in cache core; do
    for P in 2 4 6 8; do
      run "nbft/$op/$ch/np$P.txt" "${mpi[@]}" -np $P "${forced[@]}" --mca coll_tuned_${op}_algorithm 1 \
        "$osu/c/mpi/collective/blocking/osu_$op" -f -m 1:65536 -i 10 -x 2
    done
  done
done
# collectives under --map-by core, every algorithm of OpenMPI 4.1 and the default (0)
for P in 2 3 4 5 6 8 10 12 14 16; do
  for alg in 0 1 2 3 4 5 6 7 8 9; do
    run "bcast/core/alg$alg/np$P.txt" "${mpi[@]}" -np $P "${forced[@]}" --mca coll_tuned_bcast_algorithm $alg \
      "$osu/c/mpi/collective/blocking/osu_bcast" -f -m 1:65536 -i 10 -x 2
  done
  for alg in 0 1 2 3 4 5 6 7; do
    run "reduce/core/alg$alg/np$P.txt" "${mpi[@]}" -np $P "${forced[@]}" --mca coll_tuned_reduce_algorithm $alg \
      "$osu/c/mpi/collective/blocking/osu_reduce" -f -m 4:65536 -i 10 -x 2
  done
done
