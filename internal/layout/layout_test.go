package layout

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// module is the module path; rules speak of paths relative to it.
const module = "github.com/bowline-iot/bowline"

// The rules, worded as in docs/README.md ("Layout").
const (
	ruleBridge  = "firmware-bridge/ imports nothing else of ours"
	ruleEdge    = "edge/ imports only edge/, firmware-bridge/ and the internal/ helpers that use the standard library only"
	ruleWire    = "edge/wire is a leaf: standard library only"
	ruleBatch   = "edge/wire/batch imports the standard library, edge/wire and " + cborModule + " only"
	ruleEdgeAWS = "edge/ never links the AWS SDK"
	ruleEngine  = "engine/ is a generic library: it imports engine/ and internal/ but internal/resources, internal/awsenv and internal/cli"
	ruleBench   = "an engine bench imports engine/ and internal/ only"
	ruleCloud   = "cloud/ imports cloud/, engine/, edge/wire and internal/ only; only cloud/dev adds edge/ and firmware-bridge/"
	ruleBoth    = "only cloud/dev imports both edge/ (other than edge/wire) and cloud/"
	ruleDeploy  = "deploy/ imports nothing of cloud/ or engine/"
	ruleMain    = "mains live only in cloud/cmd/bowline, edge/cmd/bowline-edge and deploy/cmd/package-edge, benches under engine/bench/, cloud/bench/ and edge/bench"
	ruleNoMain  = "internal/ holds no package main"
	ruleRoot    = "cloud/app is the one composition root: no other cloud package builds an engine or an engine consumer, or resolves a queue URL"
	ruleMetrics = "cloud/app registers every part's metrics: no other cloud package calls a part's NewMetrics (take the App's, a.WorkerMetrics() and the like)"
	ruleTypes   = "engine/ names no Bowline event type (they are cloud/catalog's)"
	ruleKeys    = "outside engine/ only the fault tool names the events table's keys (engine.EventPK, SeqSK, HeadPK, HeadSK): read a log with engine.Log"
	ruleConsole = "cloud/api and cloud/console do not link each other: cloud/app mounts the console beside the API"
	ruleMount   = "of cloud/'s libraries only cloud/app (and cloud/dev, which runs both through it) imports both cloud/api and cloud/console"
)

// apart are the packages that must not link each other (ruleConsole), and
// mounters the libraries that may import both (ruleMount; mains and
// benches may too).
var (
	apart    = [2]string{"cloud/api", "cloud/console"}
	mounters = []string{"cloud/app", "cloud/dev"}
)

// cborModule is the one third-party module edge/wire/batch may import.
const cborModule = "github.com/fxamacker/cbor/v2"

// mains are the directories of the thin mains.
var mains = []string{"cloud/cmd/bowline", "edge/cmd/bowline-edge", "deploy/cmd/package-edge"}

// benches are the trees whose programs are benchmarks.
var benches = []string{"engine/bench", "cloud/bench", "edge/bench"}

// engineForbidden are the internal/ packages engine/'s library may not import.
var engineForbidden = []string{"internal/resources", "internal/awsenv", "internal/cli"}

// constructors are the engine packages whose New only cloud/app may call
// from cloud/. The seed article's inbox is not one: it is proving ground,
// which no product links (proving_test.go), and the chaos harness builds
// it in its own program, cloud/bench/chaos/seedworker.
var constructors = []string{"engine", "engine/worker", "engine/relay", "engine/recordchange", "engine/redrive"}

// eventKeys are the engine's names for the events table's key layout;
// keyTools are the files outside engine/ that may use them (the fault
// tool that rewrites a row behind the engine's back).
var (
	eventKeys = []string{"EventPK", "SeqSK", "HeadPK", "HeadSK"}
	keyTools  = []string{"cloud/cmd/bowline/devtamper.go"}
)

// pkg is what `go list -json` says of a package.
type pkg struct {
	ImportPath string
	Name       string
	Dir        string
	Standard   bool
	GoFiles    []string
	Imports    []string
	Deps       []string
	Error      *struct{ Err string }
}

// rel returns p relative to the module, and whether p is ours.
func rel(p string) (string, bool) {
	if p == module {
		return ".", true
	}
	r, ok := strings.CutPrefix(p, module+"/")
	return r, ok
}

// short returns p relative to the module when it is ours, else p.
func short(p string) string {
	if r, ok := rel(p); ok {
		return r
	}
	return p
}

// under reports whether the relative path r is dir or inside it.
func under(r, dir string) bool { return r == dir || strings.HasPrefix(r, dir+"/") }

func underAny(r string, dirs []string) bool {
	return slices.ContainsFunc(dirs, func(d string) bool { return under(r, d) })
}

func isAWS(p string) bool { return strings.HasPrefix(p, "github.com/aws/") }

// graph is every package of the module and everything they depend on.
type graph map[string]*pkg

// load runs `go list -deps` from the module root.
func load(t *testing.T) (graph, string) {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	cmd := exec.Command("go", "list", "-e", "-deps",
		"-json=ImportPath,Name,Dir,Standard,GoFiles,Imports,Deps,Error", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err = cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	g := graph{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		g[p.ImportPath] = &p
	}
	return g, root
}

// ours returns the module's packages, sorted by path.
func (g graph) ours() []*pkg {
	var ps []*pkg
	for path, p := range g {
		if _, ok := rel(path); ok {
			ps = append(ps, p)
		}
	}
	slices.SortFunc(ps, func(a, b *pkg) int { return strings.Compare(a.ImportPath, b.ImportPath) })
	return ps
}

// stdlibOnly reports whether p depends on the standard library only.
func (g graph) stdlibOnly(p string) bool {
	q, ok := g[p]
	if !ok {
		return false
	}
	for _, d := range q.Deps {
		if dp, ok := g[d]; !ok || !dp.Standard {
			return false
		}
	}
	return true
}

// awsVia returns the AWS SDK package that importing p links, if any.
func (g graph) awsVia(p string) (string, bool) {
	if isAWS(p) {
		return p, true
	}
	if q, ok := g[p]; ok {
		for _, d := range q.Deps {
			if isAWS(d) {
				return d, true
			}
		}
	}
	return "", false
}

// importRule returns the rule that forbids from importing to (both
// relative to the module), or "".
func (g graph) importRule(from, to string) string {
	switch {
	case under(from, "firmware-bridge"):
		if !under(to, "firmware-bridge") {
			return ruleBridge
		}
	case under(from, "edge"): // edge/wire has its own, stricter check
		if !under(to, "edge") && !under(to, "firmware-bridge") && !(under(to, "internal") && g.stdlibOnly(module+"/"+to)) {
			return ruleEdge
		}
	case under(from, "engine/bench"):
		if !under(to, "engine") && !under(to, "internal") {
			return ruleBench
		}
	case under(from, "engine"):
		if !under(to, "engine") && !(under(to, "internal") && !underAny(to, engineForbidden)) {
			return ruleEngine
		}
	case under(from, "cloud"):
		ok := under(to, "cloud") || under(to, "engine") || under(to, "edge/wire") || under(to, "internal")
		if under(from, "cloud/dev") {
			ok = ok || under(to, "edge") || under(to, "firmware-bridge")
		}
		if !ok {
			return ruleCloud
		}
	case under(from, "deploy"):
		if under(to, "cloud") || under(to, "engine") {
			return ruleDeploy
		}
	}
	return ""
}

// links returns the import of p through which it links the package of
// ours dep (dep itself when p imports it), if any.
func (g graph) links(p *pkg, dep string) (string, bool) {
	for _, imp := range p.Imports {
		if imp == module+"/"+dep {
			return imp, true
		}
		if q, ok := g[imp]; ok && slices.Contains(q.Deps, module+"/"+dep) {
			return imp, true
		}
	}
	return "", false
}

// consoleViolations checks that the API and the console meet only in
// cloud/app.
func (g graph) consoleViolations(p *pkg, from string) []string {
	var v []string
	for i, self := range apart {
		other := apart[1-i]
		if from != self {
			continue
		}
		if via, ok := g.links(p, other); ok {
			rule := ruleConsole
			if via != module+"/"+other {
				rule += " (it links " + other + ")"
			}
			v = append(v, fmt.Sprintf("%s imports %s: %s", from, short(via), rule))
		}
	}
	if !under(from, "cloud") || slices.Contains(mounters, from) || slices.Contains(mains, from) || underAny(from, benches) {
		return v
	}
	if slices.Contains(p.Imports, module+"/"+apart[0]) && slices.Contains(p.Imports, module+"/"+apart[1]) {
		v = append(v, fmt.Sprintf("%s imports %s: %s (it also imports %s)", from, apart[1], ruleMount, apart[0]))
	}
	return v
}

// violations checks every import arrow and where mains are.
func (g graph) violations() []string {
	var v []string
	bad := func(p, dep, rule string) { v = append(v, fmt.Sprintf("%s imports %s: %s", p, short(dep), rule)) }
	for _, p := range g.ours() {
		from, _ := rel(p.ImportPath)
		var edgeDep, cloudDep string
		for _, imp := range p.Imports {
			if under(from, "edge/wire/batch") {
				if q, ok := g[imp]; (!ok || !q.Standard) && imp != module+"/edge/wire" && imp != cborModule {
					bad(from, short(imp), ruleBatch)
				}
				continue
			}
			if under(from, "edge/wire") {
				if q, ok := g[imp]; !ok || !q.Standard {
					bad(from, imp, ruleWire)
				}
				continue
			}
			if under(from, "edge") {
				if aws, ok := g.awsVia(imp); ok {
					if aws == imp {
						bad(from, imp, ruleEdgeAWS)
					} else {
						bad(from, imp, ruleEdgeAWS+" (it links "+aws+")")
					}
				}
			}
			to, ok := rel(imp)
			if !ok {
				continue
			}
			if rule := g.importRule(from, to); rule != "" {
				bad(from, to, rule)
			}
			switch {
			case under(to, "edge") && !under(to, "edge/wire") && edgeDep == "":
				edgeDep = to
			case under(to, "cloud") && cloudDep == "":
				cloudDep = to
			}
		}
		v = append(v, g.consoleViolations(p, from)...)
		if edgeDep != "" && cloudDep != "" && !under(from, "cloud/dev") {
			bad(from, edgeDep, ruleBoth+" (it also imports "+cloudDep+")")
		}
		if p.Name == "main" && !slices.Contains(mains, from) && !underAny(from, benches) {
			rule := ruleMain
			if under(from, "internal") {
				rule = ruleNoMain
			}
			v = append(v, fmt.Sprintf("%s is package main: %s", from, rule))
		}
	}
	return v
}

// parsed is one non-test Go file of a package with its imports by local
// name.
type parsed struct {
	name    string // relative to the module root
	file    *ast.File
	imports map[string]string // local name -> path relative to the module
}

// parse parses p's non-test files.
func parse(t *testing.T, fset *token.FileSet, root string, p *pkg) []parsed {
	t.Helper()
	var out []parsed
	for _, name := range p.GoFiles {
		path := filepath.Join(p.Dir, name)
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Errorf("parse %s: %v", path, err)
			continue
		}
		r, _ := filepath.Rel(root, path)
		pf := parsed{name: filepath.ToSlash(r), file: f, imports: map[string]string{}}
		for _, is := range f.Imports {
			ip, _ := strconv.Unquote(is.Path.Value)
			to, ok := rel(ip)
			if !ok {
				continue
			}
			local := ip[strings.LastIndex(ip, "/")+1:]
			if is.Name != nil {
				local = is.Name.Name
			}
			pf.imports[local] = to
		}
		out = append(out, pf)
	}
	return out
}

// rootViolations finds, in cloud/ outside cloud/app, calls that build an
// engine or one of its consumers, resolve a queue URL or register a part's
// metrics.
func rootViolations(t *testing.T, g graph, root string) []string {
	var v []string
	fset := token.NewFileSet()
	for _, p := range g.ours() {
		from, _ := rel(p.ImportPath)
		if !under(from, "cloud") || under(from, "cloud/app") {
			continue
		}
		for _, f := range parse(t, fset, root, p) {
			ast.Inspect(f.file, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				line := fset.Position(call.Pos()).Line
				x, _ := sel.X.(*ast.Ident)
				switch {
				case sel.Sel.Name == "GetQueueUrl":
					v = append(v, fmt.Sprintf("%s calls GetQueueUrl (%s:%d): %s", from, f.name, line, ruleRoot))
				case sel.Sel.Name == "New" && x != nil && slices.Contains(constructors, f.imports[x.Name]):
					v = append(v, fmt.Sprintf("%s imports %s and calls %s.New (%s:%d): %s", from, f.imports[x.Name], x.Name, f.name, line, ruleRoot))
				case sel.Sel.Name == "NewMetrics" && x != nil && f.imports[x.Name] != "":
					v = append(v, fmt.Sprintf("%s calls %s.NewMetrics (%s:%d): %s", from, f.imports[x.Name], f.name, line, ruleMetrics))
				}
				return true
			})
		}
	}
	return v
}

// keyViolations finds, outside engine/, uses of the events table's key
// layout (eventKeys) but in keyTools.
func keyViolations(t *testing.T, g graph, root string) []string {
	var v []string
	fset := token.NewFileSet()
	for _, p := range g.ours() {
		from, _ := rel(p.ImportPath)
		if under(from, "engine") {
			continue
		}
		for _, f := range parse(t, fset, root, p) {
			if slices.Contains(keyTools, f.name) {
				continue
			}
			ast.Inspect(f.file, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); ok && f.imports[x.Name] == "engine" && slices.Contains(eventKeys, sel.Sel.Name) {
					v = append(v, fmt.Sprintf("%s uses engine.%s (%s:%d): %s", from, sel.Sel.Name, f.name, fset.Position(sel.Pos()).Line, ruleKeys))
				}
				return true
			})
		}
	}
	return v
}

// bowlineTypes returns the event types cloud/catalog declares as Type*
// constants: string literals, or constants of another package of ours
// (edge/wire defines the device types).
func bowlineTypes(t *testing.T, g graph, root string) map[string]bool {
	t.Helper()
	p, ok := g[module+"/cloud/catalog"]
	if !ok {
		t.Fatalf("no package cloud/catalog: where do Bowline's event types live now? Update this test")
	}
	fset := token.NewFileSet()
	types := map[string]bool{}
	for _, f := range parse(t, fset, root, p) {
		for name, v := range constants(f.file) {
			if !strings.HasPrefix(name, "Type") {
				continue
			}
			switch v := v.(type) {
			case *ast.BasicLit:
				if typ, err := strconv.Unquote(v.Value); err == nil {
					types[typ] = true
				}
			case *ast.SelectorExpr:
				x, _ := v.X.(*ast.Ident)
				if x == nil || g[module+"/"+f.imports[x.Name]] == nil {
					t.Errorf("catalog constant %s = %s.%s: not a constant of a package of ours", name, x, v.Sel.Name)
					continue
				}
				found := false
				for _, of := range parse(t, fset, root, g[module+"/"+f.imports[x.Name]]) {
					if lit, ok := constants(of.file)[v.Sel.Name].(*ast.BasicLit); ok {
						if typ, err := strconv.Unquote(lit.Value); err == nil {
							types[typ], found = true, true
						}
					}
				}
				if !found {
					t.Errorf("catalog constant %s = %s.%s: no string constant there", name, x.Name, v.Sel.Name)
				}
			}
		}
	}
	if len(types) == 0 {
		t.Fatalf("found no Type* string constants in cloud/catalog; update this test")
	}
	return types
}

// constants returns the value expression of every constant f declares
// with one.
func constants(f *ast.File) map[string]ast.Expr {
	out := map[string]ast.Expr{}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, s := range gd.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if i < len(vs.Values) {
					out[n.Name] = vs.Values[i]
				}
			}
		}
	}
	return out
}

// typeViolations finds Bowline event types spelled out in engine/'s
// library code (comments do not count).
func typeViolations(t *testing.T, g graph, root string) []string {
	types := bowlineTypes(t, g, root)
	var v []string
	fset := token.NewFileSet()
	for _, p := range g.ours() {
		from, _ := rel(p.ImportPath)
		if !under(from, "engine") {
			continue
		}
		for _, f := range parse(t, fset, root, p) {
			ast.Inspect(f.file, func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				if s, err := strconv.Unquote(lit.Value); err == nil && types[s] {
					v = append(v, fmt.Sprintf("%s names %q (%s:%d): %s", from, s, f.name, fset.Position(lit.Pos()).Line, ruleTypes))
				}
				return true
			})
		}
	}
	return v
}

// TestLayout checks the rules of docs/README.md ("Layout") on every
// package the module builds (tests are not checked: they may reach the
// local stack from anywhere).
func TestLayout(t *testing.T) {
	g, root := load(t)
	if len(g.ours()) == 0 {
		t.Fatal("go list found no package of the module")
	}
	for _, p := range g.ours() {
		if p.Error != nil {
			t.Errorf("go list %s: %s (its imports may be incomplete)", p.ImportPath, p.Error.Err)
		}
	}
	var v []string
	v = append(v, g.violations()...)
	v = append(v, rootViolations(t, g, root)...)
	v = append(v, typeViolations(t, g, root)...)
	v = append(v, keyViolations(t, g, root)...)
	for _, s := range v {
		t.Error(s)
	}
}

// TestRules runs the arrow rules on a made-up graph, so a rule that stops
// matching anything is noticed even while the repository obeys it.
func TestRules(t *testing.T) {
	m := func(r string) string { return module + "/" + r }
	g := graph{
		"fmt":                          {ImportPath: "fmt", Standard: true},
		"github.com/aws/aws-sdk-go-v2": {ImportPath: "github.com/aws/aws-sdk-go-v2"},
		m("internal/backoff"):          {ImportPath: m("internal/backoff"), Name: "backoff", Imports: []string{"fmt"}, Deps: []string{"fmt"}},
		m("internal/awsenv"):           {ImportPath: m("internal/awsenv"), Name: "awsenv", Imports: []string{"github.com/aws/aws-sdk-go-v2"}, Deps: []string{"github.com/aws/aws-sdk-go-v2"}},
		m("internal/tool"):             {ImportPath: m("internal/tool"), Name: "main"},
		m("firmware-bridge/frame"):     {ImportPath: m("firmware-bridge/frame"), Name: "frame", Imports: []string{m("internal/backoff")}},
		m("edge/wire"):                 {ImportPath: m("edge/wire"), Name: "wire", Imports: []string{"fmt", m("internal/backoff")}},
		m("edge/wire/batch"):           {ImportPath: m("edge/wire/batch"), Name: "batch", Imports: []string{"fmt", m("edge/wire"), cborModule, "github.com/x448/float16", m("internal/backoff")}},
		m("edge/forward"):              {ImportPath: m("edge/forward"), Name: "forward", Imports: []string{m("edge/wire"), m("internal/backoff"), m("internal/awsenv")}},
		m("engine"):                    {ImportPath: m("engine"), Name: "engine", Imports: []string{m("internal/backoff"), m("internal/awsenv")}},
		m("engine/bench/emit"):         {ImportPath: m("engine/bench/emit"), Name: "main", Imports: []string{m("engine"), m("internal/awsenv"), m("edge/wire")}},
		m("cloud/ingest"):              {ImportPath: m("cloud/ingest"), Name: "ingest", Imports: []string{m("engine"), m("edge/wire"), m("edge/forward")}},
		m("cloud/dev"):                 {ImportPath: m("cloud/dev"), Name: "dev", Imports: []string{m("cloud/ingest"), m("edge/forward"), m("firmware-bridge/frame")}},
		m("deploy/cfn"):                {ImportPath: m("deploy/cfn"), Name: "cfn", Imports: []string{m("edge/wire"), m("engine")}},
		m("deploy/tool"):               {ImportPath: m("deploy/tool"), Name: "main", Imports: []string{m("edge/forward"), m("cloud/ingest")}},
		m("cloud/guard"):               {ImportPath: m("cloud/guard"), Name: "guard", Imports: []string{m("cloud/console")}, Deps: []string{m("cloud/console")}},
		m("cloud/console"):             {ImportPath: m("cloud/console"), Name: "console", Imports: []string{m("cloud/api")}},
		m("cloud/api"):                 {ImportPath: m("cloud/api"), Name: "api", Imports: []string{m("cloud/guard")}},
		m("cloud/app"):                 {ImportPath: m("cloud/app"), Name: "app", Imports: []string{m("cloud/api"), m("cloud/console")}},
		m("cloud/chaos"):               {ImportPath: m("cloud/chaos"), Name: "chaos", Imports: []string{m("cloud/api"), m("cloud/console")}},
		m("cloud/cmd/bowline"):         {ImportPath: m("cloud/cmd/bowline"), Name: "main", Imports: []string{m("cloud/api"), m("cloud/console")}},
	}
	want := []string{
		"firmware-bridge/frame imports internal/backoff: " + ruleBridge,
		"edge/wire imports internal/backoff: " + ruleWire,
		"edge/wire/batch imports github.com/x448/float16: " + ruleBatch,
		"edge/wire/batch imports internal/backoff: " + ruleBatch,
		"edge/forward imports github.com/aws/aws-sdk-go-v2: " + ruleEdgeAWS,
		"edge/forward imports internal/awsenv: " + ruleEdgeAWS + " (it links github.com/aws/aws-sdk-go-v2)",
		"edge/forward imports internal/awsenv: " + ruleEdge,
		"engine imports internal/awsenv: " + ruleEngine,
		"engine/bench/emit imports edge/wire: " + ruleBench,
		"cloud/ingest imports edge/forward: " + ruleCloud,
		"deploy/cfn imports engine: " + ruleDeploy,
		"deploy/tool imports cloud/ingest: " + ruleDeploy,
		"deploy/tool imports edge/forward: " + ruleBoth + " (it also imports cloud/ingest)",
		"deploy/tool is package main: " + ruleMain,
		"internal/tool is package main: " + ruleNoMain,
		"cloud/api imports cloud/guard: " + ruleConsole + " (it links cloud/console)",
		"cloud/console imports cloud/api: " + ruleConsole,
		"cloud/chaos imports cloud/console: " + ruleMount + " (it also imports cloud/api)",
	}
	// edge/forward's direct AWS import is a made-up arrow for the test.
	g[m("edge/forward")].Imports = append(g[m("edge/forward")].Imports, "github.com/aws/aws-sdk-go-v2")
	got := g.violations()
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("violations of the made-up graph:\n got %q\nwant %q", got, want)
	}
}

// TestKeyRule runs keyViolations on made-up files: a reader outside
// engine/ that builds an event key is refused, under any import name; the
// fault tool and engine/ itself are not.
func TestKeyRule(t *testing.T) {
	root := t.TempDir()
	write := func(dir, name, src string) *pkg {
		t.Helper()
		d := filepath.Join(root, filepath.FromSlash(dir))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return &pkg{ImportPath: module + "/" + dir, Dir: d, GoFiles: []string{name}}
	}
	g := graph{}
	for _, p := range []*pkg{
		write("cloud/console", "log.go", "package console\nimport \"github.com/bowline-iot/bowline/engine\"\nvar k = engine.EventPK(\"t\")\n"),
		write("cloud/chaos", "check.go", "package chaos\nimport e \"github.com/bowline-iot/bowline/engine\"\nvar k = e.SeqSK(1)\n"),
		write("cloud/cmd/bowline", "devtamper.go", "package main\nimport \"github.com/bowline-iot/bowline/engine\"\nvar k = engine.EventPK(\"t\")\n"),
		write("engine/reconcile", "read.go", "package reconcile\nimport \"github.com/bowline-iot/bowline/engine\"\nvar k = engine.HeadPK(\"t\")\n"),
		write("cloud/api", "log.go", "package api\nimport \"github.com/bowline-iot/bowline/engine\"\nvar l = engine.NewLog(nil, \"\")\n"),
	} {
		g[p.ImportPath] = p
	}
	got := keyViolations(t, g, root)
	want := []string{
		"cloud/chaos uses engine.SeqSK (cloud/chaos/check.go:3): " + ruleKeys,
		"cloud/console uses engine.EventPK (cloud/console/log.go:3): " + ruleKeys,
	}
	if !slices.Equal(got, want) {
		t.Errorf("keyViolations =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
