package wire

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// docs/contract.md's "Device event data" table names, for each device
// event type, its Go type and its data fields with the optional ones in
// italics. The table is prose (it adds the bounds), so this test ties its
// names to the types: a field added, renamed or made optional in edge/wire
// fails here until the doc says so.
func TestContractDocListsTheDataFields(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "contract.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| `(bowl\\.[a-z_]+)` \\| `wire\\.([A-Za-z]+)` \\| (.*) \\|$")
	field := regexp.MustCompile("(\\*?)`([a-z_]+)`(\\*?)")
	seen := map[string]bool{}
	for line := range strings.Lines(string(doc)) {
		m := row.FindStringSubmatch(strings.TrimRight(line, "\n"))
		if m == nil {
			continue
		}
		typ, goType, cell := m[1], m[2], m[3]
		s, ok := shapes[typ]
		if !ok {
			t.Errorf("docs/contract.md lists %s, which edge/wire does not declare", typ)
			continue
		}
		seen[typ] = true
		if s.rtype.Name() != goType {
			t.Errorf("docs/contract.md: %s is wire.%s; want wire.%s", typ, goType, s.rtype.Name())
		}
		var got, want []string
		for _, f := range field.FindAllStringSubmatch(cell, -1) {
			name := f[2]
			if f[1] == "*" && f[3] == "*" {
				name = "optional " + name
			}
			got = append(got, name)
		}
		for _, f := range s.fields {
			name := f.name
			if f.optional {
				name = "optional " + name
			}
			want = append(want, name)
		}
		if !slices.Equal(got, want) {
			t.Errorf("docs/contract.md: %s (wire.%s) lists the fields %q; want %q", typ, s.rtype.Name(), got, want)
		}
	}
	for _, typ := range EventTypes {
		if !seen[typ] {
			t.Errorf("docs/contract.md's \"Device event data\" table has no row for %s", typ)
		}
	}
}
