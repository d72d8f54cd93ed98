package deps

import (
	"bufio"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// rule is what a package's doc.go says about its imports of bench's own
// packages (paths relative to the module).
type rule struct {
	// only lists every package of bench the package may import directly;
	// nil: no such list (see deny), empty: none at all.
	only []string
	// deny lists packages that must not be reachable through the
	// package's imports (transitively); "X/..." is X and every package
	// under it.
	deny []string
	// noDoc: the package has no doc.go stating a rule.
	noDoc bool
}

var none = []string{}

// rules is every package of the module, with the rule its doc.go states.
// Apart from these, nothing imports a command (cmd/...) and only test
// files import internal/qemutest (its doc.go).
var rules = map[string]rule{
	"calibrate":             {only: []string{"internal/noise", "kernels", "kernels/gemm", "kernels/pool", "models", "opbench", "probes", "results", "roofline"}, deny: []string{"reports", "sweep"}},
	"cmd/bench":             {noDoc: true},
	"engine":                {deny: []string{"probes", "reports"}},
	"gguf":                  {only: none},
	"internal/affinity":     {only: none},
	"internal/amx":          {only: none},
	"internal/cpu":          {only: none},
	"internal/deps":         {only: none},
	"internal/hugepage":     {only: none},
	"internal/memlimit":     {only: none},
	"internal/noise":        {only: []string{"internal/affinity", "results"}, deny: []string{"probes", "engine", "reports", "kernels/...", "roofline", "models"}},
	"internal/numa":         {only: none},
	"internal/perfcount":    {only: []string{"results"}, deny: []string{"probes", "reports", "kernels/...", "engine", "roofline", "models"}},
	"internal/qemutest":     {only: none},
	"internal/regfile":      {only: none},
	"internal/split":        {only: none},
	"internal/topotree":     {only: []string{"results", "internal/topology"}, deny: []string{"probes", "reports", "kernels/...", "engine", "models", "roofline"}},
	"internal/topology":     {only: []string{"results", "internal/cpu"}, deny: []string{"probes", "reports", "kernels/..."}},
	"kernels":               {only: []string{"internal/cpu", "kernels/registry"}, deny: []string{"probes", "engine", "reports", "roofline"}},
	"kernels/gemm":          {only: []string{"internal/cpu", "internal/amx", "internal/hugepage", "kernels/pool", "kernels/registry"}},
	"kernels/gemm/openblas": {noDoc: true}, // a command, built with -tags openblas
	"kernels/peak":          {only: []string{"internal/cpu", "internal/amx", "kernels/registry"}, deny: []string{"probes", "engine", "reports", "roofline"}},
	"kernels/pool":          {only: []string{"internal/affinity", "internal/split"}, deny: []string{"roofline", "kernels", "kernels/gemm", "probes", "engine", "reports"}},
	"kernels/quant":         {only: []string{"internal/cpu", "internal/hugepage"}},
	"kernels/registry":      {only: []string{"internal/cpu"}, deny: []string{"kernels", "kernels/gemm", "kernels/peak", "probes", "engine"}},
	"layouts":               {only: []string{"engine", "internal/memlimit", "models", "reports", "results", "roofline"}, deny: []string{"probes"}},
	"models":                {noDoc: true},
	"numabench":             {only: []string{"engine", "internal/affinity", "internal/topology", "reports", "results", "roofline", "sweep"}, deny: []string{"probes"}},
	"opbench":               {deny: []string{"reports"}},
	"probes":                {deny: []string{"reports", "roofline", "engine"}},
	"reports":               {deny: []string{"probes", "kernels/...", "engine"}},
	"results":               {only: []string{"internal/regfile"}},
	"results/schema":        {noDoc: true},
	"roofline":              {only: []string{"results", "internal/split"}, deny: []string{"probes", "kernels/...", "engine"}},
	"scripts/bochsinit":     {noDoc: true},
	"scripts/calreplay":     {noDoc: true}, // a command: re-fits a recorded calibration.json
	"scripts/fidreplay":     {noDoc: true}, // a command: re-predicts recorded bench run files
	"sweep/sweeptest":       {only: []string{"sweep", "workloads", "results"}},
	"sweep": {only: []string{"engine", "workloads", "results", "roofline", "models", "reports", "kernels/gemm", "kernels/quant",
		"internal/affinity", "internal/topology", "internal/memlimit", "internal/noise"}, deny: []string{"probes"}},
	"workloads": {only: none},
}

type pkg struct {
	imports []string // bench's packages imported by non-test files (any GOOS, GOARCH or tag)
	doc     string   // doc.go's package comment
}

// modulePath reads the module path from go.mod in root.
func modulePath(t *testing.T, root string) string {
	f, err := os.Open(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.TrimSpace(m)
		}
	}
	t.Fatal("go.mod: no module line")
	return ""
}

// loadGraph parses every .go file of the module under root (not those in
// directories that the go command ignores or that hold another module),
// whatever its build constraints, for its imports of bench's packages.
func loadGraph(t *testing.T, root string) map[string]*pkg {
	mod := modulePath(t, root) + "/"
	graph := map[string]*pkg{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		mode := parser.ImportsOnly
		if name == "doc.go" {
			mode |= parser.ParseComments
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, mode)
		if err != nil {
			return err
		}
		p := graph[rel]
		if p == nil {
			p = &pkg{}
			graph[rel] = p
		}
		if name == "doc.go" && f.Doc != nil {
			p.doc = f.Doc.Text()
		}
		if strings.HasSuffix(name, "_test.go") {
			return nil // tests may import more (doc.go: internal/numa's)
		}
		for _, im := range f.Imports {
			ip, _ := strconv.Unquote(im.Path.Value)
			if rp, ok := strings.CutPrefix(ip, mod); ok && !slices.Contains(p.imports, rp) {
				p.imports = append(p.imports, rp)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range graph {
		slices.Sort(p.imports)
	}
	return graph
}

// matches reports whether package p is named by pattern ("X" or "X/...").
func matches(pattern, p string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return p == base || strings.HasPrefix(p, base+"/")
	}
	return p == pattern
}

// path returns a chain of imports from "from" to a package that pattern
// names, or nil.
func path(graph map[string]*pkg, from, pattern string) []string {
	seen := map[string]bool{}
	var walk func(p string) []string
	walk = func(p string) []string {
		if seen[p] {
			return nil
		}
		seen[p] = true
		if graph[p] == nil {
			return nil
		}
		for _, im := range graph[p].imports {
			if matches(pattern, im) {
				return []string{p, im}
			}
			if rest := walk(im); rest != nil {
				return append([]string{p}, rest...)
			}
		}
		return nil
	}
	return walk(from)
}

// TestImportGraph checks every package's imports against rules, and
// rules against the packages and their doc.go.
func TestImportGraph(t *testing.T) {
	graph := loadGraph(t, filepath.Join("..", ".."))
	if len(graph) < len(rules)/2 {
		t.Fatalf("found %d packages: not the module root?", len(graph))
	}
	for _, name := range slices.Sorted(maps.Keys(graph)) {
		p := graph[name]
		r, ok := rules[name]
		if !ok {
			t.Errorf("%s: no rule in deps_test.go's table (add one, as its doc.go states)", name)
			continue
		}
		if r.only != nil {
			for _, im := range p.imports {
				if !slices.Contains(r.only, im) {
					t.Errorf("%s imports %s; its doc.go allows only %v", name, im, r.only)
				}
			}
		}
		for _, d := range r.deny {
			if chain := path(graph, name, d); chain != nil {
				t.Errorf("%s must not import %s: %s", name, d, strings.Join(chain, " → "))
			}
		}
		for _, im := range p.imports {
			if matches("cmd/...", im) || im == "internal/qemutest" {
				t.Errorf("%s imports %s (commands are not imported; internal/qemutest only by tests)", name, im)
			}
		}
		checkDoc(t, name, p, r)
	}
	for name := range rules {
		if graph[name] == nil {
			t.Errorf("rule for %s: no such package", name)
		}
	}
}

var noOther = regexp.MustCompile(`imports no other package of (bench|this module)`)

// checkDoc: a rule is what doc.go says, so doc.go names every package of
// the rule ("imports no other package" for an empty only list).
func checkDoc(t *testing.T, name string, p *pkg, r rule) {
	t.Helper()
	if r.noDoc {
		return
	}
	if p.doc == "" {
		t.Errorf("%s: no doc.go package comment to state its imports", name)
		return
	}
	doc := strings.Join(strings.Fields(p.doc), " ")
	if r.only != nil && len(r.only) == 0 && !noOther.MatchString(doc) {
		t.Errorf("%s/doc.go does not say it imports no other package of bench", name)
	}
	for _, n := range append(slices.Clone(r.only), r.deny...) {
		n = strings.TrimSuffix(n, "/...")
		if !regexp.MustCompile(`(^|[^\w/])` + regexp.QuoteMeta(n) + `($|[^\w/])`).MatchString(doc) {
			t.Errorf("%s/doc.go does not name %s, which its import rule in deps_test.go names", name, n)
		}
	}
}
