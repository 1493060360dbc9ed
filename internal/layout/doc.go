// Package layout holds the test that keeps the repository's import rules
// from rotting: which top-level folder may import which, where mains live,
// that edge/ never links the AWS SDK, that engine/ names no Bowline event
// type, that cloud/app is the one composition root and that the API and
// the console meet only there. The rules are the Layout section of
// docs/README.md; `go test ./internal/layout` checks them with `go list`
// and go/parser and fails with `<pkg> imports <dep>: <rule>`.
//
// The package has no API.
package layout
