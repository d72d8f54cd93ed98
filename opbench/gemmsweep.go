package opbench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cpubench/bench/internal/memlimit"
	"github.com/cpubench/bench/kernels/gemm"
	"github.com/cpubench/bench/probes"
	"github.com/cpubench/bench/results"
	"github.com/cpubench/bench/roofline"
)

// GEMMSweepSchema tags the JSON of RunGEMMSweep's report.
const GEMMSweepSchema = "bench.gemm-sweep/v1"

// GEMMSweepConfig is one `bench gemm --sweep`: the FFN GEMMs of Arch
// (gate and up: N = intermediate, K = hidden; down: N = hidden, K =
// intermediate; one expert's FFN where every layer is MoE) at M
// = each prefill length and each decode batch.
type GEMMSweepConfig struct {
	Arch       roofline.Arch
	Lengths    []int // prefill M (tokens of one prompt)
	Batches    []int // decode M (sequences, one token each)
	Placements []string
	Backends   Backends
	CPUs       []int
	Timing     Timing
	Machine    *roofline.Machine
	Profile    *results.Profile
	Progress   func(string)
	// WaitPlacement is AttentionConfig.WaitPlacement for the sweep's
	// figures.
	WaitPlacement time.Duration
}

// GEMMSweepPoint is one measured figure.
type GEMMSweepPoint struct {
	// Op is "gate_proj/up_proj" (one shape) or "down_proj".
	Op        string `json:"op"`
	Phase     string `json:"phase"` // prefill (M = length) or decode (M = batch)
	M         int    `json:"m"`
	N         int    `json:"n"`
	K         int    `json:"k"`
	Placement string `json:"placement"`
	// Backends ran it: one name, or cores+matrix for mixed (split by
	// SMEPilot Eq. 1 with co-running feedback, probes.GEMMBench.Split).
	Backends string `json:"backends"`
	// DType is the weights' precision(s) ("fp32", "fp32+bf16").
	DType   string       `json:"dtype"`
	Threads int          `json:"threads"`
	GFLOPS  results.Stat `json:"gflops"`
	Seconds float64      `json:"seconds"` // median per call
	// PredictedSeconds: the roofline time max(F/π, Q/β) of the linear on
	// the target named like the placement, weights at the placement's
	// dtype (0: none); PredictionNote says why there is none, or how it was
	// predicted where not on the placement's own target.
	PredictedSeconds float64 `json:"predicted_seconds,omitempty"`
	PredictedGFLOPS  float64 `json:"predicted_gflops,omitempty"`
	PredictionNote   string  `json:"prediction_note,omitempty"`
	// Fraction of FractionOf: probes.GEMMFraction (compute ceiling for M >
	// 16, DRAM read roof of the weight traffic for M ≤ 16); not for mixed.
	Fraction   float64 `json:"fraction,omitempty"`
	FractionOf string  `json:"fraction_of"`
	Note       string  `json:"note,omitempty"`
	// Noise is the figure's noise record (probes.GEMMBench's: CPU share,
	// steal, load, cv of the rates) with the core-to-core round trip
	// before and after it that moved most from the reference placement
	// (Watch); Noisy with Why where a test failed.
	Noise *results.Noise `json:"noise,omitempty"`
}

// GEMMSweepReport is RunGEMMSweep's result.
type GEMMSweepReport struct {
	Schema string `json:"schema"`
	Model  string `json:"model"`
	SweepRun
	Points []GEMMSweepPoint `json:"points"`
}

// ffnShapes are the sweep's weight shapes: name, N, K.
func (c *GEMMSweepConfig) ffnShapes() ([]ffnShape, string) {
	h, f, note := c.Arch.Dim, c.Arch.Intermediate, ""
	if f <= 0 || (c.Arch.MoELayers >= c.Arch.Layers && c.Arch.MoEIntermediate > 0) {
		f, note = c.Arch.MoEIntermediate, fmt.Sprintf("every layer of %s is MoE: one expert's FFN shapes (moe_intermediate_size %d), at M = the rows routed to it", c.Arch.Name, c.Arch.MoEIntermediate)
	}
	return []ffnShape{{"gate_proj/up_proj", f, h}, {"down_proj", h, f}}, note
}

type ffnShape struct {
	op   string
	n, k int
}

// Validate checks the sweep's values; errors are one line naming the flag
// and value.
func (c *GEMMSweepConfig) Validate() error {
	switch {
	case c.Arch.Dim < 1:
		return fmt.Errorf("model %s: hidden size %d: must be ≥ 1", c.Arch.Name, c.Arch.Dim)
	case c.Arch.Intermediate < 1 && c.Arch.MoEIntermediate < 1:
		return fmt.Errorf("model %s: no FFN intermediate size", c.Arch.Name)
	case len(c.Lengths) == 0 && len(c.Batches) == 0:
		return errors.New("--lengths and --batches: nothing to measure")
	case len(c.CPUs) < 1:
		return errors.New("--threads: need at least 1 CPU")
	case len(c.Placements) == 0:
		return errors.New("--placement: need at least one of cores, matrix, mixed")
	}
	for _, m := range c.Lengths {
		if m < 1 {
			return fmt.Errorf("--lengths %d: must be ≥ 1", m)
		}
	}
	for _, m := range c.Batches {
		if m < 1 {
			return fmt.Errorf("--batches %d: must be ≥ 1", m)
		}
	}
	return c.Timing.validate()
}

// CheckMemory refuses, before anything is allocated, shapes whose weights
// (both backends', as drawn and packed) and activations do not fit in the
// memory this process may use.
func (c *GEMMSweepConfig) CheckMemory() error {
	ms := append(append([]int(nil), c.Lengths...), c.Batches...)
	shapes, _ := c.ffnShapes()
	for _, s := range shapes {
		need := probes.GEMMBytes(string(c.Backends.Pair.Cores.DType), ms, s.n, s.k).
			Plus(probes.GEMMBytes(string(c.Backends.Pair.Matrix.DType), nil, s.n, s.k))
		if err := checkSize(fmt.Sprintf("gemm --sweep: %s %d×%d weights with M up to the largest length or batch", s.op, s.n, s.k), need); err != nil {
			return err
		}
	}
	return nil
}

func checkSize(what string, need memlimit.Size) error { return memlimit.Check(what, need) }

// RunGEMMSweep measures every FFN shape at every M on every placement
// that applies: cores (the cores' fp32 backend on every thread), matrix
// (the matrix target's backend on every thread) and mixed (one GEMM cut
// between the two on the two halves of the threads).
func RunGEMMSweep(ctx context.Context, c GEMMSweepConfig) (*GEMMSweepReport, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	threads := len(c.CPUs)
	r := &GEMMSweepReport{Schema: GEMMSweepSchema, Model: c.Arch.Name, SweepRun: sweepRun(threads, c.Backends, c.Timing), Points: []GEMMSweepPoint{}}
	if c.Machine != nil {
		r.Machine = c.Machine.Name
	} else {
		r.Notes = append(r.Notes, "no profile: no roofline prediction")
	}
	shapes, note := c.ffnShapes()
	if note != "" {
		r.Notes = append(r.Notes, note)
	}
	r.Notes = append(r.Notes, "gate_proj and up_proj have one shape (N = intermediate, K = hidden): measured once")
	b, err := probes.NewGEMMBench(c.CPUs, c.Timing.Reps, c.Timing.RepDuration)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	watch, err := NewWatch(ctx, c.Profile, c.CPUs, c.WaitPlacement)
	if err != nil {
		return nil, err
	}
	r.Placement, r.PlacementFrom = watch.Ref, watch.RefFrom
	pair := c.Backends.Pair
	places := c.Placements
	if threads < 2 {
		places = nil
		for _, p := range c.Placements {
			if p == PlaceMixed {
				r.Skipped = append(r.Skipped, "mixed: does not apply with 1 thread (two groups)")
				continue
			}
			places = append(places, p)
		}
	}
	if pair.Cores.Name == pair.Matrix.Name {
		var keep []string
		for _, p := range places {
			if p == PlaceMixed {
				r.Skipped = append(r.Skipped, "mixed: the cores and matrix backends are the same ("+pair.Cores.Name+")")
				continue
			}
			keep = append(keep, p)
		}
		places = keep
	}
	type phaseM struct {
		phase string
		m     int
	}
	var ms []phaseM
	for _, m := range c.Lengths {
		ms = append(ms, phaseM{"prefill", m})
	}
	for _, m := range c.Batches {
		ms = append(ms, phaseM{"decode", m})
	}
	for _, s := range shapes {
		var wc, wm *probes.GEMMWeights
		for _, p := range places {
			if (p == PlaceCores || p == PlaceMixed) && wc == nil {
				if wc, err = probes.NewGEMMWeights(pair.Cores, s.n, s.k, 1); err != nil {
					return nil, err
				}
			}
			if (p == PlaceMatrix || p == PlaceMixed) && wm == nil {
				if wm, err = probes.NewGEMMWeights(pair.Matrix, s.n, s.k, 1); err != nil {
					return nil, err
				}
			}
		}
		for _, p := range places {
			for _, pm := range ms {
				if c.Progress != nil {
					c.Progress(fmt.Sprintf("gemm %s %s %s M=%d", s.op, p, pm.phase, pm.m))
				}
				pt := GEMMSweepPoint{Op: s.op, Phase: pm.phase, M: pm.m, N: s.n, K: s.k, Placement: p, Threads: threads}
				switch p {
				case PlaceCores, PlaceMatrix:
					w := wc
					if p == PlaceMatrix {
						w = wm
					}
					var g results.GEMMResult
					record, err := watch.Check(ctx, c.CPUs, func() error {
						var err error
						g, err = b.Measure(ctx, w, pm.m, threads, false)
						return err
					})
					if err != nil {
						return nil, err
					}
					if g.GFLOPS.Noise == nil {
						g.GFLOPS.Noise = &results.Noise{CV: g.GFLOPS.CV, Attempts: 1}
					}
					record(g.GFLOPS.Noise)
					pt.Noise = g.GFLOPS.Noise
					pt.Backends, pt.DType, pt.GFLOPS = g.Backend, g.DType, g.GFLOPS
					if c.Profile != nil {
						if why := probes.GEMMFraction(&g, c.Profile.Compute, c.Profile.Memory, c.Profile.Matrix); why != "" {
							pt.FractionOf = why
						}
						pt.Fraction = g.Fraction
						if g.FractionOf != "" {
							pt.FractionOf = g.FractionOf
						}
					} else {
						pt.FractionOf = "no profile: fraction not computed"
					}
				case PlaceMixed:
					ct, mt := groupSizes(threads)
					var sp results.MatrixSplit
					record, err := watch.Check(ctx, c.CPUs, func() error {
						var err error
						sp, err = b.Split(ctx, wc, wm, pm.m, ct, mt)
						return err
					})
					if err != nil {
						return nil, err
					}
					pt.Noise = &results.Noise{CV: sp.GFLOPS.CV, Attempts: 1}
					if sp.GFLOPS.Noise != nil {
						pt.Noise = sp.GFLOPS.Noise
					}
					record(pt.Noise)
					pt.Backends = wc.Backend.Name + "+" + wm.Backend.Name
					pt.DType = string(wc.Backend.DType) + "+" + string(wm.Backend.DType)
					pt.GFLOPS = sp.GFLOPS
					pt.Note = fmt.Sprintf("%s split, α chosen %.3f, makespan/ideal %.2f", sp.Dim, sp.AlphaChosen, sp.Ratio)
					pt.FractionOf = "mixed: no single ceiling (makespan/ideal in the note)"
				}
				if pt.GFLOPS.Median > 0 {
					pt.Seconds = gemm.Flops(pt.M, pt.N, pt.K) / (pt.GFLOPS.Median * 1e9)
				}
				pt.PredictedSeconds, pt.PredictionNote = c.predictLinear(&pt, pair)
				if pt.PredictedSeconds > 0 {
					pt.PredictedGFLOPS = gemm.Flops(pt.M, pt.N, pt.K) / pt.PredictedSeconds / 1e9
				}
				r.Points = append(r.Points, pt)
			}
		}
	}
	if len(r.Points) == 0 {
		return nil, fmt.Errorf("gemm --sweep: no placement applies: %s", joinNotes(r.Skipped...))
	}
	r.Notes = append(r.Notes, watch.Line())
	return r, nil
}

// predictLinear is the roofline time of the point's linear (2MNK FLOPs;
// weights N·K at the placement's weight dtype, fp32 activations in and
// out) on the machine's target named like the placement, with the
// ceilings of the weight dtype where the machine has them for every
// target, else fp32.
func (c *GEMMSweepConfig) predictLinear(pt *GEMMSweepPoint, pair gemm.Pair) (float64, string) {
	if c.Machine == nil {
		return 0, "no profile"
	}
	wdt := string(pair.Cores.DType)
	if pt.Placement == PlaceMatrix {
		wdt = string(pair.Matrix.DType)
	}
	wb, err := roofline.DTypeBytes(wdt)
	if err != nil {
		return 0, err.Error()
	}
	M, N, K := float64(pt.M), float64(pt.N), float64(pt.K)
	op := roofline.Operator{Name: pt.Op, Kind: roofline.KindLinear, M: pt.M, N: pt.N, K: pt.K, Expert: -1,
		FLOPs: 2 * M * N * K, Bytes: roofline.Bytes{Weights: N * K * wb, ActIn: M * K * 4, ActOut: M * N * 4}}
	prec := "fp32"
	if c.Machine.HasCeilings(wdt) {
		prec = wdt
	}
	target, note, ok := predictionTarget(c.Machine, pt.Placement, pair)
	if !ok {
		return 0, fmt.Sprintf("the machine %s has no %s target", c.Machine.Name, pt.Placement)
	}
	m, tnote := threadsMachine(c.Machine, pt.Threads, target)
	note = joinNotes(note, tnote)
	placed, err := roofline.Place(m, prec, []roofline.Operator{op})
	if err != nil {
		return 0, err.Error()
	}
	t, ok := placed[0].Times[target]
	if !ok {
		return 0, fmt.Sprintf("the machine %s has no %s ceiling on its %s target", c.Machine.Name, prec, target)
	}
	if pt.Placement == PlaceMixed && target == PlaceCores {
		note += " (both groups' work at the " + prec + " ceiling of all threads)"
	}
	return t, note
}
