package pkgedge

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/goreleaser/nfpm/v2"
	"github.com/goreleaser/nfpm/v2/deb"
	"github.com/goreleaser/nfpm/v2/files"
)

// Paths inside the package.
const (
	BinaryPath   = "/usr/bin/bowline-edge"
	UnitPath     = "/lib/systemd/system/bowline-edge.service"
	ConfigPath   = "/etc/bowline-edge/config.json"
	CertsDir     = "/etc/bowline-edge/certs"
	IdentityPath = "/etc/bowline-edge/identity.env"
	SysusersPath = "/usr/lib/sysusers.d/bowline-edge.conf"
	DocPath      = "/usr/share/doc/bowline-edge/README.md"
	ExamplePath  = "/usr/share/doc/bowline-edge/identity.env.example"
)

// EdgeDir is the folder of the unit, config and scripts, relative to the
// repository root.
const EdgeDir = "deploy/edge"

// Config configures one package build.
type Config struct {
	// Root is the repository root. Required.
	Root string
	// Arch is the target. Required.
	Arch Arch
	// Binary is a bowline-edge already built for Arch. Required.
	Binary string
	// OutDir receives bowline-edge_<version>_<arch>.deb. Required.
	OutDir string
	// Version is the package version. Default "0.0.0~dev".
	Version string
	// MTime stamps every file, for reproducible packages. Default: the
	// Unix epoch plus one day (nfpm rejects the zero time).
	MTime time.Time
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Validate checks the required fields.
func (c Config) Validate() error {
	switch {
	case c.Root == "":
		return fmt.Errorf("pkgedge config: root: must be set")
	case c.Arch.Deb == "":
		return fmt.Errorf("pkgedge config: arch: must be set")
	case c.Binary == "":
		return fmt.Errorf("pkgedge config: binary: must be set")
	case c.OutDir == "":
		return fmt.Errorf("pkgedge config: out dir: must be set")
	}
	if _, err := os.Stat(c.Binary); err != nil {
		return fmt.Errorf("pkgedge config: binary: %w", err)
	}
	return nil
}

// Package writes the .deb and returns its path.
func Package(ctx context.Context, cfg Config) (string, error) {
	if err := cfg.Validate(); err != nil {
		return "", err
	}
	if cfg.Version == "" {
		cfg.Version = "0.0.0~dev"
	}
	if cfg.MTime.IsZero() {
		cfg.MTime = time.Unix(86400, 0).UTC()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	edge := func(name string) string { return filepath.Join(cfg.Root, EdgeDir, name) }
	file := func(src, dst string, mode os.FileMode, typ string) *files.Content {
		return &files.Content{Source: src, Destination: dst, Type: typ,
			FileInfo: &files.ContentFileInfo{Mode: mode, MTime: cfg.MTime, Owner: "root", Group: "root"}}
	}
	info := &nfpm.Info{
		Name:          "bowline-edge",
		Arch:          cfg.Arch.nfpm,
		Platform:      "linux",
		Version:       cfg.Version,
		VersionSchema: "none",
		Section:       "net",
		Priority:      "optional",
		Maintainer:    "Bowline <ops@bowline.invalid>",
		Description:   "Bowline gateway agent: bowl MCU frames to a durable bbolt outbox, forwarded over MQTT",
		License:       "Proprietary",
		MTime:         cfg.MTime,
		Overridables: nfpm.Overridables{
			Depends: []string{"systemd (>= 247)"},
			Contents: files.Contents{
				file(cfg.Binary, BinaryPath, 0o755, ""),
				file(edge("bowline-edge.service"), UnitPath, 0o644, ""),
				file(edge("config.json"), ConfigPath, 0o644, files.TypeConfigNoReplace),
				file(edge("sysusers.conf"), SysusersPath, 0o644, ""),
				file(edge("identity.env.example"), ExamplePath, 0o644, ""),
				file(filepath.Join(cfg.Root, "deploy", "README.md"), DocPath, 0o644, ""),
				{Destination: CertsDir, Type: files.TypeDir, FileInfo: &files.ContentFileInfo{Mode: 0o750, MTime: cfg.MTime, Owner: "root", Group: "root"}},
			},
			Scripts: nfpm.Scripts{
				PostInstall: edge("postinst.sh"),
				PreRemove:   edge("prerm.sh"),
				PostRemove:  edge("postrm.sh"),
			},
			Deb: nfpm.Deb{Compression: "gzip"},
		},
	}
	info = nfpm.WithDefaults(info)
	if err := nfpm.PrepareForPackager(info, "deb"); err != nil {
		return "", fmt.Errorf("package bowline-edge for %s: %w", cfg.Arch.Deb, err)
	}
	if err := os.MkdirAll(cfg.OutDir, 0o755); err != nil {
		return "", fmt.Errorf("package bowline-edge: out dir %s: %w", cfg.OutDir, err)
	}
	out := filepath.Join(cfg.OutDir, deb.Default.ConventionalFileName(info))
	f, err := os.Create(out)
	if err != nil {
		return "", fmt.Errorf("package bowline-edge: %w", err)
	}
	if err := deb.Default.Package(info, f); err != nil {
		f.Close()
		os.Remove(out)
		return "", fmt.Errorf("package bowline-edge for %s: %w", cfg.Arch.Deb, err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("package bowline-edge: write %s: %w", out, err)
	}
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	cfg.Logger.Info("packaged bowline-edge", "arch", cfg.Arch.Deb, "file", out)
	return out, nil
}
