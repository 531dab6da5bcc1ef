#!/usr/bin/env bash
# A real single-node SLURM on localhost for the SLURM test (Debian: slurm-wlm + munge).
#   tests/slurm/cluster.sh install        apt-get install slurm-wlm munge when missing (needs root)
#   tests/slurm/cluster.sh start BASE     write BASE/slurm.conf, start munged, slurmctld, slurmd;
#                                         record their PIDs in BASE/pids; wait until the node is idle
#   tests/slurm/cluster.sh stop BASE      kill the recorded PIDs (and only those)
# Facts behind the configuration: ../shared/reference/slurm-on-localhost.md.
set -euo pipefail

cmd=${1:?usage: cluster.sh install|start BASE|stop BASE}

case "$cmd" in
install)
    if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq slurm-wlm munge >/dev/null
    fi
    ;;
start)
    base=$(realpath -m "${2:?BASE directory}")
    mkdir -p "$base"/{state,spool,pids,log}
    cpus=$(nproc)
    sed -e "s|@BASE@|$base|g" -e "s|@CPUS@|$cpus|g" "$(dirname "$0")/slurm.conf.in" > "$base/slurm.conf"
    # clients find the configuration in configless mode or through /etc/slurm/slurm.conf
    mkdir -p /etc/slurm
    if [ ! -e /etc/slurm/slurm.conf ] || [ -L /etc/slurm/slurm.conf ]; then
        ln -sfn "$base/slurm.conf" /etc/slurm/slurm.conf
    fi
    mkdir -p /run/munge /var/log/munge /var/lib/munge
    chown munge:munge /run/munge /var/log/munge /var/lib/munge 2>/dev/null || true
    [ -f /etc/munge/munge.key ] || { dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 2>/dev/null;
                                     chown munge:munge /etc/munge/munge.key; chmod 400 /etc/munge/munge.key; }
    runuser -u munge -- /usr/sbin/munged --pid-file=/run/munge/munged.pid
    for _ in $(seq 50); do [ -s /run/munge/munged.pid ] && break; sleep 0.1; done
    cp /run/munge/munged.pid "$base/pids/munged.pid"
    slurmctld -D -c -f "$base/slurm.conf" > "$base/log/slurmctld.out" 2>&1 &
    echo $! > "$base/pids/slurmctld.pid.run"
    for _ in $(seq 100); do scontrol ping 2>/dev/null | grep -q UP && break; sleep 0.2; done
    slurmd -D -N localhost --conf-server 127.0.0.1:6817 > "$base/log/slurmd.out" 2>&1 &
    echo $! > "$base/pids/slurmd.pid.run"
    for _ in $(seq 100); do sinfo -h -o %t 2>/dev/null | grep -q idle && break; sleep 0.2; done
    sinfo -h -o "%P %t %c" | grep -q idle || { echo "SLURM node did not become idle; logs in $base/log" >&2; exit 1; }
    echo "SLURM up: $(sinfo -h -o '%P %t %c CPUs')"
    ;;
stop)
    base=$(realpath -m "${2:?BASE directory}")
    for f in "$base"/pids/slurmd.pid.run "$base"/pids/slurmctld.pid.run "$base"/pids/munged.pid; do
        [ -s "$f" ] || continue
        pid=$(cat "$f")
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
        rm -f "$f"
    done
    [ "$(readlink /etc/slurm/slurm.conf 2>/dev/null)" = "$base/slurm.conf" ] && rm -f /etc/slurm/slurm.conf
    true
    ;;
*)
    echo "unknown command $cmd" >&2; exit 2 ;;
esac
