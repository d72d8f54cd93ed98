package workloads

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// rulerQA builds RULER qa_1 (SQuAD) or qa_2 (HotpotQA) prompts the way
// RULER's scripts/data/synthetic/qa.py does, counting tokens with tok. Its
// prompt is the "base" model template (no chat wrapper) with the answer
// prefix " Answer:" appended, which is what RULER sends to a completion
// endpoint.
//
// Counting a prompt of 50 documents from scratch costs ~8K tokens of BPE,
// and the sizing procedure counts hundreds of prompts, so rulerQA counts each
// document once and sums. That sum is exact: the pre-tokenizer regex never
// matches across a newline followed by a non-space character, so a prompt
// splits into independently tokenized segments at every "\n|Document" and
// "\n|{document text}" and "\n|Answer" boundary (TestRulerSegmentsExact
// checks the sum against whole-prompt counts).
type rulerQA struct {
	tmpl   *rulerTemplates
	pool   *qaPool
	tok    *Tokenizer
	file   string
	head   string // template text before {context}
	tail   string // template text after {context}, then the answer prefix
	joiner string

	headTok int
	docTok  []int // tokens of docs[i]+joiner, or -1 when the doc starts with a space
	idxTok  []int // tokens of "Document {i}:\n", by i (1-based)
}

func newRulerQA(tmpl *rulerTemplates, pool *qaPool, tok *Tokenizer, file string) (*rulerQA, error) {
	head, tail, ok := strings.Cut(tmpl.QA.Template, "{context}")
	if !ok {
		return nil, fmt.Errorf("RULER qa template lacks {context}")
	}
	r := &rulerQA{tmpl: tmpl, pool: pool, tok: tok, file: file, head: head,
		tail: tail + tmpl.QA.AnswerPrefix, joiner: tmpl.DocumentJoiner}
	// The segment sums need every joined part to start with a non-space
	// after a newline; otherwise fall back to counting whole prompts.
	if !endsWithNewline(head) || !endsWithNewline(r.joiner) || !strings.HasPrefix(r.tail, r.joiner) || !startsNonSpace(r.tail[len(r.joiner):]) {
		return nil, fmt.Errorf("RULER qa template %q: its context is not delimited by newlines; the segmented token count would be wrong", tmpl.QA.Template)
	}
	texts := make([]string, len(pool.Docs))
	for i, d := range pool.Docs {
		texts[i] = d + r.joiner
	}
	r.docTok = countAll(tok, texts)
	for i, d := range pool.Docs {
		if !startsNonSpace(d) {
			r.docTok[i] = -1
		}
	}
	r.headTok = tok.Count(head)
	r.idxTok = make([]int, len(pool.Docs)+1)
	for i := 1; i < len(r.idxTok); i++ {
		r.idxTok[i] = tok.Count("Document " + strconv.Itoa(i) + ":\n")
	}
	return r, nil
}

func endsWithNewline(s string) bool { return strings.HasSuffix(s, "\n") }

func startsNonSpace(s string) bool {
	c, _ := utf8.DecodeRuneInString(s)
	return s != "" && !unicode.IsSpace(c)
}

// docs returns the document list for question index with num docs, as
// qa.py's generate_input_output: the gold docs, then (SQuAD) other
// paragraphs of the same article, then random other docs, shuffled with a
// fresh RNG seeded with the task seed. rng is the task's global RNG.
func (r *rulerQA) docs(index, num int, rng *rand.Rand) []int {
	q := r.pool.QAs[index]
	n := len(r.pool.Docs)
	var all []int
	if num < n {
		all = append(all, q.Context...)
		if num-len(q.Context) > len(q.More) {
			used := make(map[int]bool, len(q.Context)+len(q.More))
			for _, d := range q.Context {
				used[d] = true
			}
			for _, d := range q.More {
				used[d] = true
			}
			addition := make([]int, 0, n)
			for d := 0; d < n; d++ {
				if !used[d] {
					addition = append(addition, d)
				}
			}
			all = append(all, q.More...)
			all = append(all, pySample(rng, addition, max(0, num-len(q.Context)-len(q.More)))...)
		} else {
			all = append(all, pySample(rng, q.More, max(0, num-len(q.Context)))...)
		}
	} else {
		all = make([]int, n)
		for d := range all {
			all[d] = d
		}
	}
	shuf := rand.New(rand.NewPCG(r.tmpl.Seed, 0))
	shuf.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	return all
}

// pySample is Python's random.sample: k distinct elements of pop in random
// order (a partial Fisher–Yates shuffle of a copy).
func pySample(rng *rand.Rand, pop []int, k int) []int {
	k = min(k, len(pop))
	c := append([]int(nil), pop...)
	for i := 0; i < k; i++ {
		j := i + rng.IntN(len(c)-i)
		c[i], c[j] = c[j], c[i]
	}
	return c[:k]
}

// prompt writes the full prompt text (with the answer prefix).
func (r *rulerQA) prompt(index int, docs []int) string {
	var b strings.Builder
	b.WriteString(r.head)
	for i, d := range docs {
		if i > 0 {
			b.WriteString(r.joiner)
		}
		b.WriteString("Document " + strconv.Itoa(i+1) + ":\n" + r.pool.Docs[d])
	}
	b.WriteString(strings.ReplaceAll(r.tail, "{query}", r.pool.QAs[index].Query))
	return b.String()
}

// count returns the token count of r.prompt(index, docs) from cached
// segment counts. It only reads r, so samples for several budgets can run
// at once.
func (r *rulerQA) count(index int, docs []int) int {
	n := r.headTok
	for i, d := range docs {
		if r.docTok[d] < 0 {
			n += r.tok.Count("Document " + strconv.Itoa(i+1) + ":\n" + r.pool.Docs[d] + r.joiner)
			continue
		}
		n += r.idxTok[i+1] + r.docTok[d]
	}
	tail := strings.ReplaceAll(r.tail, "{query}", r.pool.QAs[index].Query)
	return n + r.tok.Count(tail[len(r.joiner):])
}

// samples sizes and builds RULER's first num samples for maxSeq tokens
// (qa.py generate_samples): binary-search the number of docs on sample 0
// between incremental and 3× the linear estimate, then for each sample start
// there and drop incremental docs until prompt + tokens_to_generate fits.
// Each sample's output is its first gold answer, counted as the model would
// write it after " Answer:" (with a leading space).
func (r *rulerQA) samples(maxSeq, num int) ([]sample, error) {
	inc, ttg := r.tmpl.Incremental, r.tmpl.QA.TokensToGenerate
	rng := rand.New(rand.NewPCG(r.tmpl.Seed, 1))
	num = min(num, len(r.pool.QAs))

	perDoc := float64(r.count(0, r.docs(0, inc, rng))) / float64(inc)
	lo, hi := inc, max(int(float64(maxSeq)/perDoc*3), 2*inc)
	best := -1
	for lo <= hi {
		mid := (lo + hi) / 2
		if r.count(0, r.docs(0, mid, rng))+ttg <= maxSeq {
			best, lo = mid, mid+1
		} else {
			hi = mid - 1
		}
	}
	if best < 0 {
		best = inc
	}

	out := make([]sample, num)
	for i := range out {
		used := best
		var docs []int
		var length int
		for {
			docs = r.docs(i, used, rng)
			length = r.count(i, docs)
			if length+ttg <= maxSeq {
				break
			}
			if used <= inc {
				return nil, fmt.Errorf("RULER %s sample %d: %d docs make %d tokens, over the %d-token budget", r.pool.Dataset, i, used, length+ttg, maxSeq)
			}
			used -= inc
		}
		out[i] = sample{
			source: fmt.Sprintf("%s:%d docs=%d", r.file, i, len(docs)),
			prompt: length,
			output: r.tok.Count(" " + r.pool.QAs[i].Outputs[0]),
		}
	}
	return out, nil
}
