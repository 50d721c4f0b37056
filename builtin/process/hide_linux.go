package process

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// socketDirs are the directories where the host's Unix sockets live,
// which a command without network does not see: the runtime
// directories (the D-Bus buses, the user's services, Docker's and
// containerd's sockets, /var/run being /run on most systems), and the
// temporary directory (ssh-agent's, X11's and many a program's
// sockets). env is the command's environment, whose $XDG_RUNTIME_DIR
// counts as this process's does.
func socketDirs(env []string) []string {
	dirs := []string{"/run", "/var/run", "/tmp", "/tmp/.X11-unix"}
	for _, d := range []string{os.Getenv("XDG_RUNTIME_DIR"), envValue(env, "XDG_RUNTIME_DIR")} {
		if filepath.IsAbs(d) {
			dirs = append(dirs, filepath.Clean(d))
		}
	}
	return dirs
}

// hideOptions are those of the empty file system laid over a hidden
// directory: small, and read-only once the mount points are made.
const (
	hideFlags   = unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC
	hideOptions = "mode=0755,size=64k,nr_inodes=4096"
)

// shown is a path the command needs that lies in a hidden directory: it
// is mounted back, at where the command looks for it, from fd, opened
// on it before it was hidden.
type shown struct {
	at string
	fd int
}

// hideSockets hides the directories of req.Hide from the command the
// keeper is about to start: in the keeper's own mount namespace it lays
// an empty, read-only file system over each, then shows again what the
// command needs beneath them: its writable directories and its working
// directory, its program, its visible directories and the directories
// of its PATH. A directory that is, or lies beneath, a writable
// directory, or that is the working directory, is not hidden: the
// command must see all of those. It reports whether every directory of
// req.Hide that exists was hidden; on an error it undoes what it
// mounted.
func hideSockets(req *confineRequest, program string) (bool, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return false, err
	}
	all := realDirs(req.Hide)
	hide := outermost(hidable(all, req.Writable, cwd))
	if len(hide) == 0 {
		return len(all) == 0, nil
	}
	paths := slices.Concat([]string{cwd, program}, req.Writable, req.Visible, filepath.SplitList(os.Getenv("PATH")))
	shows, err := toShow(hide, paths)
	defer func() {
		for _, s := range shows {
			unix.Close(s.fd)
		}
	}()
	if err != nil {
		return false, err
	}
	complete := !slices.ContainsFunc(all, func(d string) bool { return !hiddenBy(d, hide, shows) })
	if err := unix.Mount("none", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return false, fmt.Errorf("making the mounts private: %w", err)
	}
	for i, dir := range hide {
		if err := hideDir(dir, shows); err != nil {
			for _, done := range slices.Backward(hide[:i]) {
				_ = unix.Unmount(done, unix.MNT_DETACH)
			}
			return false, err
		}
	}
	// The working directory was reached through what is now hidden: go
	// there again, through what was shown again.
	if err := os.Chdir(cwd); err != nil {
		return false, err
	}
	return complete, nil
}

// realDirs are the directories of dirs that exist, by their real paths;
// never the root, which holds everything the command needs.
func realDirs(dirs []string) []string {
	var real []string
	for _, d := range dirs {
		r, err := filepath.EvalSymlinks(d)
		if fi, serr := os.Stat(r); err == nil && serr == nil && fi.IsDir() && r != "/" && !slices.Contains(real, r) {
			real = append(real, r)
		}
	}
	return real
}

// hiddenBy reports whether dir is out of sight once hide are hidden and
// shows shown again.
func hiddenBy(dir string, hide []string, shows []shown) bool {
	return slices.ContainsFunc(hide, func(h string) bool { return beneath(dir, h) }) &&
		!slices.ContainsFunc(shows, func(s shown) bool { return beneath(dir, s.at) })
}

// outermost are the paths of paths that lie beneath no other, sorted.
func outermost(paths []string) []string {
	paths = slices.Clone(paths)
	slices.Sort(paths)
	var out []string
	for _, p := range paths {
		if !slices.ContainsFunc(out, func(o string) bool { return beneath(p, o) }) {
			out = append(out, p)
		}
	}
	return out
}

// hidable are the directories of dirs that may be hidden: those that
// neither are nor lie beneath a writable directory, and are not the
// working directory.
func hidable(dirs, writable []string, cwd string) []string {
	var whole []string
	for _, w := range writable {
		if r, err := filepath.EvalSymlinks(w); err == nil {
			whole = append(whole, r)
		}
	}
	cwd, _ = filepath.EvalSymlinks(cwd)
	var out []string
	for _, d := range dirs {
		if d != cwd && !slices.ContainsFunc(whole, func(w string) bool { return beneath(d, w) }) {
			out = append(out, d)
		}
	}
	return out
}

// toShow are the paths that lie strictly beneath a directory of hide,
// each opened, to be mounted back where the command looks for it: its
// real path, or the path as given when only that lies beneath (a PATH
// entry reached through a link the hidden directory holds). A path
// beneath another to be shown comes with it.
func toShow(hide, paths []string) ([]shown, error) {
	within := func(p string) bool {
		return slices.ContainsFunc(hide, func(h string) bool { return p != h && beneath(p, h) })
	}
	var ats []string
	sources := map[string]string{}
	for _, p := range paths {
		if !filepath.IsAbs(p) {
			continue
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			continue // nothing there to show
		}
		for _, at := range []string{real, filepath.Clean(p)} {
			if _, seen := sources[at]; !seen && within(at) {
				sources[at] = real
				ats = append(ats, at)
			}
		}
	}
	var out []shown
	for _, at := range outermost(ats) {
		fd, err := unix.Open(sources[at], unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return out, fmt.Errorf("opening %s: %w", sources[at], err)
		}
		out = append(out, shown{at: at, fd: fd})
	}
	return out, nil
}

// hideDir lays an empty file system over dir and mounts back those of
// shows that lie beneath it; then it makes it read-only. On an error it
// leaves dir as it was.
func hideDir(dir string, shows []shown) (err error) {
	if err := unix.Mount("tmpfs", dir, "tmpfs", hideFlags, hideOptions); err != nil {
		return fmt.Errorf("hiding %s: %w", dir, err)
	}
	defer func() {
		if err != nil {
			_ = unix.Unmount(dir, unix.MNT_DETACH)
		}
	}()
	for _, s := range shows {
		if !beneath(s.at, dir) {
			continue
		}
		if err := mountPoint(s); err != nil {
			return fmt.Errorf("showing %s: %w", s.at, err)
		}
		// Recursive: what is mounted beneath comes too, as the kernel
		// demands of mounts a user namespace did not make.
		if err := unix.Mount("/proc/self/fd/"+strconv.Itoa(s.fd), s.at, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("showing %s: %w", s.at, err)
		}
	}
	if err := unix.Mount("", dir, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|hideFlags, ""); err != nil {
		return fmt.Errorf("making %s read-only: %w", dir, err)
	}
	return nil
}

// mountPoint makes, in a hidden directory's empty file system, what s is
// mounted on: a directory, or an empty file for a file.
func mountPoint(s shown) error {
	var st unix.Stat_t
	if err := unix.Fstat(s.fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return os.MkdirAll(s.at, 0o755)
	}
	if err := os.MkdirAll(filepath.Dir(s.at), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(s.at, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

// beneath reports whether path is dir or lies beneath it; both are
// clean and absolute.
func beneath(path, dir string) bool {
	return path == dir || dir == "/" || strings.HasPrefix(path, dir+"/")
}

// dropAmbient clears the calling thread's ambient and inheritable
// capabilities, which a keeper in a user namespace of its own was given
// to mount there, so that the command it starts from this thread has
// none of them.
func dropAmbient() error {
	err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
	if err != nil && !errors.Is(err, unix.EINVAL) { // EINVAL: no ambient capabilities before Linux 4.3
		return fmt.Errorf("clearing the ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("reading the capabilities: %w", err)
	}
	if data[0].Inheritable == 0 && data[1].Inheritable == 0 {
		return nil
	}
	data[0].Inheritable, data[1].Inheritable = 0, 0
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("clearing the inheritable capabilities: %w", err)
	}
	return nil
}
