// Package workloads builds LLM request traces from real data sets shipped in
// data/ (GSM8K, LongBench-Write, RULER's SQuAD and HotpotQA QA pools) and
// counts their tokens with the real Qwen3 tokenizer, also shipped there.
//
// A trace is a list of requests, each with its prompt and output length in
// tokens, its arrival time (closed loop, or Poisson at a given rate) and the
// data item it came from:
//
//	t, err := workloads.Build("ruler-8k", 100, workloads.Poisson(2), 1)
//	s := workloads.Stats(t) // mean, p50, p90, p99 of prompt and output tokens
//
// Workloads (Names, Lookup):
//   - gsm8k: the 1,319 GSM8K test questions in Qwen's chat template
//     (QwenChat); output = the reference answer's tokens.
//   - longwriter: the 120 LongBench-Write prompts in Qwen's chat template;
//     output = the required length converted with TokensPerEnglishWord or
//     TokensPerChineseChar.
//   - ruler-4k, ruler-8k: RULER qa_1 (SQuAD, 500 samples) and qa_2
//     (HotpotQA, the 100 in the pool), alternating, built as RULER's qa.py
//     does for a 4096- or 8192-token budget: its template, " Answer:"
//     prefix, "Document i:" docs, binary search of the doc count on sample 0
//     and step-down by 10 docs per sample until prompt + 32 ≤ budget, seed
//     42. Output = the first gold answer's tokens (mean 4.1, the paper's
//     decode length is 4), not tokens_to_generate (32), which is only
//     RULER's cap on generation.
//
// Pools are built on first use and cached (about 2 CPU-seconds: tokenizing
// 2.5 MB of text), and the tokenizer is loaded once (about 0.5 s).
//
// The package does no I/O outside its embedded files and imports no other
// package of this module; the engine and commands import it.
package workloads
