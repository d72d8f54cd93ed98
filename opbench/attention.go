package opbench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/cpubench/bench/engine"
	"github.com/cpubench/bench/internal/memlimit"
	"github.com/cpubench/bench/kernels/gemm"
	kpool "github.com/cpubench/bench/kernels/pool"
	"github.com/cpubench/bench/probes"
	"github.com/cpubench/bench/results"
	"github.com/cpubench/bench/roofline"
)

// AttentionSchema tags the JSON of RunAttention's report.
const AttentionSchema = "bench.attention/v1"

// AttentionConfig is one `bench attention` sweep.
type AttentionConfig struct {
	// Arch is the model's shape (heads, KV heads, head dim; the rest for
	// the roofline's catalog).
	Arch roofline.Arch
	// Contexts are the prefill lengths T (a prompt of T tokens from an
	// empty cache: context = T).
	Contexts []int
	// DecodeContext is the context of the decode figures (each sequence's
	// new token attends to DecodeContext positions); Batches the decode
	// batch sizes (sequences, each with its own cache).
	DecodeContext int
	Batches       []int
	// Widths are the decode token widths (new tokens per sequence in one
	// step, SMEPilot Fig. 11b) measured at batch 1 and DecodeContext.
	Widths []int
	// Placements are cores, matrix and mixed (ParsePlacements); those
	// that do not apply on this machine are skipped with the reason.
	Placements []string
	Backends   Backends
	// CPUs are the pinned workers' CPUs, one per thread.
	CPUs []int
	// KVPackPerCall is the kv-packing ablation (row-major cache, every
	// tile packed inside each call).
	KVPackPerCall bool
	// KVDType is the KV cache's element type: "" or "fp32", or "bf16"
	// (engine.AttentionBenchOptions.KVDType).
	KVDType string
	// NoPipeline is the pipeline ablation: prefill is measured serially
	// only (by default both the pipeline, SMEPilot §4.2, and the serial
	// schedule, side by side).
	NoPipeline bool
	// ColdKVBytes, when > 0, times each decode call alone after every
	// worker read its share of ColdKVBytes of other memory (Evictor,
	// ColdEvictBytes): the KV cache comes from DRAM, as in the engine's
	// decode steps, where the step's weights stream through the caches
	// between one layer's attention calls (0: calls back to back, the KV
	// as warm as it fits).
	ColdKVBytes int64
	// RoofNow, for decode steps of one token, measures the probe's read
	// kernel over the same bytes as the step's KV cache on as many threads
	// (at most its work units: sequences × KV heads) right before and
	// right after each figure, and takes the fraction of their mean
	// (AttentionPoint.RoofNowGBps): with the KV as warm as it fits,
	// repeated as the probe repeats it (probes.Bandwidth): the profile's
	// level roofs were measured at working sets well inside each level,
	// while a batch's KV may sit at a level's edge, where the read rate
	// falls between two roofs, and on a VM the host's caches and bandwidth
	// move between the probe and the run; with ColdKVBytes, each read
	// timed alone after the same eviction as the step's calls (the DRAM
	// rate of those bytes in those shares, ramp-up included, by the
	// faster of the DRAM roof's read kernels, coldRead).
	RoofNow bool
	Timing  Timing
	// WaitPlacement is how long, in all, the figures may wait for the
	// host to put the CPUs back where the reference placement had them
	// (Watch.Wait; 0: no waiting, a moved figure is marked noisy either
	// way).
	WaitPlacement time.Duration
	// Machine gives the roofline prediction (nil: none); Profile the
	// ceilings of the fractions (nil: none).
	Machine *roofline.Machine
	Profile *results.Profile
	// Progress, when set, is told each figure as it is measured.
	Progress func(string)
}

// AttentionPoint is one measured figure.
type AttentionPoint struct {
	Phase string `json:"phase"` // prefill or decode
	// Axis is what the point's sweep varies: "context" (prefill), "batch"
	// (decode, width 1) or "width" (decode, batch 1).
	Axis      string `json:"axis"`
	Placement string `json:"placement"`
	// Schedule is "pipelined" (prefill on pairs of a vector and a matrix
	// worker, SMEPilot §4.2, Fig. 6: engine.AttentionBench.PrefillPipelined)
	// or "serial" (every worker runs whole jobs; decode always).
	Schedule string `json:"schedule"`
	// Kernels is the planner's tile kernels for the point's jobs
	// (engine.AttentionKernels): "vector" (DotRows/AxpyRows), "gemm" (the
	// backend's microkernels) or "gemm+vector" where a short last block
	// of rows falls below the threshold.
	Kernels string `json:"kernels"`
	// Backends are the fp32 backends the workers ran ("avx2-fp32", or
	// "avx2-fp32+sme-fp32" for mixed: cores group + matrix group).
	Backends string `json:"backends"`
	Threads  int    `json:"threads"`
	CPUs     []int  `json:"cpus"`
	Context  int    `json:"context"`
	Batch    int    `json:"batch"`
	Width    int    `json:"width"` // new tokens per sequence (prefill: the context)
	// FLOPs per call (4·head dim per query head and causal pair) and KV
	// bytes read per call (decode: 2·context·KV heads·head dim·4 per
	// sequence; prefill: each KV position once per query block is not
	// counted, 0).
	FLOPs   float64 `json:"flops"`
	KVBytes float64 `json:"kv_bytes,omitempty"`
	// KVCold: the decode call was timed alone after the caches were
	// evicted (AttentionConfig.ColdKVBytes), its KV read from DRAM as in
	// an engine's decode step; false: calls back to back, the KV as warm
	// as it fits.
	KVCold  bool         `json:"kv_cold,omitempty"`
	Seconds results.Stat `json:"seconds"`
	GFLOPS  results.Stat `json:"gflops"`
	KVGBps  float64      `json:"kv_gbps,omitempty"`
	// PredictedSeconds is the roofline's time of the catalog's qk, softmax
	// and pv operators with qk and pv on the placement's target (0: no
	// prediction); PredictionNote says why there is none, or how it was
	// predicted where not on the placement's own target.
	PredictedSeconds float64 `json:"predicted_seconds,omitempty"`
	PredictedGFLOPS  float64 `json:"predicted_gflops,omitempty"`
	// PredictedMatrixSeconds and PredictedVectorSeconds are the two stages
	// of roofline.PredictAttention for the schedule: QKᵀ + P·V, and the
	// softmax + rescale, each at its group's share where pipelined.
	// PredictedSeconds is their sum (serial) or the longer plus the fill
	// and drain (pipelined).
	PredictedMatrixSeconds float64 `json:"predicted_matrix_seconds,omitempty"`
	PredictedVectorSeconds float64 `json:"predicted_vector_seconds,omitempty"`
	PredictionNote         string  `json:"prediction_note,omitempty"`
	// Fraction is GFLOP/s over the probed fp32 GEMM ceiling (prefill) or
	// KV GB/s over the probed read roof for the KV bytes (decode), of
	// FractionOf; Target the goal (0.70, 0.80); neither for a
	// decode step wider than one token.
	Fraction   float64 `json:"fraction,omitempty"`
	FractionOf string  `json:"fraction_of"`
	Target     float64 `json:"target"`
	// RoofNowGBps (AttentionConfig.RoofNow) is the mean of the read
	// kernel's GB/s over the step's KV bytes on its threads measured right
	// before and right after the figure, RoofNowBeforeGBps and
	// RoofNowAfterGBps the two; decode's fraction is of their mean. 0:
	// not measured.
	RoofNowGBps       float64 `json:"roof_now_gbps,omitempty"`
	RoofNowBeforeGBps float64 `json:"roof_now_before_gbps,omitempty"`
	RoofNowAfterGBps  float64 `json:"roof_now_after_gbps,omitempty"`
	// RoofNowThreads is the threads the read kernel ran on: the step's
	// work units (sequences × KV heads), at most Threads.
	RoofNowThreads int `json:"roof_now_threads,omitempty"`
	// MaxRelError is the largest error of the sampled outputs relative
	// to Σ p|v| against a float64 reference.
	MaxRelError float64 `json:"max_rel_error"`
	// Noise is the figure's noise record (Watch.Measure): CPU share,
	// steal, load, cv and the core-to-core round trip that moved most
	// from the reference placement; Noisy with Why where a test failed.
	Noise *results.Noise `json:"noise,omitempty"`
}

// AttentionReport is RunAttention's result.
type AttentionReport struct {
	Schema    string `json:"schema"`
	Model     string `json:"model"`
	Heads     int    `json:"heads"`
	KVHeads   int    `json:"kv_heads"`
	HeadDim   int    `json:"head_dim"`
	Precision string `json:"precision"`
	// KVCache is "producer-packed" or "row-major, packed per call
	// (kv-packing ablation)".
	KVCache string `json:"kv_cache"`
	SweepRun
	Points []AttentionPoint `json:"points"`
}

// SweepRun is what an operator sweep's report (AttentionReport,
// GEMMSweepReport) states of how it ran, its keys at the report's top
// level in JSON.
type SweepRun struct {
	Threads     int     `json:"threads"`
	CoresLabel  string  `json:"cores"`
	MatrixLabel string  `json:"matrix"`
	Reps        int     `json:"reps"`
	RepSeconds  float64 `json:"rep_seconds"`
	Machine     string  `json:"machine,omitempty"`
	// Skipped are the placements that do not apply, with the reason.
	Skipped []string `json:"skipped,omitempty"`
	Notes   []string `json:"notes,omitempty"`
	// Placement is the reference the figures' round trips were checked
	// against (Watch.Ref; absent: not checked), PlacementFrom where it came
	// from.
	Placement     *results.Placement `json:"placement,omitempty"`
	PlacementFrom string             `json:"placement_from,omitempty"`
}

// sweepRun is the SweepRun of a sweep on threads threads with backends b
// timed by t.
func sweepRun(threads int, b Backends, t Timing) SweepRun {
	return SweepRun{Threads: threads, CoresLabel: b.CoresLabel, MatrixLabel: b.MatrixLabel, Reps: t.Reps, RepSeconds: t.RepDuration.Seconds()}
}

// Validate checks the sweep's values; errors are one line naming the flag
// and value.
func (c *AttentionConfig) Validate() error {
	a := c.Arch
	switch {
	case a.Heads < 1 || a.KVHeads < 1 || a.HeadDim < 1:
		return fmt.Errorf("model %s: heads %d, KV heads %d, head dim %d: must be ≥ 1", a.Name, a.Heads, a.KVHeads, a.HeadDim)
	case a.Heads%a.KVHeads != 0:
		return fmt.Errorf("model %s: heads %d not a multiple of KV heads %d", a.Name, a.Heads, a.KVHeads)
	case len(c.Contexts) == 0 && len(c.Batches) == 0 && len(c.Widths) == 0:
		return errors.New("--contexts, --batches and --widths: nothing to measure")
	case len(c.CPUs) < 1:
		return errors.New("--threads: need at least 1 CPU")
	case len(c.Placements) == 0:
		return errors.New("--placement: need at least one of cores, matrix, mixed")
	}
	if err := engine.CheckKVDType(c.KVDType, c.KVPackPerCall); err != nil {
		return fmt.Errorf("--kv-dtype: %w", err)
	}
	for _, t := range c.Contexts {
		if t < 1 {
			return fmt.Errorf("--contexts %d: must be ≥ 1", t)
		}
	}
	if (len(c.Batches) > 0 || len(c.Widths) > 0) && c.DecodeContext < 1 {
		return fmt.Errorf("--decode-context %d: must be ≥ 1", c.DecodeContext)
	}
	for _, w := range c.Widths {
		if w < 1 || w > c.DecodeContext {
			return fmt.Errorf("--widths %d: must be between 1 and --decode-context %d", w, c.DecodeContext)
		}
	}
	for _, b := range c.Batches {
		if b < 1 {
			return fmt.Errorf("--batches %d: must be ≥ 1", b)
		}
	}
	return c.Timing.validate()
}

// attentionWorkers returns the backend of each of threads workers for a
// placement, or why it does not apply.
func attentionWorkers(p string, b Backends, threads int, kvBF16 bool) ([]gemm.Backend, string) {
	ws := make([]gemm.Backend, threads)
	mat := b.Pair.Matrix
	if p != PlaceCores && !attentionMatrixOK(mat, kvBF16) {
		return nil, fmt.Sprintf("%s: does not apply: matrix = %s; attention's tiles run on fp32 panels (the KV cache is fp32), so they need an fp32 matrix backend (--matrix-backend NAME), or amx-bf16 with --kv-dtype bf16", p, b.MatrixLabel)
	}
	if p == PlaceMixed && threads < 2 {
		return nil, "mixed: does not apply with 1 thread (two groups)"
	}
	for i := range ws {
		ws[i] = b.Pair.Cores
		if p == PlaceMatrix {
			ws[i] = mat
		}
	}
	if p == PlaceMixed {
		c, _ := groupSizes(threads)
		for i := c; i < threads; i++ {
			ws[i] = mat
		}
	}
	return ws, ""
}

// attentionMatrixOK reports whether attention's tiles can run on the
// matrix backend mat: an fp32 backend, or amx-bf16 on a bf16 KV cache
// (engine.AttentionAMX).
func attentionMatrixOK(mat gemm.Backend, kvBF16 bool) bool {
	return mat.DType == gemm.FP32 || kvBF16 && engine.AttentionAMX(mat)
}

// backendsName names the backends of ws: one name, or cores+matrix.
func backendsName(ws []gemm.Backend) string {
	var names []string
	for _, w := range ws {
		if !slices.Contains(names, w.Name) {
			names = append(names, w.Name)
		}
	}
	return fmt.Sprint(joinPlus(names))
}

func joinPlus(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += "+"
		}
		out += x
	}
	return out
}

// benchOptions are the attention bench of one phase on workers ws:
// prefill, one sequence whose cache holds the longest context; decode,
// the largest batch of sequences whose caches hold the decode context.
func (c *AttentionConfig) benchOptions(ws []gemm.Backend, phase string) engine.AttentionBenchOptions {
	o := engine.AttentionBenchOptions{Heads: c.Arch.Heads, KVHeads: c.Arch.KVHeads, HeadDim: c.Arch.HeadDim,
		MaxSeq: c.DecodeContext, Seqs: 1, KVPackPerCall: c.KVPackPerCall, KVDType: c.KVDType, Workers: ws}
	if phase == "prefill" {
		if len(c.Contexts) > 0 {
			o.MaxSeq = slices.Max(c.Contexts)
		}
		return o
	}
	if len(c.Batches) > 0 {
		o.Seqs = slices.Max(c.Batches)
	}
	if len(c.Widths) > 0 {
		o.Width = slices.Max(c.Widths)
	}
	return o
}

// CheckMemory refuses, before anything is allocated, a sweep whose
// caches (one phase at a time; two layouts for mixed) do not fit in the
// memory this process may use (memlimit.Check; engine.NewAttentionBench
// checks each bench again).
func (c *AttentionConfig) CheckMemory() error {
	ws := []gemm.Backend{c.Backends.Pair.Cores}
	if slices.Contains(c.Placements, PlaceMixed) && attentionMatrixOK(c.Backends.Pair.Matrix, c.KVDType == "bf16") {
		ws = append(ws, c.Backends.Pair.Matrix)
	}
	if len(c.Contexts) > 0 {
		if err := checkSize("attention: prefill KV cache and queries", engine.AttentionBenchBytes(c.benchOptions(ws, "prefill"))); err != nil {
			return err
		}
	}
	if len(c.Batches) > 0 || len(c.Widths) > 0 {
		o := c.benchOptions(ws, "decode")
		need := engine.AttentionBenchBytes(o)
		what := "attention: decode KV caches and queries"
		if c.ColdKVBytes > 0 {
			// The eviction buffer and the cold read's copy of the
			// largest step's KV bytes (--kv-state cold).
			kv := 0.0
			for _, B := range append([]int{1}, c.Batches...) {
				kv = max(kv, o.DecodeKVBytes(c.DecodeContext, B))
			}
			need = need.Plus(memlimit.Of(uint64(c.ColdKVBytes))).Plus(memlimit.Of(uint64(kv)))
			what += ", the eviction buffer and the cold read's buffer (--kv-state cold)"
		}
		return checkSize(what, need)
	}
	return nil
}

// RunAttention measures every placement of c that applies: prefill at
// each context, then decode at each batch; see AttentionPoint.
func RunAttention(ctx context.Context, c AttentionConfig) (*AttentionReport, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	threads := len(c.CPUs)
	r := &AttentionReport{Schema: AttentionSchema, Model: c.Arch.Name, Heads: c.Arch.Heads, KVHeads: c.Arch.KVHeads,
		HeadDim: c.Arch.HeadDim, Precision: "fp32 (queries, KV cache, scores and accumulation)", KVCache: "producer-packed (SMEPilot §4.3)",
		SweepRun: sweepRun(threads, c.Backends, c.Timing), Points: []AttentionPoint{}}
	if c.KVPackPerCall {
		r.KVCache = "row-major, every tile packed inside each call (--ablate kv-packing)"
	}
	if c.KVDType == "bf16" {
		r.Precision = "fp32 queries, scores and accumulation; KV cache bf16 (each tile converted to fp32)"
		r.KVCache = "producer-packed (SMEPilot §4.3), bf16"
		if engine.AttentionAMX(c.Backends.Pair.Matrix) {
			r.Notes = append(r.Notes, "matrix = "+c.Backends.Pair.Matrix.Name+": prefill's QKᵀ and P·V on the AMX tile unit (TDPBF16PS) on K and V as the producer wrote them in its tile layout; queries and probabilities rounded to bf16 as K and V are, fp32 accumulation; decode's vector kernel reads the same panels in place (kernels.AxpyPanelsBF16Pairs)")
		}
	}
	if c.Machine != nil {
		r.Machine = c.Machine.Name
	} else {
		r.Notes = append(r.Notes, "no profile: no roofline prediction")
	}
	p, err := kpool.New(kpool.Options{CPUs: c.CPUs})
	if err != nil {
		return nil, err
	}
	defer p.Close()
	if pe := p.PinErr(); pe != nil {
		r.Notes = append(r.Notes, "workers not pinned: "+pe.Error())
	}
	all := p.All()
	watch, err := NewWatch(ctx, c.Profile, all.CPUs(), c.WaitPlacement)
	if err != nil {
		return nil, err
	}
	r.Placement, r.PlacementFrom = watch.Ref, watch.RefFrom
	// The pipeline's groups: the vector group the first threads −
	// threads/2 workers, the matrix group the others (as the engine and
	// the mixed placement cut them); a pair's matrix worker runs its
	// placement's backend.
	schedules := []string{SchedulePipelined, ScheduleSerial}
	var vecG, matG *kpool.Group
	switch {
	case c.NoPipeline:
		schedules = []string{ScheduleSerial}
		r.Notes = append(r.Notes, "prefill: serial schedule only (--ablate pipeline)")
	case threads < 2:
		schedules = []string{ScheduleSerial}
		r.Notes = append(r.Notes, "prefill: serial schedule only: with 1 thread the pipeline (SMEPilot §4.2) has no second worker and degenerates to the serial schedule")
	default:
		gs, err := p.Groups(threads-threads/2, threads/2)
		if err != nil {
			return nil, err
		}
		vecG, matG = gs[0], gs[1]
		r.Notes = append(r.Notes, fmt.Sprintf("prefill pipelined (SMEPilot §4.2, Fig. 6): pairs of workers: %d; matrix stage (QKᵀ, P·V) on CPUs %v with the placement's matrix-group backend, vector stage (softmax, rescale) on CPUs %v; serial: every worker runs whole jobs (the pipeline ablation)",
			threads/2, matG.CPUs(), vecG.CPUs()[:threads/2]))
		if c.Backends.Pair.Matrix.Unit == gemm.Cores {
			r.Notes = append(r.Notes, "no matrix unit: the pipeline's matrix stage is a second group of cores (matrix = "+c.Backends.MatrixLabel+")")
		}
	}
	for _, pl := range c.Placements {
		ws, why := attentionWorkers(pl, c.Backends, threads, c.KVDType == "bf16")
		if why != "" {
			r.Skipped = append(r.Skipped, why)
			continue
		}
		base := AttentionPoint{Placement: pl, Backends: backendsName(ws), Threads: threads, CPUs: all.CPUs()}
		var a *engine.AttentionBench
		o := c.benchOptions(ws, "prefill")
		if len(c.Contexts) > 0 {
			if a, err = engine.NewAttentionBench(o); err != nil {
				return nil, err
			}
		}
		for _, T := range c.Contexts {
			for _, sched := range schedules {
				pt := base
				pt.Phase, pt.Axis, pt.Context, pt.Batch, pt.Width, pt.FLOPs, pt.Target = "prefill", "context", T, 1, T, o.PrefillFLOPs(T), PrefillTarget
				pt.Schedule = sched
				if c.Progress != nil {
					c.Progress(fmt.Sprintf("attention %s prefill context %d %s", pl, T, sched))
				}
				call := func(m *kpool.Master) error { return a.Prefill(ctx, m, all, T) }
				if sched == SchedulePipelined {
					call = func(m *kpool.Master) error { return a.PrefillPipelined(ctx, m, vecG, matG, T) }
				}
				if pt.Seconds, pt.Noise, err = watch.Measure(ctx, pt.CPUs, func() (results.Stat, error) { return c.Timing.SecondsPerCall(ctx, p, call) }); err != nil {
					return nil, fmt.Errorf("attention %s prefill context %d %s: %w", pl, T, sched, err)
				}
				for _, row := range []int{0, T / 2, T - 1} {
					e, err := a.CheckOutput(row, 0, row, c.Arch.Heads-1)
					if err != nil {
						return nil, err
					}
					pt.MaxRelError = max(pt.MaxRelError, e)
				}
				if bound := attentionErrorBound(ws, c.KVDType); pt.MaxRelError > bound {
					return nil, fmt.Errorf("attention %s %s %s context %d batch %d: output check failed: relative error %.3g > %.0e", pl, sched, pt.Phase, pt.Context, pt.Batch, pt.MaxRelError, bound)
				}
				c.finish(&pt, ws)
				r.Points = append(r.Points, pt)
			}
		}
		a = nil // the prefill caches go before the decode ones are made
		o = c.benchOptions(ws, "decode")
		if len(c.Batches) > 0 || len(c.Widths) > 0 {
			if a, err = engine.NewAttentionBench(o); err != nil {
				return nil, err
			}
		}
		type step struct {
			axis         string
			batch, width int
		}
		var steps []step
		for _, B := range c.Batches {
			steps = append(steps, step{"batch", B, 1})
		}
		for _, W := range c.Widths {
			steps = append(steps, step{"width", 1, W})
		}
		var evict func(*kpool.Master) error
		for _, st := range steps {
			C, B, W := c.DecodeContext, st.batch, st.width
			pt := base
			pt.Phase, pt.Axis, pt.Context, pt.Batch, pt.Width, pt.FLOPs, pt.Target = "decode", st.axis, C, B, W, o.DecodeFLOPs(C, B, W), DecodeTarget
			pt.Schedule = ScheduleSerial
			pt.KVBytes, pt.KVCold = o.DecodeKVBytes(C, B), c.ColdKVBytes > 0
			if c.Progress != nil {
				c.Progress(fmt.Sprintf("attention %s decode context %d batch %d width %d", pl, C, B, W))
			}
			call := func(m *kpool.Master) error { return a.Decode(ctx, m, all, C, B, W) }
			roofNow := c.RoofNow && W == 1
			if c.ColdKVBytes > 0 && evict == nil {
				evict = Evictor(all, c.ColdKVBytes)
			}
			// The read kernel on as many threads as the step has work units
			// (one sequence's KV head each), at most all of them: a batch
			// of one sequence of 8 KV heads busies 8 of 16 workers; after
			// the same eviction as the step where its KV is cold.
			var roof func() (float64, error)
			if roofNow {
				pt.RoofNowThreads = min(threads, B*c.Arch.KVHeads)
				roof = func() (float64, error) { return readRoofNow(ctx, pt.KVBytes, pt.RoofNowThreads) }
				if c.ColdKVBytes > 0 {
					cold := newColdRead(pt.KVBytes, pt.RoofNowThreads)
					roof = func() (float64, error) { return cold.gbps(ctx, c.Timing, p, all, evict) }
				}
				if pt.RoofNowBeforeGBps, err = roof(); err != nil {
					return nil, fmt.Errorf("attention %s decode batch %d: read roof beside it: %w", pl, B, err)
				}
			}
			pt.Seconds, pt.Noise, err = watch.Measure(ctx, pt.CPUs, func() (results.Stat, error) {
				if c.ColdKVBytes > 0 {
					return c.Timing.SecondsPerColdCall(ctx, p, evict, call)
				}
				return c.Timing.SecondsPerCall(ctx, p, call)
			})
			if err != nil {
				return nil, fmt.Errorf("attention %s decode batch %d width %d: %w", pl, B, W, err)
			}
			if roofNow {
				if pt.RoofNowAfterGBps, err = roof(); err != nil {
					return nil, fmt.Errorf("attention %s decode batch %d: read roof beside it: %w", pl, B, err)
				}
				pt.RoofNowGBps = (pt.RoofNowBeforeGBps + pt.RoofNowAfterGBps) / 2
			}
			for _, s := range []int{0, B - 1} {
				for _, i := range []int{0, W - 1} {
					e, err := a.CheckOutput(s*W+i, s, C-W+i, 0)
					if err != nil {
						return nil, err
					}
					pt.MaxRelError = max(pt.MaxRelError, e)
				}
			}
			if bound := attentionErrorBound(ws, c.KVDType); pt.MaxRelError > bound {
				return nil, fmt.Errorf("attention %s decode context %d batch %d width %d: output check failed: relative error %.3g > %.0e", pl, C, B, W, pt.MaxRelError, bound)
			}
			c.finish(&pt, ws)
			r.Points = append(r.Points, pt)
		}
	}
	if len(r.Points) == 0 {
		return nil, fmt.Errorf("attention: no placement applies: %s", joinNotes(r.Skipped...))
	}
	r.Notes = append(r.Notes, watch.Line())
	return r, nil
}

// maxAttentionError is the largest relative output error accepted: far
// above attendBlock's fp32 bound (about 1e-6), far below a wrong kernel's.
const maxAttentionError = 1e-4

// maxAttentionErrorBF16 is maxAttentionError where the tile products
// round queries and probabilities to bf16 (amx-bf16 on a bf16 KV cache,
// gemm.AMXTiles.Rounded): each rounding a relative 2^-9, a few 1e-3 of
// Σ p|v| against the reference of the cache's own K and V.
const maxAttentionErrorBF16 = 1e-2

// attentionErrorBound is the output check's bound for attention on
// workers ws with a KV cache of kvDType.
func attentionErrorBound(ws []gemm.Backend, kvDType string) float64 {
	for _, b := range ws {
		if kvDType == "bf16" && engine.AttentionAMX(b) {
			return maxAttentionErrorBF16
		}
	}
	return maxAttentionError
}

// readRoofNow is the probe's read kernel over bytes (rounded down to
// whole 4 KiB pages, at least one) on threads threads, pinned as the
// probe pins them: the median GB/s of 5 repetitions of at least 20 ms
// (probes.Bandwidth).
func readRoofNow(ctx context.Context, bytes float64, threads int) (float64, error) {
	ws := max(int64(bytes)/4096*4096, 4096)
	bw, err := probes.Bandwidth(ctx, probes.BandwidthConfig{Kernels: []string{"read"}, WorkingSets: []int64{ws}, Threads: []int{threads}, Reps: 5, RepDuration: 20 * time.Millisecond})
	if err != nil {
		return 0, err
	}
	if len(bw) != 1 || !(bw[0].GBps.Median > 0) {
		return 0, fmt.Errorf("read kernel over %s on %d threads: no figure", memlimit.FormatBytes(float64(ws)), threads)
	}
	return bw[0].GBps.Median, nil
}

// jobKernels is the tile kernels of the jobs of width query rows per
// sequence (blocks of engine.AttentionRows(b, group), the last one
// shorter; b the last worker's backend, as engine.AttentionBench cuts them).
func jobKernels(b gemm.Backend, width, group int) string {
	rows := engine.AttentionRows(b, group)
	full := engine.AttentionKernels(min(width, rows), group)
	if r := width % rows; width > rows && r != 0 {
		if last := engine.AttentionKernels(r, group); last != full {
			return full + "+" + last
		}
	}
	return full
}

// The schedules of AttentionPoint.Schedule.
const (
	SchedulePipelined = "pipelined"
	ScheduleSerial    = "serial"
)

// finish derives a measured point's rates, prediction and fraction (ws:
// the workers' backends).
func (c *AttentionConfig) finish(pt *AttentionPoint, ws []gemm.Backend) {
	coresBackend := ws[0].Name
	pt.Kernels = jobKernels(ws[len(ws)-1], pt.Width, c.Arch.Heads/c.Arch.KVHeads)
	pt.GFLOPS = rates(pt.Seconds, pt.FLOPs, 1e-9)
	med := pt.Seconds.Median
	if pt.KVBytes > 0 && med > 0 {
		pt.KVGBps = pt.KVBytes / med / 1e9
	}
	pt.PredictedSeconds, pt.PredictedMatrixSeconds, pt.PredictedVectorSeconds, pt.PredictionNote = c.predictAttention(pt, ws)
	if pt.PredictedSeconds > 0 {
		pt.PredictedGFLOPS = pt.FLOPs / pt.PredictedSeconds / 1e9
	}
	var ref float64
	if pt.Phase == "prefill" {
		ref, pt.FractionOf = GEMMCeiling(c.Profile, coresBackend, pt.Threads)
		if ref > 0 {
			pt.Fraction = pt.GFLOPS.Median / ref
		}
	} else if pt.Width > 1 {
		pt.Target, pt.FractionOf = 0, "a decode step of several tokens: its FLOPs grow with the width at the same KV bytes, so no fraction of the KV read roof; see measured/predicted"
	} else if pt.RoofNowGBps > 0 {
		ref = pt.RoofNowGBps
		pt.Fraction = pt.KVGBps / ref
		pt.FractionOf = fmt.Sprintf("the read kernel over the same %s at %d threads (the step's %d work units on %d workers), measured right before and after the figure: %.1f GB/s (%.1f, %.1f)",
			memlimit.FormatBytes(pt.KVBytes), pt.RoofNowThreads, pt.Batch*c.Arch.KVHeads, pt.Threads, ref, pt.RoofNowBeforeGBps, pt.RoofNowAfterGBps)
		if pt.KVCold {
			pt.FractionOf += fmt.Sprintf("; both cold: each call timed alone after every worker read its share of %s of other memory", memlimit.FormatBytes(float64(c.ColdKVBytes)))
		}
		if d := math.Abs(pt.RoofNowBeforeGBps-pt.RoofNowAfterGBps) / ref; d > results.NoiseMaxRoofDrift {
			pt.FractionOf += fmt.Sprintf("; they differ by %.0f%% (> %.0f%%): the host moved during the figure", 100*d, 100*results.NoiseMaxRoofDrift)
		}
		if c.Machine != nil {
			if r, ok := c.Machine.HoldingRoof(pt.KVBytes, pt.Threads); ok && r.GBps > 0 {
				pt.FractionOf += fmt.Sprintf("; the profile's %s read roof: %.1f GB/s", r.Level, r.GBps)
			}
		}
	} else {
		// The roof of the level that holds the KV bytes (a batch-1 cache
		// that fits the L3 is read at the L3's rate, not DRAM's); DRAM's
		// where the KV was evicted before each call.
		held := pt.KVBytes
		if pt.KVCold {
			held = math.Inf(1)
		}
		if c.Machine != nil {
			if r, ok := c.Machine.HoldingRoof(held, pt.Threads); ok && r.GBps > 0 {
				ref = r.GBps
				if r.Level == "DRAM" && pt.KVCold {
					pt.FractionOf = fmt.Sprintf("probed DRAM read roof at %d threads, %.1f GB/s: the KV cache evicted before each call (--kv-state cold)", r.Threads, r.GBps)
				} else if r.Level == "DRAM" {
					pt.FractionOf = fmt.Sprintf("probed DRAM read roof at %d threads, %.1f GB/s: no cache level's capacity holds the point's %s of KV bytes", r.Threads, r.GBps, memlimit.FormatBytes(pt.KVBytes))
				} else {
					pt.FractionOf = fmt.Sprintf("probed %s read roof at %d threads, %.1f GB/s: the smallest level whose capacity (%s) holds the point's %s of KV bytes", r.Level, r.Threads, r.GBps, memlimit.FormatBytes(float64(r.CapacityBytes)), memlimit.FormatBytes(pt.KVBytes))
				}
			}
		}
		if ref == 0 {
			ref, pt.FractionOf = BandwidthRoof(c.Profile, pt.KVBytes, pt.Threads)
		}
		if ref > 0 {
			pt.Fraction = pt.KVGBps / ref
		}
	}
}

// predictAttention is the roofline's time of the catalog's qk, softmax
// and pv for the point's shape (one layer; fp32) as SMEPilot §4.2's two
// stages (roofline.PredictAttention): serial, the matrix stage (qk, pv)
// on the target named like the placement plus the vector stage (softmax,
// rescale) on the cores; pipelined, the longer stage at its group's share
// (the matrix stage on the target of the pair's matrix worker: its share
// of the cores, or the whole matrix unit) plus the fill and drain (once
// per pair of workers, n/2 pairs of n workers). It
// returns the total, the two stages and a note.
func (c *AttentionConfig) predictAttention(pt *AttentionPoint, ws []gemm.Backend) (total, matrix, vector float64, note string) {
	if c.Machine == nil {
		return 0, 0, 0, "no profile"
	}
	req := roofline.Request{Phase: roofline.Prefill, Batch: 1, Tokens: pt.Context, Context: pt.Context,
		Weight: "fp32", Act: "fp32", KV: c.kvDType(), Routing: roofline.Routing{Kind: "uniform"}}
	if pt.Phase == "decode" {
		req = roofline.Request{Phase: roofline.Decode, Batch: pt.Batch, Tokens: pt.Width, Context: pt.Context,
			Weight: "fp32", Act: "fp32", KV: c.kvDType(), Routing: roofline.Routing{Kind: "uniform"}}
	}
	n := len(ws)
	matBackend := ws[n-1] // the matrix group's (the last workers')
	s := *AttentionPlan(matBackend, c.Arch)
	place := pt.Placement
	if pt.Schedule == SchedulePipelined {
		place = PlaceMatrix
		if matBackend.Unit == gemm.Cores {
			s.MatrixShare = float64(n/2) / float64(n)
			if pt.Placement == PlaceCores {
				place = PlaceCores
			}
		}
		s.VectorShare = float64(n-n/2) / float64(n)
		s.Pairs = n / 2
	}
	target, note, ok := predictionTarget(c.Machine, place, c.Backends.Pair)
	if !ok {
		return 0, 0, 0, fmt.Sprintf("the machine %s has no %s target", c.Machine.Name, place)
	}
	s.Target, s.ColdKV = target, pt.KVCold
	m, tnote := threadsMachine(c.Machine, pt.Threads, target)
	note = joinNotes(note, tnote)
	st, err := roofline.PredictAttention(m, c.Arch, req, "fp32", s)
	if err != nil {
		return 0, 0, 0, err.Error()
	}
	if st.Note != "" {
		note = strings.TrimPrefix(note+"; "+st.Note, "; ")
	}
	if pt.Schedule == SchedulePipelined {
		return st.Pipelined, st.Matrix / s.MatrixShare, st.Vector / s.VectorShare, note
	}
	return st.Serial, st.Matrix, st.Vector, note
}

// kvDType is the KV cache's dtype for the roofline: "fp32" or "bf16".
func (c *AttentionConfig) kvDType() string {
	if c.KVDType == "bf16" {
		return "bf16"
	}
	return "fp32"
}

// AttentionPlan is the engine's prefill attention tiling on backend be for
// arch (engine.AttentionPlan), for a roofline.Machine's AttnPlan or
// roofline.PredictAttention's schedule (shares 1, target unset).
func AttentionPlan(be gemm.Backend, arch roofline.Arch) *roofline.AttentionSchedule {
	s := engine.AttentionPlan(be, arch.HeadDim, arch.Heads/max(arch.KVHeads, 1))
	return &s
}
