package process

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// landlockWritesV1 are the rights to change the file system that the
// first Landlock ABI has: write, make and remove anything.
const landlockWritesV1 = unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
	unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
	unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR |
	unix.LANDLOCK_ACCESS_FS_MAKE_REG | unix.LANDLOCK_ACCESS_FS_MAKE_SOCK |
	unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
	unix.LANDLOCK_ACCESS_FS_MAKE_SYM

// landlockDevices are the rights no command is granted anywhere: making
// a device node (root could make one for a disk and write it raw) and,
// from ABI 5, ioctl on a device (TIOCSTI on a terminal types into the
// user's shell).
const landlockDevices = unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
	unix.LANDLOCK_ACCESS_FS_IOCTL_DEV

// landlockFileWrites are the rights to change the file system that a
// rule on a file, rather than a directory, may grant.
const landlockFileWrites = unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE

// landlockABI is the kernel's Landlock ABI version; 0 when it has none
// (too old, or Landlock is not enabled).
func landlockABI() int {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(v)
}

// landlockHandled are the rights that ABI abi knows and a confinement
// takes away: every right to change the file system, and ioctl on
// devices. An older kernel refuses a ruleset that names rights it lacks.
func landlockHandled(abi int) uint64 {
	rights := uint64(landlockWritesV1)
	if abi >= 2 {
		rights |= unix.LANDLOCK_ACCESS_FS_REFER // renaming and linking across directories
	}
	if abi >= 3 {
		rights |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if abi >= 5 {
		rights |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	return rights
}

// restrictWrites confines the calling thread, and every process it
// starts from now on, to changing files only beneath dirs and writing
// to /dev/null; reading and executing stay allowed everywhere, and no
// device node may be made nor, where the kernel can say so (ABI 5), a
// device's ioctl called, save /dev/null's. Where the kernel can scope
// signals (ABI 6), the confined processes can no longer signal any
// process outside the confinement either, this program's parent
// included; with sockets, they can no longer connect to an abstract
// Unix socket made outside it either. It reports false, changing
// nothing, when the kernel has no Landlock. The caller locks its
// goroutine to the thread.
func restrictWrites(dirs []string, sockets bool) (bool, error) {
	abi := landlockABI()
	if abi < 1 {
		return false, nil
	}
	rights := landlockHandled(abi)
	attr := unix.LandlockRulesetAttr{Access_fs: rights}
	if abi >= 6 {
		attr.Scoped = unix.LANDLOCK_SCOPE_SIGNAL
		if sockets {
			attr.Scoped |= unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
		}
	}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET,
		uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if errno != 0 {
		return false, fmt.Errorf("creating a Landlock ruleset: %w", errno)
	}
	ruleset := int(fd)
	defer unix.Close(ruleset)
	for _, dir := range dirs {
		if err := allowBeneath(ruleset, dir, rights&^landlockDevices); err != nil {
			return false, err
		}
	}
	if err := allowBeneath(ruleset, "/dev/null", rights&(landlockFileWrites|unix.LANDLOCK_ACCESS_FS_IOCTL_DEV)); err != nil {
		return false, err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return false, fmt.Errorf("setting no_new_privs: %w", err)
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(ruleset), 0, 0); errno != 0 {
		return false, fmt.Errorf("applying the Landlock ruleset: %w", errno)
	}
	return true, nil
}

// allowBeneath grants rights beneath path (on path itself, for a file).
func allowBeneath(ruleset int, path string, rights uint64) error {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("opening %s for a Landlock rule: %w", path, err)
	}
	defer unix.Close(fd)
	rule := unix.LandlockPathBeneathAttr{Allowed_access: rights, Parent_fd: int32(fd)}
	_, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset),
		unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&rule)), 0, 0, 0)
	if errno != 0 {
		return fmt.Errorf("adding a Landlock rule for %s: %w", path, errno)
	}
	return nil
}
