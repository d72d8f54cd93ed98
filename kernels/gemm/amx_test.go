package gemm

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"

	"github.com/cpubench/bench/kernels/pool"
)

// The AMX arithmetic and loop nest, on any machine: the Go specification
// of the tile kernel (amxTileSpec) stands in for the assembly, which no
// machine here can run.

// amxTwin is an AMX impl whose tile kernel is the Go specification.
func amxTwin(dt DType) *impl {
	op := &amxOp{bf16: dt == BF16, tile: amxTileSpec(dt == BF16)}
	return &impl{name: "amx-" + string(dt), isa: "amx", unit: MatrixUnit, dt: dt, mr: amxMR, nr: amxNR,
		lacks: func() string { return "" }, amx: op}
}

// amxWeights packs p's weights for the twin, panels [p0, p1) only (all
// when p1 = 0), as BlockUnpacked does.
func amxWeights(im *impl, p *problem, p0, p1 int) *Weights {
	np := (p.n + amxNR - 1) / amxNR
	if p1 == 0 {
		p1 = np
	}
	w := &Weights{N: p.n, K: p.k, Backend: im.backend(), im: im, np: np, p0: p0}
	w.bl = DefaultBlocking(w.Backend)
	if im.dt == BF16 {
		w.u16 = packAMXU16(im.amx, nil, p.wb, p.n, p.k, p0, p1)
	} else {
		w.i8, w.scales = packAMXI8(im.amx, nil, nil, p.wi, p.ws, p.n, p.k, p0, p1)
	}
	return w
}

func TestAMXConfig(t *testing.T) {
	c := amxConfig()
	if c[0] != 1 || c[1] != 0 {
		t.Errorf("palette %d, start row %d; want 1, 0", c[0], c[1])
	}
	for i := 2; i < 16; i++ {
		if c[i] != 0 {
			t.Errorf("reserved byte %d = %d", i, c[i])
		}
	}
	for tm := 0; tm < 16; tm++ {
		colsb, rows := binary.LittleEndian.Uint16(c[16+2*tm:]), c[48+tm]
		if want := map[bool]uint16{true: 64, false: 0}[tm < 8]; colsb != want || uint16(rows) != want/4 {
			t.Errorf("tmm%d: %d rows × %d bytes, want %d × %d", tm, rows, colsb, want/4, want)
		}
	}
}

// TestAMXPackLayout: every weight lands where amx.go's layout says, and
// the padding is zero.
func TestAMXPackLayout(t *testing.T) {
	const n, k = 37, 70
	p := newProblem(3, 1, n, k)
	for _, dt := range []DType{BF16, Int8} {
		im := amxTwin(dt)
		w := amxWeights(im, p, 0, 0)
		op := im.amx
		g, per := op.group(), op.panelBytes(k)
		if kp := op.kPad(k); kp != map[DType]int{BF16: 96, Int8: 128}[dt] {
			t.Fatalf("%s: kPad(%d) = %d", dt, k, kp)
		}
		for pn := 0; pn < 2; pn++ {
			for j := 0; j < amxNR; j++ {
				for kk := 0; kk < op.kPad(k); kk++ {
					off := pn*per + (kk/g)*amxRow + j*4 + (kk%g)*(4/g)
					row := pn*amxNR + j
					var got, want int
					if dt == BF16 {
						got = int(w.u16[off/2])
						if row < n && kk < k {
							want = int(p.wb[row*k+kk])
						}
					} else {
						got = int(w.i8[off])
						if row < n && kk < k {
							want = int(p.wi[row*k+kk])
						}
					}
					if got != want {
						t.Fatalf("%s: panel %d column %d k %d: %d, want %d", dt, pn, j, kk, got, want)
					}
				}
			}
		}
	}
}

// TestAMXSplitBF16: hi + mid + lo is x exactly for every finite x with
// |x| ≥ 2^-103 (huge ones included), within 2^-126 below, and non-finite
// x stay as they are.
func TestAMXSplitBF16(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 100000; i++ {
		x := float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(280)-140)))
		if i%7 == 0 {
			x = math.Float32frombits(r.Uint32()) // any bit pattern
		}
		if math.IsInf(float64(x), 0) || x != x {
			continue
		}
		hi, mid, lo := splitBF16(x)
		s := float64(BF16ToFloat32(hi)) + float64(BF16ToFloat32(mid)) + float64(BF16ToFloat32(lo))
		// Exact while r = x - hi and lo stay normal (|x| ≥ 2^-103); below,
		// only bits under 2^-126 are lost (TDPBF16PS reads such terms as 0).
		d := math.Abs(s - float64(x))
		if math.Abs(float64(x)) < 0x1p-103 && d < 0x1p-126 {
			continue
		}
		if d != 0 {
			t.Fatalf("split(%g) = %g + %g + %g: error %g", x, BF16ToFloat32(hi), BF16ToFloat32(mid), BF16ToFloat32(lo), d)
		}
	}
	for _, x := range []float32{math.MaxFloat32, -math.MaxFloat32, 3.3961e38} {
		hi, mid, lo := splitBF16(x)
		for _, h := range []uint16{hi, mid, lo} {
			if f := BF16ToFloat32(h); math.IsInf(float64(f), 0) || f != f {
				t.Errorf("split(%g): non-finite term %g", x, f)
			}
		}
	}
	inf := float32(math.Inf(1))
	if hi, mid, lo := splitBF16(inf); BF16ToFloat32(hi) != inf || mid != 0 || lo != 0 {
		t.Errorf("split(+Inf) = %#x %#x %#x", hi, mid, lo)
	}
	// A NaN whose payload sits in the low 16 bits stays a NaN.
	if hi, _, _ := splitBF16(math.Float32frombits(0x7f800001)); BF16ToFloat32(hi) == BF16ToFloat32(hi) {
		t.Errorf("split(NaN) = %#x: not a NaN", hi)
	}
}

// bf16Tile returns a tile whose bf16 element (r, i) is f(r, i).
func bf16Tile(f func(r, i int) uint16) *amxTile {
	var t amxTile
	for r := range t {
		for i := 0; i < 32; i++ {
			binary.LittleEndian.PutUint16(t[r][2*i:], f(r, i))
		}
	}
	return &t
}

// TestTDPBF16PSSpec: the rounding, DAZ and FTZ rules of the twin.
func TestTDPBF16PSSpec(t *testing.T) {
	tiny := Float32ToBF16(0x1p-12)
	only := func(v uint16, n int) func(r, i int) uint16 {
		return func(r, i int) uint16 {
			if i < n {
				return v
			}
			return 0
		}
	}
	// c = 1, then two products of 2^-24 each: each update is rounded on
	// its own (1 + 2^-24 ties to 1), so c stays 1; a fused dot product
	// would give 1 + 2^-23.
	var c amxTile
	for r := range c {
		for n := 0; n < 16; n++ {
			c.setF32(r, n, 1)
		}
	}
	tdpbf16ps(&c, bf16Tile(only(tiny, 2)), bf16Tile(only(tiny, 2)))
	if got := c.f32(3, 0); got != 1 {
		t.Errorf("1 + 2^-24 + 2^-24 = %g (%#x), want 1 (rounded per update)", got, math.Float32bits(got))
	}
	// Denormal bf16 inputs count as zero.
	var c2 amxTile
	den := uint16(0x0001) // the smallest bf16 denormal
	tdpbf16ps(&c2, bf16Tile(only(den, 32)), bf16Tile(only(Float32ToBF16(0x1p100), 32)))
	if got := c2.f32(0, 0); got != 0 {
		t.Errorf("denormal input: %g, want 0 (DAZ)", got)
	}
	// A denormal result is flushed to zero: 2^-70 · 2^-70 = 2^-140.
	var c3 amxTile
	small := Float32ToBF16(0x1p-70)
	tdpbf16ps(&c3, bf16Tile(only(small, 1)), bf16Tile(only(small, 1)))
	if got := c3.f32(0, 0); got != 0 {
		t.Errorf("denormal result: %g, want 0 (FTZ)", got)
	}
	// Pairs: a.bf16[m][2k+e] meets b.bf16[k][2n+e].
	a := bf16Tile(func(r, i int) uint16 { return Float32ToBF16(float32(r + i)) })
	b := bf16Tile(func(r, i int) uint16 { return Float32ToBF16(float32(i - r)) })
	var c4 amxTile
	tdpbf16ps(&c4, a, b)
	for m := 0; m < 16; m++ {
		for n := 0; n < 16; n++ {
			var want float64
			for k := 0; k < 16; k++ {
				for e := 0; e < 2; e++ {
					want += float64(m+2*k+e) * float64(2*n+e-k)
				}
			}
			if got := c4.f32(m, n); float64(got) != want {
				t.Fatalf("c[%d][%d] = %g, want %g", m, n, got, want)
			}
		}
	}
}

func TestTDPBSSDSpec(t *testing.T) {
	var a, b, c amxTile
	r := rand.New(rand.NewPCG(5, 6))
	for i := range a {
		for j := range a[i] {
			a[i][j], b[i][j] = byte(r.Uint32()), byte(r.Uint32())
		}
	}
	a[0][0], b[0][0] = 0x80, 0x80 // -128 · -128
	binary.LittleEndian.PutUint32(c[1][4:], uint32(math.MaxInt32))
	tdpbssd(&c, &a, &b)
	for m := 0; m < 16; m++ {
		for n := 0; n < 16; n++ {
			want := int64(0)
			if m == 1 && n == 1 {
				want = math.MaxInt32
			}
			for k := 0; k < 16; k++ {
				for e := 0; e < 4; e++ {
					want += int64(int8(a[m][4*k+e])) * int64(int8(b[k][4*n+e]))
				}
			}
			if got := int32(binary.LittleEndian.Uint32(c[m][4*n:])); got != int32(want) {
				t.Fatalf("c[%d][%d] = %d, want %d (int32, wrapping)", m, n, got, int32(want))
			}
		}
	}
}

// TestAMXTwinLoopNest: the AMX loop nest with the Go tile kernel against
// the float64 reference (bf16: amx.go's 3·K bound; int8: the int8 bound),
// against the go backends (int8 bit for bit: the same exact int32 sums and
// the same scaling; bf16 within both bounds) and against the cores' best
// backend of the dtype (within both bounds), on shapes with odd M, N and K
// tails.
func TestAMXTwinLoopNest(t *testing.T) {
	shapes := [][3]int{{1, 1, 1}, {1, 33, 9}, {5, 7, 3}, {33, 31, 37}, {7, 65, 100}, {40, 64, 130}, {70, 100, 130}}
	for _, dt := range []DType{BF16, Int8} {
		im := amxTwin(dt)
		goName := "go-" + string(dt)
		gb, err := BackendByName(goName)
		if err != nil {
			t.Fatal(err)
		}
		for si, sh := range shapes {
			m, n, k := sh[0], sh[1], sh[2]
			p := newProblem(uint64(si+40), m, n, k)
			ref, tol := p.ref(dt)
			if dt == BF16 {
				for i := range tol {
					tol[i] *= 1.5 // 3·K instead of 2·K
				}
			}
			gw := p.pack(t, gb)
			yGo := newY(m, n)
			if err := gw.Block(yGo, n, p.x, k, 0, m, 0, n, nil); err != nil {
				t.Fatal(err)
			}
			// The cores' best backend of the dtype (assembly where the CPU
			// has it), within both bounds.
			cb, err := Best(dt)
			if err != nil {
				t.Fatal(err)
			}
			yCores := newY(m, n)
			if err := p.pack(t, cb).Block(yCores, n, p.x, k, 0, m, 0, n, nil); err != nil {
				t.Fatal(err)
			}
			w := amxWeights(im, p, 0, 0)
			// The default schedule, and ones that cut K into single steps,
			// group panels unevenly and chunk rows by one or two slivers,
			// and the whole K per call.
			for ki, sched := range []amxSchedule{{}, {KC: 1, NP: 1, MS: 1}, {KC: 2, NP: 3, MS: 2}, {KC: 1 << 20, NP: 1, MS: 1}} {
				im.amx.sched = sched
				bl := DefaultBlocking(w.Backend)
				name := fmt.Sprintf("%s/%dx%dx%d/sched%d", dt, m, n, k, ki)
				ldy := n + 2
				y := newY(m, ldy)
				sc := NewScratch(w, bl)
				sc.amxA = make([]byte, 1<<20) // stale NaNs in the rows past M
				for i := range sc.amxA {
					sc.amxA[i] = 0xff
				}
				w.compute(y, ldy, p.x, k, 0, m, 0, n, sc)
				check(t, name, y, ldy, ref, tol, n, 0, m, 0, n)
				for i := 0; i < m; i++ {
					for j := 0; j < n; j++ {
						a, g := y[i*ldy+j], yGo[i*n+j]
						if dt == Int8 && a != g {
							t.Fatalf("%s: y[%d][%d] = %g, %s gives %g", name, i, j, a, goName, g)
						}
						if d := math.Abs(float64(a) - float64(g)); dt == BF16 && !(d <= tol[i*n+j]*2) {
							t.Fatalf("%s: y[%d][%d] = %g, %s gives %g", name, i, j, a, goName, g)
						}
						if d := math.Abs(float64(a) - float64(yCores[i*n+j])); !(d <= tol[i*n+j]*2) {
							t.Fatalf("%s: y[%d][%d] = %g, %s gives %g", name, i, j, a, cb.Name, yCores[i*n+j])
						}
					}
				}
				// A sub-block starting and ending inside tiles.
				blk := [4]int{m / 3, m - m/4, n / 5, n - n/3}
				y = newY(m, ldy)
				w.compute(y, ldy, p.x, k, blk[0], blk[1], blk[2], blk[3], NewScratch(w, bl))
				check(t, name+"/sub", y, ldy, ref, tol, n, blk[0], blk[1], blk[2], blk[3])
			}
			// Only the panels of the block packed (BlockUnpacked's path).
			if n > amxNR {
				wp := amxWeights(im, p, 1, 2)
				y := newY(m, n)
				wp.compute(y, n, p.x, k, 0, m, amxNR, min(n, 2*amxNR), NewScratch(wp, Blocking{}))
				check(t, fmt.Sprintf("%s/%dx%dx%d/panel1", dt, m, n, k), y, n, ref, tol, n, 0, m, amxNR, min(n, 2*amxNR))
			}
		}
	}
}

// TestAMXSelfTest: the first-use self-test passes the specification and
// catches a kernel wrong in one element.
func TestAMXSelfTest(t *testing.T) {
	for _, c := range []struct {
		bf16 bool
		mn   string
	}{{true, "TDPBF16PS"}, {false, "TDPBSSD"}} {
		op := &amxOp{bf16: c.bf16}
		spec := amxTileSpec(c.bf16)
		if got := amxSelfTest(op, spec, c.mn); got != "" {
			t.Errorf("%s: self-test of the specification = %q", c.mn, got)
		}
		broken := func(cfg *byte, a *byte, b *byte, bstride, np, nkb, parts int, cp *byte, load int) {
			spec(cfg, a, b, bstride, np, nkb, parts, cp, load)
			e := unsafe.Slice(cp, np*amxMR*amxRow)[amxMR*amxRow+17*amxRow+20*4:]
			binary.LittleEndian.PutUint32(e, binary.LittleEndian.Uint32(e)^1)
		}
		want := "unavailable: " + c.mn + " self-test failed (panel 1, row 17, column 20: "
		if got := amxSelfTest(op, broken, c.mn); !strings.HasPrefix(got, want) {
			t.Errorf("self-test of a broken kernel = %q, want %q...", got, want)
		}
		// A kernel that never loads C (each call starts from zero).
		noLoad := func(cfg *byte, a *byte, b *byte, bstride, np, nkb, parts int, cp *byte, _ int) {
			spec(cfg, a, b, bstride, np, nkb, parts, cp, 0)
		}
		want = "unavailable: " + c.mn + " self-test failed (panel 0, row 0, column "
		if got := amxSelfTest(op, noLoad, c.mn); !strings.HasPrefix(got, want) {
			t.Errorf("self-test of a kernel that ignores load = %q, want %q...", got, want)
		}
	}
}

// TestAMXTwinRun: Run's AMX path (X converted once into the first
// scratch, then the output cut among 1..3 workers, along N or M) computes
// bitwise what one Block over the whole output computes, on the twin, and
// writes nothing outside y.
func TestAMXTwinRun(t *testing.T) {
	p := newTestPool(t, 3)
	for _, dt := range []DType{BF16, Int8} {
		im := amxTwin(dt)
		for si, sh := range [][3]int{{70, 100, 130}, {100, 40, 70}, {33, 33, 64}, {2, 64, 50}} {
			m, n, k := sh[0], sh[1], sh[2]
			pr := newProblem(uint64(90+si), m, n, k)
			w := amxWeights(im, pr, 0, 0)
			want := newY(m, n)
			w.compute(want, n, pr.x, k, 0, m, 0, n, NewScratch(w, Blocking{}))
			for threads := 1; threads <= 3; threads++ {
				gs, err := p.Groups(threads)
				if err != nil {
					t.Fatal(err)
				}
				for _, master := range []bool{false, true} {
					name := fmt.Sprintf("%s/%dx%dx%d/threads=%d/master=%v", dt, m, n, k, threads, master)
					buf := newY(m*n+16, 1)
					for i := range buf {
						buf[i] = -7
					}
					y := buf[8 : 8+m*n]
					s := NewScratches(p.Size(), w, Blocking{})
					if master {
						err = p.Do(func(mm *pool.Master) error { return w.Run(mm, gs[0], y, pr.x, m, s) })
					} else {
						err = w.Run(nil, gs[0], y, pr.x, m, s)
					}
					if err != nil {
						t.Fatal(err)
					}
					bitwiseEqual(t, name, y, want[:m*n])
					for _, i := range []int{0, 7, 8 + m*n, len(buf) - 1} {
						if buf[i] != -7 {
							t.Fatalf("%s: wrote outside y at %d", name, i)
						}
					}
				}
			}
		}
	}
}
