package results

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/cpubench/bench/results/schema"
)

func TestSummarize(t *testing.T) {
	s := Summarize([]float64{5, 1, 3, 2, 4})
	if s.Median != 3 || s.Min != 1 || s.Max != 5 || s.N != 5 {
		t.Fatalf("Summarize = %+v", s)
	}
	// sample sd of 1..5 = sqrt(2.5); mean 3
	if want := math.Sqrt(2.5) / 3; math.Abs(s.CV-want) > 1e-12 {
		t.Fatalf("CV = %v, want %v", s.CV, want)
	}
	if s := Summarize([]float64{4, 1, 3, 2}); s.Median != 2.5 {
		t.Fatalf("even median = %v, want 2.5", s.Median)
	}
	if s := Summarize(nil); !reflect.DeepEqual(s, Stat{}) {
		t.Fatalf("empty = %+v", s)
	}
	if s := Summarize([]float64{7}); s.CV != 0 || s.Median != 7 {
		t.Fatalf("single = %+v", s)
	}
	in := []float64{3, 1, 2}
	Summarize(in)
	if !reflect.DeepEqual(in, []float64{3, 1, 2}) {
		t.Fatal("Summarize modified its input")
	}
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.json")
	if err := WriteFileAtomic(p, []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(p, []byte("two"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(p)
	if string(got) != "two" {
		t.Fatalf("content %q", got)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("stray files: %v", ents)
	}
	err := WriteFileAtomic(filepath.Join(dir, "missing", "x"), []byte("x"), 0o644)
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("error %v does not name the path", err)
	}
}

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema.ProfileV1))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("profile.v1.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("profile.v1.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func validate(t *testing.T, s *jsonschema.Schema, data []byte) error {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(v)
}

// A real profile from `bench probe --quick` on a 2-core AMD EPYC VM parses,
// validates against the JSON Schema, and survives a round trip unchanged.
func TestProfileRoundTripAndSchema(t *testing.T) {
	sch := compileSchema(t)
	paths, _ := filepath.Glob("testdata/profile-*.json")
	if len(paths) == 0 {
		t.Fatal("no testdata profiles")
	}
	for _, path := range paths {
		p, err := ReadProfile(path)
		if err != nil {
			t.Fatal(err)
		}
		data, err := MarshalProfile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := validate(t, sch, data); err != nil {
			t.Fatalf("%s: schema: %v", path, err)
		}
		p2, err := ParseProfile(data)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(p, p2) {
			t.Fatalf("%s: round trip changed the profile", path)
		}
		orig, _ := os.ReadFile(path)
		if !bytes.Equal(bytes.TrimSpace(orig), bytes.TrimSpace(data)) {
			t.Fatalf("%s: re-encoding differs from the file (keys not stable?)", path)
		}
		if p.Memory == nil || len(p.Memory.Levels) == 0 {
			t.Fatalf("%s: no memory levels", path)
		}
	}
	// The schema rejects what it should.
	bad := []string{
		`{"schema":"bench.profile/v1"}`,
		`{"schema":"bench.profile/v1","created_at":"2026-01-01T00:00:00Z","host":"h","tool":{"name":"bench","version":"x","go_version":"go"},"options":{"quick":false,"sections":["nonsense"]}}`,
	}
	for _, b := range bad {
		if err := validate(t, sch, []byte(b)); err == nil {
			t.Errorf("schema accepted %s", b)
		}
	}
}

func TestParseProfileErrors(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{`, "invalid JSON"},
		{`{"host":"x"}`, `missing key "schema"`},
		{`{"schema":"bench.profile/v9"}`, "not supported"},
		{`{"schema":"something-else"}`, "not a bench profile"},
		{`{"schema":"bench.profile/v1","created_at":"2026-01-01T00:00:00Z"}`, `missing key "host"`},
		{`{"schema":"bench.profile/v1","host":"h"}`, `missing key "created_at"`},
		{`{"schema":"bench.profile/v1","host":"h","created_at":"2026-01-01T00:00:00Z","memory":{"working_set":[{"kernel":"read"}]}}`, "working_set[0]"},
		{`{"schema":"bench.profile/v1","host":5}`, `key "host"`},
	}
	for _, c := range cases {
		_, err := ParseProfile([]byte(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseProfile(%s) = %v, want error containing %q", c.in, err, c.want)
		}
	}
	_, err := ReadProfile("testdata/does-not-exist.json")
	if err == nil || !strings.Contains(err.Error(), "does-not-exist.json") {
		t.Errorf("ReadProfile missing file: %v", err)
	}
}

func TestStableKeys(t *testing.T) {
	// Keys scripts rely on (docs/profile-schema.md) must keep their names.
	data, _ := MarshalProfile(&Profile{Schema: SchemaV1, Memory: &Memory{Levels: []LevelBandwidth{{Level: "DRAM"}}}})
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"schema", "created_at", "host", "tool", "options", "memory"} {
		if _, ok := m[k]; !ok {
			t.Errorf("key %q missing from %s", k, data)
		}
	}
	lv := m["memory"].(map[string]any)["levels"].([]any)[0].(map[string]any)
	for _, k := range []string{"level", "kernel", "threads", "working_set_bytes", "gbps"} {
		if _, ok := lv[k]; !ok {
			t.Errorf("memory.levels[0] lacks %q", k)
		}
	}
}

func TestProfileNoise(t *testing.T) {
	p := &Profile{Memory: &Memory{Levels: []LevelBandwidth{
		{Level: "L1", GBps: Stat{N: 5, Noise: &Noise{Attempts: 1}}},
		{Level: "DRAM", GBps: Stat{N: 5, Noise: &Noise{Attempts: 3, Noisy: true, Why: "cv 62.0% > 10%"}}},
		{Level: "L2", GBps: Stat{N: 5}},
	}}}
	s := p.Noise()
	if s.Checked != 2 || s.Noisy != 1 || len(s.Figures) != 1 || !strings.Contains(s.Figures[0], "memory.levels[1].gbps: cv 62.0%") {
		t.Fatalf("Noise() = %+v", s)
	}
	if got := s.String(); !strings.Contains(got, "1 of 2 figures noisy") {
		t.Fatalf("String() = %q", got)
	}
	if got := (&Profile{}).Noise().String(); !strings.Contains(got, "before the check") {
		t.Fatalf("empty profile: %q", got)
	}
}
