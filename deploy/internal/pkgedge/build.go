package pkgedge

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// EdgeMain is the package path of the agent's main, relative to the root.
const EdgeMain = "./edge/cmd/bowline-edge"

// BuildBinary cross-compiles bowline-edge for arch into out: static
// (CGO_ENABLED=0), trimmed paths, stripped, with version stamped into
// main.version when the main declares it.
func BuildBinary(ctx context.Context, root string, arch Arch, out string) error {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return fmt.Errorf("%w for %s: %w", ErrBuild, arch.Deb, err)
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", out, EdgeMain)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+arch.GOARCH, "GOARM="+arch.GOARM, "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%w for %s: %w\n%s", ErrBuild, arch.Deb, err, stderr.String())
	}
	return nil
}
