#!/usr/bin/env bash
# slurm-test.sh: the fleet path end to end on a real Slurm (issue 17, part 5).
#
#   bash scripts/slurm-test.sh
#
# Installs Debian's slurm-wlm and munge when missing (apt-get; needs root or
# sudo), then, all under one temporary directory: makes a munge key and
# starts munged on its own socket, writes a slurm.conf for one node on
# localhost with this machine's CPUs (select/cons_tres, proctrack/linuxproc,
# task/none: no cgroups, so it runs in a container or VM), starts slurmctld
# and slurmd, and waits until sinfo shows the node idle. It builds bench,
# emits the Slurm jobs of a 2-cell sweep (llama-160m-chat-v1, 1 synthetic
# layer, 1 request of at most 16 prompt and 2 generated tokens per cell,
# --profile none) with 'bench sweep --emit-jobs slurm', submits them with the
# emitted submit.sh (the job array, then the merge job after it), waits until
# the queue is empty, and checks that every task completed, that the merge
# job ('bench report --merge') wrote cells.jsonl with both cells and
# report.md with a row for each. The daemons are stopped and the directory
# removed on exit (the daemons' logs are printed when a step fails).
#
# Environment: BENCH_SLURM_TIMEOUT (seconds to wait for the node and for the
# jobs, default 90). Took 16-41 s on a loaded 2-core VM once the packages
# were installed (most of it building bench), 49 s with the installation.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/sbin:/sbin"

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v sbatch >/dev/null || ! command -v munged >/dev/null; then
	echo "slurm-test.sh: installing slurm-wlm munge" >&2
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null
fi

timeout=${BENCH_SLURM_TIMEOUT:-90}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-slurm.XXXXXX")
chmod 755 "$tmp"
ok=0

# stop ends the daemons that this script started (by their pid files) and
# waits for them; on failure it prints their logs first.
stop() {
	if [ "$ok" != 1 ]; then
		for f in "$tmp"/log/*.log "$tmp"/sweep/jobs/logs/*.out; do
			[ -f "$f" ] || continue
			echo "--- $f" >&2
			tail -n 30 "$f" >&2 || true
		done
	fi
	for d in slurmd slurmctld munged; do
		local pf="$tmp/run/$d.pid"
		[ -s "$pf" ] || continue
		local pid
		pid=$(cat "$pf")
		$sudo kill "$pid" 2>/dev/null || continue
		for _ in $(seq 50); do
			$sudo kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
	done
	$sudo rm -rf "$tmp"
}
trap stop EXIT
fail() {
	echo "slurm-test.sh: $*" >&2
	exit 1
}

# waitfor SECONDS WHAT CMD...: runs CMD every 0.2 s until it succeeds.
waitfor() {
	local secs=$1 what=$2
	shift 2
	local end=$((SECONDS + secs))
	until "$@"; do
		[ "$SECONDS" -lt "$end" ] || fail "$what: not after ${secs}s"
		sleep 0.2
	done
}

# A free pair of ports (slurmctld, slurmd): 6817/6818, Slurm's, unless taken.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
ctld_port=""
for p in 6817 16817 26817 36817 46817; do
	if port_free "$p" && port_free $((p + 1)); then
		ctld_port=$p
		break
	fi
done
[ -n "$ctld_port" ] || fail "no free port pair for slurmctld and slurmd"
d_port=$((ctld_port + 1))

$sudo install -d -m 755 "$tmp/munge" "$tmp/run" "$tmp/log" "$tmp/state" "$tmp/spool"
if command -v mungekey >/dev/null; then
	$sudo mungekey --create --keyfile="$tmp/munge/munge.key"
else
	$sudo dd if=/dev/urandom of="$tmp/munge/munge.key" bs=1024 count=1 status=none
fi
$sudo chmod 400 "$tmp/munge/munge.key"
# --force: the temporary directory's permissions are not munged's usual
# /etc/munge and /run/munge.
$sudo munged --force --key-file="$tmp/munge/munge.key" --socket="$tmp/munge/munge.socket" \
	--pid-file="$tmp/run/munged.pid" --log-file="$tmp/log/munged.log" --seed-file="$tmp/munge/munged.seed"

cpus=$(nproc)
conf="$tmp/slurm.conf"
cat >"$conf" <<EOF
# One node on localhost for scripts/slurm-test.sh; no cgroups.
ClusterName=benchtest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$d_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$tmp/munge/munge.socket
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/run/slurmctld.pid
SlurmdPidFile=$tmp/run/slurmd.pid
SlurmctldLogFile=$tmp/log/slurmctld.log
SlurmdLogFile=$tmp/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MinJobAge=600
NodeName=benchnode NodeHostname=localhost NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=bench Nodes=benchnode Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$conf"

$sudo env SLURM_CONF="$conf" slurmctld -c -f "$conf"
$sudo env SLURM_CONF="$conf" slurmd -f "$conf" -N benchnode
node_idle() { [ "$(sinfo -h -N -n benchnode -o %t 2>/dev/null)" = idle ]; }
waitfor "$timeout" "sinfo: node benchnode idle" node_idle
echo "slurm-test.sh: slurm $(sinfo -V | awk '{print $2}') up: node benchnode idle with $cpus CPUs (ports $ctld_port, $d_port)"

go build -o "$tmp/bench" ./cmd/bench
out="$tmp/sweep"
(cd "$tmp" && ./bench sweep --models llama-160m-chat-v1 --layers 1 --workloads gsm8k,longwriter --batch 1 --threads 1 \
	--placement cores --requests 1 --max-gen-tokens 2 --max-prompt-tokens 16 --profile none --emit-jobs slurm --out "$out")
grep -q -- '--profile none' "$out/jobs/sweep.sbatch" || fail "sweep.sbatch's job line lacks --profile none"

submitted=$(sh "$out/jobs/submit.sh")
echo "$submitted"
array=$(sed -n 's/.*array job \([0-9]*\).*/\1/p' <<<"$submitted")
merge=$(sed -n 's/.*merge job \([0-9]*\).*/\1/p' <<<"$submitted")
[ -n "$array" ] && [ -n "$merge" ] || fail "submit.sh printed no job ids"
queue_empty() { [ -z "$(squeue -h 2>/dev/null)" ] && squeue >/dev/null 2>&1; }
waitfor "$timeout" "squeue: the jobs still queued or running" queue_empty

# Without accounting, slurmctld keeps finished jobs for MinJobAge: every
# task of the array and the merge must have completed.
states=$(scontrol -o show job "$array" | grep -o 'JobState=[A-Z_]*' | sort | uniq -c)
echo "slurm-test.sh: array job $array:" $states
[ "$(scontrol -o show job "$array" | grep -c 'JobState=COMPLETED')" -eq 2 ] || fail "array job $array: not 2 completed tasks"
scontrol -o show job "$merge" | grep -q 'JobState=COMPLETED' || fail "merge job $merge: $(scontrol -o show job "$merge" | grep -o 'JobState=[A-Z_]*')"

for n in 0 1; do
	[ -s "$out/cells/$n/cells.jsonl" ] || fail "task $n wrote no $out/cells/$n/cells.jsonl"
done
keys=$(grep -o '"key":"[^"]*"' "$out/cells.jsonl" | sort -u | wc -l)
[ "$keys" -eq 2 ] || fail "merged cells.jsonl: $keys distinct cells, want 2"
for w in gsm8k longwriter; do
	grep -q "^| llama-160m-chat-v1 fp32 | $w " "$out/report.md" || fail "report.md has no row for the $w cell"
done
cat "$out/jobs/logs/merge.out"
ok=1
echo "slurm-test.sh: the emitted job array ran both cells on Slurm; merged and reported"
