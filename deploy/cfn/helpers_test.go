package cfn

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/bowline-iot/bowline/internal/testkit"
)

// templatePath is the stack template, relative to the repository root.
const templatePath = "deploy/cloudformation/bowline.yaml"

func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// stackTemplate parses the stack template.
func stackTemplate(t testing.TB) *Template {
	t.Helper()
	tpl, err := Load(filepath.Join(repoRoot(t), templatePath))
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

var (
	specOnce sync.Once
	spec     *Spec
	specErr  error
)

// resourceSpec loads the pinned specification once per test binary. It
// skips when it is not installed, and fails instead when CI=true.
func resourceSpec(t testing.TB) *Spec {
	t.Helper()
	specOnce.Do(func() {
		root, err := RepoRoot()
		if err != nil {
			specErr = err
			return
		}
		spec, specErr = LoadSpec(filepath.Join(root, SpecRelPath))
	})
	if specErr != nil {
		testkit.Need(t, fmt.Errorf("CloudFormation specification: %w", specErr))
	}
	return spec
}
