package process

import (
	"os"
	"syscall"
)

// identityOf reads fi's identity (see Digests).
func identityOf(fi os.FileInfo) (identity, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st.Ctim.Sec == 0 {
		return identity{}, false
	}
	return identity{Dev: st.Dev, Ino: st.Ino, Size: st.Size,
		Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano()}, true
}

// knownImage is the image of f whose checksum is known.
func knownImage(f *os.File, path, sum string) (*Image, bool) {
	return &Image{Path: path, SHA256: sum, file: f}, true
}
