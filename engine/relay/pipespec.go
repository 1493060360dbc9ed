package relay

import (
	"errors"
	"fmt"
	"strings"
)

// PipeSpec is the filter and transform of one pipe, as data shared with the
// CloudFormation EventBridge Pipe.
type PipeSpec struct {
	// Name identifies the pipe in checkpoints, logs and metrics.
	Name string
	// Filters are EventBridge filter patterns (JSON) applied to the stream
	// record as EventBridge sees it, the Pipe's FilterCriteria.Filters: a
	// record passes when it matches any of them; none accepts every
	// record. At most MaxFilters, each at most MaxPatternLen characters.
	Filters []string
	// BodyPath is the JSON path of the message body in the record; "$" is
	// the whole record. The Pipe's input template is "<" + BodyPath + ">".
	BodyPath string
	// GroupIDPath and DedupIDPath are the JSON paths of the FIFO message
	// group id and deduplication id; both empty for a standard queue.
	GroupIDPath string
	DedupIDPath string
}

// EventsPipe carries INSERT records of event rows from the events table
// stream to events.fifo: body = the raw NewImage, group = tenant, dedup id
// = event id.
//
// An event row's pk is "TENANT#<t>#EVENT" (engine.EventPK). A Pipe's
// patterns have no wildcard and AND two conditions only on two fields, so
// the filter tests the pk twice: Keys.pk starts with "TENANT#" and
// NewImage.pk (the same value in an INSERT) ends with "#EVENT". That keeps
// out chain heads, dedup rows and every key of another shape ("X#EVENT",
// "tenant#t1#EVENT"); what it cannot tell apart ("TENANT#EVENT", where
// prefix and suffix overlap, or a tenant with a '#') no role may write
// (deploy/cloudformation/bowline.yaml, EventLogAppendOnlyPolicy) and the
// worker refuses (engine/worker, "Chained rows only").
var EventsPipe = PipeSpec{
	Name:        "events",
	Filters:     []string{`{"eventName":["INSERT"],"dynamodb":{"Keys":{"pk":{"S":[{"prefix":"TENANT#"}]}},"NewImage":{"pk":{"S":[{"suffix":"#EVENT"}]}}}}`},
	BodyPath:    "$.dynamodb.NewImage",
	GroupIDPath: "$.dynamodb.NewImage.tenant.S",
	DedupIDPath: "$.dynamodb.NewImage.id.S",
}

// RecordChangesPipe carries every record of the app table stream (INSERT,
// MODIFY, REMOVE) to the standard record-changes queue with the whole record
// as body; the record-change consumer types it row.<entity>.<op>. The whole
// record is forwarded because a template naming NewImage or OldImage would
// not resolve for REMOVE or INSERT records respectively. ForEntities
// narrows it to the entities someone subscribes to.
var RecordChangesPipe = PipeSpec{
	Name:     "record-changes",
	BodyPath: "$",
}

// InputTemplate is the EventBridge Pipe input template of the body, or ""
// when the body is the whole record (the Pipe's default).
func (p PipeSpec) InputTemplate() string {
	if p.BodyPath == "$" {
		return ""
	}
	return "<" + p.BodyPath + ">"
}

// FIFO reports whether the pipe targets a FIFO queue.
func (p PipeSpec) FIFO() bool { return p.GroupIDPath != "" }

// Validate checks the spec: a name, a filter that compiles, well-formed
// paths, and group and dedup paths set together.
func (p PipeSpec) Validate() error {
	if p.Name == "" {
		return fmt.Errorf("pipe spec: %w", errNoName)
	}
	if _, err := CompileFilters(p.Filters); err != nil {
		return fmt.Errorf("pipe %q: filter: %w", p.Name, err)
	}
	for what, path := range map[string]string{"body": p.BodyPath, "group id": p.GroupIDPath, "dedup id": p.DedupIDPath} {
		if path == "" && what != "body" {
			continue
		}
		if _, err := parsePath(path); err != nil {
			return fmt.Errorf("pipe %q: %s path: %w", p.Name, what, err)
		}
	}
	if (p.GroupIDPath == "") != (p.DedupIDPath == "") {
		return fmt.Errorf("pipe %q: %w", p.Name, errHalfFIFO)
	}
	return nil
}

var (
	errNoName   = errors.New("name is empty")
	errHalfFIFO = errors.New("group id path and dedup id path must be set together")
)

// parsePath splits "$.a.b" into ["a","b"]; "$" is the root.
func parsePath(path string) ([]string, error) {
	if path == "$" {
		return nil, nil
	}
	rest, ok := strings.CutPrefix(path, "$.")
	if !ok || rest == "" {
		return nil, fmt.Errorf("%q: %w", path, ErrBadPath)
	}
	parts := strings.Split(rest, ".")
	for _, p := range parts {
		if p == "" || strings.ContainsAny(p, "[]*") {
			return nil, fmt.Errorf("%q: %w", path, ErrBadPath)
		}
	}
	return parts, nil
}

// resolve walks path through a JSON-shaped value.
func resolve(v any, path string) (any, bool) {
	parts, err := parsePath(path)
	if err != nil {
		return nil, false
	}
	for _, p := range parts {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[p]; !ok {
			return nil, false
		}
	}
	return v, true
}
