package main

import (
	"encoding/json"
	"fmt"
	"io"
)

// writeJSON prints v as indented JSON (every --json output).
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write json: %w", err)
	}
	return nil
}
