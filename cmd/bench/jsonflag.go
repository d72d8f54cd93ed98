package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/cpubench/bench/results"
	"github.com/spf13/cobra"
)

// --json means one thing on every command that has it:
//
//	--json=PATH (or --json PATH)  the command's JSON result written to PATH
//	                              atomically; the tables print as usual
//	--json, --json -              the JSON on stdout instead of the tables
//
// PATH is checked (its directory exists and is writable) before anything
// is measured (checkJSONPath), so a finished measurement is not lost at
// the rename. "--json PATH" with a space works on the commands without
// positional arguments (jsonPathArgs rewrites it to --json=PATH before
// parsing); on bench workloads, whose arguments are trace names, write
// --json=PATH.

// jsonStdout is --json's value for the JSON on stdout: bare --json
// (pflag's NoOptDefVal) or --json -.
const jsonStdout = "-"

// jsonUsage is --json's help, the same on every command; what says what
// the JSON holds.
func jsonUsage(what string) string {
	return "write " + what + " as JSON to `PATH` (--json=PATH; atomically, the tables still print), or with a bare --json or --json - print it on stdout instead of the tables"
}

// annotJSONPathArg marks a command without positional arguments, on which
// "--json PATH" is read as --json=PATH.
const annotJSONPathArg = "bench/json-path-arg"

// addJSONFlag defines --json into p on cmd (see the comment above); what
// says what the JSON holds ("the profile", "JSON lines of
// results.Bandwidth").
func addJSONFlag(cmd *cobra.Command, p *string, what string) {
	f := cmd.Flags()
	f.StringVar(p, "json", "", jsonUsage(what))
	f.Lookup("json").NoOptDefVal = jsonStdout
	if isNoArgs(cmd) {
		if cmd.Annotations == nil {
			cmd.Annotations = map[string]string{}
		}
		cmd.Annotations[annotJSONPathArg] = "true"
	}
}

// isNoArgs reports whether cmd refuses positional arguments.
func isNoArgs(cmd *cobra.Command) bool {
	return cmd.Args != nil && cmd.Args(cmd, []string{"x"}) != nil && cmd.Args(cmd, nil) == nil
}

// jsonPathArgs rewrites "--json X" to "--json=X" in args when the command
// they run has no positional arguments and X is "-" or no flag, so that
// "--json PATH" means --json=PATH there (with NoOptDefVal, pflag would
// take PATH for an argument).
func jsonPathArgs(root *cobra.Command, args []string) []string {
	cmd, _, err := root.Find(args)
	if err != nil || cmd == nil || cmd.Annotations[annotJSONPathArg] != "true" {
		return args
	}
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		if a == "--json" && i+1 < len(args) && (args[i+1] == jsonStdout || !strings.HasPrefix(args[i+1], "-")) {
			out = append(out, "--json="+args[i+1])
			i++
			continue
		}
		out = append(out, a)
	}
	return out
}

// checkJSONPath checks, before anything is measured, that --json's PATH
// can be written (nothing to check for "" and "-").
func checkJSONPath(path string) error {
	if path == "" || path == jsonStdout {
		return nil
	}
	if err := results.CheckWritableFile(path); err != nil {
		return fmt.Errorf("--json %s: %w", path, err)
	}
	return nil
}

// jsonOut sends a command's JSON where --json says: to out as it comes
// for "-", into a buffer written to PATH atomically by flush otherwise,
// nowhere for "".
type jsonOut struct {
	path string
	out  io.Writer
	buf  bytes.Buffer
}

func newJSONOut(path string, out io.Writer) *jsonOut { return &jsonOut{path: path, out: out} }

// on reports whether --json was given (false for a nil jsonOut).
func (j *jsonOut) on() bool { return j != nil && j.path != "" }

// tables reports whether the command prints its tables (all but --json -).
func (j *jsonOut) tables() bool { return j == nil || j.path != jsonStdout }

func (j *jsonOut) w() io.Writer {
	if j.path == jsonStdout {
		return j.out
	}
	return &j.buf
}

// encode writes v as one line of JSON.
func (j *jsonOut) encode(v any) error {
	if !j.on() {
		return nil
	}
	return json.NewEncoder(j.w()).Encode(v)
}

// write writes JSON text as it is.
func (j *jsonOut) write(data []byte) error {
	if !j.on() {
		return nil
	}
	_, err := j.w().Write(data)
	return err
}

// flush writes what a --json PATH collected to PATH atomically.
func (j *jsonOut) flush() error {
	if !j.on() || !j.tables() {
		return nil
	}
	if err := results.WriteFileAtomic(j.path, j.buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("--json %s: %w", j.path, results.UnwrapPath(err))
	}
	return nil
}
