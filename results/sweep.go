package results

import (
	"slices"
	"strings"
)

// SweepSchema is the schema name of one line of a sweep's results file
// (cells.jsonl): one SweepCell per line.
const SweepSchema = "bench.sweep/v1"

// SweepCell is one finished cell of a `bench sweep` grid: one model, one
// workload trace, one batch size, one thread count, one placement and one
// ablation, replayed on the engine. Times are seconds; rates per second.
type SweepCell struct {
	Schema string `json:"schema"` // SweepSchema
	// Key identifies the cell in its grid (workloads.Cell.Key); a rerun skips
	// cells whose key is already in the results file.
	Key string `json:"key"`

	Model       string `json:"model"`
	Weights     string `json:"weights"`                // "synthetic" or a file path
	WeightDType string `json:"weight_dtype,omitempty"` // the linear weights' format; "" as loaded
	Layers      int    `json:"layers"`                 // decoder layers instantiated
	ModelLayers int    `json:"model_layers"`
	Workload    string `json:"workload"`
	Batch       int    `json:"batch"`
	Threads     int    `json:"threads"`
	Placement   string `json:"placement"` // cores, matrix, mixed or auto
	// Ablation is "" (none), "partition" (no tile partitioning: a mixed
	// placement runs each GEMM on one group), "packing" (weights packed
	// on every call), "kv-packing" (row-major KV cache, each K/V tile
	// packed inside attention) or "pipeline" (prefill attention's stages
	// serially, not pipelined), SMEPilot §4.2, §4.3, §5.4.
	Ablation string `json:"ablation,omitempty"`
	Backends string `json:"backends"` // the gemm backends used, e.g. "avx2-fp32+avx2-bf16"
	// Targets is what ran the cell's linear operators per placement
	// target, counted over the replay (after the warm-up): backend, the
	// unit that executes it, the weight precision that ran and the calls.
	// Absent in cells written before it existed.
	Targets []SweepTarget `json:"targets,omitempty"`
	// PrefillConfig and DecodeConfig are the per-phase service
	// configurations the cell ran (bench sweep --prefill-config,
	// --decode-config, --configs auto); nil without.
	PrefillConfig *SweepPhaseConfig `json:"prefill_config,omitempty"`
	DecodeConfig  *SweepPhaseConfig `json:"decode_config,omitempty"`

	Config SweepConfig `json:"config"`

	// Host, OS, Arch, CPU, Machine (the profile's machine name) and Date
	// (RFC 3339) identify where and when the cell ran.
	Host    string `json:"host"`
	OS      string `json:"os,omitempty"`   // runtime.GOOS, the benchmark format's goos
	Arch    string `json:"arch,omitempty"` // runtime.GOARCH, the benchmark format's goarch
	CPU     string `json:"cpu,omitempty"`  // CPU model name (/proc/cpuinfo), the benchmark format's cpu
	Machine string `json:"machine,omitempty"`
	Profile string `json:"profile,omitempty"` // path of the profile used for predictions
	Date    string `json:"date"`

	// Requests are the per-request outcomes, in trace order.
	Requests []SweepRequest `json:"requests"`

	TTFT    Dist `json:"ttft_s"`    // time to first token, per request
	TPOT    Dist `json:"tpot_s"`    // mean decode step after the first token, per request with ≥ 2 output tokens
	Latency Dist `json:"latency_s"` // end-to-end latency, arrival to last token

	WallS         float64  `json:"wall_s"`                     // replay wall time of the cell
	OutputTokS    float64  `json:"output_tok_s"`               // output tokens / WallS
	PrefillTokS   float64  `json:"prefill_tok_s"`              // prompt tokens / seconds spent in prefill
	SLOAttained   float64  `json:"slo_attainment"`             // fraction of requests meeting both SLO targets (Sandwich §8)
	GoodputReqS   float64  `json:"goodput_req_s"`              // requests meeting the SLO per second of WallS (Sandwich §8)
	PackS         float64  `json:"pack_s"`                     // weight packing at load, not in WallS
	PredictedTTFT *float64 `json:"predicted_ttft_s,omitempty"` // roofline TTFT of the mean prompt, when a profile is given
	// PredictedPrecision says what the predictions assumed, as the cell
	// ran: weight, activation and KV-cache dtypes, the ceilings and the
	// target of the linear operators and the backends (engine.Precision's
	// String), when a profile is given.
	PredictedPrecision string `json:"predicted_precision,omitempty"`
	// Noise is what the machine did during the cell's replay (issue #16
	// part 3): the process's CPU time over wall time × threads, the steal
	// of the workers' CPUs, the load average and the cv of the decode
	// steps (successive differences between steps of the same batch
	// size). A cell marked Noisy is flagged in the tables and left out of
	// the prediction-error figures ("noisy runs are flagged, not
	// counted"). Absent in cells written before the check.
	Noise *Noise `json:"noise,omitempty"`

	// Ops are the per-operator times summed over the cell, with the
	// roofline prediction for the same shapes where a profile was given.
	Ops []SweepOp `json:"operators"`

	Notes []string `json:"notes,omitempty"`
}

// SweepTarget is what ran one placement target's linear operators (the
// GEMMs and GEMVs) in a cell: the engine's choice for the cores target
// (the cores' fp32 backend, and kernels/quant for quantized weights) or
// for the matrix target (a matrix unit's backend, or a second backend on
// the cores where the machine has none; Note says why).
type SweepTarget struct {
	Target    string `json:"target"`         // "cores" or "matrix"
	Library   string `json:"library"`        // "kernels/gemm" or "kernels/quant"
	Backend   string `json:"backend"`        // e.g. "avx2-fp32", "sme-fp32", "avx2" (kernels/quant)
	Unit      string `json:"unit"`           // what executes it: "cores" (vector units) or "matrix" (a matrix unit: SME, AMX)
	ISA       string `json:"isa,omitempty"`  // the backend's instruction set
	Precision string `json:"precision"`      // weights as they ran: fp32, bf16, int8, q8_0, q4_0, ...
	Note      string `json:"note,omitempty"` // matrix target on the cores: why ("no matrix unit", "chosen by name; ...")
	Calls     int    `json:"calls"`          // linear-operator calls it ran in the replay, summed over layers
	// Label is the sentence the engine generated from the choice, e.g.
	// "avx2-bf16 (bf16 weights) on the cores, no matrix unit".
	Label string `json:"label"`
}

// Short names the target's backend for a plot legend: "avx2-fp32" (cores
// target), "sme-fp32 on the matrix unit", "avx2-bf16 on the cores, no
// matrix unit" (the matrix target without one), "neon-bf16 on the cores
// (named)" (named while a matrix unit was left unused), "q4_0 on
// kernels/quant avx2".
func (t SweepTarget) Short() string {
	switch {
	case t.Library == "kernels/quant":
		return t.Precision + " on kernels/quant " + t.Backend
	case t.Unit == "matrix":
		return t.Backend + " on the matrix unit"
	case t.Target == "matrix" && strings.HasPrefix(t.Note, "chosen by name;"):
		return t.Backend + " on the cores (named)"
	case t.Target == "matrix":
		return t.Backend + " on the cores, no matrix unit"
	}
	return t.Backend
}

// Noisy reports whether the cell's replay was marked noisy (Noise).
func (c *SweepCell) Noisy() bool { return c.Noise != nil && c.Noise.Noisy }

// PlacementLabel says what ran the cell's linear operators, generated from
// Targets (those with calls; all where none has): "cores = avx2-fp32",
// "matrix = avx2-bf16 on the cores, no matrix unit", "mixed = neon-fp32 +
// sme-fp32 on the matrix unit", "auto = avx2-fp32 (cores only)" where an
// auto plan put nothing on the matrix target. Cells without Targets (older
// files) give the placement name.
func (c *SweepCell) PlacementLabel() string {
	if len(c.Targets) == 0 {
		return c.Placement
	}
	ran := c.Targets
	if slices.ContainsFunc(ran, func(t SweepTarget) bool { return t.Calls > 0 }) {
		ran = slices.DeleteFunc(slices.Clone(ran), func(t SweepTarget) bool { return t.Calls == 0 })
	}
	var cores, mat []string
	for _, t := range ran {
		if t.Target == "matrix" {
			mat = append(mat, t.Short())
		} else {
			cores = append(cores, t.Short())
		}
	}
	s := c.Placement + " = " + strings.Join(append(cores, mat...), " + ")
	if c.Placement == "auto" && len(mat) == 0 {
		s += " (cores only)"
	} else if c.Placement == "auto" && len(cores) == 0 {
		s += " (matrix only)"
	}
	return s
}

// SweepConfig is the configuration a cell ran under, beyond its grid
// coordinates.
type SweepConfig struct {
	Requests     int     `json:"requests"`       // requests replayed
	Arrival      string  `json:"arrival"`        // "closed" or "poisson:RATE"
	Seed         uint64  `json:"seed"`           // trace and weight seed
	MaxGenTokens int     `json:"max_gen_tokens"` // cap on output tokens per request (0: none)
	MaxPrompt    int     `json:"max_prompt_tokens"`
	SLOTTFTS     float64 `json:"slo_ttft_s"` // TTFT target, seconds
	SLOTPOTS     float64 `json:"slo_tpot_s"` // TPOT target, seconds
	GoVersion    string  `json:"go_version"`
	BenchVersion string  `json:"bench_version,omitempty"`
}

// SweepRequest is one replayed request.
type SweepRequest struct {
	ID           int     `json:"id"`
	PromptTokens int     `json:"prompt_tokens"` // after any MaxPrompt cap
	OutputTokens int     `json:"output_tokens"` // after any MaxGenTokens cap
	ArrivalS     float64 `json:"arrival_s"`
	StartS       float64 `json:"start_s"` // when its prefill began, from the cell's start
	TTFTS        float64 `json:"ttft_s"`  // first token time − arrival
	TPOTS        float64 `json:"tpot_s"`  // (last − first token time)/(output − 1); 0 with one output token
	LatencyS     float64 `json:"latency_s"`
	MetSLO       bool    `json:"met_slo"`
}

// SweepOp is one operator's time in one phase, summed over a cell.
type SweepOp struct {
	Phase     string  `json:"phase"` // prefill or decode
	Op        string  `json:"op"`
	Calls     int     `json:"calls"`
	MeasuredS float64 `json:"measured_s"`
	// UninterruptedS is MeasuredS less the excess of its interrupted
	// calls (engine.Interrupted: a call ≥ 4× the median of its
	// neighbours with as many tokens), present when any call was;
	// InterruptedCalls counts them. The prediction error compares it.
	UninterruptedS   *float64 `json:"uninterrupted_s,omitempty"`
	InterruptedCalls int      `json:"interrupted_calls,omitempty"`
	PredictedS       *float64 `json:"predicted_s,omitempty"`
	FLOPs            float64  `json:"flops,omitempty"`
	Bytes            float64  `json:"bytes,omitempty"`
}

// Compared is the measured time a prediction is held against:
// UninterruptedS where present, else MeasuredS.
func (o SweepOp) Compared() float64 {
	if o.UninterruptedS != nil {
		return *o.UninterruptedS
	}
	return o.MeasuredS
}

// Dist summarizes a per-request quantity: mean and empirical percentiles
// (the smallest observed x with CDF(x) ≥ p).
type Dist struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	N    int     `json:"n"`
}

// SweepPhaseConfig is one phase's service configuration (Sandwich
// §3.2–3.3): the configuration as given (e.g. "remove(1,core)",
// "cpus=0-3", "config=3"), what it resolved to, the CPUs its workers ran
// on and their count.
type SweepPhaseConfig struct {
	Spec    string `json:"spec"`
	Label   string `json:"label"`
	CPUs    []int  `json:"cpus"`
	Threads int    `json:"threads"`
}
