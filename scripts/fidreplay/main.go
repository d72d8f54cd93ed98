// Command fidreplay re-predicts the operator rows of recorded `bench run
// --json` files (scripts/fidelity.sh's run-*.json) with the roofline as it
// is now, and prints how many rows and how much of the measured time fall
// within ±10% of the prediction before and after the measured attained
// GEMM table and GEMV weight bandwidth (roofline/gemmtable.go) — without
// measuring anything: the measured seconds are the files'.
//
//	go run ./scripts/fidreplay -profile P/profile.json [-table-from-checks] DIR/run-*.json
//
// "before" is the machine of P with no GEMM table (the model before issue
// #16's attained-GEMM change); "after" is P's machine with the GEMV
// weight bandwidth of P's matrix.gemv and, when P has no
// matrix.gemm_shapes and -table-from-checks is given, a GEMM table built
// from the runs' own "vs standalone GEMM" checks (the same GEMM shapes run
// standalone on the same workers: M = the prompt, N×K of q_proj, o_proj,
// gate_proj, down_proj; the median over the runs per precision and shape).
// Runs marked noisy are skipped, as fidelity.sh does (-noisy replays them
// too, as a diagnostic). Only model changes
// show here: the measured times are those of the engine that ran.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/cpubench/bench/engine"
	"github.com/cpubench/bench/models"
	"github.com/cpubench/bench/results"
	"github.com/cpubench/bench/roofline"
	"github.com/cpubench/bench/sweep"
)

type runFile struct {
	Model      string `json:"model"`
	Layers     int    `json:"layers"`
	Prompt     int    `json:"prompt_tokens"`
	Gen        int    `json:"gen_tokens"`
	Batch      int    `json:"batch"`
	Placement  string `json:"placement"`
	Backend    string `json:"backend"`
	PredPrec   string `json:"predicted_precision"`
	WeightType string `json:"weight_dtype"`
	Operators  []struct {
		Phase     string  `json:"phase"`
		Op        string  `json:"op"`
		MeasuredS float64 `json:"measured_s"`
		// UninterruptedS, where bench run found interrupted calls, is
		// what its fidelity figures compare (and so does the replay).
		UninterruptedS *float64 `json:"uninterrupted_s"`
		PredictedS     *float64 `json:"predicted_s"`
	} `json:"operators"`
	Checks []struct {
		What   string  `json:"what"`
		RefS   float64 `json:"reference_s"`
		Detail string  `json:"detail"`
	} `json:"checks"`
	Noise *struct {
		Noisy     bool    `json:"noisy"`
		DRAMNow   float64 `json:"dram_now_gbps"`
		DRAMProf  float64 `json:"dram_profile_gbps"`
		GEMMRatio float64 `json:"gemm_ratio"`
	} `json:"noise"`
}

// precisionOf is what bench run predicts with for the run's placement
// (engine.Model.PredictionPrecision): cores fp32; matrix the matrix
// backend's dtype on the cores target (no matrix unit on the recorded VM).
func precisionOf(r runFile) engine.Precision {
	p := engine.Precision{Weight: "fp32", Act: "fp32", KV: "fp32", Ceiling: "fp32", VectorCeiling: "fp32", Target: roofline.KindCores}
	if strings.Contains(r.PredPrec, "weights bf16") {
		p.Weight, p.Ceiling = "bf16", "bf16"
	}
	return p
}

var checkRe = regexp.MustCompile(`^prefill (\w+) \(layer 0\) vs standalone GEMM$`)
var mRe = regexp.MustCompile(`M=(\d+)`)

func main() {
	prof := flag.String("profile", "", "the profile the runs were predicted with (profile.json)")
	fromChecks := flag.Bool("table-from-checks", false, "without matrix.gemm_shapes in the profile, build the GEMM table from the runs' standalone-GEMM checks")
	withNoisy := flag.Bool("noisy", false, "also replay the runs marked noisy (a diagnostic: fidelity.sh never counts them)")
	drift := flag.Bool("drift", false, "predict each run on the profile drifted as its checks re-measured the host after it (roofline.Machine.Drifted: DRAM by dram_now/dram_profile, compute by gemm_ratio), as fidelity.sh's diagnostic does")
	show := flag.String("show", "", "also print each run's measured/predicted (after) of these operators, comma-separated phase/op (prefill/attn_norm,decode/rope)")
	flag.Parse()
	shown := map[string]bool{}
	for _, k := range strings.Split(*show, ",") {
		if k != "" {
			shown[k] = true
		}
	}
	if *prof == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: fidreplay -profile P [-table-from-checks] run-*.json")
		os.Exit(2)
	}
	p, err := results.ReadProfile(*prof)
	if err != nil {
		fail(err)
	}
	var runs []runFile
	var names []string
	for _, f := range flag.Args() {
		b, err := os.ReadFile(f)
		if err != nil {
			fail(err)
		}
		var r runFile
		if err := json.Unmarshal(b, &r); err != nil {
			fail(fmt.Errorf("%s: %w", f, err))
		}
		if r.Noise != nil && r.Noise.Noisy && !*withNoisy {
			fmt.Printf("skipped (noisy): %s\n", f)
			continue
		}
		runs = append(runs, r)
		names = append(names, f)
	}
	if len(runs) == 0 {
		fail(fmt.Errorf("no run counted"))
	}
	mc, err := models.Load(runs[0].Model)
	if err != nil {
		fail(err)
	}
	full, err := engine.FromModel(mc, engine.HFExtras{RoPETheta: 1e6, RMSEps: 1e-6, MaxSeq: 4096})
	if err != nil {
		fail(err)
	}
	if p.Matrix != nil && len(p.Matrix.GEMMShapes) == 0 && *fromChecks {
		p.Matrix.GEMMShapes = tableFromChecks(runs, full)
		fmt.Printf("GEMM table from the runs' standalone-GEMM checks (%d points):\n", len(p.Matrix.GEMMShapes))
		for _, g := range p.Matrix.GEMMShapes {
			fmt.Printf("  %s M %4d N %4d K %4d: %.1f GFLOP/s\n", g.DType, g.M, g.N, g.K, g.GFLOPS.Median)
		}
	}
	after, err := roofline.FromProfile(p, *prof)
	if err != nil {
		fail(err)
	}
	before := *after
	before.GEMMTable = nil

	type tally struct {
		rows, in int
		tot, inT float64
	}
	type key struct{ ph, op string }
	var tb, ta tally
	group := map[key][3]float64{} // measured, before, after
	rowsIn := map[key][2]int{}    // rows within ±10% after, rows
	maxDiff := 0.0
	for i, r := range runs {
		c := full
		c.Layers = r.Layers
		prec := precisionOf(r)
		mb, ma := &before, after
		if n := r.Noise; *drift && n != nil && n.DRAMNow > 0 && n.DRAMProf > 0 {
			mb, ma = mb.Drifted(n.DRAMNow/n.DRAMProf, n.GEMMRatio), ma.Drifted(n.DRAMNow/n.DRAMProf, n.GEMMRatio)
		}
		pb, _, _, err := sweep.Predict(mb, c, prec, r.Batch, r.Prompt, r.Gen)
		if err != nil {
			fail(fmt.Errorf("%s: %w", names[i], err))
		}
		pa, _, _, err := sweep.Predict(ma, c, prec, r.Batch, r.Prompt, r.Gen)
		if err != nil {
			fail(fmt.Errorf("%s: %w", names[i], err))
		}
		for _, o := range r.Operators {
			if o.PredictedS == nil || *o.PredictedS <= 0 {
				continue
			}
			if o.UninterruptedS != nil {
				o.MeasuredS = *o.UninterruptedS
			}
			k := [2]string{o.Phase, o.Op}
			b, a := pb[k], pa[k]
			// The harness reproduces what bench run predicted.
			maxDiff = math.Max(maxDiff, math.Abs(b / *o.PredictedS - 1))
			for _, s := range []struct {
				t *tally
				p float64
			}{{&tb, b}, {&ta, a}} {
				s.t.rows++
				s.t.tot += o.MeasuredS
				if s.p > 0 && math.Abs(o.MeasuredS/s.p-1) <= 0.10 {
					s.t.in++
					s.t.inT += o.MeasuredS
				}
			}
			if shown[o.Phase+"/"+o.Op] && a > 0 {
				fmt.Printf("  %s/%s %s: measured %.3g s, predicted %.3g, ratio %.2f\n", o.Phase, o.Op, names[i], o.MeasuredS, a, o.MeasuredS/a)
			}
			ri := rowsIn[key{o.Phase, o.Op}]
			ri[1]++
			if a > 0 && math.Abs(o.MeasuredS/a-1) <= 0.10 {
				ri[0]++
			}
			rowsIn[key{o.Phase, o.Op}] = ri
			g := group[key{o.Phase, o.Op}]
			g[0] += o.MeasuredS
			g[1] += b
			g[2] += a
			group[key{o.Phase, o.Op}] = g
		}
	}
	fmt.Printf("runs: %d counted; \"before\" reproduces the files' predicted_s within %.2g (largest relative difference)\n", len(runs), maxDiff)
	for _, s := range []struct {
		n string
		t tally
	}{{"before", tb}, {"after", ta}} {
		fmt.Printf("%-6s: operator rows within ±10%%: %d of %d = %.0f%%; operator time within ±10%%: %.0f%% of %.0f ms\n",
			s.n, s.t.in, s.t.rows, 100*float64(s.t.in)/float64(s.t.rows), 100*s.t.inT/s.t.tot, 1e3*s.t.tot)
	}
	var ks []key
	for k := range group {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return group[ks[i]][0] > group[ks[j]][0] })
	fmt.Println("measured/predicted per operator (summed over the runs), before → after, share of measured time, rows within ±10% after:")
	for _, k := range ks {
		g, ri := group[k], rowsIn[k]
		fmt.Printf("  %-7s %-13s %5.2f → %5.2f  %4.1f%%  %d of %d\n", k.ph, k.op, g[0]/g[1], g[0]/g[2], 100*g[0]/ta.tot, ri[0], ri[1])
	}
}

// tableFromChecks is the median standalone GEMM rate per precision and
// shape of the runs' "prefill OP (layer 0) vs standalone GEMM" checks.
func tableFromChecks(runs []runFile, c engine.Config) []results.GEMMResult {
	shape := map[string][2]int{
		"q_proj": {c.QDim(), c.Dim}, "o_proj": {c.Dim, c.QDim()},
		"gate_proj": {c.Intermediate, c.Dim}, "up_proj": {c.Intermediate, c.Dim}, "down_proj": {c.Dim, c.Intermediate},
		"k_proj": {c.KVDim(), c.Dim}, "v_proj": {c.KVDim(), c.Dim},
	}
	type k struct {
		dt      string
		M, N, K int
	}
	rates := map[k][]float64{}
	for _, r := range runs {
		dt := precisionOf(r).Ceiling
		for _, ch := range r.Checks {
			mm := checkRe.FindStringSubmatch(ch.What)
			ms := mRe.FindStringSubmatch(ch.Detail)
			if mm == nil || ms == nil || ch.RefS <= 0 {
				continue
			}
			nk, ok := shape[mm[1]]
			if !ok {
				continue
			}
			M, _ := strconv.Atoi(ms[1])
			kk := k{dt, M, nk[0], nk[1]}
			rates[kk] = append(rates[kk], 2*float64(M)*float64(nk[0])*float64(nk[1])/ch.RefS/1e9)
		}
	}
	var out []results.GEMMResult
	for kk, v := range rates {
		sort.Float64s(v)
		med := v[len(v)/2]
		if len(v)%2 == 0 {
			med = (v[len(v)/2-1] + v[len(v)/2]) / 2
		}
		out = append(out, results.GEMMResult{Backend: "standalone check", DType: kk.dt, M: kk.M, N: kk.N, K: kk.K, Threads: 2,
			GFLOPS: results.Stat{Median: med, Min: v[0], Max: v[len(v)-1], N: len(v)}})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.DType != b.DType {
			return a.DType < b.DType
		}
		if a.N*a.K != b.N*b.K {
			return a.N*a.K < b.N*b.K
		}
		if a.N != b.N {
			return a.N < b.N
		}
		return a.M < b.M
	})
	return out
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "fidreplay:", err)
	os.Exit(1)
}
