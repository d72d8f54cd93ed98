package engine

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cpubench/bench/internal/affinity"
	"github.com/cpubench/bench/kernels"
	"github.com/cpubench/bench/kernels/gemm"
	"github.com/cpubench/bench/kernels/pool"
)

// Weight layout policies: PIM-SHERPA (§3.2–3.3, §4) on the CPU.
//
// Decode and prefill want different weight layouts. In this engine:
//
//   - The decode layout is the row-major weight matrix W[N][K] as the
//     checkpoint stores it (Weights' float32 fields): the form a GEMV by
//     rows reads (kernels.DotRows, one output per row of W, every row
//     streamed once). It is what the PIM-aware layout is to the paper:
//     the layout the bandwidth-bound phase wants.
//   - The prefill layout is kernels/gemm's fp32 panels (pack.go: panels of
//     NR rows, k-major, zero-padded), the form the register-tiled GEMM
//     microkernels read (gemm.PanelBlock): the paper's host-friendly
//     layout.
//
// Under a policy every decode-phase linear and the LM head (one row of
// logits per prefill: a GEMV) read the decode layout, and every prefill
// linear of a decoder layer reads panels; the policies differ only in
// where the panels come from:
//
//   - LayoutDuplicate keeps both layouts resident (the paper's weight
//     duplication, WD): panels packed once at load. Prefill speed is the
//     packed engine's; resident bytes are about twice the linears'.
//   - LayoutOWR keeps only the decode layout: before each prefill GEMM the
//     compute workers rearrange (swizzled copy, row-major → panels) the
//     weight into one buffer sized for the largest decoder-layer matrix,
//     then run the GEMM on it: copy and compute serial (§4.3, SUM of
//     Table 2).
//   - LayoutDDB keeps only the decode layout: Options.CopyThreads
//     dedicated, pinned copy threads rearrange the next matrix group into
//     one of two buffers while the compute workers run the current group
//     from the other (§4.1, DRAM double buffering; MAX of Table 2). As in
//     the paper's Fig. 5, each buffer is the size of the largest matrix
//     (its FF layer) and a group is consecutive matrices of one layer
//     that fit one buffer together (Llama 3.2: Q, K, V and O in one, then
//     each FF matrix; qwen3-0.6b, whose Q is twice its width: Q+K, V+O,
//     then gate, up, down). The groups run in forward order across
//     layers, so the last group of layer l (FF2) hides the copy of layer
//     l+1's first, as in the paper. The synchronization is §4.4's, once
//     per group: at a group's first linear the compute side waits for its
//     copy (timed; the first group of a prefill is the preload, which
//     nothing hides) and hands the buffer it finished with (the previous
//     group's) to the copy of the next group. When the copy is hidden the
//     wait is empty. Unlike Fig. 5, copies also run during attention and
//     the norms (a copy thread has nothing else to do).
//
// The arithmetic of a call does not depend on the policy: the same
// kernels on the same values with the same partition over the compute
// workers, so logits are identical across the three for the same compute
// worker count (ddb's copy threads are taken from the threads, see
// Options.CopyThreads). They differ from the default engine's (no policy,
// every call on gemm.Weights panels) in rounding only: decode there runs
// on panels too.
//
// The policies apply to float32 weights on placement cores only.
// Quantized matrices (kernels/quant Matrix) are the decode layout and
// have no resident prefill layout to drop: their prefill path already
// up-converts each weight tile to column order inside the call (an OWR
// of its own, per tile), so duplicate, owr and ddb are refused for them
// ("policy unsupported by weight format"), as are MoE layers (experts are
// not double-buffered), placements matrix, mixed and auto, and the
// packing ablation.
type WeightLayout string

// The policies ("" is the default engine: one packed copy read by every
// call, no decode layout of its own).
const (
	LayoutDuplicate WeightLayout = "duplicate"
	LayoutOWR       WeightLayout = "owr"
	LayoutDDB       WeightLayout = "ddb"
)

// WeightLayouts lists the policies in the order flags show them.
func WeightLayouts() []WeightLayout {
	return []WeightLayout{LayoutDuplicate, LayoutOWR, LayoutDDB}
}

// ParseWeightLayout reads a policy name ("" is the default engine).
// Errors name the value.
func ParseWeightLayout(s string) (WeightLayout, error) {
	if s == "" {
		return "", nil
	}
	for _, p := range WeightLayouts() {
		if string(p) == s {
			return p, nil
		}
	}
	return "", fmt.Errorf("engine: weight layout %q: want duplicate, owr or ddb", s)
}

// LayoutStats are a Model's weight layout policy, its resident bytes and
// its rearrangement timings accumulated over prefills (Model.Layout).
// Bytes count elements at 4 bytes (fp32); panels include their padding.
type LayoutStats struct {
	Policy WeightLayout
	// ComputeThreads are the pool's workers; CopyThreads ddb's dedicated
	// copy threads (0 otherwise), on CopyCPUs when pinned (CopyNote says
	// why not).
	ComputeThreads, CopyThreads int
	CopyCPUs                    []int
	// CopyGroups is ddb's number of copy groups over all layers (each
	// copied while the one before it computes), 0 otherwise.
	CopyGroups int
	CopyNote   string
	// DecodeBytes is the decode layout: every linear row-major (the LM
	// head included; a tied head is the embedding table, counted once),
	// the embedding table and the norms. PrefillBytes is the resident
	// prefill layout (duplicate: every decoder-layer matrix's panels; 0
	// for owr and ddb). BufferBytes the rearrangement buffers (owr: one,
	// for the largest decoder-layer matrix; ddb: two of that size, §4.1).
	// ResidentBytes is their sum.
	DecodeBytes, PrefillBytes, BufferBytes, ResidentBytes int64
	// Prefills is the prefill calls counted since the last reset.
	Prefills int
	// CopySeconds is the wall time of the rearrangement: owr, the copy
	// phases (serial with the GEMMs); ddb, each layer's copy from its
	// first copy thread's start to its last one's end, summed (hidden
	// where it overlaps compute). CopyBusySeconds is ddb's Σ over copy
	// threads of their busy time (owr: CopySeconds × workers).
	// CopyBytes is the panel bytes written.
	CopySeconds, CopyBusySeconds float64
	CopyBytes                    int64
	// PreloadSeconds is ddb's wait for the first copy group of a prefill
	// (layer 0's first matrices: nothing hides it); WaitSeconds the
	// compute side's waits for the groups after it (0 when every copy is
	// hidden), Waits the number of those waits over 10 µs.
	PreloadSeconds, WaitSeconds float64
	Waits                       int
}

// CopyGBps is the measured rearrangement bandwidth: CopyBytes over
// CopySeconds in GB/s (panel bytes written; the row-major bytes read are
// the same but for padding), 0 before any copy.
func (s LayoutStats) CopyGBps() float64 {
	if s.CopySeconds <= 0 {
		return 0
	}
	return float64(s.CopyBytes) / s.CopySeconds / 1e9
}

// LayoutEvent is one interval of one thread in the last prefill
// (Model.LayoutTrace), for a per-thread timeline (PIM-SHERPA Fig. 11):
// Thread is "compute N" (pool worker N) or "copy N" (ddb copy thread N);
// Kind is "gemm" (the thread's block of a prefill GEMM), "pack" (owr's
// rearrangement, or a standalone pack), "copy" (ddb's rearrangement of a
// copy group of Layer, Op naming its matrices) or "wait" (compute worker
// 0 waiting for that group's buffer; "preload" for the first group).
// Start and End are seconds since the prefill began.
type LayoutEvent struct {
	Thread     string
	Kind       string
	Op         string
	Layer      int
	Start, End float64
}

// layoutState is a Model's policy machinery. It holds no reference to the
// Model (so a runtime cleanup can stop its copy threads).
type layoutState struct {
	policy WeightLayout
	b      gemm.Backend
	nr     int
	// units are ddb's copy groups in forward order (layoutInit), unitOf
	// each decoder-layer matrix's group.
	units  []copyUnit
	unitOf map[*linear]int

	owrBuf []float32
	bufs   [2][]float32

	copiers  []chan *copyJob
	copyCPUs []int
	stopOnce sync.Once

	mu    sync.Mutex // guards stats and trace against Model.Layout readers
	stats LayoutStats
	trace []LayoutEvent

	// Per forward call (only inside Pool.Do, one at a time).
	phase int // 0 prefill, 1 decode, -1 outside a forward (TimeLinear)
	cur   int // ddb: the copy group whose buffer is in use (prefill)
	start time.Time
	jobs  [2]*copyJob // by buffer: the last copy dispatched into it
	spans [][2]time.Time
	tmp   [][]float32 // per worker: an 8-row tail of a GEMV
}

// copyUnit is one ddb copy group: consecutive matrices of decoder layer
// layer whose panels fit one buffer together, each at its offset (the
// linear's off) in the buffer.
type copyUnit struct {
	layer int
	mats  []*linear
}

// name is the group as the per-thread timeline shows it ("layer 3
// q_proj+k_proj").
func (u copyUnit) name() string {
	s := fmt.Sprintf("layer %d ", u.layer)
	for i, l := range u.mats {
		if i > 0 {
			s += "+"
		}
		s += l.op
	}
	return s
}

// copyJob is the rearrangement of one copy group into one buffer by every
// copy thread, each its share of the group's panels.
type copyJob struct {
	unit  int
	layer int
	parts [][]packPart   // per copy thread
	spans [][2]time.Time // per copy thread, written by that thread only
	bytes int64          // panel bytes written
	left  atomic.Int32   // copy threads still running
	done  chan struct{}  // closed by the last one
	seen  bool           // waited for and counted
}

// packPart is panels [p0, p1) of l written into dst (l's panels at its
// offset in the buffer).
type packPart struct {
	l      *linear
	dst    []float32
	p0, p1 int
}

// panels is the number of NR-row panels of l and their floats.
func (s *layoutState) panels(l *linear) (np, floats int) {
	np = (l.n + s.nr - 1) / s.nr
	return np, np * l.k * s.nr
}

// packRows writes panels [p0, p1) of the n×k row-major w into dst (panel
// p at p·k·nr, k-major, rows past n zero): gemm's fp32 panel layout
// (gemm.PanelBlock), the swizzled copy of PIM-SHERPA §4.2 from the decode
// to the prefill layout.
func packRows(dst, w []float32, n, k, nr, p0, p1 int) {
	// Groups of 8 rows: per k step, 8 loads (8 sequential streams over the
	// rows) and 8 contiguous stores; measured about twice as fast as
	// writing one row's values nr apart.
	for p := p0; p < p1; p++ {
		pan := dst[p*k*nr : (p+1)*k*nr]
		rows := min(nr, n-p*nr)
		j0 := 0
		for ; j0+8 <= rows; j0 += 8 {
			r := w[(p*nr+j0)*k : (p*nr+j0+8)*k]
			r0, r1, r2, r3 := r[:k], r[k:2*k], r[2*k:3*k], r[3*k:4*k]
			r4, r5, r6, r7 := r[4*k:5*k], r[5*k:6*k], r[6*k:7*k], r[7*k:8*k]
			for kk := range k {
				d := pan[kk*nr+j0:][:8]
				d[0], d[1], d[2], d[3] = r0[kk], r1[kk], r2[kk], r3[kk]
				d[4], d[5], d[6], d[7] = r4[kk], r5[kk], r6[kk], r7[kk]
			}
		}
		for j := j0; j < rows; j++ {
			src := w[(p*nr+j)*k : (p*nr+j+1)*k]
			for kk, v := range src {
				pan[kk*nr+j] = v
			}
		}
		for j := rows; j < nr; j++ {
			for kk := range k {
				pan[kk*nr+j] = 0
			}
		}
	}
}

// layoutCheck validates the policy options against the weights and the
// other options, fixes the default copy-thread count and, for ddb, takes
// the copy threads out of o.Threads. It sets m.lay (buffers come in
// layoutInit).
func (m *Model) layoutCheck(o *Options, w *Weights) error {
	p, err := ParseWeightLayout(string(o.WeightLayout))
	if err != nil {
		return err
	}
	if p == "" {
		if o.CopyThreads != 0 {
			return fmt.Errorf("engine: copy threads %d: only with weight layout ddb", o.CopyThreads)
		}
		return nil
	}
	fs := w.WeightFormats()
	for f, n := range fs {
		if f != FormatFP32 && n > 0 {
			return fmt.Errorf("engine: weight layout %s: policy unsupported by weight format %s (quantized matrices are the decode layout and have no resident prefill layout: their prefill path up-converts each tile inside the call)", p, f)
		}
	}
	switch {
	case o.Placement != PlaceCores:
		return fmt.Errorf("engine: weight layout %s: placement %s unsupported (placement cores only)", p, o.Placement)
	case o.PackPerCall:
		return fmt.Errorf("engine: weight layout %s: not with the packing ablation (it keeps no panels either)", p)
	case w.Config.MoELayers() > 0:
		return fmt.Errorf("engine: weight layout %s: model %s has MoE layers (experts are not double-buffered)", p, w.Config.Name)
	case o.CopyThreads < 0:
		return fmt.Errorf("engine: copy threads %d: must be ≥ 0 (0: 1 for ddb)", o.CopyThreads)
	case o.CopyThreads > 0 && p != LayoutDDB:
		return fmt.Errorf("engine: copy threads %d: only with weight layout ddb, not %s", o.CopyThreads, p)
	}
	s := &layoutState{policy: p, b: m.Backend, nr: m.Backend.TileN, phase: -1, cur: -1}
	if s.b.DType != gemm.FP32 {
		return fmt.Errorf("engine: weight layout %s: cores backend %s computes %s, want fp32", p, s.b.Name, s.b.DType)
	}
	if p == LayoutDDB {
		nc := o.CopyThreads
		if nc == 0 {
			nc = 1
		}
		cpus, aerr := affinity.Allowed()
		total := o.Threads
		if total == 0 {
			total = runtime.NumCPU()
			if aerr == nil {
				total = len(cpus)
			}
		}
		if nc >= total {
			return fmt.Errorf("engine: weight layout ddb: %d copy threads of %d threads leave no compute thread", nc, total)
		}
		o.CopyThreads, o.Threads = nc, total-nc
		if aerr == nil && total <= len(cpus) {
			s.copyCPUs = cpus[total-nc : total]
		} else {
			s.stats.CopyNote = "copy threads not pinned: the allowed CPUs are unknown"
		}
		s.stats.CopyThreads = nc
	}
	s.stats.Policy = p
	m.lay = s
	return nil
}

// layoutInit makes the policy's resident panels (duplicate) or buffers
// (owr, ddb), starts ddb's copy threads and counts the bytes: m.WeightBytes
// already holds the decode layout.
func (m *Model) layoutInit() error {
	s := m.lay
	s.stats.ComputeThreads = m.pool.Size()
	s.stats.DecodeBytes = m.WeightBytes
	maxMat := 0
	var layers [][]*linear
	for i := range m.layers {
		l := &m.layers[i]
		ls := []*linear{l.wq, l.wk, l.wv, l.wo, l.gate, l.up, l.down}
		layers = append(layers, ls)
		for _, x := range ls {
			_, f := s.panels(x)
			maxMat = max(maxMat, f)
			if s.policy == LayoutDuplicate {
				if err := m.opts.ctxErr(); err != nil {
					return err
				}
				np, _ := s.panels(x)
				x.pan = make([]float32, f)
				packRows(x.pan, x.raw, x.n, x.k, s.nr, 0, np)
				s.stats.PrefillBytes += 4 * int64(f)
			}
		}
	}
	switch s.policy {
	case LayoutOWR:
		s.owrBuf = make([]float32, maxMat)
		s.stats.BufferBytes = 4 * int64(maxMat)
	case LayoutDDB:
		s.group(layers, maxMat)
		s.stats.CopyGroups = len(s.units)
		for i := range s.bufs {
			s.bufs[i] = make([]float32, maxMat)
		}
		s.stats.BufferBytes = 2 * 4 * int64(maxMat)
		pinErr := make(chan error, s.stats.CopyThreads)
		for i := range s.stats.CopyThreads {
			ch := make(chan *copyJob, 1)
			s.copiers = append(s.copiers, ch)
			cpu := -1
			if s.copyCPUs != nil {
				cpu = s.copyCPUs[i]
			}
			go s.copier(i, ch, cpu, pinErr)
		}
		for range s.stats.CopyThreads {
			if err := <-pinErr; err != nil && s.stats.CopyNote == "" {
				s.stats.CopyNote = "copy threads not pinned: " + err.Error()
			}
		}
		if s.stats.CopyNote == "" {
			s.stats.CopyCPUs = s.copyCPUs
		}
	}
	s.stats.ResidentBytes = s.stats.DecodeBytes + s.stats.PrefillBytes + s.stats.BufferBytes
	m.WeightBytes = s.stats.ResidentBytes
	s.spans = make([][2]time.Time, m.pool.Size())
	s.tmp = make([][]float32, m.pool.Size())
	for i := range s.tmp {
		s.tmp[i] = make([]float32, 8)
	}
	note := map[WeightLayout]string{
		LayoutDuplicate: "both layouts resident",
		LayoutOWR:       "decode layout resident; prefill GEMMs rearrange each weight into one buffer first (serial)",
		LayoutDDB: fmt.Sprintf("decode layout resident; %d copy thread(s) rearrange the next of %d matrix groups into one of two buffers (each the largest matrix) while the current group computes",
			s.stats.CopyThreads, len(s.units)),
	}[s.policy]
	m.Notes = append(m.Notes, fmt.Sprintf("weight layout %s (PIM-SHERPA): %s; decode and the LM head read row-major rows (kernels.DotRows), prefill GEMMs gemm panels", s.policy, note))
	if s.stats.CopyNote != "" {
		m.Notes = append(m.Notes, s.stats.CopyNote)
	}
	return nil
}

// group splits each layer's matrices (forward order) into ddb's copy
// groups: consecutive matrices whose panels total at most slot floats (a
// matrix is never split), each matrix's off its offset in the group.
func (s *layoutState) group(layers [][]*linear, slot int) {
	s.unitOf = map[*linear]int{}
	for li, ls := range layers {
		off := slot + 1 // start a group at each layer
		for _, x := range ls {
			_, f := s.panels(x)
			if off+f > slot {
				s.units = append(s.units, copyUnit{layer: li})
				off = 0
			}
			u := len(s.units) - 1
			s.units[u].mats = append(s.units[u].mats, x)
			x.off = off
			off += f
			s.unitOf[x] = u
		}
	}
}

// copier is ddb copy thread i: pinned to cpu (≥ 0), it runs the jobs sent
// on jobs until the channel closes.
func (s *layoutState) copier(i int, jobs <-chan *copyJob, cpu int, pinned chan<- error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var err error
	if cpu >= 0 {
		err = affinity.Pin(cpu)
	}
	pinned <- err
	for j := range jobs {
		st := time.Now()
		for _, p := range j.parts[i] {
			packRows(p.dst, p.l.raw, p.l.n, p.l.k, s.nr, p.p0, p.p1)
		}
		j.spans[i] = [2]time.Time{st, time.Now()}
		if j.left.Add(-1) == 0 {
			close(j.done)
		}
	}
}

// stop ends the copy threads (Model.Close and the Model's cleanup).
func (s *layoutState) stop() {
	s.stopOnce.Do(func() {
		for _, ch := range s.copiers {
			close(ch)
		}
	})
}

// dispatch sends the copy of group u into buffer u%2 to the copy
// threads, each an equal share of the group's panels.
func (s *layoutState) dispatch(u int) {
	nc := len(s.copiers)
	buf := s.bufs[u%2]
	j := &copyJob{unit: u, layer: s.units[u].layer, parts: make([][]packPart, nc), spans: make([][2]time.Time, nc), done: make(chan struct{})}
	total := 0
	for _, l := range s.units[u].mats {
		np, f := s.panels(l)
		total += np
		j.bytes += 4 * int64(f)
	}
	run := 0 // running panel index over the group
	for _, l := range s.units[u].mats {
		np, f := s.panels(l)
		dst := buf[l.off : l.off+f]
		for c := range nc {
			lo, hi := c*total/nc, (c+1)*total/nc
			p0, p1 := max(lo-run, 0), min(hi-run, np)
			if p0 < p1 {
				j.parts[c] = append(j.parts[c], packPart{l: l, dst: dst, p0: p0, p1: p1})
			}
		}
		run += np
	}
	j.left.Store(int32(nc))
	s.jobs[u%2] = j
	for _, ch := range s.copiers {
		ch <- j
	}
}

// begin starts a forward call in phase p (batch.go's run).
func (s *layoutState) begin(p int) {
	s.phase, s.cur = p, -1
	if p != 0 {
		return
	}
	// A copy left in flight by a stopped prefill still writes its buffer.
	for i, j := range s.jobs {
		if j != nil {
			<-j.done
			s.jobs[i] = nil
		}
	}
	s.start = time.Now()
	s.mu.Lock()
	s.trace = s.trace[:0]
	s.stats.Prefills++
	s.mu.Unlock()
	if s.policy == LayoutDDB && len(s.units) > 0 {
		s.dispatch(0)
	}
}

// end closes a forward call.
func (s *layoutState) end() { s.phase = -1 }

// since is seconds since the prefill began.
func (s *layoutState) since(t time.Time) float64 { return t.Sub(s.start).Seconds() }

// enter is ddb's synchronization (§4.4) at the first linear of copy
// group u in a prefill: wait for u's buffer, then hand the other buffer
// (group u−1's, whose compute is done) to the copy of group u+1.
func (s *layoutState) enter(u int) {
	s.cur = u
	j := s.jobs[u%2]
	if j == nil || j.unit != u {
		// Not dispatched (a group skipped): copy it now, unhidden.
		s.dispatch(u)
		j = s.jobs[u%2]
	}
	st := time.Now()
	<-j.done
	en := time.Now()
	w := en.Sub(st).Seconds()
	s.mu.Lock()
	kind := "wait"
	if u == 0 {
		kind = "preload"
		s.stats.PreloadSeconds += w
	} else {
		s.stats.WaitSeconds += w
		if w > 10e-6 {
			s.stats.Waits++
		}
	}
	s.trace = append(s.trace, LayoutEvent{Thread: "compute 0", Kind: kind, Op: s.units[u].name(), Layer: s.units[u].layer, Start: s.since(st), End: s.since(en)})
	s.countJob(j)
	s.mu.Unlock()
	if u+1 < len(s.units) {
		s.dispatch(u + 1)
	}
}

// countJob adds a finished copy's times to the stats and the trace (mu
// held).
func (s *layoutState) countJob(j *copyJob) {
	if j.seen {
		return
	}
	j.seen = true
	var first, last time.Time
	for c, sp := range j.spans {
		if sp[0].IsZero() {
			continue
		}
		if first.IsZero() || sp[0].Before(first) {
			first = sp[0]
		}
		if sp[1].After(last) {
			last = sp[1]
		}
		s.stats.CopyBusySeconds += sp[1].Sub(sp[0]).Seconds()
		s.trace = append(s.trace, LayoutEvent{Thread: fmt.Sprintf("copy %d", c), Kind: "copy", Op: s.units[j.unit].name(),
			Layer: j.layer, Start: s.since(sp[0]), End: s.since(sp[1])})
	}
	if !first.IsZero() {
		s.stats.CopySeconds += last.Sub(first).Seconds()
	}
	s.stats.CopyBytes += j.bytes
}

// layoutLinear is runLinear under a policy: y = x·Wᵀ for M rows of x from
// the decode layout (decode phase, the LM head) or from panels (prefill).
func (m *Model) layoutLinear(ms *pool.Master, l *linear, y, x []float32, M int, use *linUse) error {
	s := m.lay
	use[useCores]++
	if l.li < 0 || s.phase == 1 {
		return s.gemv(ms, m.all, l, y, x, M)
	}
	u := s.unitOf[l]
	if s.phase == 0 && s.policy == LayoutDDB && u != s.cur {
		s.enter(u)
	}
	_, f := s.panels(l)
	var pan []float32
	switch {
	case s.policy == LayoutDuplicate:
		pan = l.pan
	case s.policy == LayoutDDB && s.phase == 0:
		pan = s.bufs[u%2][l.off : l.off+f]
	default: // owr; ddb outside a forward (TimeLinear): rearrange, then compute
		if s.policy == LayoutOWR {
			pan = s.owrBuf[:f]
		} else {
			for i, j := range s.jobs {
				if j != nil {
					<-j.done
					s.jobs[i] = nil
				}
			}
			pan = s.bufs[0][l.off : l.off+f]
		}
		if err := s.pack(ms, m.all, l, pan); err != nil {
			return err
		}
	}
	return s.gemm(ms, m.all, m.scratches, l, pan, y, x, M)
}

// pack rearranges l into pan on the workers of g, each a share of the
// panels (owr's copy phase), timed.
func (s *layoutState) pack(ms *pool.Master, g *pool.Group, l *linear, pan []float32) error {
	np, f := s.panels(l)
	st := time.Now()
	err := ms.Run(g, func(local, n int) error {
		t0 := time.Now()
		packRows(pan, l.raw, l.n, l.k, s.nr, local*np/n, (local+1)*np/n)
		s.spans[local] = [2]time.Time{t0, time.Now()}
		return nil
	})
	if err != nil {
		return err
	}
	en := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.CopySeconds += en.Sub(st).Seconds()
	s.stats.CopyBytes += 4 * int64(f)
	for w := range g.Size() {
		s.stats.CopyBusySeconds += s.spans[w][1].Sub(s.spans[w][0]).Seconds()
	}
	if s.phase == 0 {
		s.record(g, "pack", l)
	} else {
		clear(s.spans)
	}
	return nil
}

// record appends the spans of g's workers to the trace as kind events of
// l (mu held).
func (s *layoutState) record(g *pool.Group, kind string, l *linear) {
	for local, w := range g.Workers() {
		sp := s.spans[local]
		if sp[0].IsZero() {
			continue
		}
		s.trace = append(s.trace, LayoutEvent{Thread: fmt.Sprintf("compute %d", w), Kind: kind, Op: l.op, Layer: l.li,
			Start: s.since(sp[0]), End: s.since(sp[1])})
		s.spans[local] = [2]time.Time{}
	}
}

// gemm computes Y = X·Wᵀ (M rows) on the panels pan of l with the cores
// backend on g, each worker a tile-aligned block (gemm.PanelBlock).
func (s *layoutState) gemm(ms *pool.Master, g *pool.Group, scr []*gemm.Scratch, l *linear, pan, y, x []float32, M int) error {
	N, K, nr := l.n, l.k, s.nr
	stride := K * nr
	trace := s.phase == 0
	err := ms.RunBlocks(g, pool.Region{M1: M, N1: N}, s.b.Tile(), func(worker, m0, m1, n0, n1 int) error {
		t0 := time.Now()
		err := gemm.PanelBlock(s.b, y[m0*N+n0:], N, x[m0*K:], K, m1-m0, K, pan[(n0/nr)*stride:], stride, n1-n0, false, scr[worker])
		if trace {
			s.spans[worker] = [2]time.Time{t0, time.Now()}
		}
		return err
	})
	if err != nil {
		return err
	}
	if trace {
		s.mu.Lock()
		s.record(g, "gemm", l)
		s.mu.Unlock()
	}
	return nil
}

// gemvChunk is the rows of W one pass of gemv takes for all M rows of X:
// 64 rows of up to 4096 floats stay within L2 while each X row reads them.
const gemvChunk = 64

// gemv computes Y = X·Wᵀ (M rows, decode) from the row-major W on g, each
// worker a block of output columns (rows of W) in chunks of gemvChunk
// read once for all M rows. Every kernels.DotRows call gets at least
// eight rows when W has them (a shorter block recomputes the rows before
// it), so each output's rounding is the same whatever the partition.
func (s *layoutState) gemv(ms *pool.Master, g *pool.Group, l *linear, y, x []float32, M int) error {
	N, K := l.n, l.k
	return ms.RunBlocks(g, pool.Region{M1: M, N1: N}, pool.Tile{M: 1, N: 8}, func(worker, m0, m1, n0, n1 int) error {
		for c0 := n0; c0 < n1; c0 += gemvChunk {
			c1 := min(c0+gemvChunk, n1)
			for r := m0; r < m1; r++ {
				dotRange(y[r*N:(r+1)*N], x[r*K:(r+1)*K], l.raw, K, N, c0, c1, s.tmp[worker])
			}
		}
		return nil
	})
}

// dotRange sets out[n0:n1] to the dot products of xr with rows n0..n1−1 of
// w (n rows of k), through kernels.DotRows on at least eight rows.
func dotRange(out, xr, w []float32, k, n, n0, n1 int, tmp []float32) {
	if n1-n0 >= 8 || n < 8 {
		kernels.DotRows(out[n0:n1], xr, w[n0*k:], k, n1-n0)
		return
	}
	lo := max(n1-8, 0)
	kernels.DotRows(tmp[:8], xr, w[lo*k:], k, 8)
	copy(out[n0:n1], tmp[n0-lo:n1-lo])
}

// Layout returns the weight layout policy's resident bytes and the
// rearrangement timings accumulated since New or ResetLayout (zero, with
// Policy "", for the default engine).
func (m *Model) Layout() LayoutStats {
	if m.lay == nil {
		return LayoutStats{ComputeThreads: m.Threads, DecodeBytes: m.WeightBytes, ResidentBytes: m.WeightBytes}
	}
	m.lay.mu.Lock()
	defer m.lay.mu.Unlock()
	st := m.lay.stats
	st.CopyCPUs = append([]int(nil), st.CopyCPUs...)
	return st
}

// ResetLayout zeroes the accumulated timings of Layout (not the bytes).
func (m *Model) ResetLayout() {
	if m.lay == nil {
		return
	}
	s := m.lay
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	s.stats = LayoutStats{Policy: st.Policy, ComputeThreads: st.ComputeThreads, CopyThreads: st.CopyThreads, CopyCPUs: st.CopyCPUs,
		CopyGroups: st.CopyGroups, CopyNote: st.CopyNote, DecodeBytes: st.DecodeBytes, PrefillBytes: st.PrefillBytes, BufferBytes: st.BufferBytes, ResidentBytes: st.ResidentBytes}
}

// LayoutTrace returns the per-thread intervals of the last prefill under a
// policy (nil for the default engine), in the order they were recorded.
func (m *Model) LayoutTrace() []LayoutEvent {
	if m.lay == nil {
		return nil
	}
	m.lay.mu.Lock()
	defer m.lay.mu.Unlock()
	return append([]LayoutEvent(nil), m.lay.trace...)
}
