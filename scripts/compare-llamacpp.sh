#!/usr/bin/env bash
# compare-llamacpp.sh: bench's engine against llama.cpp's llama-bench on the
# same GGUF files, measured interleaved in one run (the machine is noisy).
#
#   bash scripts/compare-llamacpp.sh LLAMA_CPP_SRC_DIR
#
# LLAMA_CPP_SRC_DIR is a llama.cpp source tree you provide (nothing of
# llama.cpp is part of this repository). The script:
#   1. builds llama-bench from it (CPU only, -DGGML_NATIVE=ON, Release) in
#      $BUILD (default: a directory under /tmp), unless it is already built;
#   2. builds bench and writes one GGUF file per format with random weights at
#      $MODEL's shapes and the embedded Qwen3 tokenizer (`bench gguf`);
#   3. for $REPS rounds, for every format, thread count and context, runs
#      llama-bench (one repetition) and `bench run` back to back: prefill of
#      CTX tokens (llama-bench -p CTX -n 0; bench: CTX / TTFT) and decode of
#      $GEN tokens after CTX tokens of context (llama-bench -p 0 -n GEN -d CTX;
#      bench: 1 / TPOT);
#   4. prints one line per figure with the medians over the rounds, ending in
#      ratio=<bench/llama.cpp> (> 1: bench is faster).
#
# Environment (defaults in brackets): MODEL [qwen3-0.6b], LAYERS [0 = all],
# FORMATS [q8_0 q4_0], THREADS [1 and every CPU], CONTEXTS [128 512],
# GEN [32], REPS [3], BUILD [/tmp/llama-cpp-bench-build], WORK [a temp dir].
# Needs cmake, a C++ compiler, Go and python3 (to read the JSON).
set -euo pipefail
cd "$(dirname "$0")/.."

src=${1:-}
if [ -z "$src" ] || [ ! -f "$src/CMakeLists.txt" ]; then
	echo "usage: bash scripts/compare-llamacpp.sh LLAMA_CPP_SRC_DIR (a llama.cpp source tree with CMakeLists.txt)" >&2
	exit 2
fi
for tool in cmake python3 go; do
	command -v "$tool" >/dev/null || { echo "compare-llamacpp: $tool not found" >&2; exit 2; }
done
MODEL=${MODEL:-qwen3-0.6b}
LAYERS=${LAYERS:-0}
FORMATS=${FORMATS:-q8_0 q4_0}
CONTEXTS=${CONTEXTS:-128 512}
GEN=${GEN:-32}
REPS=${REPS:-3}
ncpu=$(nproc)
THREADS=${THREADS:-$( [ "$ncpu" -gt 1 ] && echo "1 $ncpu" || echo 1 )}
BUILD=${BUILD:-/tmp/llama-cpp-bench-build}
WORK=${WORK:-$(mktemp -d)}
trap 'rm -f "$WORK"/*.json "$WORK"/*.jsonl' EXIT

lb="$BUILD/bin/llama-bench"
if [ ! -x "$lb" ]; then
	echo "compare-llamacpp: building llama-bench in $BUILD (several minutes)" >&2
	cmake -S "$src" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
		-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF >/dev/null
	cmake --build "$BUILD" --target llama-bench -j "$ncpu" >/dev/null
fi
bench="$WORK/bench"
go build -o "$bench" ./cmd/bench

for f in $FORMATS; do
	[ -f "$WORK/$MODEL-$f.gguf" ] || "$bench" gguf --model "$MODEL" --format "$f" --layers "$LAYERS" --out "$WORK/$MODEL-$f.gguf" >&2
done

# One figure per line in $WORK/results: tool format phase ctx threads tok/s.
results="$WORK/results.txt"
: >"$results"
for rep in $(seq 1 "$REPS"); do
	for f in $FORMATS; do
		file="$WORK/$MODEL-$f.gguf"
		for t in $THREADS; do
			for ctx in $CONTEXTS; do
				echo "compare-llamacpp: round $rep/$REPS $f threads=$t ctx=$ctx" >&2
				"$lb" -m "$file" -t "$t" -r 1 -p "$ctx" -n 0 -o jsonl >"$WORK/lp.jsonl" 2>/dev/null
				"$lb" -m "$file" -t "$t" -r 1 -p 0 -n "$GEN" -d "$ctx" -o jsonl >"$WORK/lg.jsonl" 2>/dev/null
				"$bench" run --weights "$file" --threads "$t" --prompt-tokens "$ctx" --gen-tokens "$GEN" --profile none --amdahl=false --json >"$WORK/b.json" 2>/dev/null
				python3 - "$WORK" "$f" "$ctx" "$t" >>"$results" <<'EOF'
import json, sys
work, fmt, ctx, t = sys.argv[1:]
def ts(path):
    for line in open(path):
        line = line.strip()
        if line:
            return json.loads(line)["avg_ts"]
b = json.load(open(work + "/b.json"))
print("llama.cpp", fmt, "prefill", ctx, t, ts(work + "/lp.jsonl"))
print("llama.cpp", fmt, "decode", ctx, t, ts(work + "/lg.jsonl"))
print("bench", fmt, "prefill", ctx, t, b["prefill_tokens_per_s"])
print("bench", fmt, "decode", ctx, t, b["decode_tokens_per_s"])
EOF
			done
		done
	done
done

echo "# $MODEL ($( [ "$LAYERS" = 0 ] && echo all || echo "$LAYERS" ) layers), random weights; $REPS interleaved rounds, medians; tok/s"
echo "# llama.cpp: $(cd "$src" && (git describe --always 2>/dev/null || echo "source tree $src")); bench: $(git describe --always --dirty 2>/dev/null || echo dev)"
python3 - "$results" <<'EOF'
import statistics, sys
from collections import defaultdict
v = defaultdict(list)
keys = []
for line in open(sys.argv[1]):
    tool, fmt, phase, ctx, t, x = line.split()
    k = (fmt, phase, int(ctx), int(t))
    if k not in keys:
        keys.append(k)
    v[(tool,) + k].append(float(x))
for k in keys:
    b, l = statistics.median(v[("bench",) + k]), statistics.median(v[("llama.cpp",) + k])
    fmt, phase, ctx, t = k
    print(f"{fmt} {phase} ctx={ctx} threads={t}: bench {b:.2f} tok/s, llama.cpp {l:.2f} tok/s (n={len(v[('bench',)+k])}) ratio={b/l:.3f}")
EOF
