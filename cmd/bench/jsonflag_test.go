package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// jsonCommands are the commands with --json.
var jsonCommands = []string{"bandwidth", "gemm", "probe", "roofline", "run", "topo", "workloads"}

// TestJSONFlagSameEverywhere: --json is one flag everywhere: a string
// (PATH), "-" when given bare, no default, the same help; and exactly
// the commands above have it.
func TestJSONFlagSameEverywhere(t *testing.T) {
	root := NewRootCmd(IO{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard})
	var have []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		f := c.Flags().Lookup("json")
		if f == nil {
			return
		}
		have = append(have, strings.TrimPrefix(c.CommandPath(), "bench "))
		if f.Value.Type() != "string" || f.NoOptDefVal != jsonStdout || f.DefValue != "" {
			t.Errorf("%s --json: type %s, NoOptDefVal %q, default %q; want string, %q, \"\"", c.CommandPath(), f.Value.Type(), f.NoOptDefVal, f.DefValue, jsonStdout)
		}
		if want := jsonUsage(""); !strings.HasPrefix(f.Usage, "write ") || !strings.HasSuffix(f.Usage, strings.TrimPrefix(want, "write ")) {
			t.Errorf("%s --json: help %q does not say what every --json says", c.CommandPath(), f.Usage)
		}
	}
	walk(root)
	slices.Sort(have)
	if !slices.Equal(have, jsonCommands) {
		t.Errorf("commands with --json: %v, want %v", have, jsonCommands)
	}
}

// TestJSONPathArgs: "--json PATH" is --json=PATH on the commands without
// positional arguments, and left alone on bench workloads (whose
// arguments are trace names) and after "--".
func TestJSONPathArgs(t *testing.T) {
	root := NewRootCmd(IO{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard})
	for _, c := range []struct{ in, want string }{
		{"topo --json x.json", "topo --json=x.json"},
		{"topo --json - --shape s", "topo --json=- --shape s"},
		{"topo --json --shape s", "topo --json --shape s"},
		{"topo --shape s --json", "topo --shape s --json"},
		{"run --json=a.json --json b", "run --json=a.json --json=b"},
		{"topo -- --json x", "topo -- --json x"},
		{"workloads --json gsm8k", "workloads --json gsm8k"},
		{"report dir --json x", "report dir --json x"},
	} {
		got := strings.Join(jsonPathArgs(root, strings.Fields(c.in)), " ")
		if got != c.want {
			t.Errorf("%q → %q, want %q", c.in, got, c.want)
		}
	}
}

// jsonValues decodes data as a sequence of JSON values (one object, or
// JSON lines), failing the test unless it holds at least one and nothing
// else.
func jsonValues(t *testing.T, what string, data []byte) int {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	n := 0
	for {
		var v any
		err := dec.Decode(&v)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: not JSON after %d value(s): %v\n%.300s", what, n, err, data)
		}
		if _, ok := v.(map[string]any); !ok {
			t.Fatalf("%s: value %d is %T, want an object", what, n, v)
		}
		n++
	}
	if n == 0 {
		t.Fatalf("%s: no JSON value", what)
	}
	return n
}

// TestJSONEveryCommand: on every command, --json=FILE writes the JSON
// result to FILE (valid JSON, no temporary file left) and still prints
// what the command prints without --json, bare --json prints the same
// JSON values on stdout instead, and an unwritable FILE fails before
// anything is measured.
func TestJSONEveryCommand(t *testing.T) {
	cases := map[string][]string{
		"bandwidth": {"bandwidth", "--kernel", "read", "--ws", "64KiB", "--threads", "1", "--rep-ms", "1"},
		"gemm":      {"gemm", "--m", "1,3", "--n", "8", "--k", "64", "--reps", "1", "--rep-ms", "1", "--threads", "1"},
		"probe":     {"probe", "--only", "machine,topology"},
		"roofline":  {"roofline", "--profile", "lnl", "--model", "llama-3.2-1b"},
		"run":       {"run", "--weights", stories, "--prompt-tokens", "4", "--gen-tokens", "1", "--profile", "none", "--amdahl=false"},
		"topo":      {"topo", "--shape", "package=1,core=2"},
		"workloads": {"workloads", "gsm8k", "--requests", "5"},
	}
	var names []string
	for n := range cases {
		names = append(names, n)
	}
	slices.Sort(names)
	if !slices.Equal(names, jsonCommands) {
		t.Fatalf("cases for %v, want every command with --json %v", names, jsonCommands)
	}
	for _, name := range names {
		args := cases[name]
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "out.json")
			fileArgs := append(slices.Clone(args), "--json="+file)
			if name == "probe" {
				fileArgs = append(fileArgs, "--out", filepath.Join(dir, "probe"))
			}
			code, out, errs := run(t, fileArgs...)
			if code != 0 {
				t.Fatalf("%v: exit %d: %s", fileArgs, code, errs)
			}
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			nFile := jsonValues(t, "--json=FILE", data)
			if name == "probe" {
				if _, err := os.Stat(filepath.Join(dir, "probe", "profile.md")); err != nil {
					t.Errorf("--json=FILE --out DIR: %v", err)
				}
			} else if strings.TrimSpace(out) == "" || strings.HasPrefix(strings.TrimSpace(out), "{") {
				t.Errorf("--json=FILE: stdout %.200q, want the tables", out)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 1+btoi(name == "probe") {
				t.Errorf("--json=FILE left %d entries in its directory, want the file alone", len(ents))
			}

			code, out, errs = run(t, append(slices.Clone(args), "--json")...)
			if code != 0 {
				t.Fatalf("%v --json: exit %d: %s", args, code, errs)
			}
			if n := jsonValues(t, "--json", []byte(out)); n != nFile {
				t.Errorf("--json printed %d JSON values, --json=FILE wrote %d", n, nFile)
			}

			bad := filepath.Join("no", "such", "x.json")
			code, _, errs = run(t, append(slices.Clone(args), "--json="+bad)...)
			if want := "bench " + name + ": --json " + bad + ": directory " + filepath.Join("no", "such"); code != 1 || !strings.HasPrefix(errs, want) {
				t.Errorf("--json=%s: exit %d, stderr %q, want %q", bad, code, errs, want)
			}
		})
	}
	// "--json PATH" with a space, where the command has no arguments.
	file := filepath.Join(t.TempDir(), "topo.json")
	if code, _, errs := run(t, "topo", "--shape", "package=1,core=2", "--json", file); code != 0 {
		t.Fatalf("topo --json PATH: exit %d: %s", code, errs)
	}
	if data, err := os.ReadFile(file); err != nil {
		t.Fatal(err)
	} else {
		jsonValues(t, "topo --json PATH", data)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
