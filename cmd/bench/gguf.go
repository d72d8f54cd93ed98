package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cpubench/bench/engine"
	"github.com/cpubench/bench/models"
	"github.com/cpubench/bench/workloads"
)

func init() { subcommands = append(subcommands, newGGUFCmd) }

// GGUFOptions are the parsed flags of `bench gguf`.
type GGUFOptions struct {
	IO     IO
	Model  string
	Format string
	Layers int
	Seed   uint64
	Out    string
}

func newGGUFCmd(streams IO) *cobra.Command {
	o := &GGUFOptions{IO: streams}
	cmd := &cobra.Command{
		Use:   "gguf --model M --format F --out FILE.gguf",
		Short: "Write a GGUF file with random weights at a model's shapes (for peer comparisons with llama.cpp)",
		Long: `Write a GGUF v3 file of a dense Llama or Qwen3 model (a shipped config name or a
config.json path) with random weights (uniform ±0.035, norms 1) in one format:
f32, f16, bf16, q8_0, q4_0, q4_k, q6_k, tq2_0 or tq1_0 (every matrix,
token_embd included; q8_0/q4_0 and the ternary formats quantized as ggml's
reference quantizers do, q4_k/q6_k with simplified ones without ggml's
scale search; the K-quants and ternary formats need row lengths that are
multiples of 256). The embedded Qwen3 tokenizer is
written as tokenizer.ggml.* so llama.cpp's llama-bench loads the file; bench run
--weights FILE.gguf reads it too. The weights are meaningless: use the file to
compare speed only (scripts/compare-llamacpp.sh). The file is written to a
temporary name and renamed.`,
		Example: `  bench gguf --model qwen3-0.6b --format q4_0 --out /tmp/qwen3-0.6b-q4_0.gguf
  bench gguf --model qwen3-0.6b --format q8_0 --layers 4 --out /tmp/q8-4l.gguf`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return ggufRun(cmd.Context(), o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.Model, "model", "qwen3-0.6b", "a shipped model config name or a config.json path")
	f.StringVar(&o.Format, "format", "q8_0", "tensor format: "+strings.Join(engine.GGUFFormats, ", "))
	f.IntVar(&o.Layers, "layers", 0, "write only the first N layers (0: all)")
	f.Uint64Var(&o.Seed, "seed", 1, "seed of the random weights")
	f.StringVar(&o.Out, "out", "", "output file (required)")
	return cmd
}

func ggufRun(ctx context.Context, o *GGUFOptions) error {
	if o.Out == "" {
		return fmt.Errorf("gguf: --out: required")
	}
	if o.Layers < 0 {
		return fmt.Errorf("gguf: --layers %d: must be ≥ 0", o.Layers)
	}
	data, name, err := models.ReadConfig(o.Model)
	if err != nil {
		return fmt.Errorf("gguf: --model: %w", err)
	}
	cfg, err := engine.FromHF(data, name)
	if err != nil {
		return fmt.Errorf("gguf: --model %s: %w", o.Model, err)
	}
	if o.Layers > cfg.Layers {
		return fmt.Errorf("gguf: --layers %d: model %s has %d", o.Layers, cfg.Name, cfg.Layers)
	}
	if o.Layers > 0 {
		cfg.Layers = o.Layers
	}
	var v *workloads.GGUFVocab
	err = untilDone(ctx, func() (err error) {
		v, err = workloads.Qwen3GGUFVocab(cfg.Vocab)
		return err
	})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("gguf: tokenizer: %w", err)
	}
	ev := engine.GGUFVocab{Model: "gpt2", Pre: "qwen2", Tokens: v.Tokens, Types: v.Types, Merges: v.Merges, BOS: v.EOS, EOS: v.EOS}
	if err := engine.WriteSyntheticGGUFContext(ctx, o.Out, cfg, o.Format, ev, o.Seed); err != nil {
		return fmt.Errorf("gguf: %w", err)
	}
	fmt.Fprintf(o.IO.Out, "wrote %s: %s, %d layers, %s weights (random), Qwen3 tokenizer\n", o.Out, cfg.Name, cfg.Layers, o.Format)
	return nil
}
