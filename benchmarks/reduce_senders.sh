#!/usr/bin/env bash
# When a reduce sender's call ends: osu_reduce with OpenMPI's linear reduce (every rank sends its
# vector to the root, which takes them one after another) at P ranks, with OSU's -f (min, avg and
# max over the ranks). At P = 2 the min is the sender's time and the max the root's: where the two
# are equal, the sender's MPI_Send ends only when the root has taken its message (what the model
# calls rendezvous: model.openmpi.eager_limit and the calibrated wait shares), not when the message
# is out. Prints one line per size: size, avg, min, max (us) and min / max.
#
#   bash benchmarks/reduce_senders.sh [P] [OSU_BUILD] [MCA...]
#
# P defaults to 2; OSU_BUILD (the folder holding c/mpi/) defaults to a fresh build of
# ../shared/tools/osu by tests/osu_build.sh (which installs Debian's OpenMPI when missing; root);
# further words are passed to mpirun (e.g. --mca btl self,vader).
set -euo pipefail
cd "$(dirname "$0")/.."
P=${1:-2}
source benchmarks/osu_reduce_bin.sh
osu_reduce_bin reduce_senders.sh "${2:-}"
shift $(( $# < 2 ? $# : 2 ))
echo "# $(mpirun --version | head -n 1); $bin; P=$P; linear reduce; osu_reduce -f -m 1:1048576 -i 2000 -x 200 $*"
echo "size avg_us min_us max_us min_over_max"
mpirun --allow-run-as-root -np "$P" --bind-to core "$@" \
  --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_reduce_algorithm 1 \
  "$bin" -f -m 1:1048576 -i 2000 -x 200 2>/dev/null \
  | awk '/^[0-9]/ {printf "%s %s %s %s %.2f\n", $1, $2, $3, $4, ($4 > 0 ? $3 / $4 : 0)}'
