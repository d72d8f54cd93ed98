package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cpubench/bench/internal/regfile"
)

// Validate checks the keys a reader of a sweep cell relies on.
func (c *SweepCell) Validate() error {
	switch {
	case c.Schema != SweepSchema:
		if c.Schema == "" {
			return fmt.Errorf(`missing key "schema" (want %q)`, SweepSchema)
		}
		return fmt.Errorf("schema %q: want %q", c.Schema, SweepSchema)
	case c.Key == "":
		return errors.New(`missing key "key"`)
	case c.Model == "":
		return errors.New(`missing key "model"`)
	case c.Workload == "":
		return errors.New(`missing key "workload"`)
	case c.Batch < 1:
		return fmt.Errorf("batch %d: must be ≥ 1", c.Batch)
	case c.Threads < 1:
		return fmt.Errorf("threads %d: must be ≥ 1", c.Threads)
	case len(c.Requests) == 0:
		return errors.New(`no "requests"`)
	case c.Config.Requests != len(c.Requests):
		return fmt.Errorf("config.requests is %d but there are %d request records", c.Config.Requests, len(c.Requests))
	}
	return nil
}

// ParseSweepCell decodes and validates one line of a sweep results file.
func ParseSweepCell(line []byte) (*SweepCell, error) {
	var c SweepCell
	if err := json.Unmarshal(line, &c); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return nil, fmt.Errorf("invalid JSON at byte %d: %v", se.Offset, err)
		case errors.As(err, &te):
			return nil, fmt.Errorf("key %q: %s is not a valid %s", te.Field, te.Value, te.Type)
		}
		return nil, fmt.Errorf("invalid JSON: %v", err)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// AppendSweepCell appends c to the results file at path (created if
// missing) as one JSON line, in a single write call, and syncs the file: a
// run interrupted while writing leaves at most one truncated last line,
// which ReadSweepCells skips. If the file does not end with a newline (a
// line truncated earlier), the new line starts on a line of its own. An
// empty c.Schema is written as SweepSchema.
func AppendSweepCell(path string, c *SweepCell) (err error) {
	cc := *c
	if cc.Schema == "" {
		cc.Schema = SweepSchema
	}
	if err := cc.Validate(); err != nil {
		return fmt.Errorf("append to %s: cell %s: %w", path, c.Key, err)
	}
	line, err := json.Marshal(&cc)
	if err != nil {
		return fmt.Errorf("append to %s: cell %s: %w", path, c.Key, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("append to %s: %w", path, err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("append to %s: %w", path, cerr)
		}
	}()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("append to %s: %w", path, err)
	}
	buf := make([]byte, 0, len(line)+2)
	if st.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, st.Size()-1); err != nil {
			return fmt.Errorf("append to %s: %w", path, err)
		}
		if last[0] != '\n' {
			buf = append(buf, '\n')
		}
	}
	buf = append(append(buf, line...), '\n')
	if _, err := f.Write(buf); err != nil {
		return fmt.Errorf("append to %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("append to %s: %w", path, err)
	}
	return nil
}

// SweepLineError is a line of a sweep results file that ReadSweepCells
// skipped: it does not parse, or it is not a valid cell.
type SweepLineError struct {
	Path string
	Line int    // 1-based
	Text []byte // the line as read, without its newline
	Err  error
}

func (e *SweepLineError) Error() string { return fmt.Sprintf("%s:%d: %v", e.Path, e.Line, e.Err) }
func (e *SweepLineError) Unwrap() error { return e.Err }

// sweepLines splits a results file into lines without their newline (and
// a trailing '\r'); truncated reports whether the last line lacks its
// newline.
func sweepLines(data []byte) (lines [][]byte, truncated bool) {
	if len(data) == 0 {
		return nil, false
	}
	truncated = data[len(data)-1] != '\n'
	data = bytes.TrimSuffix(data, []byte("\n"))
	lines = bytes.Split(data, []byte("\n"))
	for i, l := range lines {
		lines[i] = bytes.TrimSuffix(l, []byte("\r"))
	}
	return lines, truncated
}

// MaxSweepFileBytes is the largest sweep results file ReadSweepCells and
// QuarantineSweepLines read (a cell with its per-request records is a
// few kB to a few hundred kB).
const MaxSweepFileBytes = 1 << 30

// ReadSweepCells reads a sweep results file (one SweepCell per line), in
// file order. A line that does not parse or is not a valid cell is skipped
// and reported in skipped as a *SweepLineError naming file:line and the
// problem (a truncated last line says so); the file itself is not changed
// (see QuarantineSweepLines). Blank lines are ignored. err is set only
// when the file cannot be read: a missing file gives an error wrapping
// fs.ErrNotExist, a named pipe or device one wrapping
// regfile.ErrNotRegular (it is not read), a file over MaxSweepFileBytes
// one wrapping regfile.ErrTooLarge.
func ReadSweepCells(path string) (cells []SweepCell, skipped []error, err error) {
	data, err := regfile.ReadFile(path, MaxSweepFileBytes)
	if err != nil {
		return nil, nil, fmt.Errorf("sweep results %s: %w", path, err)
	}
	lines, truncated := sweepLines(data)
	for i, l := range lines {
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		c, err := ParseSweepCell(l)
		if err != nil {
			if truncated && i == len(lines)-1 {
				err = fmt.Errorf("truncated last line (an interrupted write?): %w", err)
			}
			skipped = append(skipped, &SweepLineError{Path: path, Line: i + 1, Text: bytes.Clone(l), Err: err})
			continue
		}
		cells = append(cells, *c)
	}
	return cells, skipped, nil
}

// QuarantineSweepLines removes the lines ReadSweepCells skipped from the
// results file at path, losing nothing: it first writes them, byte for
// byte, to path.corrupt-<yyyymmdd-hhmmss> (a new file, synced), and only
// then rewrites path without them, atomically (WriteFileAtomic). Lines of
// skipped that name another file are ignored. If the file changed since
// it was read (a skipped line is no longer there as read), nothing is
// written. It returns the path of the corrupt-lines file, "" if there was
// nothing to move.
func QuarantineSweepLines(path string, skipped []error, now time.Time) (saved string, err error) {
	bad := map[int][]byte{}
	for _, e := range skipped {
		var le *SweepLineError
		if errors.As(e, &le) && le.Path == path {
			bad[le.Line] = le.Text
		}
	}
	if len(bad) == 0 {
		return "", nil
	}
	data, err := regfile.ReadFile(path, MaxSweepFileBytes)
	if err != nil {
		return "", fmt.Errorf("quarantine %s: %w", path, err)
	}
	lines, _ := sweepLines(data)
	var keep, moved bytes.Buffer
	for i, l := range lines {
		text, isBad := bad[i+1]
		switch {
		case isBad && !bytes.Equal(text, l):
			return "", fmt.Errorf("quarantine %s: line %d changed since it was read; nothing moved", path, i+1)
		case isBad:
			moved.Write(l)
			moved.WriteByte('\n')
			delete(bad, i+1)
		case len(bytes.TrimSpace(l)) > 0:
			keep.Write(l)
			keep.WriteByte('\n')
		}
	}
	if len(bad) > 0 {
		return "", fmt.Errorf("quarantine %s: the file has fewer lines than when it was read; nothing moved", path)
	}
	saved = path + ".corrupt-" + now.Format("20060102-150405")
	for i := 2; ; i++ {
		if _, err := os.Lstat(saved); errors.Is(err, fs.ErrNotExist) {
			break
		}
		saved = fmt.Sprintf("%s.corrupt-%s-%d", path, now.Format("20060102-150405"), i)
	}
	if err := WriteFileAtomic(saved, moved.Bytes(), 0o644); err != nil {
		return "", fmt.Errorf("quarantine: %w", err)
	}
	if err := WriteFileAtomic(path, keep.Bytes(), 0o644); err != nil {
		return saved, fmt.Errorf("quarantine (the bad lines are saved in %s): %w", saved, err)
	}
	return saved, nil
}

// BenchstatPkg is the "pkg:" line of WriteBenchstat's output.
const BenchstatPkg = "github.com/cpubench/bench/cmd/bench"

// benchstatUnits are the units WriteBenchstat reports, with whether
// higher is better (unit metadata, as benchfmt reads it).
var benchstatUnits = []struct {
	unit   string
	better string
}{
	{"sec/op", "lower"},
	{"ttft-mean-sec", "lower"}, {"ttft-p50-sec", "lower"}, {"ttft-p90-sec", "lower"}, {"ttft-p99-sec", "lower"},
	{"tpot-mean-sec", "lower"}, {"tpot-p50-sec", "lower"}, {"tpot-p90-sec", "lower"}, {"tpot-p99-sec", "lower"},
	{"latency-mean-sec", "lower"}, {"latency-p50-sec", "lower"}, {"latency-p90-sec", "lower"}, {"latency-p99-sec", "lower"},
	{"tok/s", "higher"}, {"prefill-tok/s", "higher"}, {"slo-attainment", "higher"}, {"goodput-req/s", "higher"},
}

// BenchName is the cell's benchmark name in WriteBenchstat's output:
// "Sweep/model=M/layers=L/workload=W/arrival=A/batch=B/threads=T/placement=P/ablate=X"
// (values escaped: '%', '/', '=' and white space as %XX), without the
// "Benchmark" prefix and the "-threads" suffix.
func (c *SweepCell) BenchName() string {
	abl := c.Ablation
	if abl == "" {
		abl = "none"
	}
	parts := [][2]string{{"model", c.Model}, {"layers", strconv.Itoa(c.Layers)}, {"workload", c.Workload},
		{"arrival", c.Config.Arrival}, {"batch", strconv.Itoa(c.Batch)}, {"threads", strconv.Itoa(c.Threads)},
		{"placement", c.Placement}, {"ablate", abl}}
	var b strings.Builder
	b.WriteString("Sweep")
	for _, p := range parts {
		b.WriteString("/" + p[0] + "=" + escapeNamePart(p[1]))
	}
	return b.String()
}

func escapeNamePart(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '%' || c == '/' || c == '=' || c <= ' ' || c == 0x7f {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// WriteBenchstat writes cells in the Go benchmark data format
// (golang.org/design/14313-benchmark-format, read by benchstat and
// golang.org/x/perf/benchfmt), one result line per cell, in order:
//
//	goos: linux
//	goarch: amd64
//	cpu: AMD EPYC 7B13
//	pkg: github.com/cpubench/bench/cmd/bench
//	host: h1
//	requests: 4
//	...
//	BenchmarkSweep/model=qwen3-0.6b/layers=2/workload=gsm8k/arrival=closed/batch=4/threads=2/placement=mixed/ablate=none-2  4  1.9 sec/op  0.21 ttft-mean-sec ...
//
// The iteration count is the cell's requests and the "-N" suffix its
// threads (the format's GOMAXPROCS position). Configuration lines (host,
// machine, weights, seed, caps, SLO targets, bench version) are written
// when they change, so merged cells from several hosts stay apart. Values
// are in base units, as benchstat expects: seconds ("-sec", as in
// benchstat's sec/op), tokens and requests per second, attainment as a
// fraction. sec/op is the cell's wall time per request; TPOT units are
// left out of a cell with no request of two or more output tokens. Unit
// lines say which direction is better.
func WriteBenchstat(w io.Writer, cells []SweepCell) error {
	var b bytes.Buffer
	for _, u := range benchstatUnits {
		fmt.Fprintf(&b, "Unit %s better=%s\n", u.unit, u.better)
	}
	b.WriteByte('\n')
	config := map[string]string{}
	set := func(key, val string) {
		val = strings.Join(strings.Fields(val), " ") // no newlines
		old, ok := config[key]
		if ok && old == val || !ok && val == "" {
			return
		}
		config[key] = val
		if val == "" {
			fmt.Fprintf(&b, "%s:\n", key) // an empty value unsets the key
			return
		}
		fmt.Fprintf(&b, "%s: %s\n", key, val)
	}
	ff := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	for i := range cells {
		c := &cells[i]
		set("goos", c.OS)
		set("goarch", c.Arch)
		set("cpu", c.CPU)
		set("pkg", BenchstatPkg)
		set("host", c.Host)
		set("machine", c.Machine)
		set("weights", c.Weights)
		set("requests", strconv.Itoa(c.Config.Requests))
		set("seed", strconv.FormatUint(c.Config.Seed, 10))
		set("max-gen-tokens", strconv.Itoa(c.Config.MaxGenTokens))
		set("max-prompt-tokens", strconv.Itoa(c.Config.MaxPrompt))
		set("slo-ttft-sec", ff(c.Config.SLOTTFTS))
		set("slo-tpot-sec", ff(c.Config.SLOTPOTS))
		set("bench-version", c.Config.BenchVersion)
		if c.Noise != nil { // a label per cell: "ok", or "NOISY: why"
			nz := "ok"
			if c.Noise.Noisy {
				nz = "NOISY: " + c.Noise.Why
			}
			set("noise", nz)
		}

		n := len(c.Requests)
		fmt.Fprintf(&b, "Benchmark%s-%d\t%d", c.BenchName(), c.Threads, n)
		val := func(v float64, unit string) {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				fmt.Fprintf(&b, "\t%s %s", ff(v), unit)
			}
		}
		val(c.WallS/float64(max(n, 1)), "sec/op")
		dist := func(name string, d Dist) {
			if d.N == 0 {
				return
			}
			val(d.Mean, name+"-mean-sec")
			val(d.P50, name+"-p50-sec")
			val(d.P90, name+"-p90-sec")
			val(d.P99, name+"-p99-sec")
		}
		dist("ttft", c.TTFT)
		dist("tpot", c.TPOT)
		dist("latency", c.Latency)
		val(c.OutputTokS, "tok/s")
		val(c.PrefillTokS, "prefill-tok/s")
		val(c.SLOAttained, "slo-attainment")
		val(c.GoodputReqS, "goodput-req/s")
		b.WriteByte('\n')
	}
	_, err := w.Write(b.Bytes())
	return err
}
