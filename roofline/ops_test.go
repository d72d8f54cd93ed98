package roofline

import "testing"

// TestOpVocabulary: every operator the catalog builds, dense and MoE, in
// both phases, is in the vocabulary with the kind the catalog gives it.
func TestOpVocabulary(t *testing.T) {
	moe := Arch{Name: "moe", Dim: 256, Intermediate: 512, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 64, Vocab: 1000, QKNorm: true,
		Experts: 8, ExpertsPerToken: 2, MoEIntermediate: 128, MoELayers: 1}
	for _, phase := range Phases() {
		r := Request{Phase: phase, Batch: 2, Tokens: 4, Context: 8, Weight: "fp32", Act: "fp32", KV: "fp32", Routing: Routing{Kind: "uniform"}}
		if phase == Decode {
			r.Tokens = 1
		}
		cat, err := BuildCatalog(moe, r)
		if err != nil {
			t.Fatal(err)
		}
		ops := cat.Head
		for _, l := range cat.Layers {
			ops = append(ops, l.Ops...)
		}
		for _, o := range ops {
			info, ok := LookupOp(o.Name)
			if !ok || info.Kind != o.Kind {
				t.Errorf("%s %s: vocabulary %+v (known %v), catalog kind %s", phase, o.Name, info, ok, o.Kind)
			}
		}
	}
	if e, ok := ParseExpertOp(ExpertOp(3)); !ok || e != 3 {
		t.Errorf("ParseExpertOp(ExpertOp(3)) = %d, %v", e, ok)
	}
	for _, n := range []string{"expert", "expert x", "expert -1", "experts"} {
		if _, ok := ParseExpertOp(n); ok {
			t.Errorf("ParseExpertOp(%q): an expert", n)
		}
	}
	if Group("no_such_op") != GroupOther || Kind("no_such_op") != "" {
		t.Error("an unknown name has a group or kind")
	}
}
