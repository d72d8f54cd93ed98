package pool

import (
	"errors"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cpubench/bench/internal/affinity"
)

// newPool makes a pool of n workers pinned round-robin to the allowed CPUs
// (oversubscribed when n exceeds them) and closes it at the end of the test.
func newPool(t testing.TB, n int) *Pool {
	t.Helper()
	allowed, err := affinity.Allowed()
	if err != nil {
		allowed = []int{-1}
	}
	cpus := make([]int, n)
	for i := range cpus {
		cpus[i] = allowed[i%len(allowed)]
	}
	mp := runtime.GOMAXPROCS(0)
	p, err := New(Options{CPUs: cpus})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Close()
		runtime.GOMAXPROCS(mp)
	})
	return p
}

func TestNewPinsEachWorker(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skipf("affinity is not implemented on %s", runtime.GOOS)
	}
	allowed, err := affinity.Allowed()
	if err != nil {
		t.Fatal(err)
	}
	p := newPool(t, len(allowed))
	if err := p.PinErr(); err != nil {
		t.Fatalf("PinErr() = %v", err)
	}
	if got := p.CPUs(); !slices.Equal(got, allowed) {
		t.Errorf("CPUs() = %v, want %v", got, allowed)
	}
	if got := p.Pinned(); slices.Contains(got, false) {
		t.Errorf("Pinned() = %v", got)
	}
	got := make([]int, p.Size())
	err = p.All().Run(func(local, n int) error {
		// The kernel migrates a pinned thread at its next scheduling point.
		for range 100 {
			cpu, err := affinity.Current()
			got[local] = cpu
			if err != nil || cpu == allowed[local] {
				return err
			}
			runtime.Gosched()
		}
		return nil
	})
	if err != nil || !slices.Equal(got, allowed) {
		t.Errorf("workers run on CPUs %v, %v; want %v", got, err, allowed)
	}
	if after, _ := affinity.Allowed(); !slices.Equal(after, allowed) {
		t.Errorf("Allowed() after New = %v, want %v", after, allowed)
	}
}

func TestPinFailureIsNotFatal(t *testing.T) {
	p, err := New(Options{CPUs: []int{0, 4096}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	err = p.PinErr()
	if err == nil || !strings.Contains(err.Error(), "worker 1") || !strings.Contains(err.Error(), "CPU 4096") {
		t.Fatalf("PinErr() = %v, want one naming worker 1 and CPU 4096", err)
	}
	t.Log(err)
	if got := p.Pinned(); got[1] {
		t.Errorf("Pinned() = %v, want worker 1 unpinned", got)
	}
	var calls atomic.Int32
	if err := p.All().Run(func(int, int) error { calls.Add(1); return nil }); err != nil || calls.Load() != 2 {
		t.Errorf("Run on a partly pinned pool: %v, %d calls", err, calls.Load())
	}
}

func TestRunCallsEveryLocalOnce(t *testing.T) {
	p := newPool(t, 3)
	for rep := range 1000 {
		var seen [3]atomic.Int32
		err := p.All().Run(func(local, n int) error {
			if n != 3 {
				t.Errorf("n = %d, want 3", n)
			}
			seen[local].Add(1)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for l := range seen {
			if c := seen[l].Load(); c != 1 {
				t.Fatalf("rep %d: local %d called %d times", rep, l, c)
			}
		}
	}
}

// workerOf returns the pool index that runs each local index of g, as the
// BlockFunc reports it.
func workerOf(t *testing.T, g *Group) []int {
	t.Helper()
	got := make([]int, g.Size())
	// One tile per worker: local l gets column l.
	err := g.RunBlocks(Region{0, 1, 0, g.Size()}, Tile{1, 1}, func(w, m0, m1, n0, n1 int) error {
		got[n0] = w
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestGroupsReconfigureWithoutRestart(t *testing.T) {
	p := newPool(t, 4)
	before := runtime.NumGoroutine()
	for _, tc := range []struct {
		sizes []int
		view  [][]int
		want  [][]int
	}{
		{sizes: []int{1, 3}, want: [][]int{{0}, {1, 2, 3}}},
		{sizes: []int{2, 2}, want: [][]int{{0, 1}, {2, 3}}},
		{sizes: []int{4}, want: [][]int{{0, 1, 2, 3}}},
		{sizes: []int{1, 1, 1}, want: [][]int{{0}, {1}, {2}}},
		{view: [][]int{{3, 0}, {1}}, want: [][]int{{3, 0}, {1}}},
		{view: [][]int{{2}, {1, 3, 0}}, want: [][]int{{2}, {1, 3, 0}}},
	} {
		var gs []*Group
		var err error
		if tc.view != nil {
			gs, err = p.View(tc.view)
		} else {
			gs, err = p.Groups(tc.sizes...)
		}
		if err != nil {
			t.Fatal(err)
		}
		for i, g := range gs {
			if !slices.Equal(g.Workers(), tc.want[i]) {
				t.Errorf("%v %v: group %d = %v, want %v", tc.sizes, tc.view, i, g.Workers(), tc.want[i])
			}
			if got := workerOf(t, g); !slices.Equal(got, tc.want[i]) {
				t.Errorf("%v %v: group %d runs on workers %v, want %v", tc.sizes, tc.view, i, got, tc.want[i])
			}
		}
	}
	// No goroutine started: at most as many as before (another test's
	// exiting goroutine may have been counted before).
	goroutinesAtMost(t, before, "reconfiguring")
}

// goroutinesAtMost fails t unless the goroutine count falls to at most
// before within about 100 ms (polled: exiting goroutines take a moment to
// leave the count).
func goroutinesAtMost(t *testing.T, before int, what string) {
	t.Helper()
	var after int
	for range 100 {
		if after = runtime.NumGoroutine(); after <= before {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Errorf("goroutines: %d before %s, %d after", before, what, after)
}

func TestViewErrors(t *testing.T) {
	p := newPool(t, 3)
	for _, tc := range []struct {
		name string
		make func() ([]*Group, error)
		want string
	}{
		{"size 0", func() ([]*Group, error) { return p.Groups(1, 0) }, "size 0"},
		{"too many", func() ([]*Group, error) { return p.Groups(2, 2) }, "3 workers"},
		{"empty", func() ([]*Group, error) { return p.View([][]int{{0}, {}}) }, "group 1 is empty"},
		{"range", func() ([]*Group, error) { return p.View([][]int{{0, 3}}) }, "worker 3 out of range"},
		{"negative", func() ([]*Group, error) { return p.View([][]int{{-1}}) }, "worker -1 out of range"},
		{"overlap", func() ([]*Group, error) { return p.View([][]int{{0, 1}, {1, 2}}) }, "worker 1 in groups 0 and 1"},
	} {
		if _, err := tc.make(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

func TestOverlappingRunFails(t *testing.T) {
	p := newPool(t, 3)
	a, _ := p.View([][]int{{0, 1}})
	b, _ := p.View([][]int{{1, 2}})
	release := make(chan struct{})
	entered := make(chan struct{}, 2)
	done := make(chan error)
	go func() {
		done <- a[0].Run(func(int, int) error { entered <- struct{}{}; <-release; return nil })
	}()
	<-entered
	<-entered
	err := b[0].Run(func(int, int) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "worker 1") || !strings.Contains(err.Error(), "busy") {
		t.Errorf("overlapping Run: %v, want worker 1 busy", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The failed claim released worker 2; both views work again.
	for _, g := range []*Group{a[0], b[0]} {
		if err := g.Run(func(int, int) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
}

func TestConcurrentGroups(t *testing.T) {
	p := newPool(t, 4)
	gs, err := p.Groups(1, 3)
	if err != nil {
		t.Fatal(err)
	}
	reps := 2000
	if testing.Short() || raceEnabled {
		reps = 200
	}
	counts := make([][]int, len(gs)) // written without atomics: -race checks ownership
	var wg sync.WaitGroup
	for gi, g := range gs {
		counts[gi] = make([]int, g.Size())
		wg.Go(func() {
			for range reps {
				if err := g.Run(func(local, n int) error { counts[gi][local]++; return nil }); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for gi := range counts {
		for l, c := range counts[gi] {
			if c != reps {
				t.Errorf("group %d local %d: %d calls, want %d", gi, l, c, reps)
			}
		}
	}
}

func TestRunGroupsGlobalBarrierAndTiming(t *testing.T) {
	p := newPool(t, 3)
	gs, _ := p.Groups(1, 2)
	var doneA, doneB atomic.Int32
	d := []time.Duration{20 * time.Millisecond, 60 * time.Millisecond}
	tm, err := p.RunGroups(
		Task{gs[0], func(int, int) error { time.Sleep(d[0]); doneA.Add(1); return nil }},
		Task{},
		Task{gs[1], func(int, int) error { time.Sleep(d[1]); doneB.Add(1); return nil }},
	)
	if err != nil {
		t.Fatal(err)
	}
	if doneA.Load() != 1 || doneB.Load() != 2 {
		t.Fatalf("RunGroups returned before every worker was done: %d, %d", doneA.Load(), doneB.Load())
	}
	t.Logf("timing %+v", tm)
	if len(tm.Seconds) != 3 || tm.Seconds[1] != 0 {
		t.Fatalf("Seconds = %v, want 3 entries with 0 for the empty task", tm.Seconds)
	}
	// Lower bounds only: a task's time covers its sleep and the makespan
	// its slowest task, however loaded the machine (how much longer is not
	// a test's business).
	for i, want := range []float64{d[0].Seconds(), 0, d[1].Seconds()} {
		if got := tm.Seconds[i]; got < want {
			t.Errorf("Seconds[%d] = %g, want ≥ %g", i, got, want)
		}
	}
	if tm.Makespan < tm.Seconds[2] || tm.Makespan < tm.Seconds[0] {
		t.Errorf("Makespan = %g, Seconds = %v", tm.Makespan, tm.Seconds)
	}
}

func TestBarrierInsideTasks(t *testing.T) {
	p := newPool(t, 4)
	gs, _ := p.Groups(2, 2)
	const phases = 200
	global, _ := NewBarrier(4, 0)
	local := []*Barrier{must(NewBarrier(2, 0)), must(NewBarrier(2, -1))} // one parks at once
	// Each worker writes its slot in phase k and, after the barrier, reads
	// its partner's slot of phase k: a missing barrier shows as a wrong
	// value (and as a race under -race).
	slots := [2][2]int{}
	var all [4]int
	var failed atomic.Bool
	task := func(gi int) func(l, n int) error {
		return func(l, n int) error {
			for k := range phases {
				slots[gi][l] = k
				local[gi].Wait()
				if slots[gi][1-l] != k {
					failed.Store(true)
				}
				local[gi].Wait()
			}
			all[2*gi+l] = 1
			global.Wait()
			for _, v := range all {
				if v != 1 {
					failed.Store(true)
				}
			}
			return nil
		}
	}
	if _, err := p.RunGroups(Task{gs[0], task(0)}, Task{gs[1], task(1)}); err != nil {
		t.Fatal(err)
	}
	if failed.Load() {
		t.Fatal("a worker passed a barrier before its partners arrived")
	}
	if _, err := NewBarrier(0, 0); err == nil {
		t.Error("NewBarrier(0) succeeded")
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

var errKernel = errors.New("kernel: bad block")

func TestErrorsAndPanicsPropagate(t *testing.T) {
	p := newPool(t, 3)
	g := p.All()
	err := g.RunBlocks(Region{0, 4, 0, 30}, Tile{1, 10}, func(w, m0, m1, n0, n1 int) error {
		if n0 >= 10 {
			return errKernel
		}
		return nil
	})
	if !errors.Is(err, errKernel) || !strings.Contains(err.Error(), "worker 1") {
		t.Errorf("RunBlocks error = %v, want errKernel from worker 1 (the lowest failing)", err)
	}
	err = g.Run(func(local, n int) error {
		if local == 2 {
			var s []int
			_ = s[local] // index out of range
		}
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "panic") || !strings.Contains(err.Error(), "index out of range") {
		t.Errorf("Run with a panic: %v", err)
	}
	// The pool survives both, and errors do not leak into the next Run.
	if err := g.Run(func(int, int) error { return nil }); err != nil {
		t.Errorf("Run after errors: %v", err)
	}
	gs, _ := p.Groups(1, 2)
	_, err = p.RunGroups(Task{gs[0], func(int, int) error { return errKernel }}, Task{gs[1], func(int, int) error { return nil }})
	if !errors.Is(err, errKernel) {
		t.Errorf("RunGroups error = %v", err)
	}
}

func TestCloseEndsWorkers(t *testing.T) {
	before := runtime.NumGoroutine()
	mp := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(mp)
	p, err := New(Options{CPUs: []int{0, 0, 0}})
	if err != nil {
		t.Fatal(err)
	}
	// A Run in flight: Close waits for it.
	release := make(chan struct{})
	running := make(chan struct{})
	done := make(chan error)
	go func() {
		done <- p.All().Run(func(l, n int) error {
			if l == 0 {
				close(running)
				<-release
			}
			return nil
		})
	}()
	<-running
	closed := make(chan struct{})
	go func() { p.Close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("Close returned while a Run was in flight")
	case <-time.After(20 * time.Millisecond):
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	<-closed
	p.Close() // idempotent
	if err := p.All().Run(func(int, int) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Errorf("Run after Close = %v, want ErrClosed", err)
	}
	if err := p.Do(func(*Master) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Errorf("Do after Close = %v, want ErrClosed", err)
	}
	goroutinesAtMost(t, before, "New and Close")
}

func TestMaster(t *testing.T) {
	p := newPool(t, 3)
	gs, _ := p.View([][]int{{1, 0}, {2}})
	err := p.Do(func(m *Master) error {
		if m.Worker() != 0 {
			t.Errorf("Worker() = %d", m.Worker())
		}
		for range 100 {
			counts := make([]int, 3)
			if err := m.Run(p.All(), func(l, n int) error { counts[l]++; return nil }); err != nil {
				return err
			}
			if !slices.Equal(counts, []int{1, 1, 1}) {
				t.Fatalf("counts %v", counts)
			}
		}
		// Group {1, 0}: the master is local 1 and runs inline.
		if got := masterWorkerOf(t, m, gs[0]); !slices.Equal(got, []int{1, 0}) {
			t.Errorf("group %v runs on %v", gs[0].Workers(), got)
		}
		// A group without the master.
		if got := masterWorkerOf(t, m, gs[1]); !slices.Equal(got, []int{2}) {
			t.Errorf("group %v runs on %v", gs[1].Workers(), got)
		}
		// Worker 0 is the master's: a Run from elsewhere that needs it fails.
		errc := make(chan error)
		go func() { errc <- p.All().Run(func(int, int) error { return nil }) }()
		if err := <-errc; err == nil || !strings.Contains(err.Error(), "busy") {
			t.Errorf("Run of the master's worker during Do: %v", err)
		}
		if err := m.Run(gs[0], func(l, n int) error {
			if l == 1 {
				return errKernel
			}
			return nil
		}); !errors.Is(err, errKernel) || !strings.Contains(err.Error(), "worker 0") {
			t.Errorf("inline share's error: %v", err)
		}
		return errKernel
	})
	if !errors.Is(err, errKernel) {
		t.Errorf("Do = %v, want errKernel", err)
	}
	if err := p.Do(func(*Master) error { panic("boom") }); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("Do with a panic = %v", err)
	}
}

func masterWorkerOf(t *testing.T, m *Master, g *Group) []int {
	got := make([]int, g.Size())
	err := m.RunBlocks(g, Region{0, 1, 0, g.Size()}, Tile{1, 1}, func(w, m0, m1, n0, n1 int) error {
		got[n0] = w
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}
