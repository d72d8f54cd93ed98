package main

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/cpubench/bench/internal/regfile"
	"github.com/cpubench/bench/models"
	"github.com/cpubench/bench/results"
)

// probeDirName matches the directories `bench probe` writes by default:
// results/<host>-<yyyymmdd-hhmmss>, or with -N added when a probe of the
// same second had taken that name (N ≥ 2).
var probeDirName = regexp.MustCompile(`-(\d{8}-\d{6})(?:-([2-9]|[1-9]\d+))?$`)

// probeDirs are this host's default probe directories under dir, newest
// first (by stamp, then suffix).
func probeDirs(dir, host string) []string {
	matches, _ := filepath.Glob(filepath.Join(dir, host+"-*")) // the only error is a bad pattern
	type cand struct {
		dir, stamp string
		n          int
	}
	var cs []cand
	for _, m := range matches {
		d := filepath.Base(m)
		sm := probeDirName.FindStringSubmatch(d)
		if sm == nil || d[:len(d)-len(sm[0])] != host {
			continue
		}
		n := 1
		if sm[2] != "" {
			n, _ = strconv.Atoi(sm[2])
		}
		cs = append(cs, cand{m, sm[1], n})
	}
	slices.SortFunc(cs, func(a, b cand) int {
		return cmp.Or(strings.Compare(b.stamp, a.stamp), cmp.Compare(b.n, a.n))
	})
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.dir
	}
	return out
}

// latestProbeProfile returns the newest complete profile.json that `bench
// probe` wrote to its default output directory for this host, under dir
// ("results" relative to the working directory), and whether there is
// one. Complete: it loads as a roofline machine (it has the memory
// section's per-level roofs); newer ones that do not (a --only machine
// probe) are skipped, each with the reason in skipped.
func latestProbeProfile(dir string) (path string, skipped []string, ok bool) {
	host, _ := os.Hostname()
	if host == "" {
		return "", nil, false
	}
	for _, d := range probeDirs(dir, host) {
		p := filepath.Join(d, "profile.json")
		if _, err := os.Stat(p); err != nil {
			continue // an interrupted or failed probe
		}
		if _, err := loadMachine(p); err != nil {
			skipped = append(skipped, fmt.Sprintf("%s (%v)", p, err))
			continue
		}
		return p, skipped, true
	}
	return "", skipped, false
}

// defaultProfile resolves --profile for commands that predict: "" takes
// the newest complete probe profile of this host (announced on stderr,
// with the newer incomplete ones it skipped), "none" is no profile.
func defaultProfile(flag string, io IO, cmd string) string {
	switch flag {
	case "none":
		return ""
	case "":
		p, skipped, ok := latestProbeProfile("results")
		var skip string
		if len(skipped) > 0 {
			skip = "; skipped newer incomplete profile(s): " + strings.Join(skipped, "; ")
		}
		if ok {
			fmt.Fprintf(io.Err, "%s: predictions from the newest complete probe profile of this host, %s (--profile none: no predictions)%s\n", cmd, p, skip)
			return p
		}
		if skip != "" {
			fmt.Fprintf(io.Err, "%s: no complete probe profile of this host, no predictions%s\n", cmd, skip)
		}
		return ""
	}
	return flag
}

// hasProbeProfile reports whether defaultProfile("") would find one.
func hasProbeProfile() bool {
	_, _, ok := latestProbeProfile("results")
	return ok
}

// checkRunModel checks, before a profile is read, that what `bench run`
// is to run exists: a shipped config or config.json for --model with
// synthetic weights, a regular file for --weights or --model FILE.gguf.
// The error names the flag and value.
func checkRunModel(o *runOptions) error {
	check := func(flag, path string) error {
		f, err := regfile.Open(path)
		if err != nil {
			return fmt.Errorf("%s %s: %w", flag, path, results.UnwrapPath(err))
		}
		return f.Close()
	}
	switch {
	case o.Weights != "synthetic":
		return check("--weights", o.Weights)
	case strings.HasSuffix(strings.ToLower(o.Model), ".gguf"):
		return check("--model", o.Model)
	}
	if _, _, err := models.ReadConfig(o.Model); err != nil {
		return fmt.Errorf("--model: %w", err)
	}
	return nil
}
