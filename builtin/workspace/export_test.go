package workspace

// WaitBlockedOnLock waits until a process is blocked on a lock file.
var WaitBlockedOnLock = waitBlockedOnLock
