package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/cpubench/bench/internal/cpu"
)

// small is true where the tests run emulated (qemu) or without assembly:
// shapes shrink to keep the package under a minute there.
var small = runtime.GOARCH != "amd64" || purego

// sentinel marks the elements of y outside the computed block.
var sentinel = math.Float32frombits(0x7fc0dead)

type problem struct {
	m, n, k int
	x       []float32 // m×k
	wf      []float32 // n×k fp32
	wb      []uint16  // n×k bf16
	wi      []int8    // n×k int8
	ws      []float32 // n int8 scales
}

func newProblem(seed uint64, m, n, k int) *problem {
	r := rand.New(rand.NewPCG(seed, 7))
	p := &problem{m: m, n: n, k: k, x: make([]float32, m*k), wf: make([]float32, n*k),
		wb: make([]uint16, n*k), wi: make([]int8, n*k), ws: make([]float32, n)}
	for i := range p.x {
		p.x[i] = float32(r.NormFloat64())
	}
	for i := range p.wf {
		p.wf[i] = float32(r.NormFloat64() * 0.05)
		p.wb[i] = Float32ToBF16(p.wf[i])
		p.wi[i] = int8(r.IntN(255) - 127)
	}
	for i := range p.ws {
		p.ws[i] = float32(0.001 + r.Float64()*0.01)
	}
	return p
}

// ref returns the float64 reference Y and, per element, the error bound
// of backend dtype dt.
func (p *problem) ref(dt DType) (y, tol []float64) {
	y, tol = make([]float64, p.m*p.n), make([]float64, p.m*p.n)
	var q []int8
	var xs []float32
	if dt == Int8 {
		q, xs = QuantizeRows(p.x, p.m, p.k)
	}
	for i := 0; i < p.m; i++ {
		for j := 0; j < p.n; j++ {
			var s, a float64
			for kk := 0; kk < p.k; kk++ {
				var t float64
				switch dt {
				case FP32:
					t = float64(p.x[i*p.k+kk]) * float64(p.wf[j*p.k+kk])
				case BF16:
					t = float64(p.x[i*p.k+kk]) * float64(BF16ToFloat32(p.wb[j*p.k+kk]))
				case Int8:
					t = float64(q[i*p.k+kk]) * float64(p.wi[j*p.k+kk])
				}
				s += t
				a += math.Abs(t)
			}
			if dt == Int8 {
				s *= float64(xs[i]) * float64(p.ws[j])
				y[i*p.n+j], tol[i*p.n+j] = s, math.Abs(s)*0x1p-21+1e-30
				continue
			}
			y[i*p.n+j] = s
			tol[i*p.n+j] = 2*float64(p.k)*0x1p-24*a + 0x1p-126
		}
	}
	return y, tol
}

func (p *problem) pack(t *testing.T, b Backend) *Weights {
	t.Helper()
	var w *Weights
	var err error
	switch b.DType {
	case FP32:
		w, err = PackFP32(b, p.wf, p.n, p.k)
	case BF16:
		w, err = PackBF16(b, p.wb, p.n, p.k)
	case Int8:
		w, err = PackInt8(b, p.wi, p.ws, p.n, p.k)
	}
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func (p *problem) raw(dt DType) any {
	switch dt {
	case FP32:
		return p.wf
	case BF16:
		return p.wb
	}
	return RawInt8{W: p.wi, Scales: p.ws}
}

// check compares y (stride ldy) with the reference inside the block and
// with the sentinel outside it.
func check(t *testing.T, name string, y []float32, ldy int, ref, tol []float64, n, m0, m1, n0, n1 int) {
	t.Helper()
	bad := 0
	for i := 0; i*ldy < len(y); i++ {
		for j := 0; j < ldy && i*ldy+j < len(y); j++ {
			got := y[i*ldy+j]
			if i >= m0 && i < m1 && j >= n0 && j < n1 {
				want := ref[i*n+j]
				if d := math.Abs(float64(got) - want); !(d <= tol[i*n+j]) {
					if bad++; bad <= 5 {
						t.Errorf("%s: y[%d][%d] = %g, want %g ± %.3g (err %.3g)", name, i, j, got, want, tol[i*n+j], d)
					}
				}
			} else if math.Float32bits(got) != math.Float32bits(sentinel) {
				if bad++; bad <= 5 {
					t.Errorf("%s: y[%d][%d] = %g outside the block [%d,%d)×[%d,%d): overwritten", name, i, j, got, m0, m1, n0, n1)
				}
			}
		}
	}
	if bad > 5 {
		t.Errorf("%s: %d bad elements in all", name, bad)
	}
}

func newY(rows, ldy int) []float32 {
	y := make([]float32, rows*ldy+3) // +3: a guard after the last row
	for i := range y {
		y[i] = sentinel
	}
	return y
}

// blockings are the loop nests every backend is tested under: the default,
// and tiny blocks that exercise every loop boundary (several KC, MC and NC
// steps on small shapes).
func blockings(b Backend) []Blocking {
	return []Blocking{
		DefaultBlocking(b),
		{MC: b.TileM, KC: 5, NC: b.TileN},
		{MC: 2 * b.TileM, KC: 16, NC: 3 * b.TileN},
	}
}

func shapes() [][3]int {
	s := [][3]int{{1, 1, 1}, {1, 17, 9}, {2, 33, 1}, {5, 7, 3}, {7, 16, 64}, {13, 31, 37}, {1, 64, 130}, {16, 50, 67}, {25, 65, 100}}
	if !small {
		s = append(s, [3]int{3, 200, 513}, [3]int{40, 97, 300})
	}
	return s
}

func TestBlockAllBackends(t *testing.T) {
	for _, b := range Backends() {
		t.Run(b.Name, func(t *testing.T) {
			if b.Unavailable != "" {
				t.Skip(b.Unavailable)
			}
			for si, sh := range shapes() {
				m, n, k := sh[0], sh[1], sh[2]
				p := newProblem(uint64(si), m, n, k)
				ref, tol := p.ref(b.DType)
				w := p.pack(t, b)
				for bi, bl := range blockings(b) {
					s := NewScratch(w, bl)
					// Whole matrix, ldy = n+2 (padding columns must stay untouched).
					ldy := n + 2
					y := newY(m, ldy)
					if err := w.Block(y, ldy, p.x, k, 0, m, 0, n, s); err != nil {
						t.Fatal(err)
					}
					name := fmt.Sprintf("%dx%dx%d/bl%d", m, n, k, bi)
					check(t, name, y, ldy, ref, tol, n, 0, m, 0, n)
					// Sub-blocks that start and end inside tiles.
					for _, blk := range [][4]int{{m / 3, m - m/4, n / 5, n - n/3}, {m - 1, m, n - 1, n}, {0, 1, 1, min(n, 2)}} {
						y := newY(m, ldy)
						if err := w.Block(y, ldy, p.x, k, blk[0], blk[1], blk[2], blk[3], s); err != nil {
							t.Fatal(err)
						}
						check(t, fmt.Sprintf("%s/block%v", name, blk), y, ldy, ref, tol, n, blk[0], blk[1], blk[2], blk[3])
					}
				}
			}
		})
	}
}

func TestBlockUnpackedEqualsBlock(t *testing.T) {
	for _, b := range Backends() {
		t.Run(b.Name, func(t *testing.T) {
			if b.Unavailable != "" {
				t.Skip(b.Unavailable)
			}
			m, n, k := 9, 70, 45
			p := newProblem(3, m, n, k)
			w := p.pack(t, b)
			for _, bl := range blockings(b) {
				for _, blk := range [][4]int{{0, m, 0, n}, {2, 7, 19, 53}} {
					y1, y2 := newY(m, n), newY(m, n)
					if err := w.Block(y1, n, p.x, k, blk[0], blk[1], blk[2], blk[3], NewScratch(w, bl)); err != nil {
						t.Fatal(err)
					}
					if err := BlockUnpacked(b, bl, y2, n, p.x, k, p.raw(b.DType), n, k, blk[0], blk[1], blk[2], blk[3], nil); err != nil {
						t.Fatal(err)
					}
					for i := range y1 {
						if math.Float32bits(y1[i]) != math.Float32bits(y2[i]) {
							t.Fatalf("blocking %+v block %v: y[%d]: Block %g, BlockUnpacked %g", bl, blk, i, y1[i], y2[i])
						}
					}
				}
			}
		})
	}
}

// TestConcurrentBlocks runs Block on disjoint blocks from several
// goroutines (with -race: no shared mutable state), half with their own
// Scratch, half with the pool's.
func TestConcurrentBlocks(t *testing.T) {
	for _, b := range Backends() {
		t.Run(b.Name, func(t *testing.T) {
			if b.Unavailable != "" {
				t.Skip(b.Unavailable)
			}
			m, n, k := 20, 90, 33
			p := newProblem(4, m, n, k)
			ref, tol := p.ref(b.DType)
			w := p.pack(t, b)
			y := newY(m, n)
			var wg sync.WaitGroup
			errs := make(chan error, 16)
			for bi := 0; bi < 4; bi++ {
				for bj := 0; bj < 3; bj++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						var s *Scratch
						if (bi+bj)%2 == 0 {
							s = NewScratch(w, Blocking{MC: b.TileM, KC: 8, NC: b.TileN})
						}
						if err := w.Block(y, n, p.x, k, bi*m/4, (bi+1)*m/4, bj*n/3, (bj+1)*n/3, s); err != nil {
							errs <- err
						}
					}()
				}
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			check(t, "concurrent", y, n, ref, tol, n, 0, m, 0, n)
		})
	}
}

func TestErrors(t *testing.T) {
	b, err := Best(FP32)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := PackFP32(b, make([]float32, 10), 3, 4); err == nil || !strings.Contains(err.Error(), "want N·K") {
		t.Errorf("PackFP32 with a short w: err = %v", err)
	}
	if _, err := PackFP32(b, nil, 0, 4); err == nil {
		t.Error("PackFP32 with N = 0: no error")
	}
	if _, err := PackBF16(b, make([]uint16, 12), 3, 4); err == nil || !strings.Contains(err.Error(), "bf16") {
		t.Errorf("PackBF16 on an fp32 backend: err = %v", err)
	}
	bi, _ := Best(Int8)
	if _, err := PackInt8(bi, make([]int8, 12), make([]float32, 2), 3, 4); err == nil || !strings.Contains(err.Error(), "scales") {
		t.Errorf("PackInt8 with 2 scales for N = 3: err = %v", err)
	}
	if _, err := BackendByName("nope-fp32"); err == nil || !strings.Contains(err.Error(), "nope-fp32") {
		t.Errorf("BackendByName(nope-fp32): err = %v", err)
	}
	if _, err := Best("fp8"); err == nil {
		t.Error("Best(fp8): no error")
	}
	w, err := PackFP32(b, make([]float32, 12), 3, 4)
	if err != nil {
		t.Fatal(err)
	}
	x, y := make([]float32, 2*4), make([]float32, 2*3)
	for _, c := range []struct {
		name                string
		y                   []float32
		ldy                 int
		x                   []float32
		ldx, m0, m1, n0, n1 int
	}{
		{"short y", y[:5], 3, x, 4, 0, 2, 0, 3},
		{"short x", y, 3, x[:7], 4, 0, 2, 0, 3},
		{"ldy < n1", y, 2, x, 4, 0, 2, 0, 3},
		{"ldx < K", y, 3, x, 3, 0, 2, 0, 3},
		{"n1 > N", y, 3, x, 4, 0, 2, 0, 4},
		{"m1 < m0", y, 3, x, 4, 2, 1, 0, 3},
		{"negative m0", y, 3, x, 4, -1, 1, 0, 3},
	} {
		if err := w.Block(c.y, c.ldy, c.x, c.ldx, c.m0, c.m1, c.n0, c.n1, nil); err == nil {
			t.Errorf("Block with %s: no error", c.name)
		}
		if err := BlockUnpacked(b, Blocking{}, c.y, c.ldy, c.x, c.ldx, make([]float32, 12), 3, 4, c.m0, c.m1, c.n0, c.n1, nil); err == nil {
			t.Errorf("BlockUnpacked with %s: no error", c.name)
		}
	}
	if err := BlockUnpacked(b, Blocking{}, y, 3, x, 4, make([]uint16, 12), 3, 4, 0, 2, 0, 3, nil); err == nil {
		t.Error("BlockUnpacked with bf16 weights on an fp32 backend: no error")
	}
	if err := BlockUnpacked(b, Blocking{}, y, 3, x, 4, make([]float32, 11), 3, 4, 0, 2, 0, 3, nil); err == nil {
		t.Error("BlockUnpacked with a short w: no error")
	}
	var nilW *Weights
	if err := nilW.Block(y, 3, x, 4, 0, 2, 0, 3, nil); err == nil {
		t.Error("Block on nil Weights: no error")
	}
	// Empty blocks are fine and touch nothing.
	if err := w.Block(nil, 3, nil, 4, 1, 1, 0, 3, nil); err != nil {
		t.Errorf("empty block: %v", err)
	}
}

func TestDisabledISAsNeverChosen(t *testing.T) {
	defer cpu.DisableSIMD()()
	for _, dt := range []DType{FP32, BF16, Int8} {
		b, err := Best(dt)
		if err != nil {
			t.Fatal(err)
		}
		if b.ISA != "go" {
			t.Errorf("Best(%s) with SIMD disabled = %s", dt, b.Name)
		}
	}
	for _, b := range Backends() {
		if b.ISA == "go" {
			continue
		}
		if b.Unavailable == "" {
			t.Errorf("%s available with SIMD disabled", b.Name)
		}
		if _, err := BackendByName(b.Name); err == nil || !strings.Contains(err.Error(), b.Name) {
			t.Errorf("BackendByName(%s) with SIMD disabled: err = %v", b.Name, err)
		}
		if _, err := PackFP32(b, make([]float32, 4), 2, 2); err == nil {
			t.Errorf("PackFP32(%s) with SIMD disabled: no error", b.Name)
		}
	}
}

func TestBackendsRegistry(t *testing.T) {
	seen := map[string]bool{}
	for _, b := range Backends() {
		if seen[b.Name] {
			t.Errorf("backend %s listed twice", b.Name)
		}
		seen[b.Name] = true
		if !strings.HasSuffix(b.Name, "-"+string(b.DType)) || !strings.HasPrefix(b.Name, b.ISA+"-") {
			t.Errorf("backend %+v: name is not <isa>-<dtype>", b)
		}
		if b.TileM <= 0 || b.TileN <= 0 {
			t.Errorf("backend %s: tile %d×%d", b.Name, b.TileM, b.TileN)
		}
		bl := DefaultBlocking(b)
		if bl.MC%b.TileM != 0 || bl.NC%b.TileN != 0 || bl.KC <= 0 {
			t.Errorf("backend %s: blocking %+v not a multiple of the tile", b.Name, bl)
		}
	}
	for _, name := range []string{"go-fp32", "go-bf16", "go-int8"} {
		if !seen[name] {
			t.Errorf("backend %s missing", name)
		}
	}
	if runtime.GOARCH == "amd64" && !purego && cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		for _, dt := range []DType{FP32, BF16, Int8} {
			if b, _ := Best(dt); b.ISA == "go" {
				t.Errorf("Best(%s) = %s on an AVX2 machine", dt, b.Name)
			}
		}
	}
}

func TestBlockingFor(t *testing.T) {
	b := Backend{Name: "avx2-fp32", DType: FP32, ISA: "avx2", TileM: 6, TileN: 16}
	bl := BlockingFor(b, 32<<10, 1<<20, 16<<20)
	// 0.75·32 KiB / (6·4 + 16·4) = 279 → 272; 512 KiB / (272·4) = 481 → 480;
	// 8 MiB / (272·4) = 7710 → 7696.
	if want := (Blocking{MC: 480, KC: 272, NC: 7696}); bl != want {
		t.Errorf("BlockingFor(avx2-fp32, 32K, 1M, 16M) = %+v, want %+v", bl, want)
	}
	if got := WeightBytes(BF16, 3, 5); got != 30 {
		t.Errorf("WeightBytes(bf16, 3, 5) = %d", got)
	}
	if got := Flops(2, 3, 4); got != 48 {
		t.Errorf("Flops(2, 3, 4) = %g", got)
	}
}

func TestQuantizeRows(t *testing.T) {
	x := []float32{0, 1, -2, 0.5, 0, 0, 0, 0, 3, -3, 1e-3, 2.99}
	q, s := QuantizeRows(x, 3, 4)
	if s[1] != 0 {
		t.Errorf("zero row: scale %g", s[1])
	}
	for r := 0; r < 3; r++ {
		for k := 0; k < 4; k++ {
			v := q[r*4+k]
			if v < -127 {
				t.Errorf("q[%d][%d] = %d < -127", r, k, v)
			}
			if d := math.Abs(float64(x[r*4+k]) - float64(v)*float64(s[r])); d > float64(s[r])/2*(1+1e-6) {
				t.Errorf("x[%d][%d] = %g: q %d · scale %g: error %g > scale/2", r, k, x[r*4+k], v, s[r], d)
			}
		}
	}
	if q[0*4+2] != -127 || q[2*4+0] != 127 || q[2*4+1] != -127 {
		t.Errorf("row maxima not at ±127: %v", q)
	}
}

func TestBF16Conversion(t *testing.T) {
	for _, c := range []struct {
		f float32
		h uint16
	}{{1, 0x3f80}, {-2, 0xc000}, {1.00390625, 0x3f80} /* tie → even */, {1.01171875, 0x3f82}, {float32(math.Inf(1)), 0x7f80}} {
		if got := Float32ToBF16(c.f); got != c.h {
			t.Errorf("Float32ToBF16(%g) = %#x, want %#x", c.f, got, c.h)
		}
	}
	if f := BF16ToFloat32(Float32ToBF16(float32(math.NaN()))); f == f {
		t.Error("NaN did not stay NaN")
	}
}

// TestPackFP32Into: weights packed into a caller's buffer compute the same
// bits as PackFP32's, live in that buffer, and a short buffer is an error.
func TestPackFP32Into(t *testing.T) {
	for _, b := range Backends() {
		if b.DType != FP32 || b.Unavailable != "" {
			continue
		}
		t.Run(b.Name, func(t *testing.T) {
			m, n, k := 5, 37, 29
			p := newProblem(5, m, n, k)
			need, err := PanelFloatsFP32(b, n, k)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := PackFP32Into(b, make([]float32, need-1), p.wf, n, k); err == nil || !strings.Contains(err.Error(), "PanelFloatsFP32") {
				t.Errorf("short dst: %v", err)
			}
			dst := make([]float32, need+3)
			w2, err := PackFP32Into(b, dst, p.wf, n, k)
			if err != nil {
				t.Fatal(err)
			}
			if &w2.f32[0] != &dst[0] {
				t.Error("the panels are not in dst")
			}
			w1 := p.pack(t, b)
			y1, y2 := newY(m, n), newY(m, n)
			if err := w1.Block(y1, n, p.x, k, 0, m, 0, n, nil); err != nil {
				t.Fatal(err)
			}
			if err := w2.Block(y2, n, p.x, k, 0, m, 0, n, nil); err != nil {
				t.Fatal(err)
			}
			for i := range y1 {
				if math.Float32bits(y1[i]) != math.Float32bits(y2[i]) {
					t.Fatalf("y[%d]: PackFP32 %g, PackFP32Into %g", i, y1[i], y2[i])
				}
			}
		})
	}
}
