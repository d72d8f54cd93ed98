package engine

import (
	"context"
	"fmt"
	"math/bits"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cpubench/bench/internal/affinity"
	"github.com/cpubench/bench/kernels/gemm"
	"github.com/cpubench/bench/kernels/pool"
	"github.com/cpubench/bench/kernels/quant"
	"github.com/cpubench/bench/roofline"
)

// Placement says where the engine runs its linear operators (the GEMMs and
// GEMVs); the vector work (norms, RoPE, attention, SiLU) always runs on
// every worker of the cores (SMEPilot §3.3: non-linear operators stay on
// the cores).
type Placement string

// Placements.
const (
	// PlaceCores runs every GEMM on the cores' fp32 vector kernels
	// (gemm.ChoosePair's Cores), all workers.
	PlaceCores Placement = "cores"
	// PlaceMatrix runs every GEMM on the matrix target, all workers: the
	// matrix unit's backend (gemm.ChoosePair's Matrix: SME, AMX) where
	// the CPU has one, else a second backend on the cores (the best bf16
	// kernels: fp32 activations, bf16 weights). Model.MatrixNote and
	// Model.Notes say which.
	PlaceMatrix Placement = "matrix"
	// PlaceMixed splits every GEMM's output between the cores group (fp32
	// kernels) and the matrix group (second backend), two disjoint halves
	// of the workers, at the tile-aligned point of SMEPilot Eq. 1 (§4.1,
	// §4.4) with feedback: the rates start from each group's rate measured
	// alone at load and follow the rates the groups reach running together
	// (co-running), re-planned after every call per weight shape and M
	// bucket (pool.Balancer, splitBucket).
	PlaceMixed Placement = "mixed"
	// PlaceAuto takes each operator's target from the roofline plan
	// (roofline.Place on this shape, with Options.Machine): cores, matrix
	// or mixed per operator and per call shape.
	PlaceAuto Placement = "auto"
)

// Placements lists the placement names in the order flags show them.
func Placements() []Placement { return []Placement{PlaceCores, PlaceMatrix, PlaceMixed, PlaceAuto} }

// ParsePlacement reads a placement name ("" is cores).
func ParsePlacement(s string) (Placement, error) {
	if s == "" {
		return PlaceCores, nil
	}
	for _, p := range Placements() {
		if string(p) == s {
			return p, nil
		}
	}
	return "", fmt.Errorf("engine: placement %q: want cores, matrix, mixed or auto", s)
}

// Options configure New.
type Options struct {
	// Backend is the gemm backend of the cores target, fp32 weights on
	// the cores' vector units ("": gemm.ChoosePair's choice, the most
	// capable one), e.g. "go-fp32" to force the Go kernels.
	Backend string
	// MatrixBackend is the backend of the matrix target, for placements
	// matrix, mixed and auto ("": gemm.ChoosePair's choice, the matrix
	// unit's backend, else the best bf16 backend on the cores); any
	// available backend of any dtype may be named.
	MatrixBackend string
	// Threads is the number of pinned workers (0: one per allowed CPU).
	Threads int
	// WorkerSpin is how long an idle worker polls for its next operator
	// before it parks (kernels/pool Options.Spin; 0: the pool's default,
	// 200 µs). A decode loop whose work between steps (sampling, the next
	// token's bookkeeping) outlasts it makes the first parallel operator of
	// the next step pay the workers' wake-up.
	WorkerSpin time.Duration
	// Placement is where the linear operators run ("": cores).
	Placement Placement
	// Machine is the roofline model PlaceAuto plans with (required for
	// auto; unused otherwise).
	Machine *roofline.Machine
	// NoPartition is SMEPilot §5.4's "without tile partitioning"
	// ablation: a GEMM placed on mixed runs whole on the group whose
	// calibrated rate is higher, the other group idle.
	NoPartition bool
	// PackPerCall is the "without the layout-aware runtime" ablation
	// (SMEPilot §4.3, §5.4): weights stay unpacked and every call packs
	// the panels it uses (gemm.RunUnpacked). Not supported with quantized
	// weights (they are packed once, by their loader).
	PackPerCall bool
	// KVPackPerCall is the kv-packing ablation (SMEPilot §4.3, §5.4): the
	// KV cache stays row-major and attention packs every K and V tile it
	// reads into the panel layout inside each call, instead of the K/V
	// producer writing the cache packed once (kvLayout).
	KVPackPerCall bool
	// KVDType is the KV cache's element type: "" or "fp32", or "bf16"
	// (kvcache.go: the packed panels in bfloat16, half the bytes; prefill
	// attention converts each tile to fp32, decode reads the panels in
	// place with kernels.AxpyPanelsBF16 where AVX-512 runs it, else
	// converts too). bf16 does not combine with
	// KVPackPerCall (the ablation's cache is row-major fp32).
	KVDType string
	// NoPipeline is the pipeline ablation (SMEPilot §4.2, §5.4): prefill
	// attention runs each job's stages serially on one worker instead of
	// pipelining the matrix stage (QKᵀ, P·V) of one worker with the vector
	// stage (softmax, rescale) of another (attention_pipeline.go).
	NoPipeline bool
	// ForcePipeline runs the prefill attention pipeline even where the
	// attention backend is not a matrix unit. By default the pipeline runs
	// only when its matrix stage has a matrix unit (SME, AMX) of its own:
	// on the cores alone it halves each stage's workers, and
	// roofline.PredictAttention puts it at about half the serial speed.
	// For tests and experiments.
	ForcePipeline bool
	// QuantBackend is the kernels/quant backend of quantized weight
	// matrices ("" takes quant.Best()), e.g. "go" to force the Go loops.
	QuantBackend string
	// WeightLayout is the PIM-SHERPA weight layout policy (layout.go):
	// duplicate, owr or ddb; "" is the default engine (one packed copy
	// read by every call). Policies need fp32 weights, dense layers and
	// placement cores.
	WeightLayout WeightLayout
	// CopyThreads is ddb's dedicated copy threads (0: 1), taken out of
	// Threads (0: every allowed CPU): the pool gets Threads − CopyThreads
	// workers, the copy threads the next CPUs. A count that leaves no
	// compute thread, or one given with another policy, is an error.
	CopyThreads int
	// NUMA is the NUMA placement policy (numa.go; ArcLight §2.3–3.4; ""
	// is os).
	NUMA NUMAPolicy
	// TPDegree is the number of tensor-parallel thread groups of policy tp
	// (0: one per NUMA node of the Model's CPUs). It must divide the query
	// and KV heads and be at most the thread count.
	TPDegree int
	// Sync is the tensor-parallel synchronization of policy tp (ArcLight
	// §3.4, Fig. 9; "" is b).
	Sync SyncMode
	// PrefillCPUs and DecodeCPUs, when set (both), run each phase on the
	// workers pinned to those CPUs (Sandwich §3.2–3.3; phase.go): the pool
	// spans their union, and Threads must be 0.
	PrefillCPUs, DecodeCPUs []int
	// Context, if set, is checked by New before it packs each layer, by
	// every forward call (Batch.Prefill, PrefillAll, Decode, Session's)
	// before each decoder layer and before the LM head, and by TimeLinear
	// before each run. Once it is done they return its error
	// (context.Canceled or context.DeadlineExceeded) within about one
	// layer's time; a stopped forward call leaves its slots' positions
	// unchanged (the caches' rows it wrote are overwritten by the next).
	Context context.Context
}

// ctxErr is the error of the Model's Context, nil while it runs or when
// none is set.
func (o *Options) ctxErr() error {
	if o.Context == nil {
		return nil
	}
	return o.Context.Err()
}

// Model is a model's weights packed once, at load time, for its backends
// (SMEPilot §4.3), and the pinned worker pool that runs them. It is
// read-only after New except for its pool: Batches of one Model must not
// run concurrently (a second concurrent call fails, it never deadlocks).
// Close releases the workers.
type Model struct {
	Config Config
	// Backend is the cores target's fp32 backend; Matrix the matrix
	// target's (nil for placement cores): a matrix unit's backend, or a
	// second backend on the cores, which MatrixNote explains ("no matrix
	// unit", gemm.Pair.MatrixNote; "" on a matrix unit).
	Backend    gemm.Backend
	Matrix     *gemm.Backend
	MatrixNote string
	Placement  Placement
	Threads    int
	// PackSeconds is the wall-clock time spent packing weights: New's
	// packing for the gemm backends plus, for quantized matrices, their
	// loader's (Weights.PackSeconds); CalibrateSeconds the time New spent
	// measuring the two backends' rates for the mixed split.
	PackSeconds      float64
	CalibrateSeconds float64
	// Notes say what the placement means on this machine.
	Notes []string
	// Quant is the kernels/quant backend that runs the quantized weight
	// matrices (nil when every linear weight is float32).
	Quant *quant.Backend
	// WeightFormat is the form holding most linear weights ("fp32",
	// "q8_0" or "q4_0", Weights.MainWeightFormat), with " (mixed)" added
	// when some are in another form.
	WeightFormat string
	// WeightBytes is the resident size of the weights the Model holds:
	// Weights.Bytes (float32 tensors at 4 bytes per value, quantized
	// matrices at quant.Matrix.Bytes) plus the packed copies New made for
	// the gemm backends, counted at their element size (4 bytes fp32, 2
	// bf16, 1 int8; panel padding and int8 scales not counted). Under a
	// weight layout policy it is Layout().ResidentBytes (panels and
	// buffers with their padding).
	WeightBytes int64

	opts      Options
	pool      *pool.Pool
	all       *pool.Group         // the running phase's workers: every worker, or its configuration's (phase.go)
	phases    *phaseGroups        // per-phase configurations (nil: every worker runs both phases)
	coresG    *pool.Group         // mixed: the cores' half (includes worker 0)
	matG      *pool.Group         // mixed: the matrix half
	scratches []*gemm.Scratch     // per pool worker, cores backend's blocking
	qacts     []quant.Activations // per pool worker: its rows of X quantized (runQuant)
	matScr    []*gemm.Scratch     // per pool worker, matrix backend's blocking
	splitScr  []*gemm.Scratch     // per pool worker, its mixed group's backend's

	embed     []float32 // [Vocab][Dim], row-major, for the gather
	finalNorm []float32
	lmHead    *linear
	layers    []layer

	lay *layoutState // the weight layout policy (nil: none)
	tp  *tpState     // NUMA policy tp's partition (tp.go; nil: none)

	numa *numaMem // NUMA interleave/local: the allocator of weights, KV caches, activations (numa_mem.go; nil: os)

	planMu      sync.Mutex
	plans       map[planKey]map[string]Placement
	expertPlans map[int]Placement // auto: an expert's placement by its routed tokens (moe.go)
	closed      bool              // Close was called: the weights above are gone

	// held is the pool's master while Hold runs its function (nil
	// otherwise); inHeld marks a call running on it.
	held   atomic.Pointer[pool.Master]
	inHeld atomic.Bool
}

// Hold runs f with the worker pool held for its whole duration, f itself
// running on worker 0's pinned thread: every forward call f makes from
// its goroutine (Batch.Prefill, Decode, DecodeNext, ..., TimeLinear) runs
// inline there instead of handing the thread over and back per call, so
// a decode loop's steps follow one another with no wake-up of the caller
// and no worker parking in between (issue #16; the workers spin while f's
// code between calls runs). f must make those calls from its own
// goroutine: no other goroutine may use the Model while f runs (one
// overlapping a call of f's fails as busy, one between f's calls is not
// detected). A nested Hold fails as busy. Every worker is woken (one
// empty call) before f runs. Errors: f's, or the pool's (closed, busy).
func (m *Model) Hold(f func() error) error {
	if m.closed {
		return fmt.Errorf("engine: model %s is closed", m.Config.Name)
	}
	return m.pool.Do(func(ms *pool.Master) error {
		// Wake every worker first (one empty call): workers parked before
		// Hold would otherwise wake inside f's first parallel operator
		// and charge it the wake-up (measured here at 0.2–5 ms on the
		// 2-vCPU VM, where an idle vCPU is the host's to deschedule);
		// held, they then poll between f's calls (pool.HeldSpin).
		if err := ms.Run(m.all, func(int, int) error { return nil }); err != nil {
			return err
		}
		m.held.Store(ms)
		defer m.held.Store(nil)
		return f()
	})
}

// do runs f on the pool's master: inline when Hold holds it, else
// through Pool.Do.
func (m *Model) do(f func(ms *pool.Master) error) error {
	if ms := m.held.Load(); ms != nil {
		if !m.inHeld.CompareAndSwap(false, true) {
			return fmt.Errorf("engine: model %s: a call is already running on the held pool", m.Config.Name)
		}
		defer m.inHeld.Store(false)
		return f(ms)
	}
	return m.pool.Do(f)
}

type layer struct {
	attnNorm, ffnNorm, qNorm, kNorm []float32
	wq, wk, wv, wo, gate, up, down  *linear
	moe                             bool
	router                          *linear
	experts                         []expert
}

type expert struct{ gate, up, down *linear }

// linear is one weight matrix W (N×K, y = x·Wᵀ) in the layouts its
// placement needs.
type linear struct {
	op     string // engine operator name, for auto plans
	n, k   int
	raw    []float32 // unpacked fp32 (PackPerCall; the source of the packs)
	rawMat any       // unpacked matrix-backend weights ([]uint16 bf16 or gemm.RawInt8) for PackPerCall
	cores  *gemm.Weights
	mat    *gemm.Weights
	// rateCores and rateMat are the FLOP/s of the two groups on this
	// shape, each measured alone at load (calibrate; mixed and auto with
	// two groups only). They pick the group of the 1-worker and
	// NoPartition paths and are the split's starting rates; the split
	// itself follows the co-running rates in split.
	rateCores, rateMat float64
	// split is the mixed split's feedback state, shared by every linear
	// of this shape (nil without two groups).
	split *splitState
	// q is the matrix block-quantized (kernels/quant), run by runQuant on
	// the cores whatever the placement; raw, cores and mat are then nil.
	q *quant.Matrix
	// Under a weight layout policy (layout.go): li is the decoder layer
	// (-1: the LM head), pan the resident panels (duplicate) and off the
	// matrix's offset in a layer's buffer (ddb).
	li  int
	pan []float32
	off int
	// npan is the cores backend's panels in node-placed memory, under NUMA
	// policies interleave and local (numa_mem.go); cores is then nil.
	npan []float32
}

// splitBuckets is the number of M buckets of a shape's split state:
// splitBucket(M) = min(bits.Len(M), splitBuckets) - 1 puts M ≤ 1 (decode of
// one sequence), 2–3, 4–7, 8–15, 16–31, 32–63 and M ≥ 64 (prefill) apart,
// since the rate per output element, and the two groups' ratio, differ
// between a GEMV, a GEMM with partly filled register tiles and a full one.
const splitBuckets = 7

func splitBucket(M int) int { return min(max(bits.Len(uint(M)), 1), splitBuckets) - 1 }

// splitState is one weight shape's mixed split (SMEPilot §4.1/§4.4 Eq. 1
// with feedback): a pool.Balancer per M bucket, A the cores group and B the
// matrix group, each starting from the rates the groups reach alone
// (calibrate) and folding in the co-running rates of every RunSplit of
// that shape and bucket (weight 1/2, the Balancer's default). The linears
// of one shape share it, so a prefill's later layers run on what its
// earlier ones measured.
//
// No lock: runLinear, its only user after New, runs only inside Pool.Do
// (it needs the *pool.Master that Do hands out), on worker 0's goroutine,
// and Do claims worker 0 for the whole call, so a second Do on the same
// Model (another Batch, TimeLinear) fails as busy instead of running
// concurrently; the claim's atomic swap orders successive Do calls.
type splitState struct {
	bal [splitBuckets]pool.Balancer
}

// New validates w, starts the worker pool and packs w's matrices for the
// backends the placement needs. The Model keeps references to w's norm
// weights and embedding table (not copies). Errors: invalid weights, an
// unknown or unavailable backend, a placement that cannot run (mixed with
// one worker, auto without a Machine), or a packing error naming the
// tensor.
func New(w *Weights, o Options) (*Model, error) {
	if err := w.Validate(); err != nil {
		return nil, err
	}
	if o.Placement == "" {
		o.Placement = PlaceCores
	}
	if _, err := ParsePlacement(string(o.Placement)); err != nil {
		return nil, err
	}
	if o.Placement == PlaceAuto && o.Machine == nil {
		return nil, fmt.Errorf("engine: placement auto needs a roofline machine (a probe profile)")
	}
	if o.Threads < 0 {
		return nil, fmt.Errorf("engine: threads %d: must be ≥ 0 (0: every allowed CPU)", o.Threads)
	}
	if err := o.checkNUMA(w.Config); err != nil {
		return nil, err
	}
	if err := CheckKVDType(o.KVDType, o.KVPackPerCall); err != nil {
		return nil, err
	}
	pair, err := gemm.ChoosePair(o.Backend, o.MatrixBackend)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	cb := pair.Cores
	c := w.Config
	m := &Model{Config: c, Backend: cb, Placement: o.Placement, opts: o, embed: w.Embed, finalNorm: w.FinalNorm,
		layers: make([]layer, c.Layers), plans: map[planKey]map[string]Placement{}}
	wf, only := w.MainWeightFormat()
	m.WeightFormat = wf
	if !only {
		m.WeightFormat += " (mixed)"
	}
	if fs := w.WeightFormats(); len(fs) > 1 || fs[FormatFP32] == 0 {
		if err := m.quantSetup(&o, fs); err != nil {
			return nil, err
		}
	}
	m.Notes = append(m.Notes, "cores = "+pair.CoresLabel())
	if m.Placement != PlaceCores {
		mb := pair.Matrix
		m.Matrix, m.MatrixNote = &mb, pair.MatrixNote
		m.Notes = append(m.Notes, "matrix = "+pair.MatrixLabel())
	}
	if err := m.layoutCheck(&o, w); err != nil {
		return nil, err
	}
	if err := m.phaseCheck(&o); err != nil {
		return nil, err
	}
	m.opts = o
	if err := m.startPool(o); err != nil {
		return nil, err
	}
	m.Notes = append(m.Notes, m.attentionNotes()...)
	if m.Quant != nil {
		m.qacts = make([]quant.Activations, m.pool.Size())
	}
	ok := false
	defer func() {
		if !ok {
			m.Close()
		}
	}()
	if err := m.numaInit(o, w); err != nil {
		return nil, err
	}
	start := time.Now()
	if o.NUMA == NUMATP { // the decoder layers partitioned over thread groups (tp.go)
		if err := m.tpInit(w); err != nil {
			return nil, err
		}
	}
	mk := func(op, what string, li int, data []float32, q *quant.Matrix, n, k int) *linear {
		if err != nil {
			return nil
		}
		if q != nil {
			q = m.quantMatrix(q)
			m.WeightBytes += q.Bytes()
			return &linear{op: op, n: n, k: k, q: q}
		}
		if m.numa != nil { // the panels in node-placed memory (numa_mem.go)
			var l *linear
			if l, err = m.numaLinear(op, data, n, k); err != nil {
				err = fmt.Errorf("engine: model %s: %s: %w", c.Name, tensor{name: what, layer: li}, err)
				return nil
			}
			m.WeightBytes += 8 * int64(len(data)) // as below: the source and its packed copy
			return l
		}
		if m.lay != nil { // the decode layout only; layoutInit adds the panels
			m.WeightBytes += 4 * int64(len(data))
			return &linear{op: op, n: n, k: k, raw: data, li: li}
		}
		var l *linear
		if l, err = m.newLinear(op, data, n, k); err != nil {
			err = fmt.Errorf("engine: model %s: %s: %w", c.Name, tensor{name: what, layer: li}, err)
			return nil
		}
		m.WeightBytes += 4*int64(len(data)) + l.packedBytes()
		return l
	}
	d, q, kv, h := c.Dim, c.QDim(), c.KVDim(), c.Intermediate
	for i := range m.layers {
		if m.tp != nil {
			break // tpInit packed the layers
		}
		if err == nil {
			err = o.ctxErr()
		}
		lw, l := &w.Layers[i], &m.layers[i]
		l.attnNorm, l.ffnNorm, l.qNorm, l.kNorm = lw.AttnNorm, lw.FFNNorm, lw.QNorm, lw.KNorm
		l.wq = mk(OpQProj, "wq", i, lw.Wq, lw.WqQ, q, d)
		l.wk = mk(OpKProj, "wk", i, lw.Wk, lw.WkQ, kv, d)
		l.wv = mk(OpVProj, "wv", i, lw.Wv, lw.WvQ, kv, d)
		l.wo = mk(OpOProj, "wo", i, lw.Wo, lw.WoQ, d, q)
		if c.IsMoE(i) {
			l.moe = true
			l.router = mk(OpRouter, "router", i, lw.Router, lw.RouterQ, c.Experts, d)
			l.experts = make([]expert, c.Experts)
			for e := range l.experts {
				x := &lw.Experts[e]
				l.experts[e] = expert{
					gate: mk(OpExperts, fmt.Sprintf("expert %d gate", e), i, x.Gate, x.GateQ, c.MoEIntermediate, d),
					up:   mk(OpExperts, fmt.Sprintf("expert %d up", e), i, x.Up, x.UpQ, c.MoEIntermediate, d),
					down: mk(OpExperts, fmt.Sprintf("expert %d down", e), i, x.Down, x.DownQ, d, c.MoEIntermediate),
				}
			}
		} else {
			l.gate = mk(OpGateProj, "gate", i, lw.Gate, lw.GateQ, h, d)
			l.up = mk(OpUpProj, "up", i, lw.Up, lw.UpQ, h, d)
			l.down = mk(OpDownProj, "down", i, lw.Down, lw.DownQ, d, h)
		}
	}
	head := w.LMHead
	if c.TiedEmbeddings {
		head = w.Embed
		if w.LMHeadQ == nil {
			m.WeightBytes -= 4 * int64(len(head)) // the table itself, counted below
		}
	}
	m.lmHead = mk(OpLMHead, "lm_head", -1, head, w.LMHeadQ, c.Vocab, d)
	if err != nil {
		return nil, err
	}
	m.WeightBytes += 4 * int64(len(w.Embed)+len(w.FinalNorm))
	for i := range w.Layers {
		lw := &w.Layers[i]
		m.WeightBytes += 4 * int64(len(lw.AttnNorm)+len(lw.FFNNorm)+len(lw.QNorm)+len(lw.KNorm))
	}
	if m.lay != nil {
		if err := m.layoutInit(); err != nil {
			return nil, err
		}
		runtime.AddCleanup(m, func(s *layoutState) { s.stop() }, m.lay)
	}
	m.PackSeconds = time.Since(start).Seconds() + w.PackSeconds
	if m.coresG != nil {
		if err := m.calibrate(); err != nil {
			return nil, err
		}
	}
	ok = true
	return m, nil
}

// startPool starts Threads pinned workers and cuts the groups.
func (m *Model) startPool(o Options) error {
	po := pool.Options{Spin: o.WorkerSpin}
	if o.PrefillCPUs != nil {
		po.CPUs = phaseUnion(o.PrefillCPUs, o.DecodeCPUs)
	} else if o.Threads > 0 {
		cpus, err := poolCPUs(o.Threads)
		if err != nil {
			return err
		}
		po.CPUs = cpus
	}
	p, err := pool.New(po)
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	m.pool, m.all, m.Threads = p, p.All(), p.Size()
	if pe := p.PinErr(); pe != nil {
		m.Notes = append(m.Notes, "workers not pinned: "+pe.Error())
	}
	if err := m.phaseGroups(o); err != nil {
		p.Close()
		return err
	}
	// The pool's workers park after a short spin; close them when the
	// Model is dropped without Close.
	runtime.AddCleanup(m, func(p *pool.Pool) { p.Close() }, p)
	if o.Placement == PlaceMixed || o.Placement == PlaceAuto {
		if p.Size() < 2 {
			if o.Placement == PlaceMixed {
				p.Close()
				return fmt.Errorf("engine: placement mixed needs at least 2 threads (two groups), have %d", p.Size())
			}
			m.Notes = append(m.Notes, "auto with 1 thread: a mixed plan runs on the faster backend alone")
		} else {
			nm := p.Size() / 2
			gs, err := p.Groups(p.Size()-nm, nm)
			if err != nil {
				p.Close()
				return fmt.Errorf("engine: %w", err)
			}
			m.coresG, m.matG = gs[0], gs[1]
			m.Notes = append(m.Notes, fmt.Sprintf("mixed: cores group workers %v (CPUs %v), matrix group workers %v (CPUs %v)",
				m.coresG.Workers(), m.coresG.CPUs(), m.matG.Workers(), m.matG.CPUs()))
		}
	}
	m.scratches = gemm.NewScratches(p.Size(), nil, gemm.DefaultBlocking(m.Backend))
	if m.Matrix != nil {
		m.matScr = gemm.NewScratches(p.Size(), nil, gemm.DefaultBlocking(*m.Matrix))
		m.splitScr = append([]*gemm.Scratch(nil), m.scratches...)
		if m.matG != nil {
			for _, w := range m.matG.Workers() {
				m.splitScr[w] = m.matScr[w]
			}
		}
	}
	return nil
}

// CPUs returns the CPU each pool worker is pinned to (-1: none), in
// worker order: where the Model's threads run, for noise records.
func (m *Model) CPUs() []int { return m.pool.CPUs() }

// poolCPUs picks n CPUs for the workers: the first n allowed ones.
func poolCPUs(n int) ([]int, error) {
	cpus, err := affinity.Allowed()
	if err != nil {
		return nil, fmt.Errorf("engine: threads %d: %w", n, err)
	}
	if n > len(cpus) {
		return nil, fmt.Errorf("engine: threads %d: only %d CPUs allowed", n, len(cpus))
	}
	return cpus[:n], nil
}

// Close stops the worker pool and lets the weights and their packed
// copies go (a caller that keeps the Model, e.g. in a deferred Close, no
// longer keeps them in memory); the Model must not be used afterwards:
// its Batches' calls return an error.
func (m *Model) Close() {
	if m.pool != nil {
		m.pool.Close()
	}
	if m.lay != nil {
		m.lay.stop()
	}
	if m.numa != nil {
		m.numa.freeAll()
	}
	if m.tp != nil && m.tp.mem != nil {
		m.tp.mem.freeAll()
	}
	m.closed = true
	m.embed, m.finalNorm, m.lmHead, m.layers, m.tp = nil, nil, nil, nil, nil
}

// Backends names the gemm backends the placement uses, e.g.
// "avx2-fp32+avx2-bf16".
func (m *Model) Backends() string {
	if m.Matrix == nil {
		return m.Backend.Name
	}
	if m.Placement == PlaceMatrix {
		return m.Matrix.Name
	}
	return m.Backend.Name + "+" + m.Matrix.Name
}

// needs reports which layouts the placement packs.
func (m *Model) needs() (cores, mat bool) {
	switch m.Placement {
	case PlaceCores:
		return true, false
	case PlaceMatrix:
		return false, true
	}
	return true, true
}

// newLinear packs data (n×k) for the placement's backends, or keeps it
// unpacked for the PackPerCall ablation.
func (m *Model) newLinear(op string, data []float32, n, k int) (*linear, error) {
	l := &linear{op: op, n: n, k: k, raw: data}
	wc, wm := m.needs()
	if wm && m.Matrix.DType == gemm.BF16 {
		bf := make([]uint16, len(data))
		for i, v := range data {
			bf[i] = gemm.Float32ToBF16(v)
		}
		if m.opts.PackPerCall {
			l.rawMat = bf
		} else {
			var err error
			if l.mat, err = gemm.PackBF16(*m.Matrix, bf, n, k); err != nil {
				return nil, err
			}
		}
	}
	if wm && m.Matrix.DType == gemm.Int8 {
		q, sc := gemm.QuantizeRows(data, n, k)
		if m.opts.PackPerCall {
			l.rawMat = gemm.RawInt8{W: q, Scales: sc}
		} else {
			var err error
			if l.mat, err = gemm.PackInt8(*m.Matrix, q, sc, n, k); err != nil {
				return nil, err
			}
		}
	}
	if m.opts.PackPerCall {
		return l, nil
	}
	if wc {
		var err error
		if l.cores, err = gemm.PackFP32(m.Backend, data, n, k); err != nil {
			return nil, err
		}
	}
	if wm && m.Matrix.DType == gemm.FP32 {
		var err error
		if l.mat, err = gemm.PackFP32(*m.Matrix, data, n, k); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// calibrationRows is M of the GEMMs that measure each group's rate for the
// mixed split: enough rows for every backend's register tile to be full.
const calibrationRows = 48

// calibrate measures, for every distinct weight shape, the FLOP/s of the
// cores backend on the cores group and of the matrix backend on the matrix
// group, each group alone (best of three runs of an M = calibrationRows
// GEMM): the starting rates P_A, P_B of SMEPilot Eq. 1, from which every
// M bucket of the shape's splitState starts before it follows the
// co-running rates (runLinear).
func (m *Model) calibrate() error {
	start := time.Now()
	type shape struct{ n, k int }
	rates := map[shape][2]float64{}
	states := map[shape]*splitState{}
	var all []*linear
	m.eachLinear(func(l *linear) { all = append(all, l) })
	x := make([]float32, calibrationRows*m.Config.Dim)
	for i := range x {
		x[i] = float32(i%7) * 0.01
	}
	err := m.do(func(ms *pool.Master) error {
		for _, l := range all {
			sh := shape{l.n, l.k}
			if r, ok := rates[sh]; ok {
				l.rateCores, l.rateMat, l.split = r[0], r[1], states[sh]
				continue
			}
			if len(x) < calibrationRows*l.k {
				x = make([]float32, calibrationRows*l.k)
			}
			y := make([]float32, calibrationRows*l.n)
			var r [2]float64
			for gi, g := range []*pool.Group{m.coresG, m.matG} {
				best := 0.0
				for range 3 {
					st := time.Now()
					if err := m.runOn(ms, g, gi == 1, l, y, x[:calibrationRows*l.k], calibrationRows); err != nil {
						return err
					}
					if s := time.Since(st).Seconds(); best == 0 || s < best {
						best = s
					}
				}
				r[gi] = gemm.Flops(calibrationRows, l.n, l.k) / max(best, 1e-9)
			}
			rates[sh] = r
			st := &splitState{}
			per := 2 * float64(l.k) // FLOPs per output element
			for i := range st.bal {
				st.bal[i] = pool.Balancer{TileA: m.Backend.Tile(), TileB: m.Matrix.Tile(), RateA: r[0] / per, RateB: r[1] / per}
			}
			states[sh] = st
			l.rateCores, l.rateMat, l.split = r[0], r[1], st
		}
		return nil
	})
	m.CalibrateSeconds = time.Since(start).Seconds()
	if err != nil {
		return fmt.Errorf("engine: calibrating the mixed split: %w", err)
	}
	var parts []string
	for sh, r := range rates {
		parts = append(parts, fmt.Sprintf("%d×%d: %.1f/%.1f", sh.n, sh.k, r[0]/1e9, r[1]/1e9))
	}
	slices.Sort(parts)
	m.Notes = append(m.Notes, "mixed split starting rates (GFLOP/s, cores group/matrix group, each alone, M = 48), "+
		"then re-planned after every call from the groups' co-running rates per shape and M bucket: "+strings.Join(parts, ", "))
	return nil
}

// eachLinear calls f on every weight matrix.
func (m *Model) eachLinear(f func(*linear)) {
	for i := range m.layers {
		l := &m.layers[i]
		for _, x := range []*linear{l.wq, l.wk, l.wv, l.wo, l.gate, l.up, l.down, l.router} {
			if x != nil {
				f(x)
			}
		}
		for _, e := range l.experts {
			f(e.gate)
			f(e.up)
			f(e.down)
		}
	}
	f(m.lmHead)
}

// runOn computes y = x·Wᵀ (M rows) on group g with the matrix backend
// (mat) or the cores backend.
func (m *Model) runOn(ms *pool.Master, g *pool.Group, mat bool, l *linear, y, x []float32, M int) error {
	w, b, raw, scr := l.cores, m.Backend, any(l.raw), m.scratches
	if mat {
		w, b, scr = l.mat, *m.Matrix, m.matScr
		if l.rawMat != nil {
			raw = l.rawMat
		}
	}
	if m.opts.PackPerCall {
		return gemm.RunUnpacked(ms, g, b, gemm.Blocking{}, y, x, raw, M, l.n, l.k, scr)
	}
	return w.Run(ms, g, y, x, M, scr)
}

// runLinear computes y = x·Wᵀ for M rows of x under placement p (one of
// cores, matrix, mixed) and counts the call in use (nil: not counted) by
// the backends that ran it. Mixed plans the Eq. 1 split from the Balancer of
// l's shape and M's bucket (splitState), runs it, and folds the two
// groups' measured co-running rates back in, so the next call of that
// shape and bucket is planned from them; with one worker, or under
// NoPartition, the faster group by the alone rates runs it whole.
func (m *Model) runLinear(ms *pool.Master, l *linear, y, x []float32, M int, p Placement, use *linUse) error {
	var tally linUse
	if use == nil {
		use = &tally
	}
	if l.q != nil {
		use[useQuant]++
		return m.runQuant(ms, l, y, x, M)
	}
	if m.lay != nil {
		return m.layoutLinear(ms, l, y, x, M, use)
	}
	if l.npan != nil {
		use[useCores]++
		return m.numaRunLinear(ms, l, y, x, M)
	}
	on := func(g *pool.Group, mat bool) error {
		if mat {
			use[useMatrix]++
		} else {
			use[useCores]++
		}
		return m.runOn(ms, g, mat, l, y, x, M)
	}
	switch p {
	case PlaceCores:
		return on(m.all, false)
	case PlaceMatrix:
		return on(m.all, true)
	}
	if m.coresG == nil { // one worker: the faster backend alone
		return on(m.all, l.rateMat > l.rateCores)
	}
	if m.opts.NoPartition {
		if l.rateMat > l.rateCores {
			return on(m.matG, true)
		}
		return on(m.coresG, false)
	}
	bal := &l.split.bal[splitBucket(M)]
	s, err := bal.Plan(M, l.n)
	if err != nil {
		return err
	}
	if !s.A.Empty() {
		use[useCores]++
	}
	if !s.B.Empty() {
		use[useMatrix]++
	}
	var t pool.Timing
	if m.opts.PackPerCall {
		block := func(mat bool) pool.BlockFunc {
			b, raw, scr := m.Backend, any(l.raw), m.scratches
			if mat {
				b, scr = *m.Matrix, m.matScr
				if l.rawMat != nil {
					raw = l.rawMat
				}
			}
			return func(worker, m0, m1, n0, n1 int) error {
				return gemm.BlockUnpacked(b, gemm.Blocking{}, y, l.n, x, l.k, raw, l.n, l.k, m0, m1, n0, n1, scr[worker])
			}
		}
		t, err = ms.RunSplit(m.coresG, block(false), m.matG, block(true), s)
	} else {
		t, err = gemm.RunSplit(ms, s, m.coresG, l.cores, m.matG, l.mat, y, x, m.splitScr)
	}
	if err != nil {
		return err
	}
	bal.Observe(s, t)
	return nil
}

// TimeLinear runs the linear operator op (OpQProj, ..., OpLMHead) of
// decoder layer li standalone — the same packed weights, placement and
// workers as in the forward pass, on M rows of a fixed input — reps times
// and returns the median seconds of one call: the kernel library's time
// for that GEMM, against which the engine's per-call time shows its
// overhead. Errors: an unknown operator or layer (MoE experts are not
// timed singly).
func (m *Model) TimeLinear(li int, op string, M, reps int) (float64, error) {
	if li < 0 || li >= len(m.layers) || M < 1 || reps < 1 {
		return 0, fmt.Errorf("engine: TimeLinear: layer %d of %d, M %d, reps %d", li, len(m.layers), M, reps)
	}
	if m.tp != nil && op != OpLMHead {
		return m.tpTimeLinear(li, op, M, reps)
	}
	l := &m.layers[li]
	w := map[string]*linear{OpQProj: l.wq, OpKProj: l.wk, OpVProj: l.wv, OpOProj: l.wo, OpGateProj: l.gate,
		OpUpProj: l.up, OpDownProj: l.down, OpRouter: l.router, OpLMHead: m.lmHead}[op]
	if w == nil {
		return 0, fmt.Errorf("engine: TimeLinear: layer %d has no linear operator %q", li, op)
	}
	x := make([]float32, M*w.k)
	for i := range x {
		x[i] = float32(i%13-6) * 0.01
	}
	y := make([]float32, M*w.n)
	plan, err := m.plan(0, M, []segment{{r1: M}}, nil)
	if err != nil {
		return 0, err
	}
	times := make([]float64, reps)
	err = m.do(func(ms *pool.Master) error {
		m.usePhase(0) // the prefill GEMMs' workers
		for i := range times {
			if err := m.opts.ctxErr(); err != nil {
				return err
			}
			st := time.Now()
			if err := m.runLinear(ms, w, y, x, M, plan.get(op), nil); err != nil {
				return err
			}
			times[i] = time.Since(st).Seconds()
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	slices.Sort(times)
	return times[len(times)/2], nil
}
