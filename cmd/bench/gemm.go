package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cpubench/bench/internal/memlimit"
	"github.com/cpubench/bench/kernels/gemm"
	"github.com/cpubench/bench/kernels/quant"
	"github.com/cpubench/bench/probes"
	"github.com/cpubench/bench/reports"
	"github.com/cpubench/bench/results"
)

func init() { subcommands = append(subcommands, newGEMMCmd) }

// GEMMOptions are the parsed flags of `bench gemm`.
type GEMMOptions struct {
	IO            IO
	M             []int
	N, K          int
	DType         string
	Threads       []int
	Backend       string
	BackendB      string
	Split         string
	PackEveryCall bool
	// NoPrefill makes quantized formats run kernels/quant's GEMV tiles at
	// every M (the prefill path's ablation).
	NoPrefill bool
	Reps      int
	RepMS     int
	Profile   string
	JSON      string // --json: "", "-" (stdout) or a file (jsonflag.go)
	// Shapes are weight shapes N×K measured in turn instead of --n, --k
	// ("paper": gemvPaperShapes); Plot the PNG of the GEMV bandwidth plot.
	Shapes string
	Plot   string
	Fig    figureFlags // --format, --width of --plot

	// Resolved by RunE.
	js *jsonOut // where --json sends the figures
	// measuredEBW are the ebw records of the quantized backends the
	// profile has none of, measured by this run (measureJob).
	measuredEBW       []results.QuantEBW
	shapes            [][2]int
	backend, backendB gemm.Backend
	splitA, splitB    int
	splitTargets      string    // what runs groups A and B (gemm.Label)
	jobs              []gemmJob // one per --dtype, in order
	// CPUs is the thread placement (probes.GEMMCPUs; injected by tests).
	CPUs []int

	// Sweep is --sweep: the FFN GEMMs of --model vs length and batch
	// (gemm_sweep.go).
	Sweep sweepGEMMFlags
}

// gemmJob is one --dtype's backend: a kernels/gemm backend, or a
// kernels/quant backend and block format.
type gemmJob struct {
	gemm   *gemm.Backend
	quant  quant.Backend
	format quant.Format
}

func newGEMMCmd(streams IO) *cobra.Command { return newCmdGEMM(streams, nil) }

// newCmdGEMM builds the command; tests pass runF to capture the options.
func newCmdGEMM(streams IO, runF func(context.Context, *GEMMOptions) error) *cobra.Command {
	opts := &GEMMOptions{IO: streams}
	cmd := &cobra.Command{
		Use:   "gemm",
		Short: "Measure the packed GEMM/GEMV (Y = X·Wᵀ) per M, dtype, backend and thread count",
		Long: `Measure Y = X·Wᵀ (X M×K activations, W N×K weights packed once) on pinned
threads of the engine's pool (kernels/pool: the output cut at the backend's
tile, the timed loop on worker 0). Per M: GFLOP/s (median, min, max of --reps
repetitions of at least --rep-ms after a warm-up), weight GB/s (N·K·bytes per
call), and the fraction of the machine's ceiling from --profile: the compute
section's best ceiling of the dtype at that thread count (or the matrix
section's attained GEMM) for M > 16, the DRAM read roof for M ≤ 16. Packing
is timed once, apart. Every figure checks 64 elements of Y against a float64
reference. A quantized GEMV (M = 1) is also given as a fraction of its
backend's ebw (low-bit GEMV paper Eq. 3: min(β, B/γ)), from the profile's
matrix.quant_ebw where it has the backend, else with γ measured by this
command (the up-convert loop the probe runs) beside the figures.

--split a:b runs one GEMM partitioned (SMEPilot §4.1, Eq. 1) between --backend
on a threads and --backend-b on the next b. α starts from both groups' rates
measured alone and is re-planned after every call from the rates the groups
reach while running together (co-running); printed: α ideal (Eq. 1) and α
chosen (tile-rounded), per-group seconds, makespan, makespan / ideal with
ideal = 2MNK / (rate A + rate B) from the co-running rates (1 = balanced),
and the same from the alone rates (1 = the groups add up perfectly).
--pack-every-call is the SMEPilot §5.4 ablation: W is packed inside every call.

--sweep measures the FFN GEMMs of --model (gate/up: N = intermediate, K =
hidden; down: N = hidden, K = intermediate) at M = each --lengths (prefill)
and each --batches (decode) on the placements cores (--backend, default the
cores' best fp32 backend, on every thread), matrix (--backend-b, default the
matrix target: the matrix unit's backend, else the best bf16 backend on the
cores, on every thread) and mixed (one GEMM cut between them by Eq. 1 on the
two halves of the threads), beside the roofline's prediction on the
--profile machine (default: this host's newest complete probe profile)
drawn as a line (SMEPilot Figs. 10a, 11a); writes gemm-sweep.png, .md and
.json to --out.`,
		Example: `  bench gemm --m 1,16,128,512,2048 --n 3072 --k 3072 --dtype fp32 --threads 1,2
  bench gemm --dtype int8 --threads 2 --profile results/host/profile.json
  bench gemm --m 1,4,16 --dtype fp32,bf16,q8_0,q4_0 --threads 1,2
  bench gemm --m 512 --backend avx2-fp32 --split 1:1 --backend-b avx2-bf16
  bench gemm --m 1 --pack-every-call --json
  bench gemm --sweep --model qwen3-0.6b --lengths 32,128,512 --batches 1,4,16 --placement cores,matrix,mixed`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.validate(cmd); err != nil {
				return err
			}
			if err := checkJSONPath(opts.JSON); err != nil {
				return fmt.Errorf("gemm: %w", err)
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return gemmRun(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.IntSliceVar(&opts.M, "m", []int{1, 16, 128, 512, 2048}, "rows of X and Y (tokens)")
	f.IntVar(&opts.N, "n", 3072, "output columns (rows of W)")
	f.IntVar(&opts.K, "k", 3072, "reduction depth")
	f.StringVar(&opts.DType, "dtype", "fp32", "weight precisions, comma-separated: fp32, bf16, int8 or a quantized format ("+qformatList()+") (default: --backend's, else fp32)")
	f.IntSliceVar(&opts.Threads, "threads", []int{1}, "thread counts")
	f.StringVar(&opts.Backend, "backend", "auto", "backend name (e.g. avx2-fp32, sme-fp32) or auto: the cores' best for --dtype (a matrix unit's backend only by name)")
	f.StringVar(&opts.BackendB, "backend-b", "", "with --split: group B's backend (default: the engine's matrix target: the matrix unit's backend, e.g. sme-fp32, else the best bf16 backend on the cores)")
	f.StringVar(&opts.Split, "split", "", "a:b: one GEMM partitioned between a threads (--backend) and b threads (--backend-b)")
	f.BoolVar(&opts.PackEveryCall, "pack-every-call", false, "pack W inside every call (SMEPilot §5.4 ablation)")
	f.BoolVar(&opts.NoPrefill, "no-prefill", false, "quantized formats: GEMV tiles at every M, not the prefill path's column-order tiles (its ablation)")
	f.IntVar(&opts.Reps, "reps", 5, "timed repetitions after one warm-up, at least 1")
	f.IntVar(&opts.RepMS, "rep-ms", 50, "minimum duration of one repetition in ms (at least one call)")
	f.StringVar(&opts.Profile, "profile", "", "profile.json of 'bench probe' for the fraction of the ceiling (with --sweep also the roofline prediction; default there: this host's newest complete probe profile, none: no predictions)")
	addJSONFlag(cmd, &opts.JSON, "the figures (JSON lines of results.GEMMResult, or results.MatrixSplit with --split)")
	f.StringVar(&opts.Shapes, "shapes", "", "weight shapes N×K measured in turn instead of --n, --k: NxK,NxK,... or paper (the MobileLLM-1.5B and Llama3-8B linear shapes of the low-bit GEMV paper's Figs. 5–7, a subset a 2-core machine runs in seconds)")
	f.StringVar(&opts.Plot, "plot", "", "write the GEMV bandwidth plot (low-bit GEMV paper Figs. 5–7: GB/s of weights per shape, one bar per --dtype, the profile's DRAM read roof and each format's ebw as lines) of the M = 1 figures at the largest thread count to this file (.png, .pdf or .svg by extension), and its table to the same name with .md")
	opts.Fig.register(cmd, true)
	opts.Sweep.register(cmd)
	return cmd
}

// validate checks the flags and resolves the backends, then the memory
// the shapes need (checkMemory); it reads no file but the memory limit's.
func (o *GEMMOptions) validate(cmd *cobra.Command) error {
	if o.Sweep.On {
		return o.validateSweep(cmd)
	}
	for _, n := range sweepOnly {
		if cmd.Flags().Changed(n) {
			return fmt.Errorf("gemm: --%s: only with --sweep", n)
		}
	}
	if err := o.validateFlags(cmd); err != nil {
		return err
	}
	return o.checkMemory()
}

// validateFlags checks the flags and resolves the backends.
func (o *GEMMOptions) validateFlags(cmd *cobra.Command) error {
	if len(o.M) == 0 {
		return fmt.Errorf("gemm: --m: need at least one value")
	}
	for _, m := range o.M {
		if m < 1 {
			return fmt.Errorf("gemm: --m %d: must be ≥ 1", m)
		}
	}
	if o.N < 1 {
		return fmt.Errorf("gemm: --n %d: must be ≥ 1", o.N)
	}
	if o.K < 1 {
		return fmt.Errorf("gemm: --k %d: must be ≥ 1", o.K)
	}
	if o.Reps < 1 {
		return fmt.Errorf("gemm: --reps %d: must be ≥ 1", o.Reps)
	}
	if o.RepMS < 1 || o.RepMS > math.MaxInt64/int(time.Millisecond) {
		return fmt.Errorf("gemm: --rep-ms %d: must be between 1 and %d", o.RepMS, math.MaxInt64/int(time.Millisecond))
	}
	if err := o.parseShapes(cmd); err != nil {
		return err
	}
	if err := o.Fig.parse("gemm"); err != nil {
		return err
	}
	if o.Plot != "" {
		if _, err := o.Fig.forFile("gemm", "plot", o.Plot); err != nil {
			return err
		}
		if !slices.Contains(o.M, 1) {
			return fmt.Errorf("gemm: --plot %s: needs M = 1 in --m (have %v): the plot is of GEMVs", o.Plot, o.M)
		}
		if o.Split != "" {
			return fmt.Errorf("gemm: --plot %s: not with --split", o.Plot)
		}
	}
	dtypes := strings.Split(o.DType, ",")
	if len(dtypes) > 1 && o.Backend != "auto" {
		return fmt.Errorf("gemm: --backend %s: only with one --dtype (have %s)", o.Backend, o.DType)
	}
	o.jobs = nil
	for _, d := range dtypes {
		j, err := o.resolveJob(cmd, strings.TrimSpace(d), len(dtypes) == 1)
		if err != nil {
			return err
		}
		o.jobs = append(o.jobs, j)
	}
	if o.jobs[0].gemm != nil {
		o.backend = *o.jobs[0].gemm
		o.DType = string(o.backend.DType)
	}
	for _, j := range o.jobs {
		if j.gemm != nil {
			continue
		}
		if o.Split != "" {
			return fmt.Errorf("gemm: --split %s: not with --dtype %s (quantized weights run on one group)", o.Split, j.format)
		}
		if o.PackEveryCall {
			return fmt.Errorf("gemm: --pack-every-call: not with --dtype %s (quantized weights are packed once)", j.format)
		}
	}
	if o.Split != "" && len(o.jobs) > 1 {
		return fmt.Errorf("gemm: --split %s: only with one --dtype (have %s)", o.Split, o.DType)
	}
	var err error
	if o.CPUs == nil {
		if o.CPUs, err = probes.GEMMCPUs(); err != nil {
			return fmt.Errorf("gemm: CPU list: %w", err)
		}
	}
	maxT := len(o.CPUs)
	if o.Split == "" {
		if o.BackendB != "" {
			return fmt.Errorf("gemm: --backend-b %s: only with --split", o.BackendB)
		}
		if len(o.Threads) == 0 {
			return fmt.Errorf("gemm: --threads: need at least one value")
		}
		for _, t := range o.Threads {
			if t < 1 || t > maxT {
				return fmt.Errorf("gemm: --threads %d: must be between 1 and %d", t, maxT)
			}
		}
		return nil
	}
	if cmd.Flags().Changed("threads") {
		return fmt.Errorf("gemm: --threads %v: not with --split %s (a:b sets both groups' threads)", o.Threads, o.Split)
	}
	if o.PackEveryCall {
		return fmt.Errorf("gemm: --pack-every-call: not with --split %s (the split runs packed weights)", o.Split)
	}
	a, b, ok := strings.Cut(o.Split, ":")
	na, errA := strconv.Atoi(a)
	nb, errB := strconv.Atoi(b)
	if !ok || errA != nil || errB != nil || na < 1 || nb < 1 {
		return fmt.Errorf("gemm: --split %q: want a:b with thread counts a, b ≥ 1", o.Split)
	}
	if na+nb > maxT {
		return fmt.Errorf("gemm: --split %s: %d threads, this process may use %d CPUs", o.Split, na+nb, maxT)
	}
	o.splitA, o.splitB = na, nb
	// B defaults to the engine's matrix target (gemm.ChoosePair): the
	// matrix unit's backend, else the second backend on the cores; the
	// cores' fp32 backend where that is --backend itself.
	bNote := ""
	if o.BackendB == "" {
		p, err := gemm.ChoosePair("", "")
		if err != nil {
			return fmt.Errorf("gemm: --backend-b: no default: %w", err)
		}
		o.backendB, bNote = p.Matrix, p.MatrixNote
		if p.Matrix.Name == o.backend.Name {
			o.backendB, bNote = p.Cores, ""
		}
	} else if o.backendB, err = gemm.BackendByName(o.BackendB); err != nil {
		return fmt.Errorf("gemm: --backend-b %s: %w", o.BackendB, err)
	}
	o.splitTargets = "A = " + gemm.Label(o.backend, "") + "; B = " + gemm.Label(o.backendB, bNote)
	return nil
}

// checkMemory refuses shapes whose weights (as drawn and packed) and
// activations do not fit in the memory this process may use
// (probes.GEMMBytes, memlimit.Check), one shape and dtype at a time as
// they are measured (--split: both backends' weights together), before
// anything is allocated.
func (o *GEMMOptions) checkMemory() error {
	ms := strings.Trim(strings.ReplaceAll(fmt.Sprint(o.M), " ", ","), "[]")
	for _, sh := range o.shapes {
		n, k := sh[0], sh[1]
		shape := fmt.Sprintf("--n %d × --k %d", n, k)
		if o.Shapes != "" {
			shape = fmt.Sprintf("--shapes %d×%d:", n, k)
		}
		for _, j := range o.jobs {
			dt := string(j.format)
			if j.gemm != nil {
				dt = string(j.gemm.DType)
			}
			need := probes.GEMMBytes(dt, o.M, n, k)
			if o.Split != "" {
				need = need.Plus(probes.GEMMBytes(string(o.backendB.DType), nil, n, k))
				dt += " and " + string(o.backendB.DType)
			}
			if err := memlimit.Check(fmt.Sprintf("%s %s weights (as drawn and packed) with --m %s activations", shape, dt, ms), need); err != nil {
				return fmt.Errorf("gemm: %w", err)
			}
		}
	}
	return nil
}

// resolveJob resolves one --dtype (and --backend when it is the only one).
func (o *GEMMOptions) resolveJob(cmd *cobra.Command, d string, only bool) (gemmJob, error) {
	// A quantized format: by --dtype, or by a --backend named <backend>-<format>.
	if name, fs, ok := strings.Cut(o.Backend, "-"); ok && only && o.Backend != "auto" {
		if f, err := quant.ParseFormat(fs); err == nil {
			if cmd.Flags().Changed("dtype") && d != string(f) {
				return gemmJob{}, fmt.Errorf("gemm: --backend %s: computes %s weights, not --dtype %s", o.Backend, f, d)
			}
			qb, err := quant.BackendByName(name)
			if err != nil {
				return gemmJob{}, fmt.Errorf("gemm: --backend %s: %w", o.Backend, err)
			}
			qb.NoPrefill = o.NoPrefill
			return gemmJob{quant: qb, format: f}, nil
		}
	}
	if f, err := quant.ParseFormat(d); err == nil {
		if o.Backend != "auto" {
			return gemmJob{}, fmt.Errorf("gemm: --backend %s: --dtype %s needs a quantized backend, e.g. %s", o.Backend, f, probes.QuantName(quant.Best(), f))
		}
		qb := quant.Best()
		qb.NoPrefill = o.NoPrefill
		return gemmJob{quant: qb, format: f}, nil
	}
	dt := gemm.DType(d)
	if dt != gemm.FP32 && dt != gemm.BF16 && dt != gemm.Int8 {
		return gemmJob{}, fmt.Errorf("gemm: --dtype %q: must be fp32, bf16, int8 or a quantized format (%s)", d, qformatList())
	}
	var b gemm.Backend
	var err error
	if o.Backend == "auto" {
		if b, err = gemm.Best(dt); err != nil {
			return gemmJob{}, fmt.Errorf("gemm: --dtype %s: %w", d, err)
		}
		return gemmJob{gemm: &b}, nil
	}
	if b, err = gemm.BackendByName(o.Backend); err != nil {
		return gemmJob{}, fmt.Errorf("gemm: --backend %s: %w", o.Backend, err)
	}
	if cmd.Flags().Changed("dtype") && b.DType != dt {
		return gemmJob{}, fmt.Errorf("gemm: --backend %s: computes %s weights, not --dtype %s", o.Backend, b.DType, d)
	}
	return gemmJob{gemm: &b}, nil
}

func gemmRun(ctx context.Context, o *GEMMOptions) error {
	if o.Sweep.On {
		return gemmSweepRun(ctx, o)
	}
	o.js = newJSONOut(o.JSON, o.IO.Out)
	var prof *results.Profile
	if o.Profile != "" {
		var err error
		if prof, err = results.ReadProfile(o.Profile); err != nil {
			return fmt.Errorf("gemm: --profile %s: %w", o.Profile, err)
		}
	}
	need := o.splitA + o.splitB
	for _, t := range o.Threads {
		need = max(need, t)
	}
	b, err := probes.NewGEMMBench(o.CPUs[:need], o.Reps, time.Duration(o.RepMS)*time.Millisecond)
	if err != nil {
		return err
	}
	defer b.Close()
	out := o.IO.Out
	if o.Split != "" {
		wa, err := probes.NewGEMMWeights(o.backend, o.N, o.K, 1)
		if err != nil {
			return fmt.Errorf("gemm: %w", err)
		}
		wb, err := probes.NewGEMMWeights(o.backendB, o.N, o.K, 1)
		if err != nil {
			return fmt.Errorf("gemm: %w", err)
		}
		var splits []results.MatrixSplit
		for _, m := range o.M {
			s, err := b.Split(ctx, wa, wb, m, o.splitA, o.splitB)
			if err != nil {
				return fmt.Errorf("gemm: %w", err)
			}
			s.Targets = o.splitTargets
			if err := o.js.encode(s); err != nil {
				return err
			}
			splits = append(splits, s)
		}
		if err := o.js.flush(); err != nil {
			return fmt.Errorf("gemm: %w", err)
		}
		if !o.js.tables() {
			return nil
		}
		printPacking(out, wa, wb)
		return printSplits(out, splits)
	}
	var rows []results.GEMMResult
	var whyNot []string
	var packing []string
	for _, sh := range o.shapes {
		for _, j := range o.jobs {
			if err := o.measureJob(ctx, b, j, sh[0], sh[1], prof, &rows, &whyNot, &packing); err != nil {
				return err
			}
		}
	}
	if err := o.js.flush(); err != nil {
		return fmt.Errorf("gemm: %w", err)
	}
	if !o.js.tables() {
		return o.writePlot(rows, prof)
	}
	if o.PackEveryCall {
		fmt.Fprintf(out, "pack-every-call (SMEPilot §5.4 ablation): %s panels packed inside every call (BlockUnpacked); compare with the same command without the flag\n", o.backend.Name)
	} else {
		for _, l := range packing {
			fmt.Fprintln(out, l)
		}
	}
	for _, j := range o.jobs {
		if j.gemm == nil {
			path := "GEMV tiles at every M"
			switch {
			case j.quant.NoPrefill:
				path += " (--no-prefill)"
			case j.quant.PrefillTileM > 0 && quant.PrefillFormat(j.format):
				mm := quant.PrefillMinRows(j.format)
				path = fmt.Sprintf("GEMV tiles below M %d, from M %d %d×32 tiles on W up-converted inside every call to column order (--no-prefill: GEMV tiles)", mm, mm, j.quant.PrefillTileM)
			}
			if u := j.quant.ColumnUpconvert(j.format); u != "" {
				path += "; " + u
			}
			fmt.Fprintf(out, "%s: activations quantized per 32-element block to int8 inside every call (as llama.cpp); %s; weight GB/s counts the packed bytes read (%.4f B/weight)\n", probes.QuantName(j.quant, j.format), path, j.format.BytesPerWeight())
		}
	}
	if err := printGEMM(out, rows, whyNot, prof, o.measuredEBW); err != nil {
		return err
	}
	return o.writePlot(rows, prof)
}

// measureJob measures one --dtype at weight shape n×k for every M and
// thread count, appending the figures, why a fraction is missing, and the
// packing line.
func (o *GEMMOptions) measureJob(ctx context.Context, b *probes.GEMMBench, j gemmJob, n, k int, prof *results.Profile, rows *[]results.GEMMResult, whyNot, packing *[]string) error {
	var measure func(m, t int) (results.GEMMResult, error)
	var weightBytes int64
	if j.gemm != nil {
		wa, err := probes.NewGEMMWeights(*j.gemm, n, k, 1)
		if err != nil {
			return fmt.Errorf("gemm: %w", err)
		}
		*packing = append(*packing, packingLine(wa.Backend.Name, n, k, gemm.WeightBytes(wa.Backend.DType, n, k), wa.PackSeconds))
		measure = func(m, t int) (results.GEMMResult, error) { return b.Measure(ctx, wa, m, t, o.PackEveryCall) }
		weightBytes = gemm.WeightBytes(wa.Backend.DType, n, k)
	} else {
		qw, err := probes.NewQuantWeights(j.quant, j.format, n, k, 1)
		if err != nil {
			return err
		}
		*packing = append(*packing, fmt.Sprintf("%s W %d×%d (%s): random packed values (quant.Random), built in %.1f ms, once, off the per-call path", qw.Name(), n, k, reports.FormatBytes(qw.W.Bytes()), qw.PackSeconds*1e3))
		measure = func(m, t int) (results.GEMMResult, error) { return b.MeasureQuant(ctx, qw, m, t) }
		weightBytes = qw.W.Bytes()
		if slices.Contains(o.M, 1) && prof != nil && prof.Matrix != nil && !slices.ContainsFunc(prof.Matrix.QuantEBW, func(q results.QuantEBW) bool { return q.Backend == qw.Name() }) {
			// The profile's ebw records are its best backend's: a GEMV of
			// another backend is compared with its own γ, measured now.
			q, err := b.MeasureQuantEBW(ctx, prof, j.quant, j.format, o.Threads)
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				*packing = append(*packing, fmt.Sprintf("%s: no ebw: %v", qw.Name(), err))
			} else {
				o.measuredEBW = append(o.measuredEBW, q)
				*packing = append(*packing, fmt.Sprintf("%s: γ %.3g cycles per 32-byte vector of packed weights, %s", qw.Name(), q.GammaCycles, q.GammaMethod))
			}
		}
	}
	for _, m := range o.M {
		for _, t := range o.Threads {
			why := "no profile: fraction not computed"
			one := func() (results.GEMMResult, error) {
				g, err := measure(m, t)
				if err == nil && prof != nil {
					why = probes.GEMMFraction(&g, prof.Compute, prof.Memory, prof.Matrix)
				}
				return g, err
			}
			var g results.GEMMResult
			var err error
			if m == 1 && prof != nil && probes.DRAMSized(prof, weightBytes) {
				// A GEMV of DRAM-sized weights: its fraction is of the
				// DRAM read roof re-measured beside it (the host's
				// bandwidth moves by tens of percent within minutes).
				g, err = probes.MeasureBesideRoof(ctx, prof, t, one)
			} else {
				g, err = one()
			}
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return fmt.Errorf("gemm: %w", err)
			}
			if o.PackEveryCall {
				g.PackSeconds = 0 // packing is inside every call
			}
			if err := o.js.encode(g); err != nil {
				return err
			}
			*rows = append(*rows, g)
			*whyNot = append(*whyNot, why)
		}
	}
	return nil
}

func packingLine(name string, n, k int, bytes int64, sec float64) string {
	return fmt.Sprintf("packing %s W %d×%d (%s): %.1f ms, once, off the per-call path", name, n, k, reports.FormatBytes(bytes), sec*1e3)
}

func printPacking(w io.Writer, ws ...*probes.GEMMWeights) {
	for _, x := range ws {
		fmt.Fprintf(w, "packing %s W %d×%d (%s): %.1f ms, once, off the per-call path\n",
			x.Backend.Name, x.N, x.K, reports.FormatBytes(gemm.WeightBytes(x.Backend.DType, x.N, x.K)), x.PackSeconds*1e3)
	}
}

// printGEMM prints the figures with the fraction's reference as a numbered
// footnote (or why there is none).
func printGEMM(w io.Writer, rows []results.GEMMResult, whyNot []string, prof *results.Profile, measured []results.QuantEBW) error {
	var notes []string
	ref := func(s string) string {
		for i, n := range notes {
			if n == s {
				return fmt.Sprintf("[%d]", i+1)
			}
		}
		notes = append(notes, s)
		return fmt.Sprintf("[%d]", len(notes))
	}
	var cells [][]string
	quantRows := false
	for _, g := range rows {
		if _, err := quant.ParseFormat(g.DType); err == nil && g.M <= quant.PrefillMinM {
			quantRows = true
		}
	}
	for i, g := range rows {
		var frac string
		if g.FractionOf != "" {
			frac = fmt.Sprintf("%.1f%% %s", 100*g.Fraction, ref(g.FractionOf))
		} else {
			frac = "— " + ref(whyNot[i])
		}
		row := []string{
			strconv.Itoa(g.M), strconv.Itoa(g.N), strconv.Itoa(g.K), g.Backend, strconv.Itoa(g.Threads),
			fmt.Sprintf("%.2f", g.GFLOPS.Median), fmt.Sprintf("%.2f", g.GFLOPS.Min), fmt.Sprintf("%.2f", g.GFLOPS.Max),
			reports.FormatCV(g.GFLOPS), fmt.Sprintf("%.2f", g.WeightGBps), frac,
		}
		if quantRows {
			e := "—"
			if _, err := quant.ParseFormat(g.DType); err == nil && g.M <= quant.PrefillMinM {
				if ebw, of, why := gemvEBW(g, prof, measured); ebw > 0 {
					e = fmt.Sprintf("%.1f%% %s", 100*g.WeightGBps/ebw, ref(of))
				} else {
					e = "— " + ref(why)
				}
			}
			row = append(row, e)
		}
		cells = append(cells, row)
		if g.GFLOPS.Noisy() {
			ref(reports.NoisyLegend)
		}
	}
	header := []string{"M", "N", "K", "backend", "threads", "GFLOP/s median", "min", "max", "cv", "weight GB/s", "fraction of ceiling"}
	if quantRows {
		header = append(header, "fraction of ebw")
	}
	if err := reports.TextTable(w, header, cells); err != nil {
		return err
	}
	for i, n := range notes {
		fmt.Fprintf(w, "[%d] %s\n", i+1, n)
	}
	return nil
}

func printSplits(w io.Writer, ss []results.MatrixSplit) error {
	var cells [][]string
	for _, s := range ss {
		cells = append(cells, []string{
			strconv.Itoa(s.M), strconv.Itoa(s.N), strconv.Itoa(s.K),
			fmt.Sprintf("%s on %v", s.BackendA, s.CPUsA), fmt.Sprintf("%s on %v", s.BackendB, s.CPUsB), s.Dim,
			fmt.Sprintf("%.3f", s.AlphaIdeal), fmt.Sprintf("%.3f", s.AlphaChosen),
			fmtMS(s.SecondsA.Median), fmtMS(s.SecondsB.Median), fmtMS(s.Makespan.Median), fmtMS(s.IdealSeconds),
			fmt.Sprintf("%.2f", s.Ratio), fmtMS(s.IdealAloneSeconds), fmt.Sprintf("%.2f", s.RatioAlone), fmt.Sprintf("%.2f", s.GFLOPS.Median),
		})
	}
	if err := reports.TextTable(w, []string{"M", "N", "K", "A", "B", "dim", "α ideal", "α chosen", "A ms", "B ms", "makespan ms", "ideal ms", "makespan/ideal", "ideal ms (alone rates)", "makespan/ideal (alone)", "GFLOP/s"}, cells); err != nil {
		return err
	}
	if len(ss) > 0 && ss[0].Targets != "" {
		fmt.Fprintf(w, "%s\n", ss[0].Targets)
	}
	for _, s := range ss {
		fmt.Fprintf(w, "M=%d: %s\n", s.M, s.Note)
	}
	return nil
}

func fmtMS(s float64) string { return fmt.Sprintf("%.3f", s*1e3) }

// gemvPaperShapes are --shapes paper: weight shapes N×K of the low-bit GEMV
// paper's Figs. 5–7 models (§IV-B: MobileLLM-1.5B and Llama3-8B; their
// linear layers from models/configs: MobileLLM hidden 1600, FFN 4352;
// Llama3-8B hidden 4096, FFN 14336, 8 KV heads of 128), the q/o, FFN up
// and down shapes of each; Falcon3-1B and the k/v shapes are left out so
// that six formats run in seconds on 2 cores.
var gemvPaperShapes = [][2]int{{1600, 1600}, {4352, 1600}, {1600, 4352}, {4096, 4096}, {14336, 4096}, {4096, 14336}}

// parseShapes resolves --shapes into o.shapes ([N, K] pairs; default
// --n, --k).
func (o *GEMMOptions) parseShapes(cmd *cobra.Command) error {
	o.shapes = [][2]int{{o.N, o.K}}
	if o.Shapes == "" {
		return nil
	}
	if cmd.Flags().Changed("n") || cmd.Flags().Changed("k") {
		return fmt.Errorf("gemm: --shapes %s: not with --n or --k", o.Shapes)
	}
	if o.Split != "" {
		return fmt.Errorf("gemm: --shapes %s: not with --split (one shape: --n, --k)", o.Shapes)
	}
	if o.Shapes == "paper" {
		o.shapes = gemvPaperShapes
		return nil
	}
	o.shapes = nil
	for _, f := range strings.Split(o.Shapes, ",") {
		f = strings.TrimSpace(f)
		ns, ks, ok := strings.Cut(strings.ReplaceAll(f, "×", "x"), "x")
		n, errN := strconv.Atoi(ns)
		k, errK := strconv.Atoi(ks)
		if !ok || errN != nil || errK != nil || n < 1 || k < 1 {
			return fmt.Errorf("gemm: --shapes: %q: want NxK with N, K ≥ 1 (or --shapes paper)", f)
		}
		o.shapes = append(o.shapes, [2]int{n, k})
	}
	return nil
}

// gemvEBW returns a quantized GEMV's effective-bandwidth roof (low-bit
// GEMV paper Eq. 3) from the ebw record of the row's backend (format) and
// thread count, in GB/s, with what it is; or why there is none. The
// records are the profile's matrix.quant_ebw and those measured by this
// command (measured: for backends the profile has none of). A row of
// another backend than a record's is never compared with it: each
// backend's up-convert sequence has its own γ.
func gemvEBW(g results.GEMMResult, prof *results.Profile, measured []results.QuantEBW) (float64, string, string) {
	if prof == nil {
		return 0, "", "no profile: fraction not computed"
	}
	if prof.Matrix == nil && len(measured) == 0 {
		return 0, "", "no matrix section in the profile: no ebw (quant_ebw) to compare with"
	}
	var recs []results.QuantEBW
	if prof.Matrix != nil {
		recs = prof.Matrix.QuantEBW
	}
	var others []string
	for _, q := range append(slices.Clone(recs), measured...) {
		if q.Format != g.DType {
			continue
		}
		if q.Backend != g.Backend {
			others = append(others, q.Backend)
			continue
		}
		for _, pt := range q.Points {
			if pt.Threads == g.Threads && pt.EBWGBps > 0 && g.RoofNowGBps > 0 && q.GammaCycles > 0 && q.ClockHz > 0 {
				// β from the DRAM read roof re-measured beside the figure.
				up := float64(pt.Threads) * 32 / q.GammaCycles * q.ClockHz / 1e9
				ebw := min(g.RoofNowGBps, up)
				return ebw, fmt.Sprintf("%s ebw, %d threads, β from the DRAM read roof re-measured beside the figure (%.1f GB/s = min(roof now %.1f, %d · 32/γ %.3g bytes/cycle · %.3g GHz = %.1f); %s of %s; Eq. 3)",
					q.Format, pt.Threads, ebw, g.RoofNowGBps, pt.Threads, 32/q.GammaCycles, q.ClockHz/1e9, up, ebwSource(q), q.Backend), ""
			}
			if pt.Threads == g.Threads && pt.EBWGBps > 0 {
				return pt.EBWGBps, fmt.Sprintf("%s ebw, %d threads (%s of %s: %.1f GB/s = %d · min(β %.3g, 32/γ %.3g) bytes/cycle · %.3g GHz, %s-bound; Eq. 3)",
					q.Format, pt.Threads, ebwSource(q), q.Backend, pt.EBWGBps, pt.Threads, pt.BetaBytesPerCycle, 32/q.GammaCycles, q.ClockHz/1e9, pt.Limit), ""
			}
		}
	}
	if len(others) > 0 {
		return 0, "", fmt.Sprintf("no ebw of %s at %d threads (the profile's matrix.quant_ebw has %s's, another up-convert sequence): fraction not computed", g.Backend, g.Threads, strings.Join(others, ", "))
	}
	return 0, "", fmt.Sprintf("no %s ebw at %d threads in the profile's matrix.quant_ebw: fraction not computed", g.DType, g.Threads)
}

// ebwSource names where an ebw record's γ comes from.
func ebwSource(q results.QuantEBW) string {
	if strings.HasPrefix(q.GammaMethod, "measured beside the figures by this command") {
		return "γ measured by this command beside the figures (the profile has none of this backend)"
	}
	return "matrix.quant_ebw"
}

// writePlot writes the GEMV bandwidth plot (--plot) and its table: the
// M = 1 figures at the largest thread count, with the profile's DRAM read
// roof and each format's ebw at that thread count as lines.
func (o *GEMMOptions) writePlot(rows []results.GEMMResult, prof *results.Profile) error {
	if o.Plot == "" {
		return nil
	}
	t := slices.Max(o.Threads)
	var gemv []results.GEMMResult
	for _, g := range rows {
		if g.M == 1 && g.Threads == t {
			gemv = append(gemv, g)
		}
	}
	var roofs []reports.GEMVRoof
	src := "no --profile: no roofs drawn"
	if prof != nil {
		src = "roofs from " + o.Profile
		if prof.Memory != nil {
			for _, l := range prof.Memory.Levels {
				if l.Level == "DRAM" && l.Threads == t && l.GBps.Median > 0 {
					roofs = append(roofs, reports.GEMVRoof{Label: fmt.Sprintf("DRAM read roof, %d threads: %.1f GB/s (probed)", t, l.GBps.Median), GBps: l.GBps.Median})
				}
			}
		}
		seen := map[string]bool{}
		for _, g := range gemv {
			if seen[g.DType] {
				continue
			}
			seen[g.DType] = true
			if ebw, _, _ := gemvEBW(g, prof, o.measuredEBW); ebw > 0 {
				roofs = append(roofs, reports.GEMVRoof{Label: fmt.Sprintf("%s ebw (Eq. 3), %d threads: %.1f GB/s (probed γ, β)", g.DType, t, ebw), Format: g.DType, GBps: ebw})
			}
		}
	}
	title := fmt.Sprintf("Attained GEMV bandwidth (M = 1), %d threads, per shape and weight format (low-bit GEMV paper Figs. 5–7)\n%s", t, src)
	fo, err := o.Fig.forFile("gemm", "plot", o.Plot)
	if err != nil {
		return err
	}
	f, err := reports.GEMVBandwidthFigure(title, gemv, roofs)
	if err != nil {
		return fmt.Errorf("gemm: --plot: %w", err)
	}
	written, err := fo.Write(f, o.Plot)
	if err != nil {
		return fmt.Errorf("gemm: --plot: %w", err)
	}
	md := strings.TrimSuffix(o.Plot, filepath.Ext(o.Plot)) + ".md"
	if err := results.WriteFileAtomic(md, []byte(reports.GEMVBandwidthMarkdown(title, gemv, roofs, filepath.Base(fo.PrimaryPath(o.Plot)))), 0o644); err != nil {
		return fmt.Errorf("gemm: --plot: %w", err)
	}
	if o.JSON != jsonStdout {
		fmt.Fprintf(o.IO.Out, "wrote %s and %s\n", strings.Join(written, ", "), md)
	}
	return nil
}

// qformatList names kernels/quant's formats, comma-separated.
func qformatList() string {
	var fs []string
	for _, f := range quant.Formats() {
		fs = append(fs, string(f))
	}
	return strings.Join(fs, ", ")
}
