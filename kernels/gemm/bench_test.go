package gemm

import (
	"fmt"
	"testing"
)

// BenchmarkGEMM: prefill shapes (Llama-3.2-3B), single-threaded, packed W,
// reported in GFLOP/s. BenchmarkGEMMUnpacked is the same with W packed on
// every call (SMEPilot §5.4 ablation).
func BenchmarkGEMM(b *testing.B) {
	shapes := [][3]int{{128, 3072, 3072}, {128, 8192, 3072}, {128, 3072, 8192}}
	if small {
		shapes = [][3]int{{16, 256, 256}}
	}
	for _, be := range Backends() {
		for _, sh := range shapes {
			m, n, k := sh[0], sh[1], sh[2]
			b.Run(fmt.Sprintf("backend=%s/m=%d/n=%d/k=%d", be.Name, m, n, k), func(b *testing.B) {
				benchBlock(b, be, m, n, k, false)
			})
		}
	}
}

func BenchmarkGEMMUnpacked(b *testing.B) {
	m, n, k := 1, 3072, 3072
	if small {
		m, n, k = 1, 256, 256
	}
	for _, be := range Backends() {
		b.Run(fmt.Sprintf("backend=%s/m=%d/n=%d/k=%d", be.Name, m, n, k), func(b *testing.B) {
			benchBlock(b, be, m, n, k, true)
		})
	}
}

// BenchmarkGEMV: decode (M = 1 and small M) on a weight far larger than
// L3 (8192×8192: 256 MiB fp32), so W streams from DRAM; SetBytes is the
// weight bytes per call, so MB/s is the weight-streaming bandwidth.
func BenchmarkGEMV(b *testing.B) {
	n, k := 8192, 8192
	ms := []int{1, 4, 16}
	if small {
		n, k, ms = 512, 256, []int{1}
	}
	for _, be := range Backends() {
		for _, m := range ms {
			b.Run(fmt.Sprintf("backend=%s/m=%d/n=%d/k=%d", be.Name, m, n, k), func(b *testing.B) {
				benchBlock(b, be, m, n, k, false)
			})
		}
	}
}

func benchBlock(b *testing.B, be Backend, m, n, k int, unpacked bool) {
	if be.Unavailable != "" {
		b.Skip(be.Unavailable)
	}
	p := benchProblem(be.DType, m, n, k)
	t := &testing.T{}
	w := p.pack(t, be)
	s := NewScratch(w, DefaultBlocking(be))
	y := make([]float32, m*n)
	b.SetBytes(WeightBytes(be.DType, n, k))
	for b.Loop() {
		var err error
		if unpacked {
			err = BlockUnpacked(be, DefaultBlocking(be), y, n, p.x, k, p.raw(be.DType), n, k, 0, m, 0, n, s)
		} else {
			err = w.Block(y, n, p.x, k, 0, m, 0, n, s)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(Flops(m, n, k)/sec/1e9, "GFLOP/s")
	b.ReportMetric(float64(WeightBytes(be.DType, n, k))/sec/1e9, "GB/s")
}

// benchProblem is newProblem with only the weights of dtype dt filled.
func benchProblem(dt DType, m, n, k int) *problem {
	p := &problem{m: m, n: n, k: k, x: make([]float32, m*k)}
	for i := range p.x {
		p.x[i] = float32(i%7) - 3
	}
	switch dt {
	case FP32:
		p.wf = make([]float32, n*k)
		for i := range p.wf {
			p.wf[i] = float32(i%5) * 0.25
		}
	case BF16:
		p.wb = make([]uint16, n*k)
		for i := range p.wb {
			p.wb[i] = Float32ToBF16(float32(i%5) * 0.25)
		}
	case Int8:
		p.wi, p.ws = make([]int8, n*k), make([]float32, n)
		for i := range p.wi {
			p.wi[i] = int8(i%255 - 127)
		}
		for i := range p.ws {
			p.ws[i] = 0.01
		}
	}
	return p
}
