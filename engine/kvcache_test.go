package engine

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cpubench/bench/kernels/gemm"
)

// TestKVWriteRowsLayout writes runs of consecutive positions with
// writeRows (runs that start and end inside panels, shorter and longer
// than kvBlock) and checks every element against the layout's formulas
// in kvLayout's doc, for panel widths 4, 16 and 32, fp32 and bf16, packed
// and row-major; never-written positions stay zero.
func TestKVWriteRowsLayout(t *testing.T) {
	const kvHeads, maxSeq = 3, 77
	rng := rand.New(rand.NewPCG(1, 2))
	for _, nr := range []int{4, 16, 32} {
		for _, hd := range []int{8, 20, 64} {
			for _, kind := range []string{"fp32", "bf16", "rowmajor"} {
				be := gemm.Backend{Name: "test", TileM: 4, TileN: nr}
				var l kvLayout
				switch kind {
				case "fp32":
					l = newKVLayout(be, kvHeads, hd, maxSeq, true)
				case "bf16":
					l = newKVLayoutBF16(be, kvHeads, hd, maxSeq)
				default:
					l = newKVLayout(be, kvHeads, hd, maxSeq, false)
				}
				kf, vf := l.floats()
				kc, vc := make([]float32, kf), make([]float32, vf)
				kvd := kvHeads * hd
				want := map[int][2][]float32{} // position → its k and v rows
				// Runs: 1 position, 3 inside a panel, 13 across panels, 30,
				// then single positions (a decode's steps).
				pos := 2
				for _, n := range []int{1, 3, 13, 30, 1, 1} {
					k, v := make([]float32, n*kvd), make([]float32, n*kvd)
					for i := range k {
						k[i], v[i] = rng.Float32()*2-1, rng.Float32()*2-1
					}
					l.writeRows(kc, vc, pos, n, k, v)
					for j := range n {
						want[pos+j] = [2][]float32{k[j*kvd : (j+1)*kvd], v[j*kvd : (j+1)*kvd]}
					}
					pos += n
				}
				for p := range maxSeq {
					rows, ok := want[p]
					for h := range kvHeads {
						for d := range hd {
							var ki, vi int
							if kind == "rowmajor" {
								ki, vi = p*kvd+h*hd+d, p*kvd+h*hd+d
							} else {
								ki = h*l.kHead + p/nr*hd*nr + d*nr + p%nr
								vi = h*l.vHead + d/nr*maxSeq*nr + p*nr + d%nr
							}
							gk, gv := elem(kc, ki, l.bf16), elem(vc, vi, l.bf16)
							var wk, wv float32
							if ok {
								wk, wv = rows[0][h*hd+d], rows[1][h*hd+d]
								if l.bf16 {
									wk, wv = fromBF16(toBF16(wk)), fromBF16(toBF16(wv))
								}
							}
							if gk != wk || gv != wv {
								t.Fatalf("nr %d hd %d %s: pos %d head %d dim %d: K %v V %v, want %v %v", nr, hd, kind, p, h, d, gk, gv, wk, wv)
							}
						}
					}
				}
			}
		}
	}
}

// elem is element i of a cache slice: a float32, or the i-th bfloat16 of
// its words.
func elem(c []float32, i int, bf16 bool) float32 {
	if bf16 {
		return fromBF16(bf16View(c)[i])
	}
	return c[i]
}

// TestWriteRuns checks the runs writeRuns cuts: consecutive positions of
// one slot are one run, a change of slot or a gap starts another.
func TestWriteRuns(t *testing.T) {
	slot := []int{0, 0, 0, 1, 1, 2, 2, 2}
	pos := []int{5, 6, 7, 0, 1, 9, 3, 4}
	var got [][2]int
	writeRuns(1, 8, func(a, b int) bool { return slot[a] == slot[b] && pos[b] == pos[a]+1 }, func(r0, r1 int) {
		got = append(got, [2]int{r0, r1})
	})
	want := [][2]int{{1, 3}, {3, 5}, {5, 6}, {6, 8}}
	if len(got) != len(want) {
		t.Fatalf("runs %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("runs %v, want %v", got, want)
		}
	}
}

// BenchmarkKVWrite is one layer's prefill kv_write on one worker: T
// positions of qwen3-0.6b's 8 KV heads of 128 dims into the packed cache
// of gemm.Best(FP32)'s panel width, position by position (the old path,
// a decode step's) and in runs (writeRows), fp32 and bf16. Bytes are the
// K and V rows read plus the cache bytes written.
func BenchmarkKVWrite(b *testing.B) {
	const kvHeads, hd = 8, 128
	be, err := gemm.Best(gemm.FP32)
	if err != nil {
		b.Fatal(err)
	}
	for _, T := range []int{128, 512, 2048} {
		kvd := kvHeads * hd
		k, v := make([]float32, T*kvd), make([]float32, T*kvd)
		for i := range k {
			k[i], v[i] = float32(i%7), float32(i%5)
		}
		for _, dt := range []string{"fp32", "bf16"} {
			l := newKVLayout(be, kvHeads, hd, T, true)
			if dt == "bf16" {
				l = newKVLayoutBF16(be, kvHeads, hd, T)
			}
			kf, vf := l.floats()
			kc, vc := make([]float32, kf), make([]float32, vf)
			bytes := int64(2*T*kvd*4 + 2*T*kvd*l.elemBytes())
			b.Run(fmt.Sprintf("T%d/%s/per-position", T, dt), func(b *testing.B) {
				b.SetBytes(bytes)
				for b.Loop() {
					for p := range T {
						l.write(kc, vc, p, k[p*kvd:(p+1)*kvd], v[p*kvd:(p+1)*kvd])
					}
				}
			})
			b.Run(fmt.Sprintf("T%d/%s/rows", T, dt), func(b *testing.B) {
				b.SetBytes(bytes)
				for b.Loop() {
					l.writeRows(kc, vc, 0, T, k, v)
				}
			})
		}
	}
}

// TestKVWriter: the exported writer stores what the engine's cache write
// stores (the same layout's panels), and rejects out-of-range positions.
func TestKVWriter(t *testing.T) {
	be, err := gemm.Best(gemm.FP32)
	if err != nil {
		t.Fatal(err)
	}
	const kvh, hd, maxSeq, n = 2, 64, 96, 37
	w, err := NewKVWriter(be, kvh, hd, maxSeq)
	if err != nil {
		t.Fatal(err)
	}
	k, v := make([]float32, n*kvh*hd), make([]float32, n*kvh*hd)
	for i := range k {
		k[i], v[i] = float32(i), -float32(i)
	}
	w.Write(5, n, k, v)
	lay := newKVLayout(be, kvh, hd, maxSeq, true)
	nk, nv := lay.floats()
	kc, vc := make([]float32, nk), make([]float32, nv)
	lay.writeRows(kc, vc, 5, n, k, v)
	if !slices.Equal(kc, w.kc) || !slices.Equal(vc, w.vc) {
		t.Error("KVWriter's cache differs from the engine's write")
	}
	if w.MaxSeq() != maxSeq {
		t.Errorf("MaxSeq %d", w.MaxSeq())
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("positions past the cache accepted")
			}
		}()
		w.Write(maxSeq-1, 2, k, v)
	}()
	if _, err := NewKVWriter(be, 0, hd, maxSeq); err == nil {
		t.Error("0 KV heads accepted")
	}
}
