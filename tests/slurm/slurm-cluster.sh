#!/usr/bin/env bash
# slurm-cluster.sh - a throwaway one-node Slurm cluster (Debian's Slurm 22.05) for kforge's
# Slurm tests. Run as root; no systemd needed (the daemons are started directly).
#
#   D=$(slurm-cluster.sh up)   munged + slurmctld + slurmd with every path under a fresh
#                              /tmp/kforge-slurm.XXXXXX; waits until the node is idle; prints
#                              the directory. $D/etc/slurm.conf is the cluster's SLURM_CONF.
#   slurm-cluster.sh down D    cancels every job, stops the daemons by PID, removes D.
#
# Knobs: SLURM_CPUS (CPUs the node advertises, default 8: more than the machine has, so array
# tasks run side by side), SLURM_GPUS (fake gres GPUs, default 2), SLURM_UP_TIMEOUT (s, 60).
#
# Notes: munged wants every directory above its socket world-traversable (0711); cgroup plugins
# are off (proctrack/linuxproc, task/none) so two clusters never share system cgroups; without
# slurmdbd there is no sacct: scontrol -o show job and the jobcomp file tell a task's end
# (MinJobAge keeps finished jobs visible); running jobs outlive slurmd, so down cancels first.
set -euo pipefail

log() { echo "slurm-cluster: $*" >&2; }

port_free() {
    if command -v ss >/dev/null; then
        ! ss -Htln "sport = :$1" | grep -q .
    else
        ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
    fi
}

pick_ports() { # first of 2 consecutive free TCP ports, below the kernel's ephemeral range
    local p i low
    low=$(awk '{print $1}' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
    [ "$low" -gt 12000 ] 2>/dev/null || low=32768
    for i in $(seq 1 100); do
        p=$((10000 + RANDOM % (low - 10002)))
        port_free "$p" && port_free $((p + 1)) && { echo "$p"; return 0; }
    done
    return 1
}

kill_pidfile() { # kill_pidfile FILE NAME: SIGTERM the PID in FILE if it is NAME; echo it
    local f=$1 name=$2 pid
    [ -s "$f" ] || return 0
    pid=$(cat "$f")
    if [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "$name"; then
        kill -TERM "$pid" 2>/dev/null && echo "$pid"
    fi
    return 0
}

wait_pids() { # up to 15 s, then SIGKILL
    local i p alive
    for i in $(seq 1 150); do
        alive=""
        for p in $1; do kill -0 "$p" 2>/dev/null && alive="$alive $p"; done
        [ -z "$alive" ] && return 0
        sleep 0.1
    done
    for p in $1; do kill -0 "$p" 2>/dev/null && kill -KILL "$p" 2>/dev/null; done
    return 0
}

do_down() {
    local D=${1:?usage: slurm-cluster.sh down DIR}
    [ -f "$D/.kforge-slurm" ] || { log "$D is not a cluster directory"; return 1; }
    export SLURM_CONF=$D/etc/slurm.conf
    if [ -s "$D/slurmctld.pid" ] && kill -0 "$(cat "$D/slurmctld.pid")" 2>/dev/null; then
        scancel --partition=debug 2>/dev/null || true
        local t=0
        while [ -n "$(squeue -h -o %i 2>/dev/null)" ] && [ $t -lt 100 ]; do sleep 0.1; t=$((t + 1)); done
    fi
    wait_pids "$(kill_pidfile "$D/slurmd.pid" slurmd) $(kill_pidfile "$D/slurmctld.pid" slurmctld)"
    wait_pids "$(kill_pidfile "$D/munge/munged.pid" munged)"
    rm -rf "$D"
}

do_up() {
    local cpus=${SLURM_CPUS:-8} gpus=${SLURM_GPUS:-2}
    local deadline=$((SECONDS + ${SLURM_UP_TIMEOUT:-60}))
    local host mem port D
    for c in slurmctld slurmd sbatch munged mungekey; do
        command -v $c >/dev/null || { log "$c not installed (scripts/bootstrap installs it)"; return 1; }
    done
    host=$(hostname -s)
    mem=$(awk '/^MemTotal:/ {print int($2 / 1024 * 0.9)}' /proc/meminfo)
    port=$(pick_ports)
    D=$(mktemp -d /tmp/kforge-slurm.XXXXXX)
    touch "$D/.kforge-slurm"
    chmod 711 "$D"
    mkdir -p "$D/munge" "$D/etc" "$D/state" "$D/spool" "$D/log" "$D/dev"
    chmod 711 "$D/munge"
    chmod 755 "$D/etc" "$D/log" "$D/dev"
    export SLURM_CONF=$D/etc/slurm.conf

    mungekey -c -k "$D/munge/munge.key" -b 1024
    munged --socket="$D/munge/munge.sock" --key-file="$D/munge/munge.key" \
        --pid-file="$D/munge/munged.pid" --log-file="$D/munge/munged.log" \
        --seed-file="$D/munge/munged.seed" </dev/null >>"$D/log/daemons.out" 2>&1

    local gres_node="" gres_types="" i
    if [ "$gpus" -gt 0 ]; then
        for i in $(seq 0 $((gpus - 1))); do mknod "$D/dev/nvidia$i" c 1 3; done
        gres_node="Gres=gpu:$gpus"
        gres_types="GresTypes=gpu"
        printf 'AutoDetect=off\nNodeName=%s Name=gpu File=%s/dev/nvidia[0-%d]\n' \
            "$host" "$D" $((gpus - 1)) >"$D/etc/gres.conf"
    fi

    cat >"$D/etc/slurm.conf" <<CONF
ClusterName=kforge
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$D/munge/munge.sock
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc=$D/log/jobcomp.txt
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0
SlurmdParameters=config_overrides
MpiDefault=none
ReturnToService=2
KillWait=5
MinJobAge=3600
MailProg=/bin/true
$gres_types
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus Sockets=1 CoresPerSocket=$cpus ThreadsPerCore=1 RealMemory=$mem $gres_node State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF

    local state=""
    slurmctld </dev/null >>"$D/log/daemons.out" 2>&1 || true
    slurmd </dev/null >>"$D/log/daemons.out" 2>&1 || true
    while [ $SECONDS -lt "$deadline" ]; do
        state=$(sinfo -h -N -n "$host" -o %T 2>/dev/null || true)
        [ "$state" = idle ] && break
        grep -q "Address already in use" "$D"/log/*.log 2>/dev/null && break
        sleep 0.2
    done
    if [ "$state" != idle ]; then
        if grep -q "Address already in use" "$D"/log/*.log 2>/dev/null; then
            log "port $port or $((port + 1)) was taken before the daemons bound it; trying others"
            do_down "$D" || true
            return 2
        fi
        log "cluster not ready (node state '$state'); logs:"
        tail -n 30 "$D"/log/*.log "$D/log/daemons.out" "$D/munge/munged.log" >&2 || true
        do_down "$D" || true
        return 1
    fi
    echo "$D"
}

case "${1:-}" in
up) # a port taken between the check and the bind (another cluster, a connection) is retried
    for attempt in 1 2 3; do
        rc=0
        do_up || rc=$?
        [ "$rc" -eq 2 ] || exit "$rc"
    done
    exit 1 ;;
down) shift; do_down "$@" ;;
*) echo "usage: $0 up | down DIR" >&2; exit 2 ;;
esac
