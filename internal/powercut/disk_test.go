package powercut_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/bowline-iot/bowline/internal/powercut"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// mount boots a Disk in a temp dir; without FUSE it skips, or fails under
// CI=true.
func mount(t *testing.T, strict bool) *powercut.Disk {
	t.Helper()
	testkit.Need(t, powercut.Available())
	dir := t.TempDir()
	d, err := powercut.Mount(powercut.Options{Mountpoint: filepath.Join(dir, "mnt"), Backing: filepath.Join(dir, "disk"), Strict: strict})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

func writeFile(t *testing.T, path string, data []byte, sync bool) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func cutAndBoot(t *testing.T, d *powercut.Disk) {
	t.Helper()
	if err := d.Cut(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Boot(); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return b
}

func TestCutKeepsOnlySyncedWrites(t *testing.T) {
	d := mount(t, false)
	synced, unsynced := filepath.Join(d.Dir(), "synced"), filepath.Join(d.Dir(), "unsynced")
	writeFile(t, synced, []byte("durable"), true)
	writeFile(t, unsynced, []byte("volatile"), false)
	// An unsynced overwrite of a synced file is lost too.
	f, err := os.OpenFile(synced, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("XX"), 0); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	if got := readFile(t, synced); string(got) != "XXrable" {
		t.Fatalf("before cut: %q; want %q", got, "XXrable")
	}
	cutAndBoot(t, d)
	if got := readFile(t, synced); string(got) != "durable" {
		t.Errorf("synced file after cut = %q; want %q", got, "durable")
	}
	// No fsync followed its creation, so the file is gone.
	if _, err := os.Stat(unsynced); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("unsynced file after cut: %v; want it gone", err)
	}
	if st := d.Stats(); st.Cuts != 1 || st.Discarded == 0 {
		t.Errorf("stats = %+v; want 1 cut with discarded bytes", st)
	}
}

func TestStrictNeedsDirectorySync(t *testing.T) {
	d := mount(t, true)
	a, b := filepath.Join(d.Dir(), "a"), filepath.Join(d.Dir(), "b")
	writeFile(t, a, []byte("a"), true)
	cutAndBoot(t, d)
	if _, err := os.Stat(a); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("file synced without its directory survived a strict cut: %v", err)
	}
	writeFile(t, b, []byte("b"), true)
	dir, err := os.Open(d.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if err := dir.Sync(); err != nil {
		t.Fatal(err)
	}
	_ = dir.Close()
	// A rename after the directory sync is lost.
	if err := os.Rename(b, a); err != nil {
		t.Fatal(err)
	}
	cutAndBoot(t, d)
	if got := readFile(t, b); string(got) != "b" {
		t.Errorf("after cut b = %q; want %q (the rename was not synced)", got, "b")
	}
	if _, err := os.Stat(a); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("unsynced rename target survived: %v", err)
	}
}

func TestTornSyncKeepsPrefix(t *testing.T) {
	d := mount(t, false)
	p := filepath.Join(d.Dir(), "f")
	old := bytes.Repeat([]byte{'o'}, 3*4096)
	writeFile(t, p, old, true)
	d.TearNextSync(func(path string, pending []powercut.Extent) (int64, bool) {
		return 4096 + 100, path == "f"
	})
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(bytes.Repeat([]byte{'n'}, 3*4096), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("torn sync returned %v; want EIO", err)
	}
	_ = f.Close()
	cutAndBoot(t, d)
	got := readFile(t, p)
	want := append(bytes.Repeat([]byte{'n'}, 4096+100), old[4096+100:]...)
	if !bytes.Equal(got, want) {
		t.Errorf("after torn sync: %d bytes, first old byte at %d; want new bytes up to %d", len(got), bytes.IndexByte(got, 'o'), 4096+100)
	}
}
