#!/usr/bin/env bash
# Measure a machine nobody measured, from scratch, through the pipeline's own stages: build OSU 7.3
# from its source, describe the node from lscpu, then rounds of plan -> measure -> model ->
# selection (the first design, then what the planner asks for next), and last, while time is left,
# a held-out sample of launches nobody planned (every algorithm at every P, in random order) that
# the rounds' model is scored on afterwards (benchmarks/score_heldout.py).
#
#   bash benchmarks/measure_machine.sh OSU_TARBALL WORKDIR [SECONDS] [NEXT_ROUND_LAUNCHES]
#
# Runs on one node with OpenMPI's mpirun and mpicc on PATH; Python: $PYTHON, else the project's
# .venv (make install), else python3, holding the project's packages. Everything it writes stays under WORKDIR:
# osu_raw/ (the rounds' logs), heldout_raw/ (the held-out logs), results/, mine.yaml (the config,
# a few lines), accepted.csv (the launches run, rounds appended) and timing.txt (seconds per step).
# SECONDS (default 540) bounds the whole script: the held-out sample stops at it, and a killed
# launch leaves no log behind (stage measure writes a log only once OSU ends well).
set -euo pipefail
tarball=$(realpath "${1:?usage: measure_machine.sh OSU_TARBALL WORKDIR [SECONDS] [NEXT_ROUND_LAUNCHES]}")
wd=$(realpath -m "${2:?usage: measure_machine.sh OSU_TARBALL WORKDIR [SECONDS] [NEXT_ROUND_LAUNCHES]}")
budget=${3:-540}
next=${4:-24}
repo=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-$([ -x "$repo/.venv/bin/python" ] && echo "$repo/.venv/bin/python" || echo python3)}  # the project's (make install)
export PYTHONPATH="$repo/src${PYTHONPATH:+:$PYTHONPATH}"
start=$(date +%s)
left() { echo $(( budget - ($(date +%s) - start) )); }
mkdir -p "$wd"
cd "$wd"
: > timing.txt
step() { # name, then the command: its seconds and exit status into timing.txt (a failed round
  # leaves what it measured; the next steps still run)
  local name=$1; shift
  local t0 rc=0; t0=$(date +%s)
  "$@" || rc=$?
  echo "$name $(( $(date +%s) - t0 )) s, exit $rc" | tee -a timing.txt
}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
echo "== $(mpirun --version 2>&1 | head -n 1); $(nproc) CPUs; $(uname -r)"
lscpu | grep -E "^(Model name|Socket|Core|Thread|L3|NUMA node\(s\))" || true

# OSU 7.3 from its source
build() {
  tar -xzf "$tarball" -C "$wd"
  local osu; osu=$(ls -d "$wd"/osu-micro-benchmarks-*/ | head -n 1)
  (cd "$osu" && ./configure CC=mpicc CXX=mpicxx > "$wd/osu-build.log" 2>&1 && make -j"$(nproc)" >> "$wd/osu-build.log" 2>&1) \
    || { tail -n 20 "$wd/osu-build.log"; exit 1; }
  echo "${osu%/}" > "$wd/osu.path"
}
step build_osu build
osu=$(cat osu.path) || exit 1

# what this node's MPI allows: binding to cores, and single-copy transfers between processes
opts=()
if ! mpirun -np 2 --bind-to core true > probe.log 2>&1; then
  echo "binding to cores fails here (probe.log): ranks run unbound"; bind=false
else
  bind=true
fi
lat="$osu/c/mpi/pt2pt/standard/osu_latency"
if ! mpirun -np 2 "$lat" -m 1048576:1048576 -i 5 -x 1 > probe.log 2>&1 || grep -qi "error\|warning" probe.log; then
  echo "single-copy transfers fail here (probe.log): btl_vader_single_copy_mechanism none"; cat probe.log | head -n 5
  opts=(--mca btl_vader_single_copy_mechanism none)
fi

# the config: this node (lscpu), map-by core, where the logs go, OSU; the first design of 3 P per curve
cfg() { "$py" "$repo/benchmarks/machine_config.py" config --osu "$osu" --bind "$bind" --options="${opts[*]-}" "$@"; }
cfg --budget 54 > mine.yaml
cfg --budget "$next" > next.yaml
cfg --raw heldout_raw --launches heldout.csv > heldout.yaml
cat mine.yaml
sm=("$py" -m snakemake -s "$repo/Snakefile" -d "$wd" --cores "$(nproc)")
fitted=(results/selection/rules_map-by-core.txt results/model/validation.csv)

# round 1: the first design; round 2: the planner's next launches, chosen on the first round's model
step plan_1 "${sm[@]}" results/plan/launches.csv --configfile mine.yaml > round1.log 2>&1
cp results/plan/launches.csv accepted.csv || exit 1
step round_1 "${sm[@]}" "${fitted[@]}" --configfile mine.yaml >> round1.log 2>&1
mkdir -p round1 && cp results/model/validation.csv results/selection/regret.csv round1/ || true
step plan_2 "${sm[@]}" results/plan/launches.csv --configfile next.yaml > round2.log 2>&1
if cp results/plan/launches.csv round2_plan.csv; then tail -n +2 round2_plan.csv >> accepted.csv; fi
step round_2 "${sm[@]}" "${fitted[@]}" results/model/predictions.parquet --configfile next.yaml >> round2.log 2>&1

# the held-out sample: launches nobody planned, in random order, one at a time until the time is spent
"$py" "$repo/benchmarks/machine_config.py" heldout accepted.csv > heldout.csv || exit 1
files=$("$py" -c "import csv, os; from collat.plan.jobs import log_path
print(' '.join(f for f in ('heldout_raw/' + log_path(r) for r in csv.DictReader(open('heldout.csv')))
               if not os.path.exists(f)))")  # a log that exists is no target: stage measure never reruns it
t=$(( $(left) - 15 ))
mkdir -p heldout_raw
if [ -n "$files" ] && [ "$t" -gt 30 ]; then
  step heldout timeout "$t" "$py" -m snakemake -s "$repo/Snakefile" -d "$wd" --cores 1 --keep-going $files \
    --configfile heldout.yaml > heldout.log 2>&1 || true
fi
echo "== held-out logs: $(find heldout_raw -name '*.txt' | wc -l) of $(($(wc -l < heldout.csv) - 1))"
