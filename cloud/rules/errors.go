package rules

import "errors"

// Errors of the package.
var (
	// ErrNoMatch: the topic does not match the rule's FROM filter.
	ErrNoMatch = errors.New("topic does not match the rule's topic filter")
	// ErrBadSpec: a Spec is not one Evaluate can run (Spec.Validate).
	ErrBadSpec = errors.New("invalid rule spec")
	// ErrBadSQL: a statement is not in the subset ParseSQL reads.
	ErrBadSQL = errors.New("unsupported rule SQL")
	// ErrBadTemplate: a substitution template is not "${<expression>}".
	ErrBadTemplate = errors.New("unsupported substitution template")
)
