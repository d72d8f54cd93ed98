package perfcount

import "slices"

// UnavailableError says why no counter can be read.
type UnavailableError struct{ Why string }

func (e *UnavailableError) Error() string { return "unavailable: " + e.Why }

// groupRead is one group's read buffer, decoded, with its IDs' names.
type groupRead struct {
	read  Read
	names map[uint64]string
}

// sum adds the groups' values per event, each scaled by its group's
// enabled/running times (Scale). A value whose ID has no name is skipped.
func sum(reads []groupRead) Counts {
	c := Counts{Values: map[string]float64{}, Raw: map[string]uint64{}, RunningFraction: map[string]float64{}}
	enabled, running := map[string]uint64{}, map[string]uint64{}
	var seen []string
	for _, g := range reads {
		for _, v := range g.read.Values {
			name, ok := g.names[v.ID]
			if !ok {
				continue
			}
			if !slices.Contains(seen, name) {
				seen = append(seen, name)
			}
			if g.read.Enabled == 0 {
				continue // the thread did not run while enabled
			}
			enabled[name] += g.read.Enabled
			running[name] += g.read.Running
			if est, ok := Scale(v.Value, g.read.Enabled, g.read.Running); ok {
				c.Values[name] += est
				c.Raw[name] += v.Value
			}
		}
	}
	for _, name := range seen {
		if running[name] == 0 {
			delete(c.Values, name)
			delete(c.Raw, name)
			c.NotCounted = append(c.NotCounted, name)
			continue
		}
		c.RunningFraction[name] = float64(running[name]) / float64(enabled[name])
	}
	slices.Sort(c.NotCounted)
	return c
}

// Recorder counts the phases of a run one after another. A nil Recorder
// records nothing; a Recorder whose counters could not be opened records
// why, and its Report says "unavailable: <why>".
type Recorder struct {
	set   counterSet
	rep   Report
	phase string
	// last is the phase's counts at the previous Mark (zero at Begin);
	// ops the counts per operator class of the phase so far, in the order
	// the classes first ended.
	last Counts
	ops  []Phase
}

// counterSet is what a Recorder reads: *Set, or a recorded one in tests.
type counterSet interface {
	Start() error
	Read() (Counts, error)
	Stop() (Counts, error)
	Close()
	Threads() int
	Unsupported() map[string]string
}

// NewRecorder opens the groups (DefaultGroups when nil) on every thread of
// the process (Open).
func NewRecorder(groups [][]Event) *Recorder {
	r := &Recorder{}
	s, err := Open(groups)
	if err != nil {
		r.rep.Unavailable = err.Error()
		if _, ok := err.(*UnavailableError); !ok {
			r.rep.Unavailable = "unavailable: " + err.Error()
		}
		return r
	}
	r.set = s
	r.rep.Unsupported = s.Unsupported()
	r.rep.Scope = "user space, every thread of the process, summed"
	return r
}

func (r *Recorder) fail(err error) {
	r.rep.Unavailable = "unavailable: " + err.Error()
	r.rep.Phases = nil
	r.set.Close()
	r.set = nil
}

// Counting reports whether the counters are open (false for a nil
// Recorder, or one whose counters are unavailable or failed).
func (r *Recorder) Counting() bool { return r != nil && r.set != nil }

// Begin starts counting phase name.
func (r *Recorder) Begin(name string) {
	if r == nil || r.set == nil {
		return
	}
	r.phase = name
	r.last, r.ops = Counts{}, nil
	if err := r.set.Start(); err != nil {
		r.fail(err)
	}
}

// BetweenOperators is the operator class End gives the counts after the
// phase's last Mark: sampling, bookkeeping and the workers' spinning
// between forward calls.
const BetweenOperators = "between operators"

// Mark attributes the counts since the previous Mark (or since Begin) to
// operator class op of the current phase: call it when an operator ends,
// with nothing else timed in between (the engine's OpObserver does). It
// reads every thread's counters without stopping them (Set.Read: one
// read(2) per thread and group), which the counts include. Outside a phase
// it does nothing.
func (r *Recorder) Mark(op string) {
	if r == nil || r.set == nil || r.phase == "" {
		return
	}
	c, err := r.set.Read()
	if err != nil {
		r.fail(err)
		return
	}
	r.addOp(op, c.Sub(r.last))
	r.last = c
}

// addOp adds d to the phase's operator class op.
func (r *Recorder) addOp(op string, d Counts) {
	for i := range r.ops {
		if r.ops[i].Name == op {
			r.ops[i].Counts = r.ops[i].Counts.Add(d)
			return
		}
	}
	r.ops = append(r.ops, Phase{Name: op, Counts: d})
}

// End stops counting the phase Begin started and keeps its counts; without
// a Begin it does nothing.
func (r *Recorder) End() {
	if r == nil || r.set == nil || r.phase == "" {
		return
	}
	name := r.phase
	r.phase = ""
	c, err := r.set.Stop()
	if err != nil {
		r.fail(err)
		return
	}
	r.rep.Phases = append(r.rep.Phases, Phase{Name: name, Counts: c, Metrics: c.Metrics()})
	if len(r.ops) > 0 {
		if rest := c.Sub(r.last); rest.any() {
			r.addOp(BetweenOperators, rest)
		}
		for _, o := range r.ops {
			o.Phase = name
			o.Metrics = o.Counts.Metrics()
			r.rep.Operators = append(r.rep.Operators, o)
		}
	}
	r.ops = nil
}

// Report closes the counters and returns what was recorded (nil for a
// nil Recorder).
func (r *Recorder) Report() *Report {
	if r == nil {
		return nil
	}
	if r.set != nil {
		r.set.Close()
		r.set = nil
	}
	rep := r.rep
	return &rep
}
