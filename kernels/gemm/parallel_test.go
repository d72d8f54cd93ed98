package gemm

import (
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/cpubench/bench/kernels/pool"
)

// newTestPool starts n workers over the machine's CPUs (repeating them when
// n exceeds NumCPU: oversubscribed, so they park instead of spinning).
func newTestPool(t *testing.T, n int) *pool.Pool {
	t.Helper()
	p, err := pool.New(pool.Options{CPUs: roundRobinCPUs(n), Spin: -1, CallerSpin: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// roundRobinCPUs is n CPUs over the machine's, repeating them when n
// exceeds NumCPU.
func roundRobinCPUs(n int) []int {
	cpus := make([]int, n)
	for i := range cpus {
		cpus[i] = i % runtime.NumCPU()
	}
	return cpus
}

func bitwiseEqual(t *testing.T, name string, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s: y[%d] = %g, single-threaded Block %g", name, i, got[i], want[i])
		}
	}
}

// Run on 1..3 workers (directly and through Pool.Do) computes what one
// Block over the whole output computes: bitwise when the cut runs along N
// or every block keeps the KC loop (see the comment at the top of
// parallel.go), else within the tolerance of doc.go. Sentinels around y
// catch writes outside it.
func TestRunEqualsBlock(t *testing.T) {
	p := newTestPool(t, 3)
	for _, b := range Backends() {
		t.Run(b.Name, func(t *testing.T) {
			if b.Unavailable != "" {
				t.Skip(b.Unavailable)
			}
			// N-cut shapes, an M-cut shape, a decode GEMV, and M = 0.
			for si, sh := range [][3]int{{13, 90, 70}, {1, 200, 33}, {7, 7, 300}, {50, 20, 40}, {0, 16, 8}} {
				m, n, k := sh[0], sh[1], sh[2]
				pr := newProblem(uint64(10+si), m, n, k)
				w := pr.pack(t, b)
				bl := Blocking{MC: 2 * b.TileM, KC: 16, NC: 2 * b.TileN}
				want := newY(m, n)
				if err := w.Block(want, n, pr.x, k, 0, m, 0, n, NewScratch(w, bl)); err != nil {
					t.Fatal(err)
				}
				ref, tol := pr.ref(b.DType)
				for threads := 1; threads <= 3; threads++ {
					gs, err := p.Groups(threads)
					if err != nil {
						t.Fatal(err)
					}
					g := gs[0]
					for _, master := range []bool{false, true} {
						name := fmt.Sprintf("%dx%dx%d/threads=%d/master=%v", m, n, k, threads, master)
						y := newY(m, n)
						s := NewScratches(p.Size(), w, bl)
						if master {
							err = p.Do(func(mm *pool.Master) error { return w.Run(mm, g, y, pr.x, m, s) })
						} else {
							err = w.Run(nil, g, y, pr.x, m, s)
						}
						if err != nil {
							t.Fatal(err)
						}
						if pool.SplitDim(m, n) == "N" || threads == 1 || b.DType == Int8 {
							bitwiseEqual(t, name, y, want)
						} else {
							check(t, name, y, n, ref, tol, n, 0, m, 0, n)
						}
					}
				}
			}
		})
	}
}

// RunUnpacked (pack on every call, on the workers) equals Run bit for bit.
func TestRunUnpackedEqualsRun(t *testing.T) {
	p := newTestPool(t, 2)
	for _, b := range Backends() {
		t.Run(b.Name, func(t *testing.T) {
			if b.Unavailable != "" {
				t.Skip(b.Unavailable)
			}
			m, n, k := 9, 75, 41
			pr := newProblem(5, m, n, k)
			w := pr.pack(t, b)
			y1, y2 := newY(m, n), newY(m, n)
			if err := w.Run(nil, p.All(), y1, pr.x, m, nil); err != nil {
				t.Fatal(err)
			}
			if err := RunUnpacked(nil, p.All(), b, Blocking{}, y2, pr.x, pr.raw(b.DType), m, n, k, NewScratches(p.Size(), nil, Blocking{})); err != nil {
				t.Fatal(err)
			}
			bitwiseEqual(t, "unpacked", y2, y1)
		})
	}
}

// splitPairs are backend pairs computing the same logical W: every two
// available backends of different names.
func splitPairs() [][2]Backend {
	var av []Backend
	for _, b := range Backends() {
		if b.Unavailable == "" {
			av = append(av, b)
		}
	}
	var out [][2]Backend
	for i, a := range av {
		for _, b := range av[i+1:] {
			out = append(out, [2]Backend{a, b})
		}
	}
	return out
}

// A partitioned run computes, on each side of the cut, what its backend
// alone computes there (bitwise), for rates that give A all, most, half,
// little and nothing of the output; the timing has both groups' seconds
// and a makespan no shorter than either.
func TestRunSplitEqualsEachBackend(t *testing.T) {
	p := newTestPool(t, 3)
	gs, err := p.Groups(1, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, pair := range splitPairs() {
		ba, bb := pair[0], pair[1]
		t.Run(ba.Name+"+"+bb.Name, func(t *testing.T) {
			for si, sh := range [][3]int{{5, 130, 37}, {70, 24, 19}} {
				m, n, k := sh[0], sh[1], sh[2]
				pr := newProblem(uint64(20+si), m, n, k)
				wa, wb := pr.pack(t, ba), pr.pack(t, bb)
				ya, yb := newY(m, n), newY(m, n)
				if err := wa.Run(nil, gs[0], ya, pr.x, m, nil); err != nil {
					t.Fatal(err)
				}
				if err := wb.Run(nil, gs[1], yb, pr.x, m, nil); err != nil {
					t.Fatal(err)
				}
				for _, rates := range [][2]float64{{1, 0}, {3, 1}, {1, 1}, {1, 5}, {0, 1}} {
					s, err := PlanSplit(wa, wb, m, rates[0], rates[1])
					if err != nil {
						t.Fatal(err)
					}
					y := newY(m, n)
					scr := NewScratches(p.Size(), wa, Blocking{})
					for _, i := range gs[1].Workers() {
						scr[i] = NewScratch(wb, Blocking{})
					}
					var tm pool.Timing
					err = p.Do(func(mm *pool.Master) error {
						var err error
						tm, err = RunSplit(mm, s, gs[0], wa, gs[1], wb, y, pr.x, scr)
						return err
					})
					if err != nil {
						t.Fatal(err)
					}
					name := fmt.Sprintf("%dx%dx%d/rates=%v/%v|%v", m, n, k, rates, s.A, s.B)
					for i := range m {
						for j := range n {
							want := yb[i*n+j]
							if i >= s.A.M0 && i < s.A.M1 && j >= s.A.N0 && j < s.A.N1 {
								want = ya[i*n+j]
							}
							if math.Float32bits(y[i*n+j]) != math.Float32bits(want) {
								t.Fatalf("%s: y[%d][%d] = %g, want %g", name, i, j, y[i*n+j], want)
							}
						}
					}
					if math.Float32bits(y[m*n]) != math.Float32bits(sentinel) {
						t.Fatalf("%s: guard overwritten", name)
					}
					if len(tm.Seconds) != 2 || tm.Makespan < tm.Seconds[0] || tm.Makespan < tm.Seconds[1] ||
						(tm.Seconds[0] > 0) != !s.A.Empty() || (tm.Seconds[1] > 0) != !s.B.Empty() {
						t.Errorf("%s: timing %+v", name, tm)
					}
				}
			}
		})
	}
}

func TestParallelErrors(t *testing.T) {
	p := newTestPool(t, 2)
	b, err := Best(FP32)
	if err != nil {
		t.Fatal(err)
	}
	pr := newProblem(1, 4, 20, 8)
	w := pr.pack(t, b)
	y := make([]float32, 4*20)
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"short y", w.Run(nil, p.All(), y[:79], pr.x, 4, nil), "len(y) = 79"},
		{"short x", w.Run(nil, p.All(), y, pr.x[:31], 4, nil), "len(x) = 31"},
		{"negative M", w.Run(nil, p.All(), y, pr.x, -1, nil), "M = -1"},
		{"nil group", w.Run(nil, nil, y, pr.x, 4, nil), "nil group"},
		{"few scratches", w.Run(nil, p.All(), y, pr.x, 4, NewScratches(1, w, Blocking{})), "pool worker 1"},
		{"nil weights", (*Weights)(nil).Run(nil, p.All(), y, pr.x, 4, nil), "nil or unpacked"},
		// A worker's error comes back, naming the worker.
		{"worker error", RunUnpacked(nil, p.All(), b, Blocking{}, y, pr.x, "weights", 4, 20, 8, nil), "pool: worker"},
		{"unpacked shape", RunUnpacked(nil, p.All(), b, Blocking{}, y, pr.x, pr.wf, 4, 0, 8, nil), "N and K must be positive"},
	}
	other := newProblem(2, 4, 21, 8)
	wo := other.pack(t, b)
	_, err = PlanSplit(w, wo, 4, 1, 1)
	cases = append(cases, struct {
		name string
		err  error
		want string
	}{"split shapes", err, "shapes differ"})
	s, _ := PlanSplit(w, w, 4, 1, 1)
	gs, _ := p.Groups(1, 1)
	_, err = RunSplit(p, s, gs[0], w, gs[1], wo, y, pr.x, nil)
	cases = append(cases, struct {
		name string
		err  error
		want string
	}{"run split shapes", err, "shapes differ"})
	_, err = RunSplit(p, s, gs[0], w, gs[1], w, y[:10], pr.x, nil)
	cases = append(cases, struct {
		name string
		err  error
		want string
	}{"run split short y", err, "len(y) = 10"})
	for _, c := range cases {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to contain %q", c.name, c.err, c.want)
		}
	}
	// A panic inside a block is an error too, not a crash.
	err = p.All().RunBlocks(pool.Region{M1: 4, N1: 20}, b.Tile(), func(int, int, int, int, int) error { panic("boom") })
	if err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("panic: err = %v", err)
	}
}

// CheckSample accepts a correct Y of every dtype and catches one wrong
// sampled element.
func TestCheckSample(t *testing.T) {
	for _, b := range Backends() {
		if b.Unavailable != "" {
			continue
		}
		m, n, k := 6, 40, 50
		pr := newProblem(7, m, n, k)
		w := pr.pack(t, b)
		y := make([]float32, m*n)
		if err := w.Block(y, n, pr.x, k, 0, m, 0, n, nil); err != nil {
			t.Fatal(err)
		}
		sum, err := CheckSample(b.DType, y, pr.x, pr.raw(b.DType), m, n, k, 16)
		if err != nil || sum == 0 || math.IsNaN(sum) {
			t.Fatalf("%s: sum %v, err %v", b.Name, sum, err)
		}
		y[0] *= 1.001 // element 0 is always sampled
		if _, err := CheckSample(b.DType, y, pr.x, pr.raw(b.DType), m, n, k, 16); err == nil || !strings.Contains(err.Error(), "y[0][0]") {
			t.Errorf("%s: corrupted y[0][0]: err = %v", b.Name, err)
		}
		if _, err := CheckSample(b.DType, y, pr.x, []int{1}, m, n, k, 16); err == nil {
			t.Errorf("%s: wrong weight type accepted", b.Name)
		}
	}
	if _, err := CheckSample(FP32, nil, nil, []float32{}, 0, 1, 1, 1); err == nil {
		t.Error("M = 0 accepted")
	}
}
