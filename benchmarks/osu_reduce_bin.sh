# Sourced by the benchmarks that run osu_reduce: `osu_reduce_bin NAME [OSU_BUILD]` sets $bin to
# osu_reduce under OSU_BUILD (the folder holding c/mpi/), or under a fresh build of
# ../shared/tools/osu by tests/osu_build.sh when none is given (removed on exit). NAME starts the
# one line that says why there is none.
osu_reduce_bin() {
  local name=$1 osu=${2:-}
  if [ -z "$osu" ]; then
    build=$(mktemp -d /tmp/collat-osu.XXXXXX)
    trap 'rm -rf "$build"' EXIT INT TERM
    osu=$(bash tests/osu_build.sh "$build")
    [ -n "$osu" ] || { echo "$name: no OSU build: ../shared/tools/osu is missing (or pass OSU_BUILD)" >&2; exit 1; }
  fi
  [ -d "$osu" ] || { echo "$name: no folder $osu (OSU_BUILD: the folder holding c/mpi/)" >&2; exit 1; }
  bin=$(find "$osu" -name osu_reduce -type f -perm -u+x | head -n 1)
  [ -n "$bin" ] || { echo "$name: no osu_reduce under $osu" >&2; exit 1; }
}
