package main

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"

	"github.com/spf13/pflag"

	"github.com/cpubench/bench/engine"
	"github.com/cpubench/bench/internal/topology"
	"github.com/cpubench/bench/internal/topotree"
	"github.com/cpubench/bench/roofline"
	"github.com/cpubench/bench/sweep"
)

// phaseFlags are Sandwich's per-phase service configurations (§3.2–3.3)
// as `bench run` and `bench sweep` take them.
type phaseFlags struct {
	PrefillConfig, DecodeConfig string
	Configs                     string // "" or "auto"
	ConfigsTry                  int
}

func addPhaseFlags(f *pflag.FlagSet, p *phaseFlags) {
	f.StringVar(&p.PrefillConfig, "prefill-config", "", "run prefill on this configuration's CPUs: "+topotree.ConfigSyntax+" (default with --decode-config: all)")
	f.StringVar(&p.DecodeConfig, "decode-config", "", "run decode on this configuration's CPUs (syntax as --prefill-config; default with --prefill-config: all)")
	f.StringVar(&p.Configs, "configs", "", "auto: rank this machine's TP-degree-1 configurations (bench topo --configs) per phase by the roofline's TTFT and TPOT at their thread counts, measure the --configs-try best of each and run on the measured best (needs a profile)")
	f.IntVar(&p.ConfigsTry, "configs-try", 2, "with --configs auto: configurations measured per phase")
}

// on reports whether any per-phase flag is set.
func (p *phaseFlags) on() bool {
	return p.PrefillConfig != "" || p.DecodeConfig != "" || p.Configs != ""
}

// validate checks the flags' syntax (no files read): cmd names the
// command in errors.
func (p *phaseFlags) validate(cmd string, threads int, placement, numa, layout string) error {
	if p.Configs != "" && p.Configs != "auto" {
		return fmt.Errorf("%s: --configs %q: the only value is auto", cmd, p.Configs)
	}
	if p.ConfigsTry < 1 {
		return fmt.Errorf("%s: --configs-try %d: must be ≥ 1", cmd, p.ConfigsTry)
	}
	if !p.on() {
		return nil
	}
	if p.Configs != "" && (p.PrefillConfig != "" || p.DecodeConfig != "") {
		return fmt.Errorf("%s: --configs auto picks both phases' configurations: give it without --prefill-config and --decode-config", cmd)
	}
	if err := p.syntax(cmd); err != nil {
		return err
	}
	switch {
	case threads != 0:
		return fmt.Errorf("%s: --threads %d: the per-phase configurations set the threads; leave --threads out", cmd, threads)
	case placement == string(engine.PlaceMixed) || placement == string(engine.PlaceAuto):
		return fmt.Errorf("%s: --placement %s: per-phase configurations run placement cores or matrix", cmd, placement)
	case numa != "" && numa != string(engine.NUMAOS):
		return fmt.Errorf("%s: --numa %s: per-phase configurations run with --numa os (a configuration of TP degree > 1 needs --numa tp, not yet combined with them)", cmd, numa)
	case layout != "":
		return fmt.Errorf("%s: --weight-layout %s: per-phase configurations run without a weight layout policy", cmd, layout)
	}
	return nil
}

// syntax checks the two configurations' syntax (topotree.ParseConfigSpec).
func (p *phaseFlags) syntax(cmd string) error {
	for _, v := range []struct{ flag, spec string }{{"prefill-config", p.PrefillConfig}, {"decode-config", p.DecodeConfig}} {
		if v.spec == "" {
			continue
		}
		if _, err := topotree.ParseConfigSpec(v.spec); err != nil {
			return fmt.Errorf("%s: --%s: %w", cmd, v.flag, err)
		}
	}
	return nil
}

// sweepPhaseResolvers are sweep.Options' ResolveConfig and
// ConfigCandidates on the live machine's TopoTree with each model's
// head limits.
func sweepPhaseResolvers(o *sweep.Options) {
	o.ResolveConfig = func(spec string, c engine.Config) (sweep.PhaseConfig, error) {
		tree, err := liveTree()
		if err != nil {
			return sweep.PhaseConfig{}, err
		}
		pc, err := topotree.ResolveConfig(tree, spec, topotree.Limits{Heads: c.Heads, KVHeads: c.KVHeads})
		if err != nil {
			return sweep.PhaseConfig{}, err
		}
		return sweep.PhaseConfig{Spec: pc.Spec, Label: pc.Label, CPUs: pc.CPUs, Threads: len(pc.CPUs)}, nil
	}
	o.ConfigCandidates = func(c engine.Config) ([]sweep.PhaseConfig, error) {
		tree, err := liveTree()
		if err != nil {
			return nil, err
		}
		cs, err := topotree.Candidates(tree, topotree.Limits{Heads: c.Heads, KVHeads: c.KVHeads})
		if err != nil {
			return nil, err
		}
		var out []sweep.PhaseConfig
		for _, cd := range cs {
			out = append(out, sweep.PhaseConfig{Spec: cd.Spec, Label: cd.Label, CPUs: cd.CPUs, Threads: len(cd.CPUs)})
		}
		return out, nil
	}
}

// phaseState is the flags resolved on the live machine's TopoTree.
type phaseState struct {
	flags           phaseFlags
	prefill, decode sweep.PhaseConfig
	cands           []sweep.PhaseConfig // --configs auto
	auto            *sweep.AutoConfigs
}

// liveTree is the TopoTree of this machine restricted to the CPUs this
// process may run on (as `bench topo` prints it).
func liveTree() (*topotree.Tree, error) {
	t, _, err := topoTree(&topoOptions{})
	return t, err
}

// resolve resolves the flags on the live tree with c's head limits and
// sets eo's per-phase CPUs (--configs auto: every allowed CPU for both,
// moved by phaseState.run). nil without per-phase flags.
func (p *phaseFlags) resolve(c engine.Config, eo *engine.Options) (*phaseState, error) {
	if !p.on() {
		return nil, nil
	}
	tree, err := liveTree()
	if err != nil {
		return nil, err
	}
	lim := topotree.Limits{Heads: c.Heads, KVHeads: c.KVHeads}
	st := &phaseState{flags: *p}
	if p.Configs == "auto" {
		cs, err := topotree.Candidates(tree, lim)
		if err != nil {
			return nil, err
		}
		for _, cd := range cs {
			st.cands = append(st.cands, sweep.PhaseConfig{Spec: cd.Spec, Label: cd.Label, CPUs: cd.CPUs, Threads: len(cd.CPUs)})
		}
		eo.PrefillCPUs, eo.DecodeCPUs = tree.Active(), tree.Active()
		return st, nil
	}
	for _, v := range []struct {
		flag, spec string
		dst        *sweep.PhaseConfig
		cpus       *[]int
	}{{"prefill-config", p.PrefillConfig, &st.prefill, &eo.PrefillCPUs}, {"decode-config", p.DecodeConfig, &st.decode, &eo.DecodeCPUs}} {
		spec := v.spec
		if spec == "" {
			spec = "all"
		}
		pc, err := topotree.ResolveConfig(tree, spec, lim)
		if err != nil {
			return nil, fmt.Errorf("--%s: %w", v.flag, err)
		}
		*v.dst = sweep.PhaseConfig{Spec: pc.Spec, Label: pc.Label, CPUs: pc.CPUs, Threads: len(pc.CPUs)}
		*v.cpus = pc.CPUs
	}
	return st, nil
}

// runPrompts draws the run's prompts as runRun does (same seed, same
// stream), for --configs auto's measurements.
func runPrompts(seed uint64, B, T, vocab int) [][]int {
	rng := rand.New(rand.NewPCG(seed, 0x70c5))
	prompts := make([][]int, B)
	for i := range prompts {
		prompts[i] = make([]int, T)
		for j := range prompts[i] {
			prompts[i][j] = rng.IntN(vocab)
		}
	}
	return prompts
}

// auto runs --configs auto on m (made with every allowed CPU for both
// phases): ranks the candidates by the roofline of machine, measures the
// best few and leaves m on the measured best. Progress goes to errw.
// A no-op without --configs auto.
func (st *phaseState) runAuto(m *engine.Model, machine *roofline.Machine, o *runOptions, errw io.Writer) error {
	if st == nil || st.flags.Configs != "auto" {
		return nil
	}
	if machine == nil {
		return errors.New("needs a profile (--profile): the configurations are ranked by the roofline's predictions")
	}
	prec, _ := m.PredictionPrecision(machine)
	a, err := sweep.RankConfigs(machine, m.Config, prec, o.Batch, o.PromptTokens, o.GenTokens, st.cands, st.flags.ConfigsTry)
	if err != nil {
		return err
	}
	fmt.Fprintf(errw, "run: --configs auto: %d configurations ranked; measuring the %d best per phase\n", len(st.cands), a.Try)
	if err := a.Measure(m, runPrompts(o.Seed, o.Batch, o.PromptTokens, m.Config.Vocab), o.GenTokens); err != nil {
		return err
	}
	st.auto = a
	st.prefill, st.decode = a.Prefill[a.PrefillChoice].PhaseConfig, a.Decode[a.DecodeChoice].PhaseConfig
	return nil
}

// runPhases is the JSON of the per-phase configurations of a run.
type runPhases struct {
	Prefill sweep.PhaseConfig  `json:"prefill"`
	Decode  sweep.PhaseConfig  `json:"decode"`
	Auto    *sweep.AutoConfigs `json:"auto,omitempty"`
}

// record is what ran each phase (nil without per-phase flags).
func (st *phaseState) record(m *engine.Model) *runPhases {
	if st == nil {
		return nil
	}
	r := &runPhases{Prefill: st.prefill, Decode: st.decode, Auto: st.auto}
	r.Prefill.CPUs, r.Prefill.Threads = m.PhaseCPUs(roofline.Prefill), m.PhaseThreads(roofline.Prefill)
	r.Decode.CPUs, r.Decode.Threads = m.PhaseCPUs(roofline.Decode), m.PhaseThreads(roofline.Decode)
	return r
}

// writeRunPhases prints each phase's configuration and, after --configs
// auto, the ranked table with predicted and measured times.
func writeRunPhases(w io.Writer, p *runPhases) error {
	if p == nil {
		return nil
	}
	for _, ph := range []struct {
		name string
		c    sweep.PhaseConfig
	}{{"prefill", p.Prefill}, {"decode", p.Decode}} {
		fmt.Fprintf(w, "%s configuration: %s (%d threads)\n", ph.name, ph.c.Label, ph.c.Threads)
	}
	fmt.Fprintln(w)
	if p.Auto == nil {
		return nil
	}
	a := p.Auto
	fmt.Fprintf(w, "--configs auto: TP-degree-1 configurations ranked by the roofline at their thread counts; the %d best of each phase measured (prefill: TTFT; decode: TPOT over %d steps), the measured best chosen\n\n", a.Try, a.DecodeSteps)
	t := newMarkdown(w, "phase", "rank", "configuration", "CPUs", "threads", "predicted", "measured", "measured/predicted", "chosen")
	for _, ph := range []struct {
		name   string
		l      []sweep.PhaseTry
		choice int
	}{{"prefill (TTFT)", a.Prefill, a.PrefillChoice}, {"decode (TPOT)", a.Decode, a.DecodeChoice}} {
		for i, tr := range ph.l {
			meas, ratio, chosen := "not measured", "—", ""
			if tr.MeasuredS != nil {
				meas = fmtTime(*tr.MeasuredS)
				if tr.PredictedS > 0 {
					ratio = fmt.Sprintf("%.2f", *tr.MeasuredS/tr.PredictedS)
				}
			}
			if i == ph.choice {
				chosen = "yes"
			}
			if err := t.Append([]string{ph.name, fmt.Sprint(i + 1), tr.Label, topology.FormatCPUList(tr.CPUs), fmt.Sprint(tr.Threads),
				fmtTime(tr.PredictedS), meas, ratio, chosen}); err != nil {
				return err
			}
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	return nil
}
