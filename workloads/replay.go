package workloads

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Executor runs a model's forward passes for Replay. The engine implements
// it; this package does not import the engine.
type Executor interface {
	// Prefill runs a prompt of n tokens (ids chosen by the executor,
	// seeded) into slot and returns when its first output token exists.
	Prefill(slot, n int) error
	// Decode runs one decode step for the given slots (batched: GEMMs with
	// M = len(slots)), one new token each.
	Decode(slots []int) error
	// Reset frees a slot's KV cache for a new request.
	Reset(slot int) error
}

// SLO is a per-request latency target, in seconds. A request meets it
// when its TTFT ≤ TTFT and its TPOT ≤ TPOT; a target ≤ 0 is not checked.
type SLO struct {
	TTFT float64 // time to first token, seconds
	TPOT float64 // time per output token after the first, seconds
}

// Met reports whether a request with the given TTFT and TPOT (seconds)
// meets s.
func (s SLO) Met(ttft, tpot float64) bool {
	return (s.TTFT <= 0 || ttft <= s.TTFT) && (s.TPOT <= 0 || tpot <= s.TPOT)
}

// ReplayOptions configure Replay.
type ReplayOptions struct {
	// Batch is the number of slots: at most Batch requests run at once
	// (≥ 1).
	Batch int
	// MaxGenTokens caps each request's output tokens (0: none);
	// MaxPromptTokens caps its prompt tokens (0: none). See CappedLengths.
	MaxGenTokens, MaxPromptTokens int
	// SLO is the per-request target of SLO attainment and goodput.
	SLO SLO
	// Clock is the time source (nil: time.Now); tests inject a fake one.
	Clock func() time.Time
	// Progress, if set, is called after each request finishes with the
	// number finished and the trace's total.
	Progress func(done, total int)
	// Context, if set, stops the replay between forward passes when it is
	// cancelled; Replay then returns its error.
	Context context.Context
}

// RequestResult is one replayed request. Times are seconds on the replay
// clock (see Replay), from the start of the replay.
type RequestResult struct {
	ID     int
	Source string
	// PromptTokens and OutputTokens are the lengths run, after the caps;
	// PromptCapped and OutputCapped say whether a cap cut them.
	PromptTokens, OutputTokens int
	PromptCapped, OutputCapped bool

	Arrival    float64 // the trace's arrival time
	Start      float64 // when its prefill began
	FirstToken float64 // when its prefill returned (its first output token)
	LastToken  float64 // when its last output token was produced
	TTFT       float64 // FirstToken − Arrival (queueing included)
	// TPOT is (LastToken − FirstToken)/(OutputTokens − 1): the mean time
	// per output token after the first; 0 for a one-token output.
	TPOT    float64
	Latency float64 // LastToken − Arrival
	MetSLO  bool    // TTFT and TPOT within ReplayOptions.SLO
}

// ReplayResult is the outcome of replaying a trace. Times are seconds,
// rates per second of the replay clock.
type ReplayResult struct {
	// Requests are the per-request outcomes, in trace order.
	Requests []RequestResult
	// TTFT and Latency summarize every request; TPOT only those with at
	// least two output tokens (TPOTCount of them). Percentiles are
	// empirical (see Dist).
	TTFT, TPOT, Latency Dist
	TPOTCount           int

	// Wall is the replay's duration on the replay clock: real time plus
	// IdleSkipped.
	Wall float64
	// IdleSkipped is the idle time Replay jumped over instead of waiting
	// for the next Poisson arrival.
	IdleSkipped float64
	// PrefillSeconds is the time spent inside Executor.Prefill.
	PrefillSeconds float64

	PromptTokens, OutputTokens   int // summed over requests, after the caps
	PromptsCapped, OutputsCapped int

	DecodeSteps  int // Executor.Decode calls
	MaxDecodeLen int // the most slots one decode step ran

	// OutputTokS is OutputTokens / Wall; PrefillTokS is PromptTokens /
	// PrefillSeconds.
	OutputTokS, PrefillTokS float64
	// SLOAttainment is the fraction of requests that met the SLO
	// (Sandwich §8.1 takes SLO attainment as its primary serving metric).
	SLOAttainment float64
	// Goodput is the number of requests that met the SLO per second of
	// Wall. Sandwich §8.1 defines goodput for batched serving as "the
	// maximum request rate that can be sustained while meeting the SLO
	// attainment goal" (90%, after DistServe): that is a property of a
	// sweep over Poisson rates, not of one replay. Per replay this is the
	// rate of SLO-meeting completions; Sandwich's goodput is the largest
	// arrival rate of a rate sweep whose replay has SLOAttainment ≥ 0.9.
	Goodput float64
}

// CappedLengths returns the prompt and output lengths a replay runs for r:
// the prompt capped at maxPrompt and the output at maxGen (0: no cap). An
// output of fewer than one token is run as one: the prefill always yields
// the first token.
func CappedLengths(r Request, maxPrompt, maxGen int) (prompt, output int) {
	prompt, output = r.PromptTokens, max(r.OutputTokens, 1)
	if maxPrompt > 0 {
		prompt = min(prompt, maxPrompt)
	}
	if maxGen > 0 {
		output = min(output, maxGen)
	}
	return prompt, output
}

// MaxPositions is the most KV-cache positions one slot needs to replay t
// with the given caps: the longest capped prompt + capped output.
func MaxPositions(t *Trace, maxPrompt, maxGen int) int {
	n := 0
	for _, r := range t.Requests {
		p, o := CappedLengths(r, maxPrompt, maxGen)
		n = max(n, p+o)
	}
	return n
}

// running is a request holding a slot.
type running struct {
	res       *RequestResult
	generated int
}

// Replay runs the trace's requests on ex with continuous batching over
// o.Batch slots: iteration-level scheduling as in Orca (Yu et al., OSDI
// 2022) and vLLM (Kwon et al., SOSP 2023). Each iteration first admits
// waiting requests that have arrived, in arrival order, into free slots:
// an admitted request's prefill runs alone (Prefill of its prompt, which
// yields its first output token), and it joins the decode batch. Then one
// batched Decode step runs over every slot whose request still needs
// tokens, one token each. A request finishes after its (capped) output
// tokens and frees its slot (Reset).
//
// The replay clock is wall time since the replay began (o.Clock), plus
// skipped idle time: with Poisson arrivals, when no request is running and
// the next has not arrived yet, Replay advances the clock to that arrival
// instead of sleeping. The skipped time is counted as if it had passed: it
// is in Wall, and a request's TTFT and latency run from its arrival on
// the same clock, so they are what a replay that slept would measure (up
// to the machine idling). With a closed loop (the trace's Arrival
// "closed") nothing is skipped and the replay keeps every slot busy: the
// client keeps Batch requests outstanding, sending the next when one
// finishes, so a request's arrival is the time its slot freed (0 for the
// first Batch) and its TTFT counts the wait for the engine (earlier
// prefills), not the wait behind requests the client had not sent yet.
//
// Prompts are capped at o.MaxPromptTokens and outputs at o.MaxGenTokens
// (CappedLengths); the result counts the capped requests. An Executor
// error stops the replay and is returned naming the request(s).
func Replay(tr *Trace, ex Executor, o ReplayOptions) (*ReplayResult, error) {
	if o.Batch < 1 {
		return nil, fmt.Errorf("workloads: replay: batch %d: must be ≥ 1", o.Batch)
	}
	if o.MaxGenTokens < 0 || o.MaxPromptTokens < 0 {
		return nil, fmt.Errorf("workloads: replay: caps %d (output) and %d (prompt): must be ≥ 0 (0: none)", o.MaxGenTokens, o.MaxPromptTokens)
	}
	n := len(tr.Requests)
	if n == 0 {
		return nil, fmt.Errorf("workloads: replay: trace %q has no requests", tr.Name)
	}
	clock := o.Clock
	if clock == nil {
		clock = time.Now
	}
	ctx := o.Context
	if ctx == nil {
		ctx = context.Background()
	}

	res := &ReplayResult{Requests: make([]RequestResult, n)}
	for i, r := range tr.Requests {
		if r.PromptTokens < 1 {
			return nil, fmt.Errorf("workloads: replay: request %d (%s): %d prompt tokens: must be ≥ 1", r.ID, r.Source, r.PromptTokens)
		}
		p, out := CappedLengths(r, o.MaxPromptTokens, o.MaxGenTokens)
		rr := &res.Requests[i]
		*rr = RequestResult{ID: r.ID, Source: r.Source, PromptTokens: p, OutputTokens: out, Arrival: r.Arrival,
			PromptCapped: p < r.PromptTokens, OutputCapped: out < max(r.OutputTokens, 1)}
		if rr.PromptCapped {
			res.PromptsCapped++
		}
		if rr.OutputCapped {
			res.OutputsCapped++
		}
		res.PromptTokens += p
		res.OutputTokens += out
	}
	// Admission order: by arrival, ties in trace order.
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(res.Requests[a].Arrival, res.Requests[b].Arrival) })

	closed := tr.Arrival == "" || tr.Arrival == Closed.String()
	t0 := clock()
	now := func() float64 { return clock().Sub(t0).Seconds() + res.IdleSkipped }
	slots := make([]*running, o.Batch)
	freed := make([]float64, o.Batch) // when each slot last freed (closed loop)
	next, done := 0, 0
	// arrived is set after an idle skip to the next arrival, so that
	// rounding in the clock arithmetic cannot hold that request back.
	arrived := false
	finish := func(s int, t float64) error {
		r := slots[s].res
		r.LastToken = t
		r.TTFT = r.FirstToken - r.Arrival
		r.Latency = r.LastToken - r.Arrival
		if r.OutputTokens > 1 {
			r.TPOT = (r.LastToken - r.FirstToken) / float64(r.OutputTokens-1)
		}
		r.MetSLO = o.SLO.Met(r.TTFT, r.TPOT)
		slots[s] = nil
		freed[s] = t
		if err := ex.Reset(s); err != nil {
			return fmt.Errorf("workloads: replay: request %d (%s): reset slot %d: %w", r.ID, r.Source, s, err)
		}
		done++
		if o.Progress != nil {
			o.Progress(done, n)
		}
		return nil
	}
	for done < n {
		// Admit arrived requests into free slots; a request that
		// finishes at its prefill frees its slot at once.
		for s := 0; s < o.Batch && next < n; {
			if slots[s] != nil {
				s++
				continue
			}
			r := &res.Requests[order[next]]
			if !arrived && r.Arrival > now() {
				break
			}
			arrived = false
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			next++
			r.Start = max(now(), r.Arrival)
			if closed {
				// A closed-loop client keeps Batch requests outstanding:
				// it sends this one when slot s freed, its arrival.
				r.Arrival = freed[s]
			}
			if err := ex.Prefill(s, r.PromptTokens); err != nil {
				return nil, fmt.Errorf("workloads: replay: request %d (%s): prefill of %d tokens in slot %d: %w", r.ID, r.Source, r.PromptTokens, s, err)
			}
			r.FirstToken = max(now(), r.Start)
			res.PrefillSeconds += r.FirstToken - r.Start
			slots[s] = &running{res: r, generated: 1}
			if r.OutputTokens == 1 {
				if err := finish(s, r.FirstToken); err != nil {
					return nil, err
				}
				continue
			}
			s++
		}
		var active []int
		for s, r := range slots {
			if r != nil {
				active = append(active, s)
			}
		}
		if len(active) == 0 {
			if next < n { // idle until the next arrival: skip it
				if wait := res.Requests[order[next]].Arrival - now(); wait > 0 {
					res.IdleSkipped += wait
				}
				arrived = true
			}
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := ex.Decode(active); err != nil {
			ids := make([]string, len(active))
			for i, s := range active {
				ids[i] = fmt.Sprint(slots[s].res.ID)
			}
			return nil, fmt.Errorf("workloads: replay: decode step %d (requests %s in slots %v): %w", res.DecodeSteps+1, strings.Join(ids, ", "), active, err)
		}
		res.DecodeSteps++
		res.MaxDecodeLen = max(res.MaxDecodeLen, len(active))
		t := now()
		for _, s := range active {
			r := slots[s]
			r.generated++
			if r.generated == r.res.OutputTokens {
				if err := finish(s, t); err != nil {
					return nil, err
				}
			}
		}
	}
	res.Wall = now()
	res.summarize()
	return res, nil
}

// summarize fills the distributions and rates from Requests and Wall.
func (res *ReplayResult) summarize() {
	var ttft, tpot, lat []float64
	met := 0
	for _, r := range res.Requests {
		ttft = append(ttft, r.TTFT)
		lat = append(lat, r.Latency)
		if r.OutputTokens > 1 {
			tpot = append(tpot, r.TPOT)
		}
		if r.MetSLO {
			met++
		}
	}
	res.TTFT, res.TPOT, res.Latency, res.TPOTCount = dist(ttft), dist(tpot), dist(lat), len(tpot)
	res.SLOAttainment = float64(met) / float64(len(res.Requests))
	if res.Wall > 0 {
		res.OutputTokS = float64(res.OutputTokens) / res.Wall
		res.Goodput = float64(met) / res.Wall
	}
	if res.PrefillSeconds > 0 {
		res.PrefillTokS = float64(res.PromptTokens) / res.PrefillSeconds
	}
}
