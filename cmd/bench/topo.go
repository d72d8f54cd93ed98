package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cpubench/bench/internal/affinity"
	"github.com/cpubench/bench/internal/topology"
	"github.com/cpubench/bench/internal/topotree"
	"github.com/cpubench/bench/models"
	"github.com/cpubench/bench/results"
	"github.com/cpubench/bench/roofline"
)

func init() { subcommands = append(subcommands, newTopoCmd) }

// topoOptions are the flag values of `bench topo` plus its IO.
type topoOptions struct {
	IO IO

	Profile    string
	Shape      string
	CPUs       string
	Remove     string
	Configs    bool
	Model      string
	MaxGroups  int
	MaxRemoves int
	MaxTrees   int
	JSON       string // --json: "", "-" (stdout) or a file (jsonflag.go)
	// Measure: the core-location experiment (phase_topo.go).
	Measure topoMeasure
}

func newTopoCmd(streams IO) *cobra.Command { return newCmdTopo(streams, nil) }

// newCmdTopo builds the command; tests pass runF to capture the options.
func newCmdTopo(streams IO, runF func(*topoOptions) error) *cobra.Command {
	opts := &topoOptions{IO: streams}
	cmd := &cobra.Command{
		Use:   "topo [--profile P | --shape S] [--remove SPEC] [--configs] [--model M]",
		Short: "The machine's TopoTree, its Sandwich transforms and the service configurations it gives",
		Long: `Prints the TopoTree of a machine (Sandwich §5.1: machine → package → NUMA
node → L3 → L2 → core → thread; levels whose nodes all have one child are
merged, e.g. "numa/l3"), applies group and remove transforms to it (§5.2)
and lists the service configurations its cross-sections give (§5.3): the
processes the model is split into (= the TP degree), the PUs and NUMA
nodes of each.

The tree is the live machine's (the CPUs this process may run on), or --profile: a profile.json of 'bench
probe', or a sysfs snapshot directory holding sys/ and proc/ (such as
internal/topology/testdata/linux-arm64-kunpeng-920-4n, the 4-node
Kunpeng-920); or --shape, a made-up symmetric machine. --cpus cuts it down
to a set of CPUs.

--remove is a transform list applied left to right: group(n,t,d) (groups
of n children with stride t at depth d), remove(n,d) (the n right-most
children of every node at depth d-1), d a depth or a level kind (core,
numa, l3, ...); or the core-location experiments of Sandwich Fig. 3(a):
` + strings.Join(topotree.Presets, ", ") + `.
It prints the active and idle CPUs; run the engine's decode on the active
ones with 'bench run --decode-config SPEC ...' (--prefill-config likewise;
or 'taskset -c LIST bench run ...' for both phases).

--measure runs Sandwich Fig. 3's core-location experiment on this machine:
for all cores and each preset of Fig. 3(a) (` + strings.Join(topotree.LocationPresets, ", ") + `),
the engine (--model, --layers, synthetic fp32) prefills --prompt-tokens and
decodes --gen-tokens steps on the preset's active CPUs only, --reps times;
the table gives tok/s of both phases relative to all cores with the
roofline's prediction (--roofline, a profile.json or published machine;
default the newest probe profile). Presets that do not apply here (one
node, no L3 groups) are listed as "not applicable: why". --out DIR writes
corelocation.md, corelocation.json and the figure.

--configs lists the configurations: of the --remove tree, or, without
--remove, of every tree the transforms reach (--max-groups group
transforms, then --max-removes removes; duplicate trees and duplicate
configurations are skipped by hash). --model keeps only the TP degrees
that divide the model's query and KV heads.`,
		Example: `  bench topo
  bench topo --profile internal/topology/testdata/linux-arm64-kunpeng-920-4n --remove idle-per-node
  bench topo --shape package=4,numa=2,core=24 --remove sc-rm --configs
  bench topo --shape package=4,numa=2,core=24 --remove 'group(4,1,core) remove(1,core)'
  bench topo --profile results/host-20261125-101500/profile.json --configs --model qwen3-8b --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.validate(); err != nil {
				return err
			}
			if err := checkJSONPath(opts.JSON); err != nil {
				return fmt.Errorf("topo: %w", err)
			}
			if runF != nil {
				return runF(opts)
			}
			if opts.Measure.On {
				return topoMeasureRun(cmd.Context(), opts)
			}
			return topoRun(opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Profile, "profile", "", "profile.json of bench probe or a sysfs snapshot directory (sys/, proc/); default: this machine")
	f.StringVar(&opts.Shape, "shape", "", "a synthetic symmetric machine instead, e.g. package=4,numa=2,core=24 (kinds package, numa, l3, l2, core, thread, in that order)")
	f.StringVar(&opts.CPUs, "cpus", "", "restrict the tree to these CPUs (kernel cpulist, e.g. 0-23,48-71); on this machine they must be in the process's affinity mask, which is the default")
	f.StringVar(&opts.Remove, "remove", "", "transforms to apply: group(n,t,d), remove(n,d), "+strings.Join(topotree.Presets, ", ")+" (comma- or space-separated)")
	f.BoolVar(&opts.Configs, "configs", false, "list the service configurations (sandwich-config cross-sections)")
	f.StringVar(&opts.Model, "model", "", "model whose query and KV heads limit the TP degree: shipped config name or config.json path")
	f.IntVar(&opts.MaxGroups, "max-groups", 1, "with --configs and no --remove: group transforms per tree")
	f.IntVar(&opts.MaxRemoves, "max-removes", 1, "with --configs and no --remove: successive removes per tree")
	f.IntVar(&opts.MaxTrees, "max-trees", 20000, "with --configs and no --remove: stop after this many distinct trees")
	addJSONFlag(cmd, &opts.JSON, "the tree, transforms and configurations (one object)")
	addTopoMeasureFlags(cmd, &opts.Measure)
	return cmd
}

// validate checks flag values only; it reads no files.
func (o *topoOptions) validate() error {
	if o.Profile != "" && o.Shape != "" {
		return errors.New("topo: --profile and --shape: give one machine, not both")
	}
	for _, v := range []struct {
		flag string
		n    int
	}{{"max-groups", o.MaxGroups}, {"max-removes", o.MaxRemoves}, {"max-trees", o.MaxTrees}} {
		if v.n < 1 {
			return fmt.Errorf("topo: --%s %d: must be ≥ 1", v.flag, v.n)
		}
	}
	if o.CPUs != "" {
		if _, err := topology.ParseCPUList(o.CPUs); err != nil {
			return fmt.Errorf("topo: --cpus: %w", err)
		}
	}
	if o.Model != "" && !o.Configs && !o.Measure.On {
		return errors.New("topo: --model limits the configurations: it needs --configs (or is the model --measure runs)")
	}
	return o.validateMeasure()
}

// topoTree loads the base tree and names its source.
func topoTree(o *topoOptions) (*topotree.Tree, string, error) {
	var (
		root   *results.TopoNode
		source string
	)
	switch {
	case o.Shape != "":
		r, err := topotree.Synthetic(o.Shape)
		if err != nil {
			return nil, "", fmt.Errorf("--shape: %w", err)
		}
		root, source = r, "shape "+o.Shape
	case o.Profile == "":
		topo, err := topology.ReadTopology(topology.LiveRoots())
		if err != nil {
			return nil, "", err
		}
		root, source = topo.Tree, "this machine"
	default:
		st, err := os.Stat(o.Profile)
		switch {
		case err == nil && st.IsDir():
			if _, err := os.Stat(filepath.Join(o.Profile, "sys")); err != nil {
				return nil, "", fmt.Errorf("--profile %s: a directory, but not a sysfs snapshot (no sys/ in it)", o.Profile)
			}
			topo, err := topology.ReadTopology(topology.Roots{Sys: filepath.Join(o.Profile, "sys"), Proc: filepath.Join(o.Profile, "proc")})
			if err != nil {
				return nil, "", fmt.Errorf("--profile %s: %w", o.Profile, err)
			}
			root, source = topo.Tree, "sysfs snapshot "+o.Profile
		case err == nil:
			p, err := results.ReadProfile(o.Profile)
			if err != nil {
				return nil, "", fmt.Errorf("--profile: %w", err)
			}
			if p.Topology == nil || p.Topology.Tree == nil {
				return nil, "", fmt.Errorf("--profile %s: no topology section (probe it with --only topology)", o.Profile)
			}
			root, source = p.Topology.Tree, "profile "+o.Profile
		default:
			if _, perr := roofline.Published(o.Profile); perr == nil {
				return nil, "", fmt.Errorf("--profile %s: a published machine file has no topology tree; give a profile.json of bench probe, a sysfs snapshot directory (e.g. internal/topology/testdata/linux-arm64-kunpeng-920-4n) or --shape", o.Profile)
			}
			return nil, "", fmt.Errorf("--profile %s: %w", o.Profile, results.UnwrapPath(err))
		}
	}
	t, err := topotree.FromTopology(root)
	if err != nil {
		return nil, "", err
	}
	if o.Shape == "" && o.Profile == "" {
		// This machine: the CPUs the process may run on.
		allowed, err := affinity.Allowed()
		if err != nil {
			return nil, "", err
		}
		allowed = slices.DeleteFunc(allowed, func(c int) bool { return !slices.Contains(t.Active(), c) })
		if !slices.Equal(allowed, t.Active()) {
			if t, err = t.Restrict(allowed); err != nil {
				return nil, "", err
			}
			source += " (CPUs allowed: " + topology.FormatCPUList(allowed) + ")"
		}
	}
	if o.CPUs != "" {
		cpus, _ := topology.ParseCPUList(o.CPUs)
		if t, err = t.Restrict(cpus); err != nil {
			return nil, "", fmt.Errorf("--cpus %s: %w", o.CPUs, err)
		}
		source += ", CPUs " + topology.FormatCPUList(cpus)
	}
	return t, source, nil
}

func topoRun(o *topoOptions) error {
	base, source, err := topoTree(o)
	if err != nil {
		return fmt.Errorf("topo: %w", err)
	}
	eo := topotree.ExploreOptions{Remove: o.Remove, Configs: o.Configs, Model: o.Model,
		Enum: topotree.EnumOptions{MaxGroups: o.MaxGroups, MaxRemoves: o.MaxRemoves, MaxTrees: o.MaxTrees}}
	if o.Model != "" {
		cfg, err := models.Load(o.Model)
		if err != nil {
			return fmt.Errorf("topo: %w", err)
		}
		arch, err := cfg.Arch()
		if err != nil {
			return fmt.Errorf("topo: %w", err)
		}
		eo.Limits = topotree.Limits{Heads: arch.Heads, KVHeads: arch.KVHeads}
	}
	r, err := topotree.Explore(base, source, eo)
	if err != nil {
		return fmt.Errorf("topo: --remove: %w", err)
	}
	js := newJSONOut(o.JSON, o.IO.Out)
	if js.on() {
		data, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return fmt.Errorf("topo: %w", err)
		}
		if err := js.write(append(data, '\n')); err != nil {
			return err
		}
		if err := js.flush(); err != nil {
			return fmt.Errorf("topo: %w", err)
		}
	}
	if !js.tables() {
		return nil
	}
	return writeTopo(o.IO.Out, r)
}

func writeTopo(w io.Writer, r *topotree.Result) error {
	fmt.Fprintf(w, "TopoTree of %s: %d PUs active, %d idle\n", r.Source, len(r.Active), len(r.Idle))
	if len(r.Transforms) > 0 {
		var s []string
		for _, x := range r.Transforms {
			s = append(s, x.String())
		}
		fmt.Fprintf(w, "transforms: %s\n", strings.Join(s, " "))
	}
	fmt.Fprintln(w)
	t := newMarkdown(w, "depth", "kind", "nodes", "children each", "PUs each", "CPUs")
	for _, l := range r.Levels {
		if err := t.Append([]string{fmt.Sprint(l.Depth), l.Kind, fmt.Sprint(l.Nodes), span(l.ChildrenMin, l.ChildrenMax),
			span(l.PUsMin, l.PUsMax), abbrevLists(l.CPULists)}); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	if len(r.Transforms) > 0 {
		fmt.Fprintf(w, "\nactive CPUs (%d): %s\n", len(r.Active), topology.FormatCPUList(r.Active))
		fmt.Fprintf(w, "idle CPUs (%d): %s\n", len(r.Idle), topology.FormatCPUList(r.Idle))
		fmt.Fprintf(w, "run on them: bench run --decode-config cpus=%s ... (or taskset -c %s bench run ... for both phases)\n",
			topology.FormatCPUList(r.Active), topology.FormatCPUList(r.Active))
	}
	if r.Configs == nil && r.ConfigDups == 0 && r.Limited == 0 {
		return nil
	}
	fmt.Fprintln(w)
	if len(r.Transforms) == 0 {
		trunc := ""
		if r.Truncated {
			trunc = " (stopped at --max-trees)"
		}
		fmt.Fprintf(w, "trees: %d with every PU (groups only), %d with removes, %d duplicates skipped%s; --max-groups %d, --max-removes %d\n",
			r.GroupedTrees, r.RemovedTrees, r.TreeDups, trunc, r.MaxGroups, r.MaxRemoves)
	}
	lim := "no --model: no TP limit"
	if r.Model != "" {
		lim = fmt.Sprintf("%d excluded by %s's %d query and %d KV heads (TP must divide both)", r.Limited, r.Model, r.Heads, r.KVHeads)
	}
	fmt.Fprintf(w, "configurations: %d, %d duplicates skipped, %s; those of TP 1 run with bench run --prefill-config/--decode-config config=N (numbered with the run's model as --model)\n\n", len(r.Configs), r.ConfigDups, lim)
	t = newMarkdown(w, "#", "phase", "tree", "cross-section", "processes (TP)", "PUs/process", "NUMA nodes", "idle PUs", "CPUs")
	for i, c := range r.Configs {
		var cl []string
		for _, p := range c.CPUs {
			cl = append(cl, topology.FormatCPUList(p))
		}
		if err := t.Append([]string{fmt.Sprint(i + 1), c.Phase, c.Tree, fmt.Sprintf("%d %s", c.Depth, c.Kind), fmt.Sprint(c.Processes),
			span(c.PUsMin, c.PUsMax), c.NodesString(), fmt.Sprint(c.Idle), abbrevLists(cl)}); err != nil {
			return err
		}
	}
	return t.Render()
}

func span(lo, hi int) string {
	if lo == hi {
		return fmt.Sprint(lo)
	}
	return fmt.Sprintf("%d-%d", lo, hi)
}

// abbrevLists joins cpulists, eliding the middle of long levels and the
// tail of long lists (the JSON has them whole).
func abbrevLists(l []string) string {
	short := make([]string, len(l))
	for i, s := range l {
		short[i] = s
		if len(s) > 24 {
			if cut := strings.LastIndexByte(s[:24], ','); cut > 0 {
				short[i] = s[:cut] + ",…"
			}
		}
	}
	if len(l) > 6 {
		return strings.Join(short[:3], "; ") + fmt.Sprintf("; … %d more …; ", len(l)-5) + strings.Join(short[len(l)-2:], "; ")
	}
	return strings.Join(short, "; ")
}
