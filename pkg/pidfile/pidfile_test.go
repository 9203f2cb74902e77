package pidfile_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/turnd/turnd/pkg/pidfile"
)

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// regular fails unless path is a regular file (not a link) holding want.
func regular(t *testing.T, path, want string) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.Mode().IsRegular() {
		t.Fatalf("%s is %v, want a regular file", path, fi.Mode())
	}
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("%s has mode %v, want 0644", path, fi.Mode().Perm())
	}
	if got := read(t, path); got != want {
		t.Errorf("%s holds %q, want %q", path, got, want)
	}
}

// TestWriteDoesNotFollowLinks: a symbolic link at the pidfile's path is
// replaced, its target left as it was, and Remove then removes the pidfile
// only; a stale pidfile is replaced the same way.
func TestWriteDoesNotFollowLinks(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"absolute", "relative", "dangling", "stale"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name+".pid")
			var err error
			switch name {
			case "absolute":
				err = os.Symlink(victim, path)
			case "relative":
				err = os.Symlink("victim", path)
			case "dangling":
				err = os.Symlink(filepath.Join(dir, "created-through-the-link"), path)
			case "stale":
				err = os.WriteFile(path, []byte("1\n"), 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
			f, err := pidfile.Write(path, 4242)
			if err != nil {
				t.Fatal(err)
			}
			regular(t, path, "4242\n")
			if err := f.Remove(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Lstat(path); !os.IsNotExist(err) {
				t.Errorf("pidfile still there after Remove: %v", err)
			}
			if got := read(t, victim); got != "precious\n" {
				t.Errorf("the link's target holds %q", got)
			}
			if _, err := os.Lstat(filepath.Join(dir, "created-through-the-link")); !os.IsNotExist(err) {
				t.Errorf("a file was created through the dangling link: %v", err)
			}
		})
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("left in the directory: %v, want only the victim", entries)
	}
}

// TestRemoveLeavesWhatIsNotOurs: once the path names another file (a
// later instance's pidfile, a link), Remove leaves it.
func TestRemoveLeavesWhatIsNotOurs(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "turnd.pid")
	f, err := pidfile.Write(path, 1)
	if err != nil {
		t.Fatal(err)
	}
	next, err := pidfile.Write(path, 2) // a second instance started since
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Remove(); err != nil {
		t.Fatal(err)
	}
	regular(t, path, "2\n")
	if err := next.Remove(); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other")
	if err := os.WriteFile(other, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err = pidfile.Write(path, 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, path); err != nil {
		t.Fatal(err)
	}
	if err := f.Remove(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(path); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link put at the pidfile's path was removed: %v", err)
	}
	if err := (*pidfile.File)(nil).Remove(); err != nil {
		t.Errorf("nil File: %v", err)
	}
}

func TestWriteFailsInAMissingDirectory(t *testing.T) {
	if _, err := pidfile.Write(filepath.Join(t.TempDir(), "no", "turnd.pid"), 1); err == nil {
		t.Error("no error for a pidfile in a missing directory")
	}
}
