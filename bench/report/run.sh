#!/usr/bin/env bash
# Benchmark of kforge compare, export and debug --failed on a large database: the report test
# fixture (tests/report/fixtures) copied COPIES times (default 267: 4,005 samples, with runs v1
# and v2 over nearly all of them). The export runs in kforge's default format, then in each
# training format (every sample with a verdict, flagged ones included: the most rows) and as a
# folder with two splits and a card. Prints one line per command, and a last line with every
# figure as key=value. Usage: bench/report/run.sh [COPIES]   (KFORGE=path/to/kforge to pick a
# binary)
set -euo pipefail
cd "$(dirname "$0")/../.."
kforge="${KFORGE:-build/apps/kforge/kforge}"
bench_sql="${KFORGE_BENCH_SQL:-build/bench/kforge-bench-sql}"
copies="${1:-267}"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
cfg="$dir/kforge.yaml"
db="$dir/kforge.db"
printf 'store:\n  path: %s\n' "$db" >"$cfg"

KFORGE="$kforge" KFORGE_BENCH_SQL="$bench_sql" bench/report/fill.sh "$cfg" "$copies"
samples="$(sqlite3 "$db" 'SELECT count(*) FROM samples')"
db_mb="$(du -m "$db" | cut -f1)"

# Wall time (s) and peak RSS (kB) of one command, its output discarded.
measure() {
  python3 -c '
import resource, subprocess, sys, time
t = time.monotonic()
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True)
print(f"{time.monotonic() - t:.3f} {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}")
' "$@"
}

read -r compare_s compare_kb < <(measure "$kforge" -q -c "$cfg" compare v1 v2)
read -r html_s html_kb < <(measure "$kforge" -q -c "$cfg" compare v1 v2 --html "$dir/r.html")
read -r export_s export_kb < <(measure "$kforge" -q -c "$cfg" export v2 --out "$dir/v2.jsonl")
read -r debug_s debug_kb < <(measure "$kforge" -q -c "$cfg" debug v2 --failed --out "$dir/dbg")
export_mb="$(du -m "$dir/v2.jsonl" | cut -f1)"
every="passed,failed,error,timeout,crashed,invalid,skipped"
formats_line=""
formats_kv=""
for fmt in sft prompt-completion trajectory rl; do
  read -r s kb < <(measure "$kforge" -q -c "$cfg" export v2 --format "$fmt" --verdict "$every" \
    --include-flagged --with-reasoning --out "$dir/v2.$fmt.jsonl")
  rows="$(wc -l <"$dir/v2.$fmt.jsonl")"
  mb="$(du -m "$dir/v2.$fmt.jsonl" | cut -f1)"
  formats_line+="$(printf 'export v2 --format %-17s (%s rows, %s MB): %s s, peak RSS %s MB' \
    "$fmt" "$rows" "$mb" "$s" "$((kb / 1024))")"$'\n'
  key="${fmt//-/_}"
  formats_kv+=" ${key}_s=$s ${key}_rss_mb=$((kb / 1024)) ${key}_rows=$rows"
done
read -r folder_s folder_kb < <(measure "$kforge" -q -c "$cfg" export v2 --format sft \
  --verdict "$every" --include-flagged --out-dir "$dir/dataset" --split train=0.9,test=0.1)
folder_files="$(find "$dir/dataset" -type f | wc -l)"
folders="$(find "$dir/dbg" -mindepth 1 -maxdepth 1 -type d | wc -l)"

echo "samples: $samples, database ${db_mb} MB"
echo "compare v1 v2:            ${compare_s} s, peak RSS $((compare_kb / 1024)) MB"
echo "compare v1 v2 --html:     ${html_s} s, peak RSS $((html_kb / 1024)) MB"
echo "export v2 (${export_mb} MB JSONL):  ${export_s} s, peak RSS $((export_kb / 1024)) MB"
echo "debug v2 --failed (${folders} folders): ${debug_s} s, peak RSS $((debug_kb / 1024)) MB"
printf '%s' "$formats_line"
echo "export v2 --format sft --out-dir (${folder_files} files, 2 splits): ${folder_s} s, peak RSS $((folder_kb / 1024)) MB"
echo "samples=$samples compare_s=$compare_s compare_rss_mb=$((compare_kb / 1024)) html_s=$html_s export_s=$export_s export_rss_mb=$((export_kb / 1024)) export_mb=$export_mb debug_failed_s=$debug_s debug_folders=$folders${formats_kv} folder_s=$folder_s folder_rss_mb=$((folder_kb / 1024))"
