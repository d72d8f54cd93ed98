package main

import (
	"os"
	"path/filepath"
	"regexp"
)

// probeDirStamp matches the directory `bench probe` writes by default:
// results/<host>-<yyyymmdd-hhmmss>.
var probeDirStamp = regexp.MustCompile(`-(\d{8}-\d{6})$`)

// latestProbeProfile returns the newest profile.json that `bench probe`
// wrote to its default output directory for this host, under dir
// ("results" relative to the working directory), and whether there is one.
func latestProbeProfile(dir string) (string, bool) {
	host, _ := os.Hostname()
	if host == "" {
		return "", false
	}
	matches, _ := filepath.Glob(filepath.Join(dir, host+"-*", "profile.json"))
	var best, bestStamp string
	for _, m := range matches {
		d := filepath.Base(filepath.Dir(m))
		sm := probeDirStamp.FindStringSubmatch(d)
		if sm == nil || d != host+"-"+sm[1] {
			continue
		}
		if sm[1] > bestStamp {
			best, bestStamp = m, sm[1]
		}
	}
	return best, best != ""
}

// defaultProfile resolves --profile for commands that predict: "" takes
// the newest probe profile of this host (announced on stderr), "none" is
// no profile.
func defaultProfile(flag string, io IO, cmd string) string {
	switch flag {
	case "none":
		return ""
	case "":
		if p, ok := latestProbeProfile("results"); ok {
			io.Err.Write([]byte(cmd + ": predictions from the newest probe profile of this host, " + p + " (--profile none: no predictions)\n"))
			return p
		}
		return ""
	}
	return flag
}

// hasProbeProfile reports whether defaultProfile("") would find one.
func hasProbeProfile() bool {
	_, ok := latestProbeProfile("results")
	return ok
}
