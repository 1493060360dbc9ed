// Command package-edge builds the bowline-edge .deb for the gateway's
// architectures (default arm64 and armhf) into --out. It is the packaging
// tool behind scripts/package-edge; the logic lives in deploy/internal/pkgedge.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/bowline-iot/bowline/deploy/internal/pkgedge"
)

const usage = `package-edge [--arch arm64,armhf] [--out dist] [--version V] [--json]

Cross-compiles bowline-edge for each architecture (static, CGO off) and
packs it with its systemd unit, default config, service user and certificate
directory into dist/bowline-edge_<version>_<arch>.deb.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "package-edge:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("package-edge", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	arches := fs.String("arch", "arm64,armhf", "comma-separated Debian architectures: arm64, armhf, amd64")
	out := fs.String("out", "dist", "output folder of the .deb files")
	version := fs.String("version", "0.0.0~dev", "package version")
	root := fs.String("root", "", "repository root (default: found from the working directory)")
	asJSON := fs.Bool("json", false, `print {"packages":[{"arch":...,"file":...}]} on stdout`)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *root == "" {
		r, err := findRoot()
		if err != nil {
			return err
		}
		*root = r
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	type result struct {
		Arch string `json:"arch"`
		File string `json:"file"`
	}
	var results []result
	for _, name := range strings.Split(*arches, ",") {
		arch, err := pkgedge.LookupArch(strings.TrimSpace(name))
		if err != nil {
			return fmt.Errorf("--arch: %w", err)
		}
		tmp, err := os.MkdirTemp("", "bowline-edge-"+arch.Deb)
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		bin := filepath.Join(tmp, "bowline-edge")
		log.Info("building bowline-edge", "arch", arch.Deb)
		if err := pkgedge.BuildBinary(ctx, *root, arch, bin); err != nil {
			return err
		}
		file, err := pkgedge.Package(ctx, pkgedge.Config{Root: *root, Arch: arch, Binary: bin, OutDir: *out, Version: *version, Logger: log})
		if err != nil {
			return err
		}
		results = append(results, result{Arch: arch.Deb, File: file})
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(map[string]any{"packages": results})
	}
	for _, r := range results {
		fmt.Fprintln(stdout, r.File)
	}
	return nil
}

// findRoot walks up from the working directory to go.mod.
func findRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above %s: run inside the repository or pass --root", dir)
		}
		dir = parent
	}
}
