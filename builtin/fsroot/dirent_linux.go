package fsroot

import (
	"io/fs"
	"os"
	"syscall"
	"unsafe"
)

// readDirTyped reads the entries of the open directory f with the types
// the kernel reports in each entry (d_type), and lstats, through root,
// only the entries whose type the file system does not report. os.File's
// ReadDir lstats every entry of a directory opened through an os.Root, one
// system call per entry; a walk over a large tree spent much of its time
// there.
func readDirTyped(f *os.File, root *os.Root) ([]fs.DirEntry, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	var ents []fs.DirEntry
	buf := make([]byte, 32<<10)
	for {
		var n int
		var rerr error
		if err := rc.Read(func(fd uintptr) bool {
			n, rerr = syscall.ReadDirent(int(fd), buf)
			return rerr != syscall.EAGAIN
		}); err != nil {
			return ents, err
		}
		if rerr != nil {
			return ents, &os.PathError{Op: "readdirent", Path: f.Name(), Err: rerr}
		}
		if n <= 0 {
			return ents, nil
		}
		for b := buf[:n]; len(b) > 0; {
			// struct linux_dirent64 { u64 ino; s64 off; u16 reclen; u8 type; char name[]; }
			if len(b) < 19 {
				break
			}
			reclen := int(*(*uint16)(unsafe.Pointer(&b[16])))
			if reclen < 19 || reclen > len(b) {
				break
			}
			typ := b[18]
			nameb := b[19:reclen]
			for i, c := range nameb {
				if c == 0 {
					nameb = nameb[:i]
					break
				}
			}
			b = b[reclen:]
			name := string(nameb)
			if name == "." || name == ".." {
				continue
			}
			e := &typedDirent{name: name, root: root}
			switch typ {
			case syscall.DT_DIR:
				e.typ = fs.ModeDir
			case syscall.DT_REG:
				e.typ = 0
			case syscall.DT_LNK:
				e.typ = fs.ModeSymlink
			case syscall.DT_FIFO:
				e.typ = fs.ModeNamedPipe
			case syscall.DT_SOCK:
				e.typ = fs.ModeSocket
			case syscall.DT_CHR:
				e.typ = fs.ModeDevice | fs.ModeCharDevice
			case syscall.DT_BLK:
				e.typ = fs.ModeDevice
			default: // DT_UNKNOWN: the file system does not say
				fi, err := root.Lstat(name)
				if err != nil {
					continue // gone since it was listed
				}
				e.typ, e.info = fi.Mode().Type(), fi
			}
			ents = append(ents, e)
		}
	}
}

// typedDirent is a directory entry whose type came from the kernel; its
// FileInfo is read through the root when asked for.
type typedDirent struct {
	name string
	typ  fs.FileMode
	info fs.FileInfo
	root *os.Root
}

func (d *typedDirent) Name() string      { return d.name }
func (d *typedDirent) IsDir() bool       { return d.typ.IsDir() }
func (d *typedDirent) Type() fs.FileMode { return d.typ }
func (d *typedDirent) String() string    { return fs.FormatDirEntry(d) }
func (d *typedDirent) Info() (fs.FileInfo, error) {
	if d.info != nil {
		return d.info, nil
	}
	return d.root.Lstat(d.name)
}
