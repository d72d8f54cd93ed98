package perfcount

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Fixtures: read(2) buffers of counter groups laid out byte for byte as
// perf_event_open(2) documents them (little endian, as on x86-64 and
// arm64 Linux), with values of the size a 1 s decode on one core gives.
// They are written out here, not produced by AppendRead, so the layout is
// checked independently of the encoder.
const (
	// PERF_FORMAT_GROUP|TOTAL_TIME_ENABLED|TOTAL_TIME_RUNNING (0xb), nr 2:
	// cycles 3_000_000_000 (0xb2d05e00), instructions 1_500_000_000
	// (0x59682f00); enabled 1_000_000_000 ns (0x3b9aca00), running
	// 250_000_000 ns (0x0ee6b280): multiplexed, counting a quarter of the time.
	fixtureGroupMux = "0200000000000000" + // nr
		"00ca9a3b00000000" + // time_enabled
		"80b2e60e00000000" + // time_running
		"005ed0b200000000" + // value: cycles
		"002f685900000000" // value: instructions

	// PERF_FORMAT_GROUP|TOTAL_TIME_ENABLED|TOTAL_TIME_RUNNING|ID (0xf), nr 4:
	// LLC-loads 12_345_678 (0xbc614e) id 0x101, LLC-load-misses 2_345_678
	// (0x23cace) id 0x102, dTLB-loads 987_654_321 (0x3ade68b1) id 0x103,
	// dTLB-load-misses 123_456 (0x1e240) id 0x104; enabled = running =
	// 500_000_000 ns (0x1dcd6500).
	fixtureGroupID = "0400000000000000" +
		"0065cd1d00000000" +
		"0065cd1d00000000" +
		"4e61bc0000000000" + "0101000000000000" +
		"ceca230000000000" + "0201000000000000" +
		"b168de3a00000000" + "0301000000000000" +
		"40e2010000000000" + "0401000000000000"

	// read_format TOTAL_TIME_ENABLED|TOTAL_TIME_RUNNING|ID|LOST (0x17),
	// no group: value 42, enabled 10, running 5, id 7, lost 1.
	fixtureSingle = "2a00000000000000" + "0a00000000000000" + "0500000000000000" + "0700000000000000" + "0100000000000000"
)

func fixture(t *testing.T, h string) []byte {
	t.Helper()
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("fixtures are little endian")
	}
	b, err := hex.DecodeString(h)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseReadFixtures(t *testing.T) {
	r, err := ParseRead(fixture(t, fixtureGroupMux), FormatGroup|FormatTotalTimeEnabled|FormatTotalTimeRunning)
	if err != nil {
		t.Fatal(err)
	}
	if r.Enabled != 1e9 || r.Running != 250e6 || len(r.Values) != 2 || r.Values[0].Value != 3e9 || r.Values[1].Value != 1.5e9 {
		t.Fatalf("mux fixture: %+v", r)
	}
	if est, ok := Scale(r.Values[0].Value, r.Enabled, r.Running); !ok || est != 12e9 {
		t.Errorf("scaled cycles %g %v, want 12e9 (×4 for running a quarter of the time)", est, ok)
	}

	r, err = ParseRead(fixture(t, fixtureGroupID), FormatGroup|FormatTotalTimeEnabled|FormatTotalTimeRunning|FormatID)
	if err != nil {
		t.Fatal(err)
	}
	want := []ReadValue{{12345678, 0x101, 0}, {2345678, 0x102, 0}, {987654321, 0x103, 0}, {123456, 0x104, 0}}
	if r.Enabled != 5e8 || r.Running != 5e8 || len(r.Values) != 4 {
		t.Fatalf("id fixture: %+v", r)
	}
	for i, v := range want {
		if r.Values[i] != v {
			t.Errorf("value %d = %+v, want %+v", i, r.Values[i], v)
		}
	}
	// The encoder writes the same bytes.
	if got := AppendRead(nil, r, FormatGroup|FormatTotalTimeEnabled|FormatTotalTimeRunning|FormatID); !bytes.Equal(got, fixture(t, fixtureGroupID)) {
		t.Errorf("AppendRead differs from the fixture:\n%x\n%s", got, fixtureGroupID)
	}

	r, err = ParseRead(fixture(t, fixtureSingle), FormatTotalTimeEnabled|FormatTotalTimeRunning|FormatID|FormatLost)
	if err != nil {
		t.Fatal(err)
	}
	if r.Enabled != 10 || r.Running != 5 || r.Values[0] != (ReadValue{42, 7, 1}) {
		t.Errorf("single fixture: %+v", r)
	}
}

func TestParseReadErrors(t *testing.T) {
	g := uint64(FormatGroup | FormatTotalTimeEnabled | FormatTotalTimeRunning)
	mux := fixture(t, fixtureGroupMux)
	for _, tc := range []struct {
		buf    []byte
		format uint64
		want   string
	}{
		{mux[:len(mux)-3], g, "not a whole number of u64"},
		{mux[:len(mux)-8], g, "want 5 for nr = 2"},
		{append(append([]byte{}, mux...), make([]byte, 8)...), g, "want 5 for nr = 2"},
		{make([]byte, 8), g, "nr = 0"},
		{mux[:8], g, "ends before time_enabled"},
		{nil, g, "empty group read buffer"},
		{mux, FormatTotalTimeEnabled, "want 2 for read_format"},
		{binary.LittleEndian.AppendUint64(nil, 1<<40), g, "nr = 1099511627776"},
	} {
		if _, err := ParseRead(tc.buf, tc.format); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseRead(%x, %#x): %v, want %q", tc.buf, tc.format, err, tc.want)
		}
	}
}

func TestScale(t *testing.T) {
	for _, tc := range []struct {
		v, e, r uint64
		want    float64
		ok      bool
	}{
		{100, 10, 10, 100, true},
		{100, 10, 5, 200, true},
		{100, 10, 0, 0, false},
		{100, 0, 0, 0, false},
		{7, 3, 4, 7, true}, // running > enabled (rounding in the kernel): unscaled
	} {
		if got, ok := Scale(tc.v, tc.e, tc.r); got != tc.want || ok != tc.ok {
			t.Errorf("Scale(%d,%d,%d) = %g %v, want %g %v", tc.v, tc.e, tc.r, got, ok, tc.want, tc.ok)
		}
	}
}

// TestSumAndMetrics adds the fixtures of two threads, one multiplexed,
// and one group that never ran.
func TestSumAndMetrics(t *testing.T) {
	names1 := map[uint64]string{1: "cycles", 2: "instructions", 3: "stalled-cycles-backend", 4: "bus-cycles"}
	names2 := map[uint64]string{0x101: "LLC-loads", 0x102: "LLC-load-misses", 0x103: "dTLB-loads", 0x104: "dTLB-load-misses"}
	mux, _ := ParseRead(fixture(t, fixtureGroupMux), FormatGroup|FormatTotalTimeEnabled|FormatTotalTimeRunning)
	mux.Values[0].ID, mux.Values[1].ID = 1, 2
	full := Read{Enabled: 1e9, Running: 1e9, Values: []ReadValue{{1e9, 1, 0}, {2e9, 2, 0}, {4e8, 3, 0}, {1e7, 4, 0}}}
	idle := Read{Enabled: 0, Running: 0, Values: []ReadValue{{0, 1, 0}, {0, 2, 0}}} // a thread that never ran
	id, _ := ParseRead(fixture(t, fixtureGroupID), FormatGroup|FormatTotalTimeEnabled|FormatTotalTimeRunning|FormatID)
	never := Read{Enabled: 5e8, Running: 0, Values: id.Values}
	c := sum([]groupRead{{mux, names1}, {full, names1}, {idle, names1}, {id, names2}})
	if c.Values["cycles"] != 13e9 || c.Values["instructions"] != 8e9 || c.Raw["cycles"] != 4e9 {
		t.Errorf("cycles %g instructions %g raw %d", c.Values["cycles"], c.Values["instructions"], c.Raw["cycles"])
	}
	if f := c.RunningFraction["cycles"]; math.Abs(f-0.625) > 1e-12 {
		t.Errorf("running fraction %g, want 0.625", f)
	}
	m := map[string]float64{}
	for _, x := range c.Metrics() {
		m[x.Name] = x.Value
	}
	for name, want := range map[string]float64{
		"IPC":                    8.0 / 13,
		"LLC loads PKI":          1000 * 12345678 / 8e9,
		"LLC miss ratio":         2345678.0 / 12345678,
		"dTLB miss ratio":        123456.0 / 987654321,
		"bus cycles PKI":         1000 * 1e7 / 8e9,
		"backend stall fraction": 4e8 / 13e9,
	} {
		if math.Abs(m[name]-want) > 1e-12*math.Abs(want) {
			t.Errorf("%s = %g, want %g", name, m[name], want)
		}
	}
	c = sum([]groupRead{{full, names1}, {never, names2}})
	if len(c.NotCounted) != 4 || c.NotCounted[0] != "LLC-load-misses" {
		t.Errorf("not counted %v", c.NotCounted)
	}
	if _, ok := c.Values["LLC-loads"]; ok {
		t.Error("a group that never ran has values")
	}
}

// TestOpenHere: on this machine the counters either work or say why not.
func TestOpenHere(t *testing.T) {
	s, err := Open(nil)
	if err != nil {
		var ue *UnavailableError
		if !errors.As(err, &ue) || !strings.HasPrefix(err.Error(), "unavailable: ") || !strings.Contains(err.Error(), "perf_event_paranoid=") && !strings.Contains(err.Error(), "Linux-only") {
			t.Fatalf("Open: %v, want an unavailable error naming perf_event_paranoid", err)
		}
		t.Logf("counters %v", err)
		rec := NewRecorder(nil)
		rec.Begin("prefill")
		rec.End()
		rep := rec.Report()
		if rep.Unavailable != err.Error() || len(rep.Phases) != 0 {
			t.Errorf("recorder report %+v", rep)
		}
		var b bytes.Buffer
		if werr := rep.WriteText(&b); werr != nil || b.String() != "hardware counters: "+err.Error()+"\n" {
			t.Errorf("text %q", b.String())
		}
		return
	}
	defer s.Close()
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	x := 1.0
	for i := range 10_000_000 {
		x += float64(i) * 1e-9
	}
	c, err := s.Stop()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("counts %+v (x %g), unsupported %v", c, x, s.Unsupported())
	if c.Values["instructions"] < 1e7 && c.Values["cycles"] <= 0 {
		t.Errorf("counted nothing: %+v", c)
	}
}

func TestReportTextAndPlot(t *testing.T) {
	dir := t.TempDir()
	un := &Report{Unavailable: "unavailable: perf_event_open cycles: no such file or directory, perf_event_paranoid=2"}
	var b bytes.Buffer
	if err := un.WriteText(&b); err != nil || b.String() != "hardware counters: "+un.Unavailable+"\n" {
		t.Errorf("unavailable text %q", b.String())
	}
	if err := un.WritePlot(filepath.Join(dir, "un.png")); err != nil {
		t.Fatal(err)
	}
	mk := func(name string, cyc, ins, llc, miss float64) Phase {
		c := Counts{Values: map[string]float64{"cycles": cyc, "instructions": ins, "LLC-loads": llc, "LLC-load-misses": miss},
			RunningFraction: map[string]float64{"cycles": 1, "instructions": 1, "LLC-loads": 0.5, "LLC-load-misses": 0.5}}
		return Phase{Name: name, Counts: c, Metrics: c.Metrics()}
	}
	rep := &Report{Scope: "test", Phases: []Phase{mk("prefill", 1e9, 2.5e9, 1e6, 1e5), mk("decode", 1e9, 0.6e9, 8e6, 4e6)},
		Unsupported: map[string]string{"bus-cycles": "perf_event_open bus-cycles: no such file or directory"}}
	b.Reset()
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"hardware counters (test):", "IPC", "2.5", "0.6", "LLC-loads", "*", "not supported here: bus-cycles"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
	for _, name := range []string{"phases.png", "phases.svg"} {
		if err := rep.WritePlot(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
		if st, err := os.Stat(filepath.Join(dir, name)); err != nil || st.Size() < 1000 {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := rep.WritePlot(filepath.Join(dir, "x.gif")); err == nil || !strings.Contains(err.Error(), "want .png, .svg or .pdf") {
		t.Errorf("gif: %v", err)
	}
	var nilRep *Report
	if nilRep.WriteText(&b) != nil {
		t.Error("nil report")
	}
}

// recordedSet replays cumulative counts, as a Set's Read returns them
// between Start and Stop.
type recordedSet struct {
	reads []Counts
	i     int
}

func (s *recordedSet) Start() error { s.i = 0; return nil }
func (s *recordedSet) Read() (Counts, error) {
	c := s.reads[s.i]
	s.i++
	return c, nil
}
func (s *recordedSet) Stop() (Counts, error)          { return s.Read() }
func (s *recordedSet) Close()                         {}
func (s *recordedSet) Threads() int                   { return 2 }
func (s *recordedSet) Unsupported() map[string]string { return nil }

// TestRecorderOperators: Mark attributes each read's increase to the
// operator class that just ended, classes accumulate over calls, the rest
// after the last Mark is "between operators", and the classes sum to the
// phase. The cumulative counts are sums of real counter-group buffers
// (the fixtures) scaled by 1, 2, 3, ...
func TestRecorderOperators(t *testing.T) {
	names := map[uint64]string{1: "cycles", 2: "instructions"}
	mux, err := ParseRead(fixture(t, fixtureGroupMux), FormatGroup|FormatTotalTimeEnabled|FormatTotalTimeRunning)
	if err != nil {
		t.Fatal(err)
	}
	mux.Values[0].ID, mux.Values[1].ID = 1, 2
	at := func(k uint64) Counts { // k times the fixture group, cumulative
		r := mux
		r.Values = []ReadValue{{mux.Values[0].Value * k, 1, 0}, {mux.Values[1].Value * k, 2, 0}}
		return sum([]groupRead{{r, names}})
	}
	set := &recordedSet{reads: []Counts{at(1), at(3), at(4), at(6), at(10)}}
	r := &Recorder{set: set}
	r.Mark("linear") // outside a phase: nothing read
	r.Begin("decode")
	r.Mark("linear")    // 1
	r.Mark("nonlinear") // 3 − 1
	r.Mark("linear")    // 4 − 3
	r.Mark("attention") // 6 − 4
	r.End()             // 10 − 6 between operators
	rep := r.Report()
	if len(rep.Phases) != 1 || len(rep.Operators) != 4 {
		t.Fatalf("phases %d operators %+v", len(rep.Phases), rep.Operators)
	}
	unit := at(1).Values["cycles"]
	want := map[string]float64{"linear": 2, "nonlinear": 2, "attention": 2, BetweenOperators: 4}
	var tot float64
	for i, o := range rep.Operators {
		if o.Phase != "decode" || math.Abs(o.Counts.Values["cycles"]-want[o.Name]*unit) > 1e-6*unit {
			t.Errorf("operator %d %s/%s cycles %g, want %g", i, o.Phase, o.Name, o.Counts.Values["cycles"], want[o.Name]*unit)
		}
		if ipc := o.Metrics[0]; ipc.Name != "IPC" || math.Abs(ipc.Value-0.5) > 1e-12 {
			t.Errorf("%s metrics %+v", o.Name, o.Metrics)
		}
		tot += o.Counts.Values["cycles"]
	}
	if math.Abs(tot-rep.Phases[0].Counts.Values["cycles"]) > 1e-6*unit {
		t.Errorf("classes sum to %g, phase %g", tot, rep.Phases[0].Counts.Values["cycles"])
	}
	if rep.Operators[0].Name != "linear" || rep.Operators[3].Name != BetweenOperators {
		t.Errorf("order %v", rep.Operators)
	}
	var b bytes.Buffer
	rep.Scope = "test"
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"per operator class", "decode   linear", "20.0", BetweenOperators, "40.0"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("text lacks %q:\n%s", s, b.String())
		}
	}
}
