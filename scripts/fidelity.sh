#!/usr/bin/env bash
# Prediction fidelity (issue #16's targets): runs the engine on the issue's
# matrix and prints how much of the measured operator time, and how many
# operator rows, the roofline predicts within ±10%, and TTFT/TPOT measured
# over predicted.
#
#   scripts/fidelity.sh PROFILE [OUTDIR]
#
# Matrix: qwen3-0.6b with synthetic weights, LAYERS (2 4) decoder layers,
# PLACEMENTS (cores matrix), prefill of PROMPTS (128 512 2048) tokens and
# decode of GEN (8) tokens at BATCHES (1 4) sequences, on every allowed CPU.
# Each run is one `bench run --repeats RUN_REPEATS --json=FILE`; the files stay in OUTDIR.
# Each run first waits up to WAIT_PLACEMENT (60s) for the host to put the
# CPUs where the profile's placement had them (bench run
# --wait-placement: a VM's host moving its vCPUs between dies moves the
# bandwidth of every figure on 2 threads); a run the host moved during is
# noisy all the same.
# Runs that bench marks noisy (noise.noisy in its JSON: threads short of
# their CPUs, spread, a DRAM read roof or attained GEMM rate re-measured
# after the run more than 10% from the profile's, or core-to-core round
# trips 2.5× from the profile's placement) are listed
# with why and not counted; where a run's checks measured the host's
# drift (any, within the noise threshold too), its operators predicted at that drift (bench run's "drift":
# DRAM and compute scaled as re-measured) are summed on a diagnostic line
# that tells the model's error apart from the host's. Needs
# jq (Debian's package).
#
# An operator's measured time is bench run's uninterrupted_s where it has
# one (its time less the excess of calls ≥ 4× the median of their
# neighbours: time the host took), else measured_s, in every figure.
#
# Targets (#16): ≥ 90% of operator time and ≥ 80% of operator rows within
# ±10%; TTFT and TPOT within ±10%.
set -euo pipefail
prof=${1:?usage: scripts/fidelity.sh PROFILE [OUTDIR]}
out=${2:-$(mktemp -d /tmp/fidelity.XXXXXX)}
mkdir -p "$out"
command -v jq >/dev/null || { echo "fidelity.sh: needs jq (apt-get install jq)" >&2; exit 1; }
B=${BENCH:-bench}
LAYERS=${LAYERS:-"2 4"}
PLACEMENTS=${PLACEMENTS:-"cores matrix"}
PROMPTS=${PROMPTS:-"128 512 2048"}
BATCHES=${BATCHES:-"1 4"}
GEN=${GEN:-8}
WAIT_PLACEMENT=${WAIT_PLACEMENT:-60s}
# REPEATS (1) runs each configuration that many times in a row (files
# run-…-rN.json). With 2 or more, the summary adds the host's
# repeatability, over every run and over the counted ones: each run's
# operator times against the median of the other runs of its
# configuration (leave one out), within ±10% — about the share of rows
# and time that a prediction, however exact, can match on this host — and
# the worst operators' list gives each operator's rows that so repeat
# (every run): a miss whose rows repeat is the model's, one whose rows do
# not is the host's as much as the model's.
REPEATS=${REPEATS:-1}
# RUN_REPEATS (3) is each run's --repeats: its timed requests, each
# operator's time the median request's (one request's blip on a shared
# host does not make the row).
RUN_REPEATS=${RUN_REPEATS:-3}
case $RUN_REPEATS in ''|*[!0-9]*|0) echo "fidelity.sh: RUN_REPEATS=$RUN_REPEATS: want a whole number ≥ 1" >&2; exit 2 ;; esac
case $REPEATS in ''|*[!0-9]*|0) echo "fidelity.sh: REPEATS=$REPEATS: want a whole number ≥ 1" >&2; exit 2 ;; esac

# What the predictions come from: the calibration section (its schema and
# classes; v2 keys them by level), the attained-GEMM table the linear
# operators' compute term is read from, and a last-level cache found at a
# knee of the read bandwidth curves where CPUID hides it.
# scripts/fidreplay re-predicts the run files of OUTDIR without measuring:
#   go run ./scripts/fidreplay -profile PROFILE OUTDIR/run-*.json
jq -r '
  "profile: calibration \(.calibration.schema // "none")\(if .calibration then ", \(.calibration.classes | length) classes: " + ([.calibration.classes[] | "\(.class)@\(.threads // 0)t@\(.level // "any")"] | join(" ")) else "" end)",
  "profile: attained-GEMM table (matrix.gemm_shapes): \(.matrix.gemm_shapes // [] | length) points\(if (.matrix.gemm_shapes // [] | length) == 0 then " (none: linear operators at the single ceiling; a probe since issue #16 records it)" else "" end)",
  "profile: caches " + ([.topology.caches[]? | select(.type != "Instruction") | "L\(.level) \(.size_bytes / 1024 | floor) KiB\(if .source then " (" + .source + ")" else "" end)"] | join(", "))
' "$prof" >&2 || true

for l in $LAYERS; do
	for p in $PLACEMENTS; do
		for t in $PROMPTS; do
			for b in $BATCHES; do
				for ((r = 1; r <= REPEATS; r++)); do
					f="$out/run-l$l-$p-t$t-b$b.json" rep=""
					if ((REPEATS > 1)); then
						f="$out/run-l$l-$p-t$t-b$b-r$r.json" rep=", repeat $r of $REPEATS"
					fi
					echo "fidelity: layers $l, placement $p, prompt $t, batch $b$rep" >&2
					"$B" run --model qwen3-0.6b --weights synthetic --layers "$l" --placement "$p" \
						--prompt-tokens "$t" --gen-tokens "$GEN" --batch "$b" --profile "$prof" \
						--wait-placement "$WAIT_PLACEMENT" --repeats "$RUN_REPEATS" --json="$f" >/dev/null
				done
			done
		done
	done
done

# One row per run, phase and operator with a prediction; noisy runs apart.
jq -s -r '
  def within: (.m / .p - 1) | fabs <= 0.10;
  # An operator row'"'"'s measured time: less its interrupted calls'"'"' excess
  # where bench run found any (uninterrupted_s), as its
  # measured_over_predicted is.
  def meas: .uninterrupted_s // .measured_s;
  # Each run of a configuration run 2 or more times against the median of
  # the other runs of its configuration: one row per run, phase and
  # operator ({m, p: the others median, ph, op}).
  def reprows: [ .[] | {c: "\(.model) \(.layers) \(.placement) \(.prompt_tokens) \(.batch) \(.gen_tokens)", o: .operators} ]
    | group_by(.c) | map(select(length >= 2)) as $groups
    | [ $groups[] | . as $g | range(0; $g | length) as $i
        | $g[$i].o[] as $r
        | [ $g | to_entries[] | select(.key != $i) | .value.o[] | select(.phase == $r.phase and .op == $r.op) | meas ] | sort as $others
        | select($others | length > 0)
        | {m: ($r | meas), p: (if ($others | length) % 2 == 1 then $others[($others | length - 1) / 2] else ($others[($others | length) / 2 - 1] + $others[($others | length) / 2]) / 2 end), ph: $r.phase, op: $r.op} ];
  def configs: [ .[] | "\(.model) \(.layers) \(.placement) \(.prompt_tokens) \(.batch) \(.gen_tokens)" ] | group_by(.) | map(select(length >= 2)) | length;
  [ .[] | select((.noise.noisy // false) | not) ] as $ok
  | [ .[] | select(.noise.noisy // false) ] as $noisy
  | [ $ok[] | .operators[] | select(.predicted_s != null and .predicted_s > 0) | {m: meas, p: .predicted_s, ph: .phase, op: .op} ] as $rows
  | ($rows | map(select(within)) ) as $in
  | ($rows | map(.m) | add // 0) as $tot
  | ($in | map(.m) | add // 0) as $intime
  | [ $ok[] | select(.predicted_ttft_s != null) | .ttft_s / .predicted_ttft_s ] as $ttft
  | [ $ok[] | select(.predicted_tpot_s != null and .tpot_s > 0) | .tpot_s / .predicted_tpot_s ] as $tpot
  | "runs: \($ok | length) counted, \($noisy | length) noisy (not counted)",
    ( $noisy[] | "  noisy: \(.layers) layers, \(.placement), prompt \(.prompt_tokens), batch \(.batch): \(.noise.why)" ),
    "operator rows within ±10%: \($in | length) of \($rows | length) = \(100 * ($in | length) / ([$rows | length, 1] | max) | floor)% (target ≥ 80%)",
    "operator time within ±10%: \(100 * $intime / ([$tot, 1e-12] | max) | floor)% of \($tot * 1000 | floor) ms measured (target ≥ 90%)",
    "TTFT measured/predicted: \($ttft | map(. * 100 | round / 100) | join(" ")) (\($ttft | map(select(. >= 0.9 and . <= 1.1)) | length) of \($ttft | length) within the target 0.90–1.10)",
    "TPOT measured/predicted: \($tpot | map(. * 100 | round / 100) | join(" ")) (\($tpot | map(select(. >= 0.9 and . <= 1.1)) | length) of \($tpot | length) within the target 0.90–1.10)",
    ( [ .[] | select(.drift != null) ] as $dr
      | [ $dr[] | .operators[] | select(.predicted_at_drift_s != null and .predicted_at_drift_s > 0) | {m: meas, p: .predicted_at_drift_s} ] as $drows
      | ($drows | map(select(within))) as $din
      | if ($dr | length) > 0 then
          "at the drift of the host (a diagnostic over the \($dr | length) run(s) whose checks ran, noisy ones included; never counted: each predicted with DRAM and compute scaled as re-measured after it): rows \($din | length) of \($drows | length) = \(100 * ($din | length) / ([$drows | length, 1] | max) | floor)%, time \(100 * ($din | map(.m) | add // 0) / ([$drows | map(.m) | add // 0, 1e-12] | max) | floor)%"
        else empty end ),
    ( [ [.[]], $ok ] | to_entries[] | .key as $which
      | (.value | configs) as $ngroups
      | (.value | reprows) as $rep
      | if ($rep | length) > 0 then
          "repeatability of this host, \(if $which == 0 then "every run (noisy ones included)" else "the counted runs" end) (\($ngroups) configuration\(if $ngroups == 1 then "" else "s" end) run 2 or more times): each run against the median of the other runs of its configuration, operator rows \($rep | map(select(within)) | length) of \($rep | length) = \(100 * ($rep | map(select(within)) | length) / ($rep | length) | floor)%, time \(100 * ($rep | map(select(within)) | map(.m) | add // 0) / ([$rep | map(.m) | add // 0, 1e-12] | max) | floor)% within ±10%: about as much as a prediction can match here"
        else empty end ),
    # Per operator, how many of its rows repeat within ±10% on this host
    # (every run, noisy ones included): a miss that repeats is the
    # model, one that does not is the host as much as the model.
    ( [ .[] ] | reprows | group_by(.ph + " " + .op) | map({key: (.[0].ph + " " + .[0].op), value: "\(map(select(within)) | length) of \(length)"}) | from_entries ) as $repop
    | "worst operators (measured/predicted, share of measured time\(if ($repop | length) > 0 then "; repeats: of its rows in every run, noisy ones included, those within ±10% of the median of the other runs of their configuration" else "" end)):",
    ( $rows | group_by(.ph + " " + .op) | map({k: (.[0].ph + " " + .[0].op), r: ((map(.m) | add) / (map(.p) | add)), s: ((map(.m) | add) / $tot)})
      | map(select((.r - 1) | fabs > 0.10)) | sort_by(-.s) | .[:12][] | "  \(.k): \(.r * 100 | round / 100), \(.s * 1000 | round / 10)%\(if $repop[.k] then "; repeats \($repop[.k])" else "" end)")
' "$out"/run-*.json
echo "runs in $out" >&2
