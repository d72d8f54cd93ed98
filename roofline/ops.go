package roofline

import (
	"strconv"
	"strings"
)

// The operator vocabulary: the names BuildCatalog gives operators and the
// engine's per-operator timers use (package engine's Op* constants are
// these), so that measured and predicted times join on (phase, name);
// each name's kind and breakdown group (LookupOp). Reports and commands
// classify operators by LookupOp, never by the spelling of a name.

// Operator names.
const (
	OpEmbed    = "embed"
	OpAttnNorm = "attn_norm"
	OpQProj    = "q_proj"
	OpKProj    = "k_proj"
	OpVProj    = "v_proj"
	OpQKNorm   = "qk_norm"
	OpRoPE     = "rope"
	// OpKVWrite stores the new tokens' K and V rows into the KV cache, in
	// the cache's layout and precision (issue #16: timed apart from RoPE).
	OpKVWrite      = "kv_write"
	OpQK           = "qk"      // attention scores Q·Kᵀ
	OpSoftmax      = "softmax" // attention softmax
	OpPV           = "pv"      // attention-weighted sum of V
	OpOProj        = "o_proj"
	OpAttnResidual = "attn_residual"
	OpFFNNorm      = "ffn_norm"
	OpGateProj     = "gate_proj"
	OpUpProj       = "up_proj"
	OpSiLUMul      = "silu_mul"
	OpDownProj     = "down_proj"
	OpFFNResidual  = "ffn_residual"
	OpRouter       = "router"
	OpRouterTopK   = "router_softmax_topk"
	// OpExpert is the catalog's per-expert operator (gate, up and down of
	// one routed expert), named ExpertOp(e): "expert 3".
	OpExpert        = "expert"
	OpExpertSiLUMul = "expert_silu_mul"
	OpMoECombine    = "moe_combine"
	OpFinalNorm     = "final_norm"
	OpLMHead        = "lm_head"
	// OpAttnGather and OpFFNGather are NUMA policy tp's Gathers (ArcLight
	// §3.3): the sum of the thread groups' o_proj or down_proj partial
	// sums into the residual, in place of attn_residual and ffn_residual;
	// the catalog has no tp operators (NUMAPredict models tp as a whole).
	OpAttnGather = "attn_gather"
	OpFFNGather  = "ffn_gather"

	// Names of fused operators, which the catalog splits: the engine's
	// fused causal attention (qk, softmax and pv in one tiled kernel; the
	// catalog's AttentionParts) and its routed experts together (the
	// catalog's expert N and expert_silu_mul); qkv_proj, gate_up_proj and
	// attn are the fused projections and attention of other engines.
	OpAttention  = "attention"
	OpExperts    = "experts"
	OpQKVProj    = "qkv_proj"
	OpGateUpProj = "gate_up_proj"
	OpAttn       = "attn"
)

// OpKind is what an operator computes, which decides where it may run
// (SMEPilot §3.2: non-linear operators stay on the cores).
type OpKind string

// Operator kinds.
const (
	KindLinear      OpKind = "linear"      // GEMM against a weight matrix
	KindAttention   OpKind = "attention"   // matmul of activations against the KV cache
	KindNonlinear   OpKind = "nonlinear"   // norm, softmax, activation: vector work with exp/rsqrt
	KindElementwise OpKind = "elementwise" // residual add, MoE combine, embedding gather
)

// OpGroup is the part of the model an operator belongs to, as a time
// breakdown stacks them.
type OpGroup string

// Operator groups.
const (
	GroupAttention   OpGroup = "attention"   // qk, softmax, pv or a fused attention
	GroupProjections OpGroup = "projections" // q/k/v/o_proj
	GroupFFN         OpGroup = "FFN"         // gate/up/down_proj, silu_mul, router and experts
	GroupNorms       OpGroup = "norms"       // every RMSNorm
	GroupLMHead      OpGroup = "LM head"
	GroupOther       OpGroup = "other" // embed, rope, residuals
)

// OpGroups lists the groups in stacking order.
func OpGroups() []OpGroup {
	return []OpGroup{GroupAttention, GroupProjections, GroupFFN, GroupNorms, GroupLMHead, GroupOther}
}

// OpInfo is what the vocabulary says about one operator name.
type OpInfo struct {
	Kind  OpKind
	Group OpGroup
}

var opInfo = map[string]OpInfo{
	OpEmbed:         {KindElementwise, GroupOther},
	OpAttnNorm:      {KindNonlinear, GroupNorms},
	OpQProj:         {KindLinear, GroupProjections},
	OpKProj:         {KindLinear, GroupProjections},
	OpVProj:         {KindLinear, GroupProjections},
	OpQKVProj:       {KindLinear, GroupProjections},
	OpQKNorm:        {KindNonlinear, GroupNorms},
	OpRoPE:          {KindNonlinear, GroupOther},
	OpKVWrite:       {KindElementwise, GroupOther},
	OpQK:            {KindAttention, GroupAttention},
	OpSoftmax:       {KindNonlinear, GroupAttention},
	OpPV:            {KindAttention, GroupAttention},
	OpAttention:     {KindAttention, GroupAttention},
	OpAttn:          {KindAttention, GroupAttention},
	OpOProj:         {KindLinear, GroupProjections},
	OpAttnResidual:  {KindElementwise, GroupOther},
	OpFFNNorm:       {KindNonlinear, GroupNorms},
	OpGateProj:      {KindLinear, GroupFFN},
	OpUpProj:        {KindLinear, GroupFFN},
	OpGateUpProj:    {KindLinear, GroupFFN},
	OpSiLUMul:       {KindNonlinear, GroupFFN},
	OpDownProj:      {KindLinear, GroupFFN},
	OpFFNResidual:   {KindElementwise, GroupOther},
	OpAttnGather:    {KindElementwise, GroupOther},
	OpFFNGather:     {KindElementwise, GroupOther},
	OpRouter:        {KindLinear, GroupFFN},
	OpRouterTopK:    {KindNonlinear, GroupFFN},
	OpExpert:        {KindLinear, GroupFFN},
	OpExperts:       {KindLinear, GroupFFN},
	OpExpertSiLUMul: {KindNonlinear, GroupFFN},
	OpMoECombine:    {KindElementwise, GroupFFN},
	OpFinalNorm:     {KindNonlinear, GroupNorms},
	OpLMHead:        {KindLinear, GroupLMHead},
}

// ExpertOp is the catalog's name of expert e's operator: "expert 3".
func ExpertOp(e int) string { return OpExpert + " " + strconv.Itoa(e) }

// ParseExpertOp returns e for ExpertOp(e), and whether name is one.
func ParseExpertOp(name string) (int, bool) {
	s, ok := strings.CutPrefix(name, OpExpert+" ")
	if !ok {
		return 0, false
	}
	e, err := strconv.Atoi(s)
	return e, err == nil && e >= 0
}

// LookupOp returns what the vocabulary says about an operator name (an
// expert's ExpertOp name is OpExpert), and whether it knows the name.
func LookupOp(name string) (OpInfo, bool) {
	if _, ok := ParseExpertOp(name); ok {
		name = OpExpert
	}
	i, ok := opInfo[name]
	return i, ok
}

// Group is the breakdown group of an operator name; GroupOther for a
// name the vocabulary does not know.
func Group(name string) OpGroup {
	if i, ok := LookupOp(name); ok {
		return i.Group
	}
	return GroupOther
}

// Kind is the kind of an operator name ("" for a name the vocabulary
// does not know).
func Kind(name string) OpKind {
	i, _ := LookupOp(name)
	return i.Kind
}
