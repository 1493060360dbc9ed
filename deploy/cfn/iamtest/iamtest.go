// Package iamtest runs the recorded-calls check of docs/iam.md inside the
// tests that run Bowline's processes: Record switches AWS call recording
// on for a test (BOWLINE_RECORD_CALLS), and when the test ends every
// recorded call is evaluated against the role that makes it in AWS
// (deploy/cloudformation/bowline.yaml, cfn.BowlineParts).
//
// The test fails naming the first denied call with its role, action and
// resource. Grants no recorded call used are logged and written, with the
// rest of the report, to iam-report.json in the test's temporary directory
// (and, to keep them, the report and the recording to
// $BOWLINE_IAM_REPORT_DIR/<test>.json and <test>.calls.jsonl when that is set).
package iamtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bowline-iot/bowline/deploy/cfn"
	"github.com/bowline-iot/bowline/internal/awscalls"
)

// ReportDirEnv names a directory that keeps a copy of every report.
const ReportDirEnv = "BOWLINE_IAM_REPORT_DIR"

// TemplatePath is the stack template, relative to the repository root.
const TemplatePath = "deploy/cloudformation/bowline.yaml"

// Record switches call recording on for the rest of t, for this process
// and every process t starts with os.Environ (t.Setenv, so t must not be
// parallel), and checks the recording when t ends, after the cleanups
// registered later (stopping those processes) have run. Call it before
// starting anything. It returns the recording's path.
func Record(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "calls.jsonl")
	t.Setenv(awscalls.Env, path)
	t.Cleanup(func() {
		if !t.Skipped() {
			Check(t, path, dir)
		}
	})
	return path
}

// Check evaluates the recording at path and writes the report into dir.
func Check(t testing.TB, path, dir string) {
	t.Helper()
	calls, err := awscalls.Read(path)
	if errors.Is(err, fs.ErrNotExist) {
		t.Logf("iam: no AWS call was recorded")
		return
	}
	if err != nil {
		t.Errorf("iam: %v", err)
		return
	}
	keep := os.Getenv(ReportDirEnv)
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	if keep != "" {
		if b, err := os.ReadFile(path); err == nil && os.MkdirAll(keep, 0o755) == nil {
			_ = os.WriteFile(filepath.Join(keep, name+".calls.jsonl"), b, 0o644)
		}
	}
	root, err := cfn.RepoRoot()
	if err != nil {
		t.Errorf("iam: %v", err)
		return
	}
	tpl, err := cfn.Load(filepath.Join(root, TemplatePath))
	if err != nil {
		t.Errorf("iam: %v", err)
		return
	}
	rep, err := cfn.CheckCalls(tpl, calls, cfn.BowlineParts)
	if err != nil {
		t.Errorf("iam: checking the %d recorded requests of %s: %v", len(calls), path, err)
		return
	}
	report := filepath.Join(dir, "iam-report.json")
	if err := write(report, rep); err != nil {
		t.Errorf("iam: %v", err)
	}
	if keep != "" {
		if err := write(filepath.Join(keep, name+".json"), rep); err != nil {
			t.Errorf("iam: %v", err)
		}
	}
	if n := len(rep.Denied); n > 0 {
		t.Errorf("iam: %d recorded AWS requests are not allowed by their role; the first: %s (report %s)", n, rep.Denied[0], report)
		for _, d := range rep.Denied[1:min(n, 20)] {
			t.Logf("iam: also denied: %s", d)
		}
	}
	t.Logf("iam: %d recorded requests checked against their roles (report %s)", rep.Requests, report)
	for _, nc := range rep.NotChecked {
		t.Logf("iam: part %s: %d requests not checked: %s", nc.Part, nc.Requests, nc.Reason)
	}
	for _, r := range rep.Roles {
		if len(r.Unused) == 0 {
			continue
		}
		var b strings.Builder
		for _, u := range r.Unused {
			fmt.Fprintf(&b, "\n  %s: %s on %s", u.Source, u.Action, u.Resource)
		}
		t.Logf("iam: role %s: %d grants no recorded call used (narrow them, or say in the template why they stay):%s", r.Role, len(r.Unused), b.String())
	}
	if len(rep.NotExercised) > 0 {
		t.Logf("iam: roles no recorded call came from here: %s", strings.Join(rep.NotExercised, ", "))
	}
}

func write(path string, rep *cfn.CallReport) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("iam report: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("iam report: %w", err)
	}
	return nil
}
