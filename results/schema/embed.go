// Package schema embeds the JSON Schema of the profile format, so tests and
// tools validate profiles against the same file that documents them.
package schema

import _ "embed"

// ProfileV1 is the JSON Schema (draft 2020-12) of bench.profile/v1.
//
//go:embed profile.v1.schema.json
var ProfileV1 []byte
