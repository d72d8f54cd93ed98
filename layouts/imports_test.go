package layouts

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImports: layouts imports neither probes nor cmd (doc.go).
func TestImports(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	const mod = "github.com/cpubench/bench/"
	for _, f := range files {
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range af.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			for _, bad := range []string{"probes", "cmd"} {
				if p == mod+bad || strings.HasPrefix(p, mod+bad+"/") {
					t.Errorf("%s imports %s", f, p)
				}
			}
		}
	}
}
