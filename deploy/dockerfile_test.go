package deploy

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// instruction is one Dockerfile instruction with its arguments.
type instruction struct {
	line int
	cmd  string
	args string
}

// parseDockerfile joins continuation lines and drops comments.
func parseDockerfile(t *testing.T, text string) []instruction {
	t.Helper()
	var out []instruction
	var cur strings.Builder
	start := 0
	for i, raw := range strings.Split(text, "\n") {
		line := strings.TrimSpace(raw)
		if cur.Len() == 0 && (line == "" || strings.HasPrefix(line, "#")) {
			continue
		}
		if cur.Len() == 0 {
			start = i + 1
		}
		if cont, ok := strings.CutSuffix(line, "\\"); ok {
			cur.WriteString(cont + " ")
			continue
		}
		cur.WriteString(line)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, instruction{line: start, cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)})
		cur.Reset()
	}
	if cur.Len() != 0 {
		t.Fatalf("Dockerfile ends inside a continued line")
	}
	return out
}

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(dir) // this package is deploy/
}

// TestDockerfile lints the cloud image's Dockerfile structurally (no docker
// engine here): a pinned Go builder matching go.mod, a static build
// (CGO_ENABLED=0) of cloud/cmd/bowline, a final stage from scratch holding
// only CA certificates and the binary, a numeric non-root USER, an
// exec-form ENTRYPOINT, no ADD and no :latest.
func TestDockerfile(t *testing.T) {
	root := repoRoot(t)
	text, err := os.ReadFile(filepath.Join(root, "deploy", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	ins := parseDockerfile(t, string(text))
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod)
	if goVersion == nil {
		t.Fatal("go.mod has no go directive")
	}
	var stages [][]instruction
	for _, in := range ins {
		if in.cmd == "FROM" {
			stages = append(stages, nil)
		}
		if len(stages) == 0 {
			if in.cmd != "ARG" {
				t.Fatalf("line %d: %s before the first FROM", in.line, in.cmd)
			}
			continue
		}
		stages[len(stages)-1] = append(stages[len(stages)-1], in)
		if in.cmd == "ADD" {
			t.Errorf("line %d: ADD; want COPY (no remote URLs or archives)", in.line)
		}
		if in.cmd == "FROM" && (strings.Contains(in.args, ":latest") || !strings.Contains(strings.Fields(in.args)[0], ":") && strings.Fields(in.args)[0] != "scratch") {
			t.Errorf("line %d: FROM %s; want a pinned tag", in.line, in.args)
		}
	}
	if len(stages) < 2 {
		t.Fatalf("%d stages; want a build stage and a minimal final stage", len(stages))
	}
	build, final := stages[0], stages[len(stages)-1]
	if want := "golang:" + string(goVersion[1]); !strings.HasPrefix(build[0].args, want) {
		t.Errorf("build stage FROM %s; want %s (go.mod's go version)", build[0].args, want)
	}
	var buildCmd string
	for _, in := range build {
		if in.cmd == "RUN" && strings.Contains(in.args, "go build") {
			buildCmd = in.args
		}
	}
	for _, want := range []string{"CGO_ENABLED=0", "./cloud/cmd/bowline", "-trimpath"} {
		if !strings.Contains(buildCmd, want) {
			t.Errorf("go build command %q lacks %s", buildCmd, want)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "cloud", "cmd", "bowline")); err != nil {
		t.Errorf("the Dockerfile builds ./cloud/cmd/bowline: %v", err)
	}
	if f := final[0].args; f != "scratch" && !strings.Contains(f, "distroless/static") {
		t.Errorf("final stage FROM %s; want scratch or a distroless static base", f)
	}
	var user, entrypoint string
	for _, in := range final {
		switch in.cmd {
		case "USER":
			user = in.args
		case "ENTRYPOINT":
			entrypoint = in.args
		case "RUN":
			t.Errorf("line %d: RUN in the final stage (no shell in a minimal image)", in.line)
		case "COPY":
			if !strings.HasPrefix(in.args, "--from=") {
				t.Errorf("line %d: COPY %s into the final stage from the context; want only build outputs", in.line, in.args)
			}
		}
	}
	uid, _, _ := strings.Cut(user, ":")
	if n, err := strconv.Atoi(uid); err != nil || n == 0 {
		t.Errorf("final USER %q; want a numeric non-root uid", user)
	}
	if !strings.HasPrefix(entrypoint, `["/bowline"`) {
		t.Errorf("ENTRYPOINT %s; want exec form [\"/bowline\", ...]", entrypoint)
	}
}
