package iotdata

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// AWS IoT's message limits (AWS IoT Core message broker quotas).
const (
	// MaxPayload is the largest message payload AWS IoT accepts.
	MaxPayload = 128 * 1024
	// MaxTopicBytes is the longest topic name.
	MaxTopicBytes = 256
	// MaxTopicSlashes is the most forward slashes a topic may have
	// ($aws/rules/<rule>/ of Basic Ingest not counted).
	MaxTopicSlashes = 7
)

// CheckTopic reports whether AWS IoT would accept topic for a publish.
func CheckTopic(topic string) error {
	levels := topic
	if rest, ok := strings.CutPrefix(topic, "$aws/rules/"); ok {
		if _, after, found := strings.Cut(rest, "/"); found {
			levels = after
		}
	}
	switch {
	case topic == "":
		return fmt.Errorf("topic is empty: %w", ErrBadTopic)
	case len(topic) > MaxTopicBytes:
		return fmt.Errorf("topic %q is %d bytes, over %d: %w", topic, len(topic), MaxTopicBytes, ErrBadTopic)
	case !utf8.ValidString(topic) || strings.ContainsAny(topic, "+#\x00"):
		return fmt.Errorf("topic %q has a wildcard, NUL or invalid UTF-8: %w", topic, ErrBadTopic)
	case strings.Count(levels, "/") > MaxTopicSlashes:
		return fmt.Errorf("topic %q has more than %d slashes: %w", topic, MaxTopicSlashes, ErrBadTopic)
	}
	return nil
}
