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
	set   *Set
	rep   Report
	phase string
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

// Begin starts counting phase name.
func (r *Recorder) Begin(name string) {
	if r == nil || r.set == nil {
		return
	}
	r.phase = name
	if err := r.set.Start(); err != nil {
		r.fail(err)
	}
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
