// Command calreplay re-predicts the shapes of a recorded calibration
// (`bench calibrate`'s calibration.json) with the roofline as the code
// models it now, fits the classes again on the same measured seconds and
// the same held-out half, and prints the held-out error before and after
// calibration per class and overall, beside the recorded run's — a model
// change's effect on issue #16's held-out p90 without measuring anything.
//
//	go run ./scripts/calreplay -profile P/profile.json [-out calibrated.json] DIR/calibration.json
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"sort"
	"time"

	"github.com/cpubench/bench/calibrate"
	"github.com/cpubench/bench/results"
)

func main() {
	profile := flag.String("profile", "", "the probe profile the calibration was run against (profile.json)")
	model := flag.String("model", "qwen3-0.6b", "the calibration's --model")
	class := flag.String("points", "", "also print every replayed point of this class (e.g. attention)")
	worst := flag.Int("worst", 0, "also print the held-out points with the largest calibrated errors, this many")
	out := flag.String("out", "", "also write the profile calibrated by the replayed fit to this file (for scripts/fidreplay)")
	flag.Parse()
	if *profile == "" || flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: calreplay -profile P/profile.json DIR/calibration.json")
		os.Exit(2)
	}
	if err := run(*profile, flag.Arg(0), *model, *class, *worst, *out); err != nil {
		fmt.Fprintln(os.Stderr, "calreplay:", err)
		os.Exit(1)
	}
}

func run(profile, file, model, class string, worst int, out string) error {
	p, err := results.ReadProfile(profile)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var rec calibrate.Report
	if err := json.Unmarshal(b, &rec); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	now, err := calibrate.Replay(p, profile, &rec, model)
	if err != nil {
		return err
	}
	for _, pt := range now.Points {
		if pt.Class == class {
			fmt.Printf("%-40s %-14s measured %10.1f µs  predicted %10.1f  calibrated %10.1f  held out %v\n", pt.Key(), pt.Level, pt.Seconds.Median*1e6, pt.Predicted*1e6, pt.Calibrated*1e6, pt.HeldOut)
		}
	}
	if worst > 0 {
		held := []calibrate.Point{}
		for _, pt := range now.Points {
			if pt.HeldOut && pt.Counted {
				held = append(held, pt)
			}
		}
		rel := func(p calibrate.Point) float64 { return math.Abs(p.Calibrated-p.Seconds.Median) / p.Seconds.Median }
		sort.Slice(held, func(i, j int) bool { return rel(held[i]) > rel(held[j]) })
		for _, pt := range held[:min(worst, len(held))] {
			fmt.Printf("worst: %-40s %-14s measured %10.1f µs  calibrated %10.1f  error %5.1f%%\n", pt.Key(), pt.Level, pt.Seconds.Median*1e6, pt.Calibrated*1e6, 100*rel(pt))
		}
	}
	fmt.Printf("%-10s %3s %-14s %22s %22s\n", "class", "t", "level", "recorded p90 after", "replayed p90 after")
	rows := map[string]results.CalibrationClass{}
	for _, c := range rec.Classes {
		rows[fmt.Sprintf("%s/%d/%s", c.Class, c.Threads, c.Level)] = c
	}
	for _, c := range now.Classes {
		old := rows[fmt.Sprintf("%s/%d/%s", c.Class, c.Threads, c.Level)]
		fmt.Printf("%-10s %3d %-14s %21.1f%% %21.1f%%\n", c.Class, c.Threads, c.Level, 100*old.After.P90, 100*c.After.P90)
	}
	fmt.Printf("all held-out: recorded p90 %.1f%% before, %.1f%% after (%d shapes); replayed p90 %.1f%% before, %.1f%% after (%d shapes)\n",
		100*rec.Before.P90, 100*rec.After.P90, rec.After.N, 100*now.Before.P90, 100*now.After.P90, now.After.N)
	if out == "" {
		return nil
	}
	q, err := calibrate.Apply(p, now, time.Now())
	if err != nil {
		return err
	}
	return results.WriteProfile(out, q)
}
