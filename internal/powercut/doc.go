// Package powercut is a FUSE filesystem that can lose power: it keeps every
// write that has not been fsynced apart from the disk and throws it away at
// a cut, as an outage does and a kill -9 does not (after kill -9 the kernel
// still holds the page cache and writes it out).
//
// Proving ground: a fault tool of chaos, the edge bench and tests, never
// linked into a product (docs/README.md, "The proving ground").
//
// A [Disk] is a mount point backed by a directory that holds only synced
// state: a manifest of the namespace (tree.json) and one file per regular
// file (data/<id>). Mounting reads the synced state into memory; writes,
// creates, renames, unlinks and truncates change only the in-memory view.
// [Disk.Cut] stops the device (every later operation fails with EIO, so
// nothing reaches the disk after the instant of the cut), runs the caller's
// kill (SIGKILL of the real writer process), unmounts and forgets the
// in-memory view; [Disk.Boot] mounts again with only what was synced.
//
// # What reaches the disk
//
//   - fsync and fdatasync of a regular file write its dirty 4 KiB pages and
//     its size. (fdatasync must persist the size when it is needed to read
//     the data back, and bbolt grows its file before it writes into it, so
//     the two are the same here.)
//   - Namespace changes (create, mkdir, rename, unlink, rmdir) become
//     durable all together at the next fsync of anything: a directory, or,
//     unless [Options.Strict] is set, a regular file. That is what ext4
//     with a journal does in practice (any fsync commits the running
//     journal transaction, which carries every metadata change so far).
//     With Strict only a directory fsync commits them, which is what POSIX
//     promises and what a careful program must assume; it is still more
//     lenient than POSIX, which promises only that directory's entries.
//   - Nothing else: writes, truncates and namespace changes without a
//     following sync are lost at a cut. A file whose creation was not
//     committed disappears even if its data was fsynced.
//
// # Torn writes
//
// [Disk.TearNextSync] arms a tear: at the first fsync the TearFunc picks,
// only a prefix of that file's dirty pages (in offset order, cut at any
// byte) reaches the disk, the device stops as at a cut, and the fsync
// fails with EIO. docs/power-cut.md says what this does to bbolt.
//
// # mmap
//
// bbolt reads its file through a shared read-only mmap and writes it with
// pwrite. The mount does not use direct_io, so the kernel serves the
// mapping from its page cache and fills it through FUSE reads, and FUSE
// writes are write-through (the page cache and this filesystem see the
// same bytes), so the mapping stays coherent with the writes. Each Boot is
// a new mount, so no page cache survives a cut.
//
// # Caveats
//
// The process that serves the mount must not itself read a file on it
// through mmap: a page fault is not a point where the Go runtime can stop
// a thread, so a garbage collection that starts meanwhile would wait for
// the fault while the fault waits for the (stopped) server. Tests run every
// writer and reader of the mount in a child process. Permissions, owners,
// times, links, symlinks and xattrs are not modelled; directories created
// by mkdir follow the namespace rule above.
package powercut
