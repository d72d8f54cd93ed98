package workloads

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakeExec is an Executor on a fake clock: a prefill of n tokens takes
// n·prefillPerTok, a decode step decodeStep (+ decodePerSlot per slot). It
// logs every call and checks the slot discipline.
type fakeExec struct {
	t             *testing.T
	now           time.Time
	prefillPerTok time.Duration
	decodeStep    time.Duration
	decodePerSlot time.Duration
	batch         int

	log      []string
	busy     map[int]bool
	maxBusy  int
	failOn   func(op string, slot, n int) error
	decodes  map[int]int // per slot since its prefill
	perSlots []int       // decodes per finished request, in finishing order
}

func newFake(t *testing.T, batch int) *fakeExec {
	return &fakeExec{t: t, now: time.Unix(1000, 0), prefillPerTok: 10 * time.Millisecond, decodeStep: 100 * time.Millisecond,
		batch: batch, busy: map[int]bool{}, decodes: map[int]int{}}
}

func (f *fakeExec) clock() time.Time { return f.now }

func (f *fakeExec) Prefill(slot, n int) error {
	f.log = append(f.log, fmt.Sprintf("prefill %d %d", slot, n))
	if slot < 0 || slot >= f.batch {
		f.t.Errorf("prefill into slot %d of %d", slot, f.batch)
	}
	if f.busy[slot] {
		f.t.Errorf("prefill into busy slot %d", slot)
	}
	if f.failOn != nil {
		if err := f.failOn("prefill", slot, n); err != nil {
			return err
		}
	}
	f.busy[slot] = true
	f.decodes[slot] = 0
	busy := 0
	for _, b := range f.busy {
		if b {
			busy++
		}
	}
	f.maxBusy = max(f.maxBusy, busy)
	f.now = f.now.Add(time.Duration(n) * f.prefillPerTok)
	return nil
}

func (f *fakeExec) Decode(slots []int) error {
	f.log = append(f.log, fmt.Sprintf("decode %v", slots))
	if len(slots) > f.batch {
		f.t.Errorf("decode of %d slots with batch %d", len(slots), f.batch)
	}
	for i, s := range slots {
		if !f.busy[s] {
			f.t.Errorf("decode of free slot %d", s)
		}
		if slices.Index(slots, s) != i {
			f.t.Errorf("slot %d twice in one decode step %v", s, slots)
		}
		f.decodes[s]++
	}
	if f.failOn != nil {
		if err := f.failOn("decode", -1, len(slots)); err != nil {
			return err
		}
	}
	f.now = f.now.Add(f.decodeStep + time.Duration(len(slots))*f.decodePerSlot)
	return nil
}

func (f *fakeExec) Reset(slot int) error {
	f.log = append(f.log, fmt.Sprintf("reset %d", slot))
	if !f.busy[slot] {
		f.t.Errorf("reset of free slot %d", slot)
	}
	if f.failOn != nil {
		if err := f.failOn("reset", slot, 0); err != nil {
			return err
		}
	}
	f.busy[slot] = false
	f.perSlots = append(f.perSlots, f.decodes[slot])
	return nil
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(1, math.Abs(b)) }

func trace(reqs ...Request) *Trace {
	for i := range reqs {
		reqs[i].ID = i
		reqs[i].Source = fmt.Sprintf("test:%d", i)
	}
	return &Trace{Name: "test", Requests: reqs, Arrival: "closed"}
}

// TestReplaySchedule checks a hand-computed schedule: batch 2, closed loop,
// prefill 10 ms/token, decode 100 ms/step.
//
//	t=0     r0 prefill 10 tok → first token 0.10
//	t=0.10  r1 prefill 20 tok → first token 0.30
//	t=0.30  decode [0 1] → 0.40: r0 has 2 of 3, r1 2 of 2 (done, slot 1 free)
//	t=0.40  r2 sent (slot 1 freed) and prefilled, 5 tok → 0.45: 1 of 1 (done at its prefill)
//	t=0.45  decode [0] → 0.55: r0 done
func TestReplaySchedule(t *testing.T) {
	f := newFake(t, 2)
	tr := trace(Request{PromptTokens: 10, OutputTokens: 3}, Request{PromptTokens: 20, OutputTokens: 2}, Request{PromptTokens: 5, OutputTokens: 1})
	var progress []string
	res, err := Replay(tr, f, ReplayOptions{Batch: 2, SLO: SLO{TTFT: 0.35, TPOT: 0.2}, Clock: f.clock,
		Progress: func(done, total int) { progress = append(progress, fmt.Sprintf("%d/%d", done, total)) }})
	if err != nil {
		t.Fatal(err)
	}
	wantLog := []string{"prefill 0 10", "prefill 1 20", "decode [0 1]", "reset 1", "prefill 1 5", "reset 1", "decode [0]", "reset 0"}
	if !slices.Equal(f.log, wantLog) {
		t.Errorf("calls\n got %q\nwant %q", f.log, wantLog)
	}
	if !slices.Equal(progress, []string{"1/3", "2/3", "3/3"}) {
		t.Errorf("progress %v", progress)
	}
	want := []struct{ start, first, last, ttft, tpot, lat float64 }{
		{0, 0.10, 0.55, 0.10, 0.225, 0.55},
		{0.10, 0.30, 0.40, 0.30, 0.10, 0.40},
		{0.40, 0.45, 0.45, 0.05, 0, 0.05},
	}
	for i, w := range want {
		r := res.Requests[i]
		got := []float64{r.Start, r.FirstToken, r.LastToken, r.TTFT, r.TPOT, r.Latency}
		for j, v := range []float64{w.start, w.first, w.last, w.ttft, w.tpot, w.lat} {
			if !near(got[j], v) {
				t.Errorf("request %d: start, first, last, TTFT, TPOT, latency = %v, want %+v", i, got, w)
				break
			}
		}
	}
	if got := []bool{res.Requests[0].MetSLO, res.Requests[1].MetSLO, res.Requests[2].MetSLO}; !slices.Equal(got, []bool{false, true, true}) {
		t.Errorf("met SLO %v, want [false true true] (r0 TPOT 0.225 > 0.2)", got)
	}
	checks := []struct {
		name      string
		got, want float64
	}{
		{"wall", res.Wall, 0.55},
		{"prefill seconds", res.PrefillSeconds, 0.35},
		{"output tok/s", res.OutputTokS, 6 / 0.55},
		{"prefill tok/s", res.PrefillTokS, 35 / 0.35},
		{"SLO attainment", res.SLOAttainment, 2.0 / 3},
		{"goodput", res.Goodput, 2 / 0.55},
		{"TTFT mean", res.TTFT.Mean, (0.10 + 0.30 + 0.05) / 3},
		{"TTFT p50", res.TTFT.P50, 0.10},
		{"TTFT p90", res.TTFT.P90, 0.30},
		{"TTFT p99", res.TTFT.P99, 0.30},
		{"TPOT mean", res.TPOT.Mean, (0.225 + 0.10) / 2},
		{"TPOT p50", res.TPOT.P50, 0.10},
		{"latency p90", res.Latency.P90, 0.55},
		{"idle skipped", res.IdleSkipped, 0},
	}
	for _, c := range checks {
		if !near(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if res.TPOTCount != 2 || res.DecodeSteps != 2 || res.MaxDecodeLen != 2 || res.OutputTokens != 6 || res.PromptTokens != 35 {
		t.Errorf("TPOT count %d, decode steps %d, max decode %d, output %d, prompt %d; want 2, 2, 2, 6, 35",
			res.TPOTCount, res.DecodeSteps, res.MaxDecodeLen, res.OutputTokens, res.PromptTokens)
	}
}

// TestReplayBatchBound: a closed loop of 10 requests on 3 slots keeps at
// most 3 running, every decode step covers only running slots, and each
// request gets exactly output−1 decode steps.
func TestReplayBatchBound(t *testing.T) {
	var reqs []Request
	for i := range 10 {
		reqs = append(reqs, Request{PromptTokens: 3 + i, OutputTokens: 1 + (i*7)%5})
	}
	f := newFake(t, 3)
	f.decodePerSlot = time.Millisecond
	res, err := Replay(trace(reqs...), f, ReplayOptions{Batch: 3, Clock: f.clock})
	if err != nil {
		t.Fatal(err)
	}
	if f.maxBusy != 3 || res.MaxDecodeLen > 3 {
		t.Errorf("at most %d slots busy, %d in one decode step; want 3 and ≤ 3", f.maxBusy, res.MaxDecodeLen)
	}
	var want, got []int
	for _, r := range reqs {
		want = append(want, r.OutputTokens-1)
	}
	got = slices.Clone(f.perSlots)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("decode steps per request %v, want %v", got, want)
	}
	for i, r := range res.Requests {
		if r.Start < 0 || r.FirstToken <= r.Start || r.LastToken < r.FirstToken {
			t.Errorf("request %d: start %v, first %v, last %v", i, r.Start, r.FirstToken, r.LastToken)
		}
	}
	// Batch 1 is sequential: each request starts when the previous ends.
	f = newFake(t, 1)
	res, err = Replay(trace(reqs[:4]...), f, ReplayOptions{Batch: 1, Clock: f.clock})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < 4; i++ {
		if !near(res.Requests[i].Start, res.Requests[i-1].LastToken) {
			t.Errorf("batch 1: request %d starts at %v, the previous ended at %v", i, res.Requests[i].Start, res.Requests[i-1].LastToken)
		}
	}
}

// TestReplayPoisson: idle gaps before an arrival are skipped (no sleeping
// on the fake clock) but counted, and a request arriving while the only
// slot is busy waits, its TTFT including the wait.
func TestReplayPoisson(t *testing.T) {
	f := newFake(t, 1)
	tr := trace(
		Request{PromptTokens: 10, OutputTokens: 2, Arrival: 0},    // 0 → 0.1 → 0.2
		Request{PromptTokens: 10, OutputTokens: 2, Arrival: 5},    // idle 4.8 skipped; 5 → 5.1 → 5.2
		Request{PromptTokens: 10, OutputTokens: 1, Arrival: 5.05}, // waits for the slot; 5.2 → 5.3
		Request{PromptTokens: 10, OutputTokens: 1, Arrival: 20},   // idle 14.7 skipped; 20 → 20.1
	)
	tr.Arrival = "poisson:0.2"
	res, err := Replay(tr, f, ReplayOptions{Batch: 1, Clock: f.clock})
	if err != nil {
		t.Fatal(err)
	}
	if real := f.now.Sub(time.Unix(1000, 0)).Seconds(); !near(real, 0.6) {
		t.Errorf("fake time advanced %v s, want 0.6 (4 prefills of 0.1 s, 2 decode steps of 0.1 s)", real)
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"idle skipped", res.IdleSkipped, 4.8 + 14.7},
		{"wall", res.Wall, 20.1},
		{"r1 start", res.Requests[1].Start, 5},
		{"r1 TTFT", res.Requests[1].TTFT, 0.1},
		{"r2 start", res.Requests[2].Start, 5.2},
		{"r2 TTFT", res.Requests[2].TTFT, 5.3 - 5.05},
		{"r3 start", res.Requests[3].Start, 20},
		{"r3 latency", res.Requests[3].Latency, 0.1},
		{"goodput (no SLO: all met)", res.Goodput, 4 / 20.1},
	} {
		if !near(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

// TestReplayBuiltPoissonTrace replays a real Poisson trace: arrivals are
// respected (no request starts before it arrives) on a fast executor.
func TestReplayBuiltPoissonTrace(t *testing.T) {
	tr, err := Build("gsm8k", 12, Poisson(4), 3)
	if err != nil {
		t.Fatal(err)
	}
	f := newFake(t, 2)
	f.prefillPerTok = 100 * time.Microsecond
	res, err := Replay(tr, f, ReplayOptions{Batch: 2, MaxGenTokens: 4, Clock: f.clock})
	if err != nil {
		t.Fatal(err)
	}
	last := tr.Requests[len(tr.Requests)-1].Arrival
	if res.Wall < last || res.IdleSkipped <= 0 {
		t.Errorf("wall %v before the last arrival %v, or nothing skipped (%v)", res.Wall, last, res.IdleSkipped)
	}
	for _, r := range res.Requests {
		if r.Start < r.Arrival || r.TTFT <= 0 {
			t.Errorf("request %d: arrival %v, start %v, TTFT %v", r.ID, r.Arrival, r.Start, r.TTFT)
		}
		if r.OutputTokens > 4 {
			t.Errorf("request %d: %d output tokens, cap 4", r.ID, r.OutputTokens)
		}
	}
}

func TestReplayCaps(t *testing.T) {
	f := newFake(t, 2)
	tr := trace(Request{PromptTokens: 100, OutputTokens: 50}, Request{PromptTokens: 6, OutputTokens: 3}, Request{PromptTokens: 8, OutputTokens: 0})
	res, err := Replay(tr, f, ReplayOptions{Batch: 2, MaxPromptTokens: 8, MaxGenTokens: 4, Clock: f.clock})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(f.log, "prefill 0 8") || slices.ContainsFunc(f.log, func(s string) bool { return strings.HasSuffix(s, " 100") }) {
		t.Errorf("the 100-token prompt was not capped at 8: %q", f.log)
	}
	got := [][2]int{}
	for _, r := range res.Requests {
		got = append(got, [2]int{r.PromptTokens, r.OutputTokens})
	}
	if !slices.Equal(got, [][2]int{{8, 4}, {6, 3}, {8, 1}}) {
		t.Errorf("lengths %v, want [[8 4] [6 3] [8 1]]", got)
	}
	if res.PromptsCapped != 1 || res.OutputsCapped != 1 || !res.Requests[0].PromptCapped || !res.Requests[0].OutputCapped || res.Requests[1].PromptCapped {
		t.Errorf("capped: prompts %d, outputs %d, r0 %v/%v, r1 %v; want 1, 1, true/true, false",
			res.PromptsCapped, res.OutputsCapped, res.Requests[0].PromptCapped, res.Requests[0].OutputCapped, res.Requests[1].PromptCapped)
	}
	if n := MaxPositions(tr, 8, 4); n != 12 {
		t.Errorf("MaxPositions = %d, want 12", n)
	}
	if p, o := CappedLengths(Request{PromptTokens: 9, OutputTokens: 7}, 0, 0); p != 9 || o != 7 {
		t.Errorf("uncapped lengths %d, %d", p, o)
	}
}

func TestReplayErrors(t *testing.T) {
	boom := errors.New("boom")
	reqs := []Request{{PromptTokens: 4, OutputTokens: 3}, {PromptTokens: 7, OutputTokens: 3}, {PromptTokens: 5, OutputTokens: 2}}
	cases := []struct {
		name   string
		failOn func(op string, slot, n int) error
		want   []string
	}{
		{"prefill", func(op string, _, n int) error {
			if op == "prefill" && n == 7 {
				return boom
			}
			return nil
		}, []string{"request 1 (test:1)", "prefill of 7 tokens", "boom"}},
		{"decode", func(op string, _, n int) error {
			if op == "decode" && n == 2 {
				return boom
			}
			return nil
		}, []string{"decode step 1", "requests 0, 1", "boom"}},
		{"reset", func(op string, slot, _ int) error {
			if op == "reset" {
				return boom
			}
			return nil
		}, []string{"reset slot", "boom"}},
	}
	for _, c := range cases {
		f := newFake(t, 2)
		f.failOn = c.failOn
		_, err := Replay(trace(slices.Clone(reqs)...), f, ReplayOptions{Batch: 2, Clock: f.clock})
		if err == nil || !errors.Is(err, boom) {
			t.Errorf("%s: error %v, want one wrapping boom", c.name, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", c.name, err, w)
			}
		}
	}

	f := newFake(t, 1)
	if _, err := Replay(trace(Request{PromptTokens: 0, OutputTokens: 1}), f, ReplayOptions{Batch: 1}); err == nil || !strings.Contains(err.Error(), "request 0 (test:0): 0 prompt tokens") {
		t.Errorf("empty prompt: %v", err)
	}
	if _, err := Replay(trace(reqs[0]), f, ReplayOptions{Batch: 0}); err == nil || !strings.Contains(err.Error(), "batch 0") {
		t.Errorf("batch 0: %v", err)
	}
	if _, err := Replay(&Trace{Name: "none"}, f, ReplayOptions{Batch: 1}); err == nil || !strings.Contains(err.Error(), "no requests") {
		t.Errorf("empty trace: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	f = newFake(t, 1)
	f.failOn = func(op string, _, _ int) error {
		if op == "decode" {
			cancel()
		}
		return nil
	}
	if _, err := Replay(trace(slices.Clone(reqs)...), f, ReplayOptions{Batch: 1, Clock: f.clock, Context: ctx}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled replay: %v", err)
	}
	if n := strings.Count(strings.Join(f.log, ","), "decode"); n != 1 {
		t.Errorf("%d decode steps after the cancel, want it to stop after the first: %q", n, f.log)
	}
}

func TestSLOMet(t *testing.T) {
	for _, c := range []struct {
		slo        SLO
		ttft, tpot float64
		want       bool
	}{
		{SLO{}, 100, 100, true},
		{SLO{TTFT: 1}, 1, 100, true},
		{SLO{TTFT: 1}, 1.01, 0, false},
		{SLO{TPOT: 0.1}, 100, 0.1, true},
		{SLO{TTFT: 1, TPOT: 0.1}, 0.5, 0.2, false},
	} {
		if got := c.slo.Met(c.ttft, c.tpot); got != c.want {
			t.Errorf("%+v.Met(%v, %v) = %v", c.slo, c.ttft, c.tpot, got)
		}
	}
}
