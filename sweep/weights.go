package sweep

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cpubench/bench/engine"
	"github.com/cpubench/bench/internal/memlimit"
	"github.com/cpubench/bench/kernels/quant"
	"github.com/cpubench/bench/models"
)

// WeightSpec says which weights to build: bench run's and bench sweep's
// --model, --weights, --weight-dtype, --layers, --seed and --placement,
// and the positions the run needs (PromptTokens + GenTokens, used when a
// config gives none).
type WeightSpec struct {
	Model        string // shipped config name, config.json or GGUF path (synthetic weights)
	Weights      string // "synthetic", a llama2.c checkpoint (.bin) or a GGUF file (.gguf)
	WeightDType  string // "" (fp32 for synthetic weights, as stored for a file) or an engine.WeightDTypes name
	Layers       int    // decoder layers to instantiate (0: all)
	Seed         uint64 // synthetic weights' seed
	PromptTokens int
	GenTokens    int
	Placement    string // engine placement name ("": cores), for the memory check
}

// ResolveWeights builds the weights s asks for (loaded, or drawn and
// quantized), after checking they fit in the memory this process may use,
// and returns them with the model's full layer count and notes on what was
// approximated. Errors name the flag and value ("--weights: ...",
// "--layers 9: the model has 5").
func ResolveWeights(o WeightSpec) (*engine.Weights, int, []string, error) {
	var notes []string
	dt := o.WeightDType
	if dt != "" {
		var err error
		if dt, err = engine.ParseWeightDType(dt); err != nil {
			return nil, 0, nil, fmt.Errorf("--weight-dtype: %w", err)
		}
	}
	if o.Weights != "synthetic" {
		var w *engine.Weights
		var full int
		if strings.HasSuffix(strings.ToLower(o.Weights), ".gguf") {
			h, err := engine.LoadGGUFHeader(o.Weights)
			if err != nil {
				return nil, 0, nil, fmt.Errorf("--weights: %w", err)
			}
			full = h.Config.Layers
			if o.Layers > full {
				return nil, 0, nil, fmt.Errorf("--layers %d: the model has %d", o.Layers, full)
			}
			if err := checkBytes(o.Weights, h.Config.Layers, o.Layers, float64(h.ResidentBytes(o.Layers)), "weights as stored, float matrices with their packed copies"); err != nil {
				return nil, 0, nil, err
			}
			if w, err = engine.LoadGGUFLayers(o.Weights, o.Layers); err != nil {
				return nil, 0, nil, fmt.Errorf("--weights: %w", err)
			}
		} else {
			var err error
			if w, err = engine.LoadLlama2C(o.Weights); err != nil {
				return nil, 0, nil, fmt.Errorf("--weights: %w", err)
			}
			full = w.Config.Layers
			if o.Layers > full {
				return nil, 0, nil, fmt.Errorf("--layers %d: the model has %d", o.Layers, full)
			}
			if o.Layers > 0 {
				w.Layers = w.Layers[:o.Layers]
				w.Config.Layers = o.Layers
			}
		}
		switch dt {
		case "":
		case engine.FormatFP32:
			if fs := w.WeightFormats(); len(fs) > 1 || fs[engine.FormatFP32] == 0 {
				w.Dequantize()
				notes = append(notes, "--weight-dtype fp32: the file's quantized matrices dequantized to fp32")
			}
		default:
			if err := w.Quantize(quant.Format(dt)); err != nil {
				return nil, 0, nil, fmt.Errorf("--weight-dtype %s: %w", dt, err)
			}
			if u := w.Unquantizable(); len(u) > 0 {
				notes = append(notes, fmt.Sprintf("--weight-dtype %s: kept fp32, K not a multiple of the block length %d (as llama.cpp's quantizer falls back): %s",
					dt, quant.BlockLen, strings.Join(u, ", ")))
			}
		}
		return w, full, notes, nil
	}
	if dt == "" {
		dt = engine.FormatFP32
	}
	var cfg engine.Config
	if strings.HasSuffix(strings.ToLower(o.Model), ".gguf") {
		// Shapes from a GGUF file's metadata, synthetic values.
		h, err := engine.LoadGGUFHeader(o.Model)
		if err != nil {
			return nil, 0, nil, fmt.Errorf("--model: %w", err)
		}
		cfg = h.Config
	} else {
		data, name, err := models.ReadConfig(o.Model)
		if err != nil {
			return nil, 0, nil, fmt.Errorf("--model: %w", err)
		}
		cfg, err = engine.FromHF(data, name)
		if mk := (*engine.MissingKeyError)(nil); errors.As(err, &mk) && mk.Key == "max_position_embeddings" {
			// A config whose context differs by variant (null key): size the
			// positions to this run.
			mc, perr := models.Parse(data, name)
			if perr != nil {
				return nil, 0, nil, fmt.Errorf("--model: %w", perr)
			}
			ex := engine.HFExtras{RoPETheta: 1e6, RMSEps: 1e-6, MaxSeq: o.PromptTokens + o.GenTokens}
			if cfg, err = engine.FromModel(mc, ex); err == nil {
				notes = append(notes, "config has no max_position_embeddings, rope_theta or rms_norm_eps usable here: positions sized to this run, θ 1e6, ε 1e-6 (timing-neutral)")
			}
		}
		if err != nil {
			return nil, 0, nil, fmt.Errorf("--model: %w", err)
		}
	}
	if o.Layers > cfg.Layers {
		return nil, 0, nil, fmt.Errorf("--layers %d: model %s has %d", o.Layers, cfg.Name, cfg.Layers)
	}
	if err := CheckMemory(cfg, o.Layers, o.Placement, dt); err != nil {
		return nil, 0, nil, err
	}
	w, err := engine.SyntheticAs(cfg, o.Layers, o.Seed, dt)
	if err != nil {
		return nil, 0, nil, err
	}
	return w, cfg.Layers, notes, nil
}

// CheckMemory refuses synthetic weights that would not fit in the memory
// this process may use (checkBytes). fp32: the weights plus
// the packed copies (a second fp32 copy; bf16 adds half of one more).
// q8_0 and q4_0: the fp32 embedding table, every linear weight (LM head
// included, a tied one as a quantized copy) at the format's bytes per
// weight, and the float32 draw of one layer or of the untied LM head,
// whichever is larger, before it is quantized.
func CheckMemory(cfg engine.Config, layers int, placement, dtype string) error {
	if layers > 0 {
		cfg.Layers = layers
	}
	need := float64(cfg.Params()) * 4 * 2
	what := "synthetic fp32 weights and packed copies"
	if dtype != "" && dtype != engine.FormatFP32 {
		embed := float64(cfg.Vocab) * float64(cfg.Dim)
		one := cfg
		one.Layers = 1
		layer := float64(one.Params()) - embed - float64(cfg.Dim)
		if !cfg.TiedEmbeddings {
			layer -= embed
		}
		linear := float64(cfg.Params()) - embed // norms counted as linears: negligible
		if cfg.TiedEmbeddings {
			linear += embed
		}
		transient := layer
		if !cfg.TiedEmbeddings {
			transient = max(layer, embed)
		}
		need = 4*embed + quant.Format(dtype).BytesPerWeight()*linear + 4*transient
		what = "synthetic " + dtype + " weights (fp32 embedding table)"
	} else if placement != "" && placement != string(engine.PlaceCores) {
		need += float64(cfg.Params()) * 2
	}
	return checkBytes("--model "+cfg.Name, cfg.Layers, 0, need, what)
}

// checkBytes refuses need bytes that would not fit in the memory this
// process may use (memlimit.Check: the cgroup, rlimit or MemAvailable
// headroom, the smallest): what (flag and value) with layers layers (of
// full) needs about need bytes.
func checkBytes(what string, full, layers int, need float64, kind string) error {
	if layers == 0 {
		layers = full
	}
	if err := memlimit.Check(fmt.Sprintf("%s: %d layers' %s", what, layers, kind), memlimit.Mul(1).TimesFloat(need)); err != nil {
		return fmt.Errorf("%w: pass --layers N to instantiate fewer", err)
	}
	return nil
}
