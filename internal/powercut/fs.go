package powercut

import (
	"context"
	"fmt"
	"os"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

const pageSize = 4096

// volume is one boot's in-memory view. Every node shares its mutex: the
// harness serves one writer at a time and simplicity beats parallelism.
type volume struct {
	mu     sync.Mutex
	st     store
	strict bool
	dead   bool // power is off: every operation fails with EIO
	next   uint64
	root   *dirNode
	tear   TearFunc
	stats  *Stats
}

type dirNode struct {
	fs.Inode
	vol      *volume
	children map[string]fs.InodeEmbedder // *dirNode or *fileNode
}

type fileNode struct {
	fs.Inode
	vol   *volume
	id    uint64
	mode  uint32
	mtime time.Time
	data  []byte
	dirty map[int64]struct{} // pages written since the last sync
	// minSize is the smallest size since the last sync: a sync first cuts
	// the disk file there, so bytes truncated away and regrown read as 0.
	minSize int64
	sized   bool // size changed since the last sync
}

var (
	_ fs.NodeCreater   = (*dirNode)(nil)
	_ fs.NodeMkdirer   = (*dirNode)(nil)
	_ fs.NodeUnlinker  = (*dirNode)(nil)
	_ fs.NodeRmdirer   = (*dirNode)(nil)
	_ fs.NodeRenamer   = (*dirNode)(nil)
	_ fs.NodeFsyncer   = (*dirNode)(nil)
	_ fs.NodeGetattrer = (*dirNode)(nil)

	_ fs.NodeOpener    = (*fileNode)(nil)
	_ fs.NodeReader    = (*fileNode)(nil)
	_ fs.NodeWriter    = (*fileNode)(nil)
	_ fs.NodeFsyncer   = (*fileNode)(nil)
	_ fs.NodeFlusher   = (*fileNode)(nil)
	_ fs.NodeGetattrer = (*fileNode)(nil)
	_ fs.NodeSetattrer = (*fileNode)(nil)
)

func (d *dirNode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = syscall.S_IFDIR | 0o755
	out.Nlink = 2
	return 0
}

func (d *dirNode) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	v := d.vol
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.dead {
		return nil, nil, 0, syscall.EIO
	}
	if _, ok := d.children[name]; ok {
		return nil, nil, 0, syscall.EEXIST
	}
	f := &fileNode{vol: v, id: v.next, mode: mode & 0o7777, mtime: time.Now(), dirty: map[int64]struct{}{}, sized: true}
	v.next++
	d.children[name] = f
	f.attr(&out.Attr)
	return d.NewPersistentInode(ctx, f, fs.StableAttr{Mode: syscall.S_IFREG}), nil, 0, 0
}

func (d *dirNode) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	v := d.vol
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.dead {
		return nil, syscall.EIO
	}
	if _, ok := d.children[name]; ok {
		return nil, syscall.EEXIST
	}
	c := &dirNode{vol: v, children: map[string]fs.InodeEmbedder{}}
	d.children[name] = c
	out.Attr.Mode = syscall.S_IFDIR | 0o755
	return d.NewPersistentInode(ctx, c, fs.StableAttr{Mode: syscall.S_IFDIR}), 0
}

func (d *dirNode) Unlink(ctx context.Context, name string) syscall.Errno {
	v := d.vol
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.dead {
		return syscall.EIO
	}
	c, ok := d.children[name]
	if !ok {
		return syscall.ENOENT
	}
	if _, isDir := c.(*dirNode); isDir {
		return syscall.EISDIR
	}
	delete(d.children, name)
	return 0
}

func (d *dirNode) Rmdir(ctx context.Context, name string) syscall.Errno {
	v := d.vol
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.dead {
		return syscall.EIO
	}
	c, ok := d.children[name].(*dirNode)
	if !ok {
		return syscall.ENOTDIR
	}
	if len(c.children) > 0 {
		return syscall.ENOTEMPTY
	}
	delete(d.children, name)
	return 0
}

func (d *dirNode) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	v := d.vol
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.dead {
		return syscall.EIO
	}
	if flags != 0 {
		return syscall.EINVAL // RENAME_NOREPLACE and RENAME_EXCHANGE are not modelled
	}
	np, ok := newParent.(*dirNode)
	if !ok {
		return syscall.ENOTDIR
	}
	c, ok := d.children[name]
	if !ok {
		return syscall.ENOENT
	}
	if old, ok := np.children[newName].(*dirNode); ok && len(old.children) > 0 {
		return syscall.ENOTEMPTY
	}
	delete(d.children, name)
	np.children[newName] = c
	return 0
}

// Fsync of a directory commits every namespace change.
func (d *dirNode) Fsync(ctx context.Context, f fs.FileHandle, flags uint32) syscall.Errno {
	v := d.vol
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.dead {
		return syscall.EIO
	}
	v.stats.Syncs++
	if err := v.commitNamespace(); err != nil {
		return syscall.EIO
	}
	return 0
}

func (f *fileNode) attr(out *fuse.Attr) {
	out.Mode = syscall.S_IFREG | f.mode
	out.Nlink = 1
	out.Size = uint64(len(f.data))
	out.Blocks = (out.Size + 511) / 512
	out.SetTimes(nil, &f.mtime, &f.mtime)
}

func (f *fileNode) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	f.vol.mu.Lock()
	defer f.vol.mu.Unlock()
	f.attr(&out.Attr)
	return 0
}

func (f *fileNode) Setattr(ctx context.Context, fh fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	f.vol.mu.Lock()
	defer f.vol.mu.Unlock()
	if f.vol.dead {
		return syscall.EIO
	}
	if sz, ok := in.GetSize(); ok {
		f.resize(int64(sz))
	}
	if m, ok := in.GetMode(); ok {
		f.mode = m & 0o7777
	}
	f.attr(&out.Attr)
	return 0
}

func (f *fileNode) resize(sz int64) {
	old := int64(len(f.data))
	switch {
	case sz < old:
		f.data = f.data[:sz]
		for p := range f.dirty {
			if p*pageSize >= sz {
				delete(f.dirty, p)
			}
		}
	case sz > old:
		f.data = append(f.data, make([]byte, sz-old)...)
	}
	f.minSize = min(f.minSize, sz)
	f.sized = true
	f.mtime = time.Now()
}

func (f *fileNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	f.vol.mu.Lock()
	defer f.vol.mu.Unlock()
	if f.vol.dead {
		return nil, 0, syscall.EIO
	}
	if flags&syscall.O_TRUNC != 0 {
		f.resize(0)
	}
	return nil, 0, 0
}

func (f *fileNode) Read(ctx context.Context, fh fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	f.vol.mu.Lock()
	defer f.vol.mu.Unlock()
	if f.vol.dead {
		return nil, syscall.EIO
	}
	if off >= int64(len(f.data)) {
		return fuse.ReadResultData(nil), 0
	}
	n := copy(dest, f.data[off:])
	return fuse.ReadResultData(dest[:n]), 0
}

func (f *fileNode) Write(ctx context.Context, fh fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	f.vol.mu.Lock()
	defer f.vol.mu.Unlock()
	if f.vol.dead {
		return 0, syscall.EIO
	}
	end := off + int64(len(data))
	if end > int64(len(f.data)) {
		f.data = append(f.data, make([]byte, end-int64(len(f.data)))...)
		f.sized = true
	}
	copy(f.data[off:], data)
	for p := off / pageSize; p*pageSize < end; p++ {
		f.dirty[p] = struct{}{}
	}
	f.mtime = time.Now()
	return uint32(len(data)), 0
}

func (f *fileNode) Flush(ctx context.Context, fh fs.FileHandle) syscall.Errno { return 0 }

// Fsync writes the file's dirty pages and size to the disk, or, when a
// tear is armed and picks this sync, a prefix of them before the device
// stops.
func (f *fileNode) Fsync(ctx context.Context, fh fs.FileHandle, flags uint32) syscall.Errno {
	v := f.vol
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.dead {
		return syscall.EIO
	}
	v.stats.Syncs++
	keep := int64(-1)
	if v.tear != nil {
		pending := f.pending()
		if k, ok := v.tear(v.pathOf(f), pending); ok {
			keep, v.tear = max(k, 0), nil
			for _, e := range pending {
				v.stats.Discarded += e.Len
			}
			v.stats.Discarded -= min(keep, v.stats.Discarded)
		}
	}
	if err := v.flushFile(f, keep); err != nil {
		v.dead = true
		return syscall.EIO
	}
	if keep >= 0 {
		v.stats.Torn++
		v.dead = true
		return syscall.EIO
	}
	if !v.strict {
		if err := v.commitNamespace(); err != nil {
			return syscall.EIO
		}
	}
	return 0
}

// Extent is a byte range of a file.
type Extent struct{ Off, Len int64 }

// pending lists the dirty pages as extents in offset order, clipped to the
// file's size.
func (f *fileNode) pending() []Extent {
	pages := make([]int64, 0, len(f.dirty))
	for p := range f.dirty {
		pages = append(pages, p)
	}
	sort.Slice(pages, func(i, j int) bool { return pages[i] < pages[j] })
	var out []Extent
	for _, p := range pages {
		off := p * pageSize
		n := min(int64(pageSize), int64(len(f.data))-off)
		if n <= 0 {
			continue
		}
		if k := len(out) - 1; k >= 0 && out[k].Off+out[k].Len == off {
			out[k].Len += n
			continue
		}
		out = append(out, Extent{off, n})
	}
	return out
}

// flushFile writes the dirty pages (all of them, or the first keep bytes in
// offset order when keep >= 0) and the size to the file's disk copy.
func (v *volume) flushFile(f *fileNode, keep int64) error {
	w, err := os.OpenFile(v.st.dataPath(f.id), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("powercut: open disk copy: %w", err)
	}
	defer w.Close()
	if f.sized {
		if err := w.Truncate(f.minSize); err != nil {
			return fmt.Errorf("powercut: truncate disk copy: %w", err)
		}
		if err := w.Truncate(int64(len(f.data))); err != nil {
			return fmt.Errorf("powercut: size disk copy: %w", err)
		}
	}
	for _, e := range f.pending() {
		n := e.Len
		if keep >= 0 {
			n = min(n, keep)
			keep -= n
		}
		if n > 0 {
			if _, err := w.WriteAt(f.data[e.Off:e.Off+n], e.Off); err != nil {
				return fmt.Errorf("powercut: write disk copy: %w", err)
			}
		}
		if keep == 0 {
			break
		}
	}
	clear(f.dirty)
	f.sized, f.minSize = false, int64(len(f.data))
	return nil
}

// pathOf finds a file's current path (for TearFunc); "" if unlinked.
func (v *volume) pathOf(target *fileNode) string {
	var walk func(d *dirNode, prefix string) string
	walk = func(d *dirNode, prefix string) string {
		for name, c := range d.children {
			switch c := c.(type) {
			case *fileNode:
				if c == target {
					return prefix + name
				}
			case *dirNode:
				if p := walk(c, prefix+name+"/"); p != "" {
					return p
				}
			}
		}
		return ""
	}
	return walk(v.root, "")
}

// commitNamespace writes the current tree as the synced one.
func (v *volume) commitNamespace() error {
	m := manifest{Files: map[string]fileEntry{}, Next: v.next}
	var walk func(d *dirNode, prefix string)
	walk = func(d *dirNode, prefix string) {
		for name, c := range d.children {
			switch c := c.(type) {
			case *fileNode:
				m.Files[prefix+name] = fileEntry{ID: c.id, Mode: c.mode}
			case *dirNode:
				m.Dirs = append(m.Dirs, prefix+name)
				walk(c, prefix+name+"/")
			}
		}
	}
	walk(v.root, "")
	return v.st.writeManifest(m)
}

// syncAll is sync(2): every file's data, then the namespace.
func (v *volume) syncAll() error {
	var files []*fileNode
	var walk func(d *dirNode)
	walk = func(d *dirNode) {
		for _, c := range d.children {
			switch c := c.(type) {
			case *fileNode:
				files = append(files, c)
			case *dirNode:
				walk(c)
			}
		}
	}
	walk(v.root)
	for _, f := range files {
		if err := v.flushFile(f, -1); err != nil {
			return err
		}
	}
	return v.commitNamespace()
}

// load builds the in-memory view from the synced state.
func load(st store, strict bool, stats *Stats) (*volume, error) {
	m, err := st.readManifest()
	if err != nil {
		return nil, err
	}
	if err := st.removeOrphans(m); err != nil {
		return nil, err
	}
	v := &volume{st: st, strict: strict, next: max(m.Next, 1), stats: stats}
	v.root = &dirNode{vol: v, children: map[string]fs.InodeEmbedder{}}
	dirs := map[string]*dirNode{"": v.root}
	sort.Strings(m.Dirs) // parents before children
	for _, p := range m.Dirs {
		parent, name := split(p)
		pd, ok := dirs[parent]
		if !ok {
			return nil, fmt.Errorf("powercut: manifest dir %q has no parent", p)
		}
		d := &dirNode{vol: v, children: map[string]fs.InodeEmbedder{}}
		pd.children[name] = d
		dirs[p] = d
	}
	for p, e := range m.Files {
		parent, name := split(p)
		pd, ok := dirs[parent]
		if !ok {
			return nil, fmt.Errorf("powercut: manifest file %q has no parent", p)
		}
		data, err := st.readData(e.ID)
		if err != nil {
			return nil, fmt.Errorf("powercut: read %q: %w", p, err)
		}
		pd.children[name] = &fileNode{vol: v, id: e.ID, mode: e.Mode, mtime: time.Now(), data: data,
			dirty: map[int64]struct{}{}, minSize: int64(len(data))}
	}
	return v, nil
}

func split(p string) (parent, name string) {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[:i], p[i+1:]
		}
	}
	return "", p
}

// OnAdd attaches the loaded tree to the kernel-facing inodes at mount.
func (d *dirNode) OnAdd(ctx context.Context) {
	for name, c := range d.children {
		mode := uint32(syscall.S_IFREG)
		if _, ok := c.(*dirNode); ok {
			mode = syscall.S_IFDIR
		}
		d.AddChild(name, d.NewPersistentInode(ctx, c, fs.StableAttr{Mode: mode}), true)
	}
}
