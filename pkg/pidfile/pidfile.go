// Package pidfile writes a daemon's pidfile and removes it on exit.
//
// The pidfile is never written through a symbolic link and never removed
// once it is no longer the one this process wrote, so a link planted at its
// path (or a second instance's pidfile) cannot make turnd overwrite or
// delete another file. It knows nothing about turnd's config.
package pidfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// File is a pidfile this process wrote.
type File struct {
	path    string
	content string
	info    os.FileInfo // of the file written, to know it again at Remove
}

// Write makes path a regular file holding pid and a newline, mode 0644.
//
// It writes a new file in path's directory (O_EXCL, so nothing there is
// opened or followed) and renames it over path: rename replaces a symbolic
// link or a stale pidfile as a directory entry, never writing through it,
// and a reader (turnd drain --pidfile) sees the old file or the whole new
// one, never an empty one. Removing a stale file and creating path with
// O_EXCL|O_NOFOLLOW would be as safe from links but leave a moment with no
// pidfile at all.
func Write(path string, pid int) (*File, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".*")
	if err != nil {
		return nil, fmt.Errorf("create pidfile: %w", err)
	}
	f := &File{path: path, content: strconv.Itoa(pid) + "\n"}
	err = fill(tmp, f.content)
	if err == nil {
		f.info, err = tmp.Stat()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return nil, fmt.Errorf("write pidfile: %w", err)
	}
	return f, nil
}

func fill(tmp *os.File, content string) error {
	// CreateTemp makes the file 0600; others read a pidfile to signal turnd.
	if err := tmp.Chmod(0o644); err != nil {
		return err
	}
	_, err := tmp.WriteString(content)
	return err
}

// Remove deletes the pidfile if its path still names the file Write made:
// not a link put there since, not a later instance's pidfile. The inode
// alone does not say so (a file created after ours was removed may get its
// number), so the file must also be regular and still hold our PID. A nil
// File removes nothing.
func (f *File) Remove() error {
	if f == nil || !f.ours() {
		return nil // gone, or someone else's now: theirs to remove
	}
	if err := os.Remove(f.path); err != nil {
		return fmt.Errorf("remove pidfile: %w", err)
	}
	return nil
}

func (f *File) ours() bool {
	now, err := os.Lstat(f.path)
	if err != nil || !now.Mode().IsRegular() || !os.SameFile(now, f.info) {
		return false
	}
	r, err := os.OpenFile(f.path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return false
	}
	defer r.Close()
	b := make([]byte, len(f.content)+1)
	n, _ := io.ReadFull(r, b)
	return string(b[:n]) == f.content
}
