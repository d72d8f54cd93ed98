package quant

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// Go transcriptions of ggml's dequantize_row_q4_K, _q6_K, _tq2_0 and
// _tq1_0 from the block layouts of ggml-common.h, written apart from the
// packing code (one GGUF block of 256 weights in, 256 float32 out).

func refF16(b []byte) float32 { return FP16ToFloat32(binary.LittleEndian.Uint16(b)) }

func refDequantQ4K(b []byte) (y [256]float32) {
	d, dmin := refF16(b[0:]), refF16(b[2:])
	sc, qs := b[4:16], b[16:144]
	scaleMin := func(j int) (float32, float32) {
		var s, m uint8
		if j < 4 {
			s, m = sc[j]&63, sc[j+4]&63
		} else {
			s = (sc[j+4] & 0xF) | ((sc[j-4] >> 6) << 4)
			m = (sc[j+4] >> 4) | ((sc[j] >> 6) << 4)
		}
		return float32(s), float32(m)
	}
	o := 0
	for j, is := 0, 0; j < 256; j, is = j+64, is+2 {
		s1, m1 := scaleMin(is)
		s2, m2 := scaleMin(is + 1)
		d1, mm1 := d*s1, dmin*m1
		d2, mm2 := d*s2, dmin*m2
		for l := range 32 {
			y[o] = d1*float32(qs[l]&0xF) - mm1
			o++
		}
		for l := range 32 {
			y[o] = d2*float32(qs[l]>>4) - mm2
			o++
		}
		qs = qs[32:]
	}
	return
}

func refDequantQ6K(b []byte) (y [256]float32) {
	ql, qh, sc := b[0:128], b[128:192], b[192:208]
	d := refF16(b[208:])
	for n := 0; n < 256; n += 128 {
		for l := range 32 {
			is := l / 16
			q1 := int8((ql[l]&0xF)|((qh[l]>>0)&3)<<4) - 32
			q2 := int8((ql[l+32]&0xF)|((qh[l]>>2)&3)<<4) - 32
			q3 := int8((ql[l]>>4)|((qh[l]>>4)&3)<<4) - 32
			q4 := int8((ql[l+32]>>4)|((qh[l]>>6)&3)<<4) - 32
			y[n+l] = d * float32(int8(sc[is])) * float32(q1)
			y[n+l+32] = d * float32(int8(sc[is+2])) * float32(q2)
			y[n+l+64] = d * float32(int8(sc[is+4])) * float32(q3)
			y[n+l+96] = d * float32(int8(sc[is+6])) * float32(q4)
		}
		ql, qh, sc = ql[64:], qh[32:], sc[8:]
	}
	return
}

func refDequantTQ2(b []byte) (y [256]float32) {
	d := refF16(b[64:])
	o := 0
	for j := 0; j < 64; j += 32 {
		for l := range 4 {
			for m := range 32 {
				q := int8(b[j+m]>>(2*l)) & 3
				y[o] = float32(q-1) * d
				o++
			}
		}
	}
	return
}

func refDequantTQ1(b []byte) (y [256]float32) {
	pow3 := []uint8{1, 3, 9, 27, 81, 243}
	d := refF16(b[52:])
	o := 0
	trit := func(v uint8, n int) float32 {
		q := v * pow3[n]
		return float32(int16((uint16(q)*3)>>8) - 1)
	}
	for n := range 5 {
		for m := range 32 {
			y[o] = trit(b[m], n) * d
			o++
		}
	}
	for n := range 5 {
		for m := range 16 {
			y[o] = trit(b[32+m], n) * d
			o++
		}
	}
	for n := range 4 {
		for j := range 4 {
			y[o] = trit(b[48+j], n) * d
			o++
		}
	}
	return
}

var refDequant = map[Format]func([]byte) [256]float32{
	Q4_K: refDequantQ4K, Q6_K: refDequantQ6K, TQ2_0: refDequantTQ2, TQ1_0: refDequantTQ1,
}

// superFormats are the 256-weight formats.
var superFormats = []Format{Q4_K, Q6_K, TQ2_0, TQ1_0}

// randomGGUF returns n·k/256 random GGUF blocks of f with finite scales
// (for the ternary formats, scales whose d/4 is exact in fp16).
func randomGGUF(rng *rand.Rand, f Format, n, k int) []byte {
	bb := f.GGUFBlockBytes()
	out := make([]byte, n*k/SuperLen*bb)
	for i := range out {
		out[i] = byte(rng.Uint32())
	}
	half := func() uint16 { // finite, |x| in about [2^-12, 2^3]
		return uint16(rng.IntN(2))<<15 | uint16(3+rng.IntN(15))<<10 | uint16(rng.IntN(1024))
	}
	for b := 0; b < len(out); b += bb {
		blk := out[b : b+bb]
		switch f {
		case Q4_K:
			binary.LittleEndian.PutUint16(blk, half())
			binary.LittleEndian.PutUint16(blk[2:], half())
		default:
			binary.LittleEndian.PutUint16(blk[bb-2:], half())
		}
	}
	return out
}

// Every weight of FromGGUF(random blocks) dequantizes to the float32 that
// ggml's dequantize_row_* computes, bit for bit (ternary: equal as values,
// bit for bit where no block holds a TQ2_0 code 3), and AppendGGUF gives
// the blocks back.
func TestSuperDequantizeMatchesGGML(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	const n, k = 5, 768
	for _, f := range superFormats {
		data := randomGGUF(rng, f, n, k)
		if f == TQ2_0 { // a few blocks without code 3, to check the bits
			for b := 0; b < len(data); b += 3 * 66 {
				for i := range 64 {
					data[b+i] &= 0x55
				}
			}
		}
		w, err := FromGGUF(f, data, n, k)
		if err != nil {
			t.Fatal(err)
		}
		got := w.Dequantize()
		bb := f.GGUFBlockBytes()
		for blk := range n * k / SuperLen {
			src := data[blk*bb:][:bb]
			has3 := false
			if f == TQ2_0 {
				for _, v := range src[:64] {
					for l := range 4 {
						has3 = has3 || v>>(2*l)&3 == 3
					}
				}
			}
			want := refDequant[f](src)
			for e, v := range want {
				g := got[blk*SuperLen+e]
				if g != v || (!has3 && math.Float32bits(g) != math.Float32bits(v)) {
					t.Fatalf("%s block %d elem %d: %v (%#x), ggml %v (%#x)", f, blk, e, g, math.Float32bits(g), v, math.Float32bits(v))
				}
			}
		}
		back := w.AppendGGUF(nil)
		if f == TQ1_0 {
			// Bytes are not canonical (any byte decodes): compare values.
			w2, err := FromGGUF(f, back, n, k)
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range w2.Dequantize() {
				if v != got[i] {
					t.Fatalf("%s: AppendGGUF round trip differs at %d", f, i)
				}
			}
			continue
		}
		if !bytes.Equal(back, data) {
			t.Fatalf("%s: AppendGGUF(FromGGUF(blocks)) differs from the blocks", f)
		}
	}
}

// tq1Canonical: TQ1_0 bytes written by AppendGGUF are ggml's quantizer's
// ⌈t·256/243⌉ and decode to the same trits.
func TestTQ1Canonical(t *testing.T) {
	var codes [SuperLen]int8
	rng := rand.New(rand.NewPCG(1, 9))
	for range 20 {
		for i := range codes {
			codes[i] = int8(rng.IntN(3))
		}
		dst := make([]byte, 54)
		tqEncode(TQ1_0, &codes, dst)
		var back [SuperLen]int8
		tqDecode(TQ1_0, dst, &back)
		if back != codes {
			t.Fatal("tq1_0 encode/decode differ")
		}
	}
}

// Quantize of the super-block formats: the documented quantizers' error
// is small, and the result survives AppendGGUF/FromGGUF unchanged.
func TestSuperQuantize(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	const n, k = 6, 512
	x := randMat(rng, n*k, 0.02)
	var rms float64
	for _, v := range x {
		rms += float64(v) * float64(v)
	}
	rms = math.Sqrt(rms / float64(len(x)))
	// Relative RMS error ceilings: 4-bit with min ≈ 0.1, 6-bit ≈ 0.02,
	// ternary of a Gaussian against its max of 256 (≈ 2.8σ: |w| < 1.4σ rounds to 0) ≈ 0.8.
	ceil := map[Format]float64{Q4_K: 0.12, Q6_K: 0.03, TQ2_0: 0.85, TQ1_0: 0.85}
	for _, f := range superFormats {
		w, err := Quantize(f, x, n, k)
		if err != nil {
			t.Fatal(err)
		}
		deq := w.Dequantize()
		var se float64
		for i, v := range deq {
			se += (float64(v) - float64(x[i])) * (float64(v) - float64(x[i]))
		}
		if e := math.Sqrt(se/float64(len(x))) / rms; e > ceil[f] {
			t.Errorf("%s: relative RMS error %.3f above %.3f", f, e, ceil[f])
		} else {
			t.Logf("%s: relative RMS error %.4f", f, e)
		}
		w2, err := FromGGUF(f, w.AppendGGUF(nil), n, k)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range w2.Dequantize() {
			if v != deq[i] {
				t.Fatalf("%s: GGUF round trip differs at %d", f, i)
			}
		}
	}
	// The ternary quantizer is ggml's: t = round(w/max|w|) per 256.
	w, _ := Quantize(TQ2_0, x, n, k)
	deq := w.Dequantize()
	for s := range n * k / SuperLen {
		xs := x[s*SuperLen:][:SuperLen]
		var amax float32
		for _, v := range xs {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		d := FP16ToFloat32(Float32ToFP16(amax))
		for e, v := range xs {
			if want := float32(math.Round(float64(v/amax))) * d; deq[s*SuperLen+e] != want {
				t.Fatalf("tq2_0 weight %d: %v, want %v", s*SuperLen+e, deq[s*SuperLen+e], want)
			}
		}
	}
}

func TestSuperBadInput(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	for _, f := range superFormats {
		good := randomGGUF(rng, f, 2, 256)
		bb := f.GGUFBlockBytes()
		dOff := bb - 2
		if f == Q4_K {
			dOff = 0
		}
		for _, tc := range []struct {
			name string
			err  func() error
			want string
		}{
			{"k", func() error { _, e := FromGGUF(f, good[:bb], 1, 128); return e }, "multiple of the block length 256"},
			{"short", func() error { _, e := FromGGUF(f, good[:len(good)-1], 2, 256); return e }, "bytes, want"},
			{"nan", func() error {
				b := append([]byte(nil), good...)
				binary.LittleEndian.PutUint16(b[bb+dOff:], 0x7e00)
				_, e := FromGGUF(f, b, 2, 256)
				return e
			}, "row 1 block 0: scale is NaN"},
			{"inf", func() error {
				b := append([]byte(nil), good...)
				binary.LittleEndian.PutUint16(b[dOff:], 0xfc00)
				_, e := FromGGUF(f, b, 2, 256)
				return e
			}, "row 0 block 0: scale is -Inf"},
		} {
			if err := tc.err(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s %s: err %v, want %q", f, tc.name, err, tc.want)
			}
		}
	}
	b := randomGGUF(rng, Q4_K, 1, 256)
	binary.LittleEndian.PutUint16(b[2:], 0x7c00)
	if _, err := FromGGUF(Q4_K, b, 1, 256); err == nil || !strings.Contains(err.Error(), "min scale is +Inf") {
		t.Errorf("q4_k inf dmin: %v", err)
	}
	// A ternary scale whose d/4 is subnormal with low bits set.
	b = randomGGUF(rng, TQ2_0, 1, 256)
	binary.LittleEndian.PutUint16(b[64:], 0x0001)
	if _, err := FromGGUF(TQ2_0, b, 1, 256); err == nil || !strings.Contains(err.Error(), "not exact in fp16") {
		t.Errorf("tq2_0 tiny d: %v", err)
	}
}

// FuzzFromGGUF: FromGGUF of the super-block formats on any bytes either
// errs or gives a matrix whose weights are ggml's, and never panics.
//
//	go test -run='^$' -fuzz=FuzzFromGGUF -fuzztime=30s ./kernels/quant
func FuzzFromGGUF(f *testing.F) {
	rng := rand.New(rand.NewPCG(51, 52))
	for i, ff := range superFormats {
		f.Add(uint8(i), uint8(1), randomGGUF(rng, ff, 1, 256))
		f.Add(uint8(i), uint8(2), randomGGUF(rng, ff, 2, 512)[:2*ff.GGUFBlockBytes()+3])
	}
	f.Fuzz(func(t *testing.T, fi, n uint8, data []byte) {
		ff := superFormats[int(fi)%len(superFormats)]
		rows := int(n%4) + 1
		bb := ff.GGUFBlockBytes()
		k := max(1, len(data)/bb/rows) * SuperLen
		w, err := FromGGUF(ff, data, rows, k)
		if err != nil {
			if w != nil {
				t.Fatal("a matrix with an error")
			}
			return
		}
		got := w.Dequantize()
		for blk := range rows * k / SuperLen {
			want := refDequant[ff](data[blk*bb:][:bb])
			for e, v := range want {
				if g := got[blk*SuperLen+e]; g != v && !(math.IsNaN(float64(g)) && math.IsNaN(float64(v))) {
					t.Fatalf("%s block %d elem %d: %v, ggml %v", ff, blk, e, g, v)
				}
			}
		}
	})
}

// Every backend's K-quant kernels at the extremes of their integer
// arithmetic: every quant at its maximum (Q4_K 15, Q6_K 63: the AVX2
// kernels' VPMADDUBSW pair sums reach 2·63·127 = 16002) or random, against
// activations of ±127 (rows all +1, all −1, alternating in sign by 4s and
// random), equal the go backend up to float32 summation order.
func TestKQuantExtremes(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	goBE, _ := BackendByName("go")
	const n, k = 8, 1024
	for _, be := range Backends() {
		if be.Name == "go" || be.Unavailable != "" {
			continue
		}
		for _, f := range []Format{Q4_K, Q6_K} {
			for _, fill := range []string{"max", "random"} {
				w, err := Random(f, n, k, 7)
				if err != nil {
					t.Fatal(err)
				}
				if fill == "max" {
					for i := range w.q {
						w.q[i] = 0xff
					}
				}
				x := make([]float32, 4*k)
				for i := range k {
					x[i], x[k+i] = 1, -1
					x[2*k+i] = float32(1 - 2*(i/4%2))
					x[3*k+i] = float32(rng.NormFloat64())
				}
				var a Activations
				if err := a.Quantize(f, x, 4, k); err != nil {
					t.Fatal(err)
				}
				want, got := make([]float32, 4*n), make([]float32, 4*n)
				if err := Mul(goBE, w, &a, want, n, 0, n); err != nil {
					t.Fatal(err)
				}
				if err := Mul(be, w, &a, got, n, 0, n); err != nil {
					t.Fatal(err)
				}
				for i := range want {
					if d := math.Abs(float64(got[i] - want[i])); d > 1e-5*math.Abs(float64(want[i]))+1e-6 {
						t.Fatalf("%s %s %s weights: y[%d][%d] = %v, go backend %v", be.Name, f, fill, i/n, i%n, got[i], want[i])
					}
				}
			}
		}
	}
}

// The assembly K-quant kernels are registered wherever the CPU runs them
// (avx512vnni, avx2, neondot): a self-test failure fails the tests instead
// of leaving the Go tiles.
func TestKQuantRegistered(t *testing.T) {
	if len(kquantRegistered) == 0 {
		t.Skip("no assembly K-quant kernels for this CPU and build")
	}
	for name, r := range kquantRegistered {
		if r.verdict != "" {
			t.Errorf("%s: %s", name, r.verdict)
			continue
		}
		be, _ := BackendByName(name)
		for f, ks := range r.kerns {
			if slices.Contains(be.GoTiles, f) {
				t.Errorf("%s: GoTiles %v lists %s", name, be.GoTiles, f)
			}
			got := byName()[name].k[f]
			if len(got) != len(ks) {
				t.Errorf("%s %s: %d kernels registered, want %d", name, f, len(got), len(ks))
				continue
			}
			for i := range ks {
				if reflect.ValueOf(got[i]).Pointer() != reflect.ValueOf(ks[i]).Pointer() {
					t.Errorf("%s %s: tile height %d is not the assembly kernel", name, f, i+1)
				}
			}
		}
		t.Logf("%s: K-quant kernels registered", name)
	}
}
