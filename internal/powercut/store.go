package powercut

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
)

// manifest is the synced namespace: every directory and regular file by
// path (slash-separated, relative to the mount), and the next file id.
type manifest struct {
	Dirs  []string             `json:"dirs"`
	Files map[string]fileEntry `json:"files"`
	Next  uint64               `json:"next"`
}

type fileEntry struct {
	ID   uint64 `json:"id"`
	Mode uint32 `json:"mode"`
}

// store is the backing directory: tree.json and data/<id>. It stands for
// the disk itself; the harness does not fsync it, because only this
// process's cuts are simulated, never the host's.
type store struct{ dir string }

func (s store) manifestPath() string { return filepath.Join(s.dir, "tree.json") }
func (s store) dataPath(id uint64) string {
	return filepath.Join(s.dir, "data", strconv.FormatUint(id, 10))
}

func (s store) init() error {
	if err := os.MkdirAll(filepath.Join(s.dir, "data"), 0o755); err != nil {
		return fmt.Errorf("powercut: backing directory %s: %w", s.dir, err)
	}
	return nil
}

func (s store) readManifest() (manifest, error) {
	m := manifest{Files: map[string]fileEntry{}, Next: 1}
	b, err := os.ReadFile(s.manifestPath())
	if errors.Is(err, os.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return m, fmt.Errorf("powercut: read manifest: %w", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("powercut: manifest %s: %w", s.manifestPath(), err)
	}
	if m.Files == nil {
		m.Files = map[string]fileEntry{}
	}
	return m, nil
}

func (s store) writeManifest(m manifest) error {
	sort.Strings(m.Dirs)
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	tmp := s.manifestPath() + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("powercut: write manifest: %w", err)
	}
	if err := os.Rename(tmp, s.manifestPath()); err != nil {
		return fmt.Errorf("powercut: write manifest: %w", err)
	}
	return nil
}

// removeOrphans deletes data files the manifest does not name: files whose
// creation never became durable.
func (s store) removeOrphans(m manifest) error {
	keep := map[string]bool{}
	for _, f := range m.Files {
		keep[strconv.FormatUint(f.ID, 10)] = true
	}
	ents, err := os.ReadDir(filepath.Join(s.dir, "data"))
	if err != nil {
		return fmt.Errorf("powercut: list data: %w", err)
	}
	for _, e := range ents {
		if !keep[e.Name()] {
			if err := os.Remove(filepath.Join(s.dir, "data", e.Name())); err != nil {
				return fmt.Errorf("powercut: remove orphan: %w", err)
			}
		}
	}
	return nil
}

func (s store) readData(id uint64) ([]byte, error) {
	b, err := os.ReadFile(s.dataPath(id))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return b, err
}
