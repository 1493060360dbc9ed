package main

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestEdgeDoesNotLinkAWSSDK keeps the gateway small: nothing under edge/
// (the binary included) may depend on the AWS SDK.
func TestEdgeDoesNotLinkAWSSDK(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "..")
	cmd := exec.Command("go", "list", "-deps", "./edge/...")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps ./edge/...: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.Contains(pkg, "github.com/aws/aws-sdk-go") || strings.HasPrefix(pkg, "github.com/aws/smithy-go") {
			t.Errorf("edge depends on %s; want no AWS SDK package", pkg)
		}
	}
}
