//go:build openblas

// Command openblas compares package gemm with OpenBLAS sgemm in one
// process, single-threaded, on the same shapes and data:
//
//	OPENBLAS_CORETYPE=Haswell go run -tags openblas ./kernels/gemm/openblas
//
// (scripts/compare-openblas.sh). Y = X·Wᵀ with X M×K and W N×K row-major is
// cblas_sgemm(RowMajor, NoTrans, Trans, M, N, K, 1, X, K, W, K, 0, Y, N).
// Each shape runs -reps times per side, alternating, and reports the best
// (least disturbed) time of each; the ratio is gemm / OpenBLAS GFLOP/s.
// Built only with the tag openblas (cgo, -lopenblas), so builds and tests
// without OpenBLAS are unaffected.
package main

/*
#cgo LDFLAGS: -lopenblas
#include <cblas.h>
void openblas_set_num_threads(int);
*/
import "C"

import (
	"flag"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cpubench/bench/kernels"
	"github.com/cpubench/bench/kernels/gemm"
	"github.com/cpubench/bench/kernels/pool"
)

func main() {
	backend := flag.String("backend", "", "gemm backend (default: the best fp32 one)")
	shapes := flag.String("shapes", "128x3072x3072,128x8192x3072,128x3072x8192,1x8192x8192", "MxNxK,...")
	reps := flag.Int("reps", 7, "timed runs per side and shape")
	l1 := flag.Int64("l1d", 0, "L1d bytes for BlockingFor (0: default)")
	l2 := flag.Int64("l2", 0, "L2 bytes per core for BlockingFor (0: default)")
	l3 := flag.Int64("l3", 0, "L3 bytes per core for BlockingFor (0: default)")
	gemv := flag.Int("gemv", 8192, "N = K of the GEMV section (0: skip it)")
	threads := flag.Int("threads", 1, "threads on both sides: OpenBLAS's own, and a pinned kernels/pool group running gemm.Run")
	flag.Parse()
	if *threads < 1 {
		fmt.Fprintf(os.Stderr, "openblas: -threads %d: must be at least 1\n", *threads)
		os.Exit(2)
	}
	C.openblas_set_num_threads(C.int(*threads))
	var p *pool.Pool
	var err error
	if *threads > 1 {
		cpus := make([]int, *threads)
		for i := range cpus {
			cpus[i] = i
		}
		if p, err = pool.New(pool.Options{CPUs: cpus}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer p.Close()
	}
	var b gemm.Backend
	b, err = gemm.Best(gemm.FP32)
	if *backend != "" {
		b, err = gemm.BackendByName(*backend)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bl := gemm.BlockingFor(b, *l1, *l2, *l3)
	fmt.Printf("backend %s, blocking %+v, threads %d, OPENBLAS_CORETYPE=%q, config %s\n", b.Name, bl, *threads, os.Getenv("OPENBLAS_CORETYPE"), C.GoString(C.openblas_get_config()))
	fmt.Printf("%-18s %12s %12s %8s %10s\n", "MxNxK", "gemm GFLOP/s", "OpenBLAS", "ratio", "max|diff|")
	var logSum float64
	var count int
	for _, sh := range strings.Split(*shapes, ",") {
		var dims [3]int
		for i, f := range strings.Split(sh, "x") {
			dims[i], err = strconv.Atoi(f)
			if err != nil || i > 2 {
				fmt.Fprintf(os.Stderr, "openblas: shape %q: want MxNxK\n", sh)
				os.Exit(2)
			}
		}
		m, n, k := dims[0], dims[1], dims[2]
		x, w := make([]float32, m*k), make([]float32, n*k)
		for i := range x {
			x[i] = float32(i%7)*0.5 - 1.5
		}
		for i := range w {
			w[i] = float32(i%5)*0.25 - 0.5
		}
		pw, err := gemm.PackFP32(b, w, n, k)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		s := gemm.NewScratch(pw, bl)
		y1, y2 := make([]float32, m*n), make([]float32, m*n)
		ours := func() {
			if err := pw.Block(y1, n, x, k, 0, m, 0, n, s); err != nil {
				panic(err)
			}
		}
		if p != nil {
			g, err := p.Groups(p.Size())
			if err != nil {
				panic(err)
			}
			scr := gemm.NewScratches(p.Size(), pw, bl)
			ours = func() {
				if err := p.Do(func(ms *pool.Master) error { return pw.Run(ms, g[0], y1, x, m, scr) }); err != nil {
					panic(err)
				}
			}
		}
		theirs := func() {
			C.cblas_sgemm(C.CblasRowMajor, C.CblasNoTrans, C.CblasTrans, C.blasint(m), C.blasint(n), C.blasint(k),
				1, (*C.float)(&x[0]), C.blasint(k), (*C.float)(&w[0]), C.blasint(k), 0, (*C.float)(&y2[0]), C.blasint(n))
		}
		ours()
		theirs()
		best1, best2 := math.Inf(1), math.Inf(1)
		for r := 0; r < *reps; r++ {
			best1 = min(best1, timeIt(ours))
			best2 = min(best2, timeIt(theirs))
		}
		var diff float64
		for i := range y1 {
			diff = max(diff, math.Abs(float64(y1[i]-y2[i])))
		}
		f := gemm.Flops(m, n, k)
		g1, g2 := f/best1/1e9, f/best2/1e9
		fmt.Printf("%-18s %12.1f %12.1f %8.3f %10.3g\n", sh, g1, g2, g1/g2, diff)
		logSum += math.Log(g1 / g2)
		count++
	}
	fmt.Printf("geomean ratio %.3f\n", math.Exp(logSum/float64(count)))
	if *gemv > 0 {
		gemvSection(*gemv, *reps)
	}
}

// gemvSection streams an n×n weight (far larger than L3) once per call
// with M = 1 in fp32, bf16 and int8, interleaved with the read-bandwidth
// kernel of package kernels on a buffer as large as the fp32 weight, and
// reports the best of reps runs of each: GB/s of weights, and the speedup
// over fp32 (the bytes moved halve and quarter).
func gemvSection(n, reps int) {
	fmt.Printf("\nGEMV M=1, W %d×%d (fp32 %d MiB), best of %d, interleaved\n", n, n, n*n*4>>20, reps)
	type row struct {
		name string
		f    func()
		b    float64
		best float64
	}
	var rows []*row
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	y := make([]float32, n)
	for _, dt := range []gemm.DType{gemm.FP32, gemm.BF16, gemm.Int8} {
		b, err := gemm.Best(dt)
		if err != nil {
			panic(err)
		}
		var w *gemm.Weights
		switch dt {
		case gemm.FP32:
			raw := make([]float32, n*n)
			for i := range raw {
				raw[i] = float32(i%5) * 0.25
			}
			w, err = gemm.PackFP32(b, raw, n, n)
		case gemm.BF16:
			raw := make([]uint16, n*n)
			for i := range raw {
				raw[i] = gemm.Float32ToBF16(float32(i%5) * 0.25)
			}
			w, err = gemm.PackBF16(b, raw, n, n)
		case gemm.Int8:
			raw, sc := make([]int8, n*n), make([]float32, n)
			for i := range raw {
				raw[i] = int8(i%255 - 127)
			}
			for i := range sc {
				sc[i] = 0.01
			}
			w, err = gemm.PackInt8(b, raw, sc, n, n)
		}
		if err != nil {
			panic(err)
		}
		s := gemm.NewScratch(w, gemm.DefaultBlocking(b))
		rows = append(rows, &row{name: b.Name, b: float64(gemm.WeightBytes(dt, n, n)), best: math.Inf(1), f: func() {
			if err := w.Block(y, n, x, n, 0, 1, 0, n, s); err != nil {
				panic(err)
			}
		}})
	}
	mem := kernels.BestMem()
	buf := make([]float64, n*n/2)
	for i := range buf {
		buf[i] = 1
	}
	rows = append(rows, &row{name: "read (" + mem.ISA + ")", b: float64(len(buf) * 8), best: math.Inf(1), f: func() { mem.Read(buf) }})
	for _, r := range rows {
		r.f()
	}
	for range reps {
		for _, r := range rows {
			r.best = min(r.best, timeIt(r.f))
		}
	}
	fmt.Printf("%-22s %10s %10s %12s\n", "kernel", "ms", "GB/s", "vs fp32")
	for _, r := range rows {
		fmt.Printf("%-22s %10.2f %10.2f %12.2f\n", r.name, r.best*1e3, r.b/r.best/1e9, rows[0].best/r.best)
	}
	fmt.Printf("fp32 GEMV / read bandwidth: %.3f\n", rows[0].b/rows[0].best/(rows[3].b/rows[3].best))
}

func timeIt(f func()) float64 {
	t := time.Now()
	f()
	return time.Since(t).Seconds()
}
