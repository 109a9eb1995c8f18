#!/bin/bash
# kforged under a real systemd 252, installed from the Debian package (scripts/package), on a
# throw-away overlay of this machine (boot.sh). Needs root and the systemd package; otherwise it
# skips (exit 77) saying why.
#
#   kforged_systemd_test.sh service   install, enable, a v2 run as user kforge: READY and STATUS,
#                                     kill -9 (restart, nothing paid twice), reload (SIGHUP),
#                                     watchdog (a stalled main loop), stop (drain), the journal,
#                                     user kforge and the shipped hardening, purge
#   kforged_systemd_test.sh hostile   the verifier on (CPU) with hostile samples among the
#                                     generated ones: the daemon survives them all
#
# The provider is kforge-fake-llm on the host's 127.0.0.1 (the namespaces share the host's
# network), named in /etc/kforge/kforged.env as the package's users would name theirs. The only
# changes to the shipped unit are a drop-in with shorter WatchdogSec= and RestartSec= (the test
# waits for them). The stalled daemon of the watchdog case is a SIGSTOP from outside: the
# product has no test switch (the loop's own watchdog rule is tested in-process, with a
# ManualClock, in tests/kforged/daemon_loop_test.cpp).
# corpus.json: 20 records of TritonBench_G_v1.json (thunlp/TritonBench, Apache-2.0).
set -euo pipefail
phase=${1:-service}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
build=${KFORGE_BUILD_DIR:-$src/build}

skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root (namespaces, an overlay mount and dpkg -i)"
[ -x /lib/systemd/systemd ] || skip "no /lib/systemd/systemd (apt-get install systemd)"
for tool in unshare nsenter script dpkg-shlibdeps python3 sqlite3 zstd; do
  command -v "$tool" >/dev/null || skip "no $tool (scripts/bootstrap installs it)"
done

T0=$(date +%s%N)
el() { echo "$((($(date +%s%N) - T0) / 1000000)) ms"; }
say() { echo "[$(el)] $*"; }
die() {
  echo "FAIL: $*"
  if [ -n "${SD:-}" ]; then
    echo "--- systemctl status"; IN systemctl status --no-pager kforged 2>&1 | sed -n 1,25p || true
    echo "--- journal"; IN journalctl --no-pager -u kforged -o short-monotonic 2>&1 | tail -n 80 || true
    echo "--- jobs"
    IN sqlite3 -readonly /var/lib/kforge/kforge.db "SELECT state, stage, error_kind, substr(replace(error, char(10), ' '), 1, 200) FROM jobs" 2>&1 | sort | uniq -c || true
    echo "--- verifications"
    IN sqlite3 -readonly /var/lib/kforge/kforge.db "SELECT job_id, attempt, verdict, instr(script, 'HOSTILE') > 0, substr(replace(detail, char(10), ' '), 1, 160) FROM verifications" 2>&1 || true
  fi
  exit 1
}
check() { local what=$1; shift; "$@" >/dev/null || die "$what"; }

# ---- the package (reuses the build directory; prints the .deb last)
say "building the package"
deb=$(BUILD_DIR=$build "$src/scripts/package" 2>"$build/package.log" | tail -n 1) ||
  { tail -n 30 "$build/package.log"; die "scripts/package failed"; }
[ -f "$deb" ] || die "scripts/package printed '$deb', not a file"
say "package: $deb"

# ---- the fake provider on the host
work=$(mktemp -d /tmp/kforge-systemd-test.XXXXXX)
fake_pid=""
cleanup_host() {
  [ -n "$fake_pid" ] && kill "$fake_pid" 2>/dev/null && wait "$fake_pid" 2>/dev/null
  rm -rf "$work"
}
script=$work/fake.yaml
if [ "$phase" = hostile ]; then
  # The pipeline example, with the hostile answers of hostile-rules.yaml tried first.
  sed "/^rules:\$/r $here/hostile-rules.yaml" "$src/apps/kforge-fake-llm/examples/pipeline.yaml" \
    >"$script"
else
  # The pipeline example, with answers slow enough that the run is still going at the kill.
  sed 's/^  latency_ms: 5$/  latency_ms: 1200/' "$src/apps/kforge-fake-llm/examples/pipeline.yaml" \
    >"$script"
  grep -q 'latency_ms: 1200' "$script" || die "the example's latency_ms line changed"
fi
"$build/apps/kforge-fake-llm/kforge-fake-llm" --port 0 --port-file "$work/port" \
  --script "$script" >"$work/fake.log" 2>&1 &
fake_pid=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.05; done
[ -s "$work/port" ] || die "kforge-fake-llm did not start: $(cat "$work/fake.log")"
port=$(cat "$work/port")
fake() { python3 -c "import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())" "http://127.0.0.1:$port/$1"; }
fake_stat() { fake _stats | python3 -c "import json,sys; print(json.load(sys.stdin)$1)"; }

# ---- systemd
source "$here/boot.sh"
# The hostile case's verifier runs as kforge, through a user namespace whose samples mount a fresh
# /proc: that needs the container's /proc fully visible (boot.sh says why), as on a real host.
if [ "$phase" = hostile ]; then export SD_PROC_SYS=rw; fi
trap 'sd_down; cleanup_host' EXIT
sd_boot || die "systemd did not boot"
R=$SD_ROOT
prop() { IN systemctl show -P "$1" kforged; }
waitfor() {  # waitfor SECONDS WHAT CMD...: until CMD succeeds
  local n=$(($1 * 10)) what=$2
  shift 2
  for _ in $(seq "$n"); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  die "timed out after ${n}00 ms waiting for: $what"
}
q() { IN sqlite3 -readonly /var/lib/kforge/kforge.db "$1"; }  # the daemon's database, inside
as_kforge() { IN runuser -u kforge -- "$@"; }

# ---- install
# A container image's policy-rc.d (exit 101) would stop the maintainer scripts from restarting
# the service, as it should in an image build: this overlay is a booted system.
rm -f "$R/usr/sbin/policy-rc.d"
# man-db's trigger (rebuilding its index for the manual pages) costs seconds per dpkg call.
rm -f "$R/var/lib/man-db/auto-update"
cp "$deb" "$R/tmp/kforge.deb"
IN dpkg -i /tmp/kforge.deb >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log"; die "dpkg -i failed"; }
say "installed: $(IN dpkg-query -W -f='${Package} ${Version}' kforge)"
check "the unit is enabled" test "$(IN systemctl is-enabled kforged)" = enabled
check "the unit is not started by the install" test "$(prop ActiveState)" = inactive
check "user kforge exists" IN id kforge
check "the unit's supplementary groups exist" IN getent group video render
check "/var/lib/kforge is kforge's, setgid, group-writable" \
  test "$(IN stat -c '%U:%G %a' /var/lib/kforge)" = "kforge:kforge 2770"
check "the database is made at install, group-writable" \
  test "$(IN stat -c '%U:%G %a' /var/lib/kforge/kforge.db)" = "kforge:kforge 660"
conffiles=$(IN dpkg-query -W -f='${Conffiles}\n' kforge)
check "kforge.yaml is a conffile" grep -qx ' /etc/kforge/kforge.yaml [0-9a-f]*' <<<"$conffiles"
IN systemd-analyze verify /lib/systemd/system/kforged.service >"$work/verify.log" 2>&1 ||
  { cat "$work/verify.log"; die "systemd-analyze verify kforged.service"; }

# The provider and the test's settings, as a user names them: the unit's EnvironmentFile.
env_file() {
  {
    echo "OPENAI_API_KEY=sk-systemd-test-secret"
    echo "KFORGE_LLM_BASE_URL=http://127.0.0.1:$port/v1"
    echo "KFORGE_PIPELINE_MAX_IN_FLIGHT=4"
    echo "KFORGE_DAEMON_STATUS_INTERVAL_MS=300"
    echo "KFORGE_DAEMON_HTTP_LISTEN=127.0.0.1:0"
    echo "KFORGE_DAEMON_SHUTDOWN_GRACE_MS=20000"
    if [ "$phase" = hostile ]; then
      echo "KFORGE_DAEMON_VERIFY=true"
      echo "KFORGE_VERIFIER_DEVICES=cpu"
      echo "KFORGE_VERIFIER_CPU_WORKERS=2"
      echo "KFORGE_VERIFIER_TIMEOUT_S=20"
      echo "KFORGE_VERIFIER_MEMORY_CAP_MB=512"
      echo "KFORGE_VERIFIER_PYTHON=/usr/bin/python3"
      # Without torch and Triton here, stubs let the samples import (tests/systemd/stubs).
      if ! python3 -c 'import torch, triton' 2>/dev/null; then
        echo "KFORGE_VERIFIER_PYTHON_PATH=/usr/local/lib/kforge-test-stubs"
      fi
    else
      echo "KFORGE_DAEMON_VERIFY=false"
    fi
  } >"$R/etc/kforge/kforged.env"
  chmod 0600 "$R/etc/kforge/kforged.env"
}
mkdir -p "$R/usr/local/lib/kforge-test-stubs"
cp -r "$here/stubs/." "$R/usr/local/lib/kforge-test-stubs/"
chmod -R a+rX "$R/usr/local/lib/kforge-test-stubs"
env_file
mkdir -p "$R/etc/systemd/system/kforged.service.d"
printf '[Service]\nWatchdogSec=5s\nRestartSec=1s\n' >"$R/etc/systemd/system/kforged.service.d/test.conf"
IN systemctl daemon-reload

# ---- as user kforge: import and create a run on the system database (/etc/kforge/kforge.yaml)
cp "$here/corpus.json" "$R/tmp/corpus.json"
chmod 0644 "$R/tmp/corpus.json"
as_kforge kforge import /tmp/corpus.json \
  --map code=output,description_1=simp_instru,description_2=comp_instru --key file \
  >"$work/import.log" 2>&1 || { cat "$work/import.log"; die "kforge import as kforge"; }
as_kforge kforge run create main --pipeline v2 >"$work/run.log" 2>&1 ||
  { cat "$work/run.log"; die "kforge run create as kforge"; }
status=$(as_kforge kforge status)
check "the CLI names the system database" grep -q 'database   /var/lib/kforge/kforge.db' <<<"$status"
check "20 jobs queued" test "$(q "SELECT count(*) FROM jobs")" = 20
say "imported 20 records and created run main as kforge"

if [ "$phase" = hostile ]; then
  IN systemctl start kforged || die "systemctl start kforged"
  pid0=$(prop MainPID)
  say "started, pid $pid0; waiting for every sample's verdict"
  done_n() { test "$(q "SELECT count(*) FROM jobs WHERE state IN ('done','failed')")" = 20; }
  waitfor 90 "every job done or failed" done_n
  check "kforged is still active" test "$(prop ActiveState)" = active
  check "kforged was never restarted (pid $pid0)" test "$(prop MainPID)" = "$pid0"
  check "NRestarts is 0" test "$(prop NRestarts)" = 0
  # The hostile samples: first-round verifications of jobs whose generated answer says HOSTILE
  # (a sample killed before its report has no stored script, so the answer tells them apart).
  # Answers are kept in `texts`, zstd-compressed from 256 bytes on (migration 0015).
  answer_has() {
    local ids
    ids=$(IN python3 - /var/lib/kforge/kforge.db "$1" <<'PY'
import sqlite3, subprocess, sys, tempfile
db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
def unpack(codec, body, dict_codec=None, dict_body=None):
    data = body.encode() if isinstance(body, str) else body
    if codec != "zstd":
        return data
    if dict_body is None:
        return subprocess.run(["zstd", "-dcq"], input=data, capture_output=True, check=True).stdout
    with tempfile.NamedTemporaryFile() as d:  # compressed against a dictionary text (the prompts)
        d.write(unpack(dict_codec, dict_body))
        d.flush()
        return subprocess.run(["zstd", "-dcq", "-D", d.name], input=data, capture_output=True,
                              check=True).stdout
ids = []
for job, *text in db.execute(
        "SELECT o.job_id, t.codec, t.body, d.codec, d.body FROM stage_outputs o JOIN texts t ON "
        "t.id = o.response_text LEFT JOIN texts d ON d.id = t.dict WHERE o.repair_round = 0"):
    data = unpack(*text)
    if sys.argv[2].encode() in data:
        ids.append(str(job))
print(",".join(ids) or "NULL")
PY
    )
    echo "v.job_id IN ($ids)"
  }
  hv="FROM verifications v WHERE v.repair_round = 0 AND $(answer_has 'HOSTILE:')"
  hostile=$(q "SELECT count(*) $hv")
  check "the 4 hostile samples were verified ($hostile)" test "$hostile" = 4
  # Killing every process it can reach hits nothing outside its PID namespace, so that sample
  # goes on to pass; the others cannot: the deadline or the memory cap ends them.
  check "no hostile sample passed but the one whose attack reaches nothing" \
    test "$(q "SELECT count(*) $hv AND v.verdict = 'passed' AND NOT $(answer_has 'HOSTILE: SIGKILL to every process')")" = 0
  check "each sample's PID namespace had the packaged kforge-sandbox-init as its init" \
    test "$(q "SELECT count(*) FROM verifications WHERE json_extract(result_json, '\$.sandbox.init') = 'spawn'")" -gt 0
  check "the database is intact" test "$(q 'PRAGMA integrity_check')" = ok
  check "the configuration is intact" IN grep -q '^store:' /etc/kforge/kforge.yaml
  q "SELECT verdict, count(*) FROM verifications GROUP BY verdict" | sed 's/^/  verdicts: /'
  q "SELECT v.verdict, substr(replace(v.detail, char(10), ' '), 1, 160) $hv" | sed 's/^/  hostile: /'
  t=$(date +%s%N)
  IN systemctl stop kforged
  say "stopped in $((($(date +%s%N) - t) / 1000000)) ms; hostile samples survived"
  echo "PASS ($(el))"
  exit 0
fi

# ---- start: READY, STATUS with progress, user and hardening
t=$(date +%s%N)
IN systemctl start kforged || die "systemctl start kforged"
say "systemctl start returned after $((($(date +%s%N) - t) / 1000000)) ms (Type=notify: READY=1)"
check "active/running" test "$(prop ActiveState)/$(prop SubState)" = active/running
status_has_progress() { prop StatusText | grep -Eq '^main [0-9]+/20 jobs ended \('; }
waitfor 10 "STATUS= with the run's progress" status_has_progress
say "STATUS: $(prop StatusText)"
pid=$(prop MainPID)
check "runs as kforge" test "$(IN ps -o user= -p "$pid")" = kforge
check "NoNewPrivileges" IN grep -q '^NoNewPrivs:[[:space:]]*1' "/proc/$pid/status"
check "no capabilities" IN grep -q '^CapBnd:[[:space:]]*0000000000000000' "/proc/$pid/status"
check "ProtectSystem=strict: /usr read-only for the service" \
  IN nsenter -t "$pid" -m sh -c 'findmnt -n -o OPTIONS --target /usr/bin | grep -q "^ro"'
check "ProtectSystem=strict: /etc read-only for the service" \
  IN nsenter -t "$pid" -m sh -c 'findmnt -n -o OPTIONS --target /etc | grep -q "^ro"'
check "the state directory writable for the service" \
  IN nsenter -t "$pid" -m sh -c 'findmnt -n -o OPTIONS --target /var/lib/kforge | grep -q "^rw"'
check "ProtectHome" IN nsenter -t "$pid" -m sh -c '! ls /root >/dev/null 2>&1 || [ -z "$(ls -A /root)" ]'

# ---- reload: SIGHUP re-reads the configuration, same process
IN systemctl reload kforged
reloaded() { IN journalctl --no-pager -u kforged -o cat | grep -q 'SIGHUP: reloaded /etc/kforge/kforge.yaml'; }
waitfor 10 "the reload's log line" reloaded
check "reload kept the process" test "$(prop MainPID)" = "$pid"
say "reload: SIGHUP handled by pid $pid"

# ---- an online backup while the daemon writes (docs/OPERATIONS.md)
IN sqlite3 /var/lib/kforge/kforge.db ".backup /root/backup.db"
check "the online backup is consistent" test "$(IN sqlite3 /root/backup.db 'PRAGMA integrity_check')" = ok
check "the backup holds the run" test "$(IN sqlite3 /root/backup.db "SELECT count(*) FROM jobs")" = 20
say "online backup while running: ok"

# ---- kill -9 mid-run: restarted, leases taken back, nothing stored is asked again
some_answers() { test "$(q "SELECT count(*) FROM llm_calls WHERE status = 'ok'")" -ge 8; }
waitfor 60 "8 answers stored" some_answers
# (inside: SQLite resolves the /proc/PID/root link to the host's own root)
IN python3 - /var/lib/kforge/kforge.db >"$work/durable" <<'PY'
import sqlite3, sys
db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
# texts.sha256 is the SHA-256 of the request's bytes (migration 0015)
for (sha,) in db.execute("SELECT lower(hex(t.sha256)) FROM llm_calls c JOIN texts t ON "
                         "t.id = c.request_text WHERE c.status = 'ok'"):
    print(sha)
PY
leased=$(q "SELECT count(*) FROM jobs WHERE state = 'leased'")
mid_status=$(prop StatusText)
check "STATUS= shows the run's progress and rate mid-run ($mid_status)" \
  grep -Eq '^main [0-9]+/20 jobs ended \([0-9]+%\), [0-9]+ past the LLM stages, [0-9]+ at the verifier, [0-9]+/min' <<<"$mid_status"
say "STATUS mid-run: $mid_status"
IN kill -9 "$pid"
say "kill -9 $pid with $(wc -l <"$work/durable") answers stored and $leased jobs leased"
restarted() { [ "$(prop NRestarts)" = 1 ] && [ "$(prop SubState)" = running ] && [ "$(prop MainPID)" != "$pid" ]; }
waitfor 30 "the restart after kill -9" restarted
pid=$(prop MainPID)
say "restarted as pid $pid"
past_llm() { test "$(q "SELECT count(*) FROM jobs WHERE state IN ('verify_queued','done','failed')")" = 20; }
waitfor 90 "the run past its LLM stages" past_llm
check "every job reached verify_queued" \
  test "$(q "SELECT count(*) FROM jobs WHERE state = 'verify_queued'")" = 20
fake _stats >"$work/stats.json"
python3 - "$work/stats.json" "$work/durable" <<'PY' || die "an answer stored before the kill was paid again"
import json, sys
stats = json.load(open(sys.argv[1]))
durable = set(open(sys.argv[2]).read().split())
answered = stats["answered_by_hash"]
again = [h for h in durable if answered.get(h, 0) > 1]
print(f"  provider: {stats['requests']} requests, {stats['answered']} answered, "
      f"{sum(n - 1 for n in answered.values())} answered again (lost in flight at the kill), "
      f"{len(again)} of {len(durable)} stored answers asked again")
sys.exit(1 if again else 0)
PY
check "no stage output duplicated" test "$(q "SELECT count(*) FROM (SELECT job_id, stage, attempt \
  FROM stage_outputs GROUP BY 1, 2, 3 HAVING count(*) > 1)")" = 0
grep -q 'took back .* leases' <<<"$(IN journalctl --no-pager -u kforged -o cat)" ||
  die "the restart did not take the dead process's leases back"

# ---- the watchdog: a stalled daemon is killed and restarted
pid=$(prop MainPID)
# SIGSTOP stalls every thread, so no WATCHDOG=1 comes; systemd's watchdog signal is followed by
# SIGCONT, so the stopped process still dies of it.
IN kill -STOP "$pid"
say "stalled pid $pid (SIGSTOP)"
watchdogged() { [ "$(prop NRestarts)" = 2 ] && [ "$(prop SubState)" = running ] && [ "$(prop MainPID)" != "$pid" ]; }
waitfor 40 "the watchdog's restart" watchdogged
IN journalctl --no-pager -u kforged -o cat | grep -q 'Watchdog timeout' || die "no 'Watchdog timeout' in the journal"
say "watchdog: pid $pid killed, restarted as $(prop MainPID)"

# ---- upgrade (the same package again): the edited conffile stays, a running daemon restarts
echo "# edited by the admin" >>"$R/etc/kforge/kforge.yaml"
pid=$(prop MainPID)
IN dpkg -i /tmp/kforge.deb >"$work/upgrade.log" 2>&1 || { cat "$work/upgrade.log"; die "dpkg -i (upgrade)"; }
check "the edited kforge.yaml survives the upgrade" IN grep -q '^# edited by the admin' /etc/kforge/kforge.yaml
upgraded() { [ "$(prop SubState)" = running ] && [ "$(prop MainPID)" != "$pid" ]; }
waitfor 20 "the restart after the upgrade" upgraded
say "upgrade: restarted pid $pid as $(prop MainPID), edited configuration kept"

# ---- an admin in group kforge uses the system database (umask 022, from their own directory)
IN useradd --create-home --groups kforge --shell /bin/sh admin1
as_admin() { IN runuser -u admin1 -- sh -c 'umask 022; cd && "$@"' sh "$@"; }
admin_status=$(as_admin kforge status) || die "kforge status as a member of group kforge"
check "the admin's CLI reads the system database" \
  grep -q 'database   /var/lib/kforge/kforge.db' <<<"$admin_status"

# ---- stop drains: a second run (created by the admin) with calls in flight, stopped mid-way
# Another model: new requests (the same ones would be answered from the LLM client's store).
as_admin kforge run create drain --pipeline v2 --limit 12 --model other-model >/dev/null ||
  die "kforge run create as a member of group kforge"
drain_busy() { test "$(q "SELECT count(*) FROM jobs j JOIN runs r ON r.id = j.run_id WHERE r.tag = 'drain' AND j.state = 'leased'")" -gt 0; }
waitfor 30 "calls in flight in run drain" drain_busy
timeout_stop=$(prop TimeoutStopUSec)
t=$(date +%s%N)
IN systemctl stop kforged
stop_ms=$((($(date +%s%N) - t) / 1000000))
say "systemctl stop took $stop_ms ms (TimeoutStopSec=$timeout_stop)"
check "stopped cleanly (Result=success)" test "$(prop Result)" = success
check "stopped within TimeoutStopSec" test "$stop_ms" -lt 45000
check "no lease left behind" test "$(q "SELECT count(*) FROM jobs WHERE state = 'leased'")" = 0
journal=$(IN journalctl --no-pager -u kforged -o cat)
for line in 'ready: owner' 'stopping: no new leases' 'kforged stopped:'; do
  grep -q "$line" <<<"$journal" || die "the journal has no '$line'"
done
if grep -q 'sk-systemd-test-secret' <<<"$journal"; then die "the API key reached the journal"; fi
if grep -q 'timed out. Killing' <<<"$journal"; then die "stop timed out and was killed"; fi
say "journal: $(wc -l <<<"$journal") lines from kforged and systemd about it"

# ---- purge removes what the install made
IN dpkg --purge kforge >"$work/purge.log" 2>&1 || { cat "$work/purge.log"; die "dpkg --purge"; }
for p in /var/lib/kforge /var/cache/kforge /etc/kforge /lib/systemd/system/kforged.service \
  /etc/systemd/system/multi-user.target.wants/kforged.service /usr/bin/kforged; do
  IN test ! -e "$p" || die "$p is still there after purge"
done
IN id kforge >/dev/null 2>&1 && die "user kforge is still there after purge"
say "purged"
echo "PASS ($(el))"
