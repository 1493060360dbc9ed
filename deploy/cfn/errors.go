package cfn

import "errors"

// Sentinel errors of the package.
var (
	// ErrUnknownTag marks a YAML tag that is not a CloudFormation intrinsic.
	ErrUnknownTag = errors.New("unknown YAML tag")
	// ErrNotTemplate marks a document that is not a template (no Resources).
	ErrNotTemplate = errors.New("not a CloudFormation template")
	// ErrSpecMissing marks a missing resource specification file.
	ErrSpecMissing = errors.New("resource specification not installed")
	// ErrUnsupported marks an intrinsic or policy construct the evaluators
	// here do not handle.
	ErrUnsupported = errors.New("unsupported construct")
)
