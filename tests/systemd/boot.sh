#!/bin/bash
# Boots a real systemd (the host's /lib/systemd/systemd) as PID 1 of private pid, mount, cgroup,
# uts and ipc namespaces, on a throw-away overlay of the host root (the host's / is the read-only
# lower layer, a tmpfs the upper one), for tests that need systemd on a machine whose PID 1 is
# not systemd. The network namespace is the host's: ports on 127.0.0.1 are shared.
#
# Sourced by a test (needs root):   source boot.sh; trap sd_down EXIT; sd_boot; IN systemctl ...
#   sd_boot        boots ci.target (basic.target, no host services) and waits until it is up;
#                  sets SD (the host pid of that systemd) and SD_ROOT (/proc/$SD/root: its
#                  file system, writable from the host)
#   IN CMD...      runs CMD inside (all its namespaces), with a 90 s timeout inside
#   sd_down        powers it off and removes everything (the caller traps it on EXIT)
#
# Why it is done this way (each point was a failure first):
# - never the host root read-write: tmpfiles would clean the host's /tmp, journald write the
#   host's /var/log/journal, multi-user.target start the host's services;
# - /proc/sys read-only, binfmt, modules-load and sysctl masked: they would change the host kernel;
#   SD_PROC_SYS=rw leaves /proc/sys writable (the units stay masked) for a test whose service
#   makes user namespaces that mount a fresh /proc: the kernel allows that only where the
#   namespace's /proc is fully visible, without a locked mount over a part of it (as on a host
#   booted normally; a read-only /proc/sys bind makes every inner proc mount fail with EPERM);
# - PID 1 logs to /dev/console, which must be a tty: it runs under `script`, whose pty is bound
#   on the overlay's /dev/console (its output: $SD_WORK/console.log);
# - `timeout` goes inside nsenter: outside, it leaves a zombie that delays the shutdown;
# - SIGTERM re-executes systemd as PID 1: SIGRTMIN+4 powers it off, then kill -9 ends the pid
#   namespace; kill -0 succeeds on a zombie, so State: is read from /proc/PID/status;
# - MemoryMax=, TasksMax=, CPUQuota= are accepted but do nothing here (the VM's init holds the
#   cgroup v1 controllers).
set -euo pipefail

if [ "${1:-}" = __inner ]; then  # ---- PID 1 of the new namespaces, before it becomes systemd
  W=$2
  R=$W/root
  read -r HPID _ </proc/self/stat
  echo "$HPID" >"$W/sd.pid"  # our pid on the host (the host's /proc is still mounted)
  mount -t tmpfs -o mode=755 sd-ovl "$W/ovl"
  mkdir "$W/ovl/upper" "$W/ovl/work"
  mount -t overlay overlay -o "lowerdir=/,upperdir=$W/ovl/upper,workdir=$W/ovl/work" "$R"
  mount -t proc proc "$R/proc"
  if [ "${3:-ro}" != rw ]; then
    mount --bind "$R/proc/sys" "$R/proc/sys"
    mount -o remount,bind,ro "$R/proc/sys"
  fi
  mount -t sysfs -o ro,nosuid,nodev,noexec sysfs "$R/sys"
  mount -t cgroup2 -o nosuid,nodev,noexec cgroup2 "$R/sys/fs/cgroup"
  mount --rbind /dev "$R/dev"
  mount --bind "$(tty)" "$R/dev/console"
  mount -t tmpfs -o mode=755,nosuid,nodev tmpfs "$R/run"
  mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$R/tmp"
  mkdir -p "$R/etc/systemd/system" "$R/etc/systemd/journald.conf.d"
  cat >"$R/etc/systemd/system/ci.target" <<'UNIT'
[Unit]
Description=Test boot target (basic.target only)
Requires=basic.target
After=basic.target
AllowIsolate=yes
UNIT
  printf '[Journal]\nStorage=volatile\nReadKMsg=no\n' >"$R/etc/systemd/journald.conf.d/ci.conf"
  for u in timers.target systemd-binfmt.service proc-sys-fs-binfmt_misc.automount \
    systemd-modules-load.service systemd-sysctl.service getty.target; do
    ln -sf /dev/null "$R/etc/systemd/system/$u"
  done
  cd "$R"
  mkdir .oldroot
  pivot_root . .oldroot
  umount -l /.oldroot
  rmdir /.oldroot
  exec env -i container=kforge-test /lib/systemd/systemd --unit=ci.target --show-status=no
fi

SD=""
SD_ROOT=""
SD_WORK=""
_SD_UPID=""
_SD_CG=""

_sd_alive() {
  [ -n "$1" ] && [ -e "/proc/$1" ] && ! grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null
}

IN() { nsenter -t "$SD" -a timeout 90 "$@"; }

sd_down() {
  set +e
  [ -n "$_SD_UPID" ] || return 0
  _sd_alive "$SD" && kill -RTMIN+4 "$SD"  # poweroff: PID 1 of a container exits
  for _ in $(seq 100); do _sd_alive "$_SD_UPID" || break; sleep 0.1; done
  _sd_alive "$SD" && kill -9 "$SD"  # PID 1 dies: the kernel kills the whole pid namespace
  for _ in $(seq 20); do _sd_alive "$_SD_UPID" || break; sleep 0.1; done
  _sd_alive "$_SD_UPID" && kill -9 "$_SD_UPID"
  wait "$_SD_UPID" 2>/dev/null
  [ -n "$_SD_CG" ] && find "$_SD_CG" -depth -type d -exec rmdir {} + 2>/dev/null
  if [ -n "${KEEP:-}" ]; then echo "kept $SD_WORK"; else rm -rf "$SD_WORK"; fi
  _SD_UPID=""
}

sd_boot() {
  local self cg
  self=$(realpath "${BASH_SOURCE[0]}")
  SD_WORK=$(mktemp -d /tmp/kforge-sd.XXXXXX)
  cg=/sys/fs/cgroup/unified
  [ -d "$cg" ] || cg=/sys/fs/cgroup
  _SD_CG=$cg/${SD_WORK##*/}
  mkdir "$SD_WORK/ovl" "$SD_WORK/root" "$_SD_CG"
  (
    echo $BASHPID >"$_SD_CG/cgroup.procs"
    exec script -qfec "exec unshare --pid --fork --kill-child --mount --propagation private \
      --cgroup --uts --ipc -- $self __inner $SD_WORK ${SD_PROC_SYS:-ro}" "$SD_WORK/console.log"
  ) </dev/null >/dev/null 2>&1 &
  _SD_UPID=$!
  for _ in $(seq 300); do
    [ -z "$SD" ] && [ -s "$SD_WORK/sd.pid" ] && SD=$(cat "$SD_WORK/sd.pid")
    [ -n "$SD" ] && [ -S "/proc/$SD/root/run/systemd/private" ] && break
    _sd_alive "$_SD_UPID" || break
    sleep 0.05
  done
  if [ -z "$SD" ] || [ ! -S "/proc/$SD/root/run/systemd/private" ]; then
    echo "systemd did not come up; console:"
    cat "$SD_WORK/console.log"
    return 1
  fi
  SD_ROOT=/proc/$SD/root
  local state
  state=$(IN systemctl is-system-running --wait || true)
  echo "systemd $(IN systemctl --version | head -n 1 | cut -d' ' -f2) up as host pid $SD ($state)"
}
