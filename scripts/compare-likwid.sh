#!/usr/bin/env bash
# compare-likwid.sh: bench's memory bandwidth against likwid-bench, measured
# in one run on the same machine, the two tools interleaved round by round.
#
#   bash scripts/compare-likwid.sh [rounds]      (default 5 rounds)
#
# For each figure it prints the median over rounds of both tools and ends the
# line with ratio=<bench/likwid>:
#   DRAM read, copy, triad at a 2 GB working set, 1 thread and all cores
#     (likwid: load_*, copy_*, triad_*_fma; also stream_*_fma, the 3-stream
#     triad that bench's triad is, for reference);
#   L1 read at a 16 kB working set, 1 thread and all cores.
# Kernels are the AVX-512 ones where the CPU has AVX-512F, else AVX2/AVX.
# Sizes use likwid's units on both sides (kB = 1e3 bytes, GB = 1e9 bytes).
# Needs likwid and jq (installed from Debian's packages when missing; root or sudo).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}

need=()
command -v likwid-bench >/dev/null || need+=(likwid)
command -v jq >/dev/null || need+=(jq)
if [ ${#need[@]} -gt 0 ]; then
	sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
	$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi

bin=$(mktemp -d)/bench
go build -o "$bin" ./cmd/bench
all=$(nproc)

if grep -qw avx512f /proc/cpuinfo; then
	v=avx512; isa=avx512
else
	v=avx; isa=avx2
fi
# figure name | likwid test | bench kernel | working set
figures=(
	"DRAM-read|load_$v|read|2GB"
	"DRAM-copy|copy_$v|copy|2GB"
	"DRAM-triad|triad_${v}_fma|triad|2GB"
	"DRAM-triad(stream)|stream_${v}_fma|triad|2GB"
	"L1-read|load_$v|read|16kB"
)

declare -A lk bn
likwid_gbps() { # test ws threads
	likwid-bench -t "$1" -w "N:$2:$3" 2>/dev/null | awk '/^MByte\/s:/ { print $2/1000 }'
}
bench_gbps() { # kernel ws threads
	"$bin" bandwidth --isa "$isa" --kernel "$1" --ws "$2" --threads "$3" --json | jq -r '.gbps.median'
}
median() { sort -g | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

threads_list="1"
[ "$all" -gt 1 ] && threads_list="1 $all"
for r in $(seq "$rounds"); do
	echo "round $r/$rounds" >&2
	for t in $threads_list; do
		for f in "${figures[@]}"; do
			IFS='|' read -r name test kernel ws <<<"$f"
			key="$name|$t"
			lk[$key]+="$(likwid_gbps "$test" "$ws" "$t") "
			bn[$key]+="$(bench_gbps "$kernel" "$ws" "$t") "
		done
	done
done

echo "# bench vs likwid-bench ($(likwid-bench -h 2>&1 | head -1 | tr -d '\n' || true)), $rounds interleaved rounds, medians, GB/s = 1e9 bytes/s"
for t in $threads_list; do
	for f in "${figures[@]}"; do
		IFS='|' read -r name test kernel ws <<<"$f"
		key="$name|$t"
		l=$(tr ' ' '\n' <<<"${lk[$key]}" | grep . | median)
		b=$(tr ' ' '\n' <<<"${bn[$key]}" | grep . | median)
		ratio=$(awk -v b="$b" -v l="$l" 'BEGIN { if (l > 0) printf "%.3f", b / l; else print "nan" }')
		printf '%-20s threads=%-3s ws=%-5s bench(%s %s)=%7.2f likwid(%s)=%7.2f ratio=%s\n' "$name" "$t" "$ws" "$isa" "$kernel" "$b" "$test" "$l" "$ratio"
	done
done
