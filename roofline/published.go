package roofline

import (
	"embed"
	"fmt"
	"path"
	"sort"
	"strings"
)

//go:embed published/*.json
var publishedFS embed.FS

// publishedAliases are the short names the papers use.
var publishedAliases = map[string]string{
	"arl":  "core-ultra-9-285k",
	"arlh": "core-ultra-7-255h",
	"lnl":  "core-ultra-7-258v",
}

// PublishedNames lists the published profiles shipped in the binary, sorted.
func PublishedNames() []string {
	ents, _ := publishedFS.ReadDir("published")
	var out []string
	for _, e := range ents {
		out = append(out, strings.TrimSuffix(e.Name(), ".json"))
	}
	sort.Strings(out)
	return out
}

// Published returns a published profile transcribed from a paper, by name
// ("m4-pro", "kunpeng-920", "core-ultra-9-285k" or its alias "arl", ...).
// Each number carries its page, section or figure citation in Source.
func Published(name string) (*Machine, error) {
	key := strings.ToLower(name)
	if a, ok := publishedAliases[key]; ok {
		key = a
	}
	file := path.Join("published", key+".json")
	data, err := publishedFS.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("no published profile %q (have %s)", name, strings.Join(PublishedNames(), ", "))
	}
	return ParseMachine(data, "published profile "+key)
}
