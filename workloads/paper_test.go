package workloads

import (
	"strings"
	"testing"
)

// TestVsSMEPilot: every workload with a Table 2 row gets a prefill and a
// decode row with the paper's value and a measured explanation; GSM8K's
// calculator annotations are measured to shorten the answers.
func TestVsSMEPilot(t *testing.T) {
	if testing.Short() {
		t.Skip("tokenizes the data sets")
	}
	for _, name := range Names() {
		tr, err := Build(name, 50, Arrival{}, 1)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := VsSMEPilot(tr)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 2 || rows[0].Phase != "prefill" || rows[1].Phase != "decode" {
			t.Fatalf("%s: rows %+v", name, rows)
		}
		for _, r := range rows {
			want := smepilotTable2[name][0]
			if r.Phase == "decode" {
				want = smepilotTable2[name][1]
			}
			if r.Paper != want || r.Ratio <= 0 || len(r.Why) == 0 || !strings.HasPrefix(r.Why[0], "measured:") {
				t.Errorf("%s %s: %+v", name, r.Phase, r)
			}
		}
	}
	p, err := gsm8kParts.get(measureGSM8KAnswers)
	if err != nil {
		t.Fatal(err)
	}
	// gsm8k/SOURCE.md: answers 124.2 and questions 61.3 Qwen3 tokens.
	if p.written < 124 || p.written > 124.4 || p.question < 61.1 || p.question > 61.5 {
		t.Errorf("GSM8K means %.1f / %.1f, SOURCE.md says 124.2 / 61.3", p.written, p.question)
	}
	if !(p.noCalcNoFinal < p.noCalc && p.noCalc < p.written) {
		t.Errorf("stripping annotations and the final line must shorten the answers: %+v", p)
	}
}
