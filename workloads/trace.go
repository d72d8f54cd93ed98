package workloads

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/stat"
)

// Request is one request of a trace.
type Request struct {
	ID           int     `json:"id"`
	Workload     string  `json:"workload"`
	Source       string  `json:"source"` // data file and item, e.g. "gsm8k/test.jsonl:17"
	PromptTokens int     `json:"prompt_tokens"`
	OutputTokens int     `json:"output_tokens"`
	Arrival      float64 `json:"arrival"` // seconds from trace start
}

// Trace is a sequence of requests drawn from one workload.
type Trace struct {
	Name     string    `json:"name"`
	Requests []Request `json:"requests"`
	Arrival  string    `json:"arrival"` // "closed" or "poisson:RATE"
	Seed     uint64    `json:"seed"`
}

// Arrival is an arrival process. The zero value is a closed loop: every
// request is ready at time 0 and a replayer sends the next one when a slot
// frees. Rate > 0 is an open loop with Poisson arrivals at Rate requests/s.
type Arrival struct {
	Rate float64
}

// Closed is the closed-loop arrival process.
var Closed = Arrival{}

// Poisson returns Poisson arrivals at rate requests per second.
func Poisson(rate float64) Arrival { return Arrival{Rate: rate} }

// String is the syntax ParseArrival reads: "closed" or "poisson:RATE".
func (a Arrival) String() string {
	if a.Rate <= 0 {
		return "closed"
	}
	return "poisson:" + strconv.FormatFloat(a.Rate, 'g', -1, 64)
}

// ParseArrival reads "closed" or "poisson:RATE" (RATE in requests/s, > 0).
func ParseArrival(s string) (Arrival, error) {
	if s == "closed" {
		return Closed, nil
	}
	if r, ok := strings.CutPrefix(s, "poisson:"); ok {
		rate, err := strconv.ParseFloat(r, 64)
		if err != nil || !(rate > 0) || math.IsInf(rate, 0) {
			return Arrival{}, fmt.Errorf("%q: rate %q must be a positive number of requests per second", s, r)
		}
		return Poisson(rate), nil
	}
	return Arrival{}, fmt.Errorf("%q: want \"closed\" or \"poisson:RATE\" (RATE in requests/s)", s)
}

// ParseArrivals reads a comma-separated list of ParseArrival's syntax
// ("closed,poisson:0.5,poisson:1"): a rate sweep. Errors name the item.
func ParseArrivals(s string) ([]Arrival, error) {
	items, err := ParseList(s)
	if err != nil {
		return nil, err
	}
	out := make([]Arrival, 0, len(items))
	for _, it := range items {
		a, err := ParseArrival(it)
		if err != nil {
			return nil, err
		}
		if slices.Contains(out, a) {
			return nil, fmt.Errorf("%s is listed twice", a)
		}
		out = append(out, a)
	}
	return out, nil
}

// Stream ids of the PCG generators seeded with a trace's seed, so the
// request selection does not change with the arrival process.
const (
	streamArrival = 0x6172726976616c // "arrival"
	streamSelect  = 0x73656c656374   // "select" (+ stratum)
)

// Build draws n requests from the named workload. Each stratum of the
// workload (RULER: qa_1, qa_2; others: one) is visited in turn and yields
// its items in a seeded random order without repeats, reshuffling when it
// runs out, so n equal to the pool size gives every item once. Arrivals are
// 0 for a closed loop; for Poisson the first request arrives at 0 and the
// gaps are exponential with mean 1/rate.
func Build(name string, n int, arrival Arrival, seed uint64) (*Trace, error) {
	if n <= 0 {
		return nil, fmt.Errorf("workloads: %d requests: must be ≥ 1", n)
	}
	if arrival.Rate < 0 || math.IsNaN(arrival.Rate) || math.IsInf(arrival.Rate, 0) {
		return nil, fmt.Errorf("workloads: arrival rate %v: must be ≥ 0 (0 = closed loop)", arrival.Rate)
	}
	pools, err := strata(name)
	if err != nil {
		if _, lerr := Lookup(name); lerr != nil {
			return nil, fmt.Errorf("workloads: %w", lerr)
		}
		return nil, err
	}
	type cursor struct {
		rng   *rand.Rand
		order []int
		next  int
	}
	cur := make([]cursor, len(pools))
	for s := range cur {
		cur[s].rng = rand.New(rand.NewPCG(seed, streamSelect+uint64(s)))
	}
	arr := rand.New(rand.NewPCG(seed, streamArrival))
	t := &Trace{Name: name, Arrival: arrival.String(), Seed: seed, Requests: make([]Request, n)}
	clock := 0.0
	for i := range t.Requests {
		c := &cur[i%len(pools)]
		pool := pools[i%len(pools)]
		if c.next == len(c.order) {
			c.order, c.next = c.rng.Perm(len(pool)), 0
		}
		s := pool[c.order[c.next]]
		c.next++
		if arrival.Rate > 0 && i > 0 {
			clock += arr.ExpFloat64() / arrival.Rate
		}
		t.Requests[i] = Request{ID: i, Workload: name, Source: s.source, PromptTokens: s.prompt, OutputTokens: s.output, Arrival: clock}
	}
	return t, nil
}

// Dist summarizes a token-count distribution. Percentiles are empirical
// (an observed value: the smallest x with CDF(x) ≥ p).
type Dist struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
}

// Summary is a trace without its requests.
type Summary struct {
	Name     string  `json:"name"`
	Source   string  `json:"source"`
	Arrival  string  `json:"arrival"`
	Seed     uint64  `json:"seed"`
	Requests int     `json:"requests"`
	Duration float64 `json:"duration_s"` // last arrival
	Prompt   Dist    `json:"prompt_tokens"`
	Output   Dist    `json:"output_tokens"`
}

// Stats summarizes t's prompt and output lengths.
func Stats(t *Trace) Summary {
	s := Summary{Name: t.Name, Arrival: t.Arrival, Seed: t.Seed, Requests: len(t.Requests)}
	if w, err := Lookup(t.Name); err == nil {
		s.Source = w.Source
	}
	p := make([]float64, len(t.Requests))
	o := make([]float64, len(t.Requests))
	for i, r := range t.Requests {
		p[i], o[i] = float64(r.PromptTokens), float64(r.OutputTokens)
		s.Duration = max(s.Duration, r.Arrival)
	}
	s.Prompt, s.Output = dist(p), dist(o)
	return s
}

func dist(x []float64) Dist {
	if len(x) == 0 {
		return Dist{}
	}
	slices.Sort(x)
	q := func(p float64) float64 { return stat.Quantile(p, stat.Empirical, x, nil) }
	return Dist{Mean: stat.Mean(x, nil), P50: q(0.5), P90: q(0.9), P99: q(0.99), Min: x[0], Max: x[len(x)-1]}
}
