package layout

import (
	"fmt"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The proving ground's rules, worded as in docs/README.md ("The proving
// ground").
const (
	ruleProving    = "the proving ground is never linked into a product: only proving-ground packages import it"
	ruleProvingDoc = `a proving-ground package says so in its package doc ("Proving ground: ...")`
	ruleNotProving = "only the proving ground's folders hold packages marked as proving ground"
)

// provingMarker starts the paragraph of the package doc that marks a
// package as proving ground.
const provingMarker = "Proving ground:"

// provingGround are the folders of the proving ground: the benches, chaos,
// the seed article's inbox (the baseline both measure against) and the
// tools that break or measure the product. Every package inside them is
// proving ground, whatever its folder's top level.
var provingGround = append(slices.Clone(benches),
	"cloud/chaos",
	"engine/inbox/seedinbox",
	"internal/faultproxy",
	"internal/powercut",
	"internal/mosquitto",
	"internal/latency",
	"internal/pricing",
)

// products are the mains of the shipped binaries.
var products = mains

// proving reports whether the relative path r is in the proving ground.
func proving(r string) bool { return underAny(r, provingGround) }

// provingViolations finds packages outside the proving ground that import
// one inside it, and products that link one.
func provingViolations(g graph) []string {
	var v []string
	for _, p := range g.ours() {
		from, _ := rel(p.ImportPath)
		if proving(from) {
			continue
		}
		for _, imp := range p.Imports {
			if to, ok := rel(imp); ok && proving(to) {
				v = append(v, fmt.Sprintf("%s imports %s: %s", from, to, ruleProving))
			}
		}
		if !slices.Contains(products, from) {
			continue
		}
		for _, d := range p.Deps {
			if to, ok := rel(d); ok && proving(to) {
				v = append(v, fmt.Sprintf("%s links %s: %s", from, to, ruleProving))
			}
		}
	}
	return v
}

// provingDocViolations checks that the package docs and provingGround
// agree: every package inside it is marked, no package outside it is.
func provingDocViolations(t *testing.T, g graph, root string) []string {
	t.Helper()
	var v []string
	fset := token.NewFileSet()
	for _, p := range g.ours() {
		from, _ := rel(p.ImportPath)
		var doc strings.Builder
		for _, name := range p.GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.PackageClauseOnly|parser.ParseComments)
			if err != nil {
				t.Errorf("parse %s: %v", filepath.Join(p.Dir, name), err)
				continue
			}
			if f.Doc != nil {
				doc.WriteString(f.Doc.Text())
			}
		}
		marked := strings.Contains(doc.String(), provingMarker)
		switch {
		case proving(from) && !marked:
			v = append(v, fmt.Sprintf("%s has no %q in its package doc: %s", from, provingMarker, ruleProvingDoc))
		case !proving(from) && marked:
			v = append(v, fmt.Sprintf("%s says %q in its package doc: %s", from, provingMarker, ruleNotProving))
		}
	}
	return v
}

// TestProvingGround checks that no product links the proving ground
// (docs/README.md, "The proving ground") and that its packages are
// marked as such.
func TestProvingGround(t *testing.T) {
	g, root := load(t)
	for _, m := range products {
		if _, ok := g[module+"/"+m]; !ok {
			t.Fatalf("no product main %s: where do the binaries live now? Update this test", m)
		}
	}
	for _, s := range append(provingViolations(g), provingDocViolations(t, g, root)...) {
		t.Error(s)
	}
}

// TestProvingRules runs the proving-ground rule on a made-up graph, so a
// rule that stops matching anything is noticed while the repository obeys
// it.
func TestProvingRules(t *testing.T) {
	m := func(r string) string { return module + "/" + r }
	g := graph{
		m("engine/inbox/seedinbox"): {ImportPath: m("engine/inbox/seedinbox"), Name: "seedinbox"},
		m("internal/faultproxy"):    {ImportPath: m("internal/faultproxy"), Name: "faultproxy"},
		m("cloud/app"):              {ImportPath: m("cloud/app"), Name: "app", Imports: []string{m("engine/inbox/seedinbox")}, Deps: []string{m("engine/inbox/seedinbox")}},
		m("cloud/chaos"):            {ImportPath: m("cloud/chaos"), Name: "chaos", Imports: []string{m("cloud/app"), m("engine/inbox/seedinbox"), m("internal/faultproxy")}},
		m("cloud/bench/chaos/seed"): {ImportPath: m("cloud/bench/chaos/seed"), Name: "main", Imports: []string{m("cloud/chaos"), m("engine/inbox/seedinbox")}},
		m("cloud/cmd/bowline"):      {ImportPath: m("cloud/cmd/bowline"), Name: "main", Imports: []string{m("cloud/app")}, Deps: []string{m("cloud/app"), m("engine/inbox/seedinbox")}},
		m("edge/cmd/bowline-edge"):  {ImportPath: m("edge/cmd/bowline-edge"), Name: "main", Imports: []string{m("internal/faultproxy")}, Deps: []string{m("internal/faultproxy")}},
	}
	want := []string{
		"cloud/app imports engine/inbox/seedinbox: " + ruleProving,
		"cloud/cmd/bowline links engine/inbox/seedinbox: " + ruleProving,
		"edge/cmd/bowline-edge imports internal/faultproxy: " + ruleProving,
		"edge/cmd/bowline-edge links internal/faultproxy: " + ruleProving,
	}
	got := provingViolations(g)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("proving-ground violations of the made-up graph:\n got %q\nwant %q", got, want)
	}
}
