//go:build !linux

package perfcount

// Set is the counter groups open on every thread of the process.
type Set struct{}

// Open fails: perf_event_open is Linux's.
func Open([][]Event) (*Set, error) {
	return nil, &UnavailableError{Why: "perf_event_open is Linux-only"}
}

func (s *Set) Unsupported() map[string]string { return nil }
func (s *Set) Threads() int                   { return 0 }
func (s *Set) Start() error                   { return &UnavailableError{Why: "perf_event_open is Linux-only"} }
func (s *Set) Stop() (Counts, error) {
	return Counts{}, &UnavailableError{Why: "perf_event_open is Linux-only"}
}
func (s *Set) Read() (Counts, error) {
	return Counts{}, &UnavailableError{Why: "perf_event_open is Linux-only"}
}
func (s *Set) Close() {}
