// Package process starts the processes troupe runs for a project
// (plugins, servers, and the commands agents run) so that they hold only
// what they need and never outlive troupe.
//
// Three things are contained:
//
//   - The environment. Env passes a short, documented allow-list of the
//     caller's variables (PATH, HOME, locale, temporary directory and the
//     like) and what the caller names; nothing else, so a provider's API
//     key never reaches a plugin by accident.
//   - The bytes that run. Open opens an executable once and hashes it; the
//     process is started from that very open file on Linux (from a private
//     copy elsewhere), so a binary renamed into place after its checksum
//     was checked never runs.
//   - The process tree. Contain puts a process in a process group of its
//     own, which KillGroup ends whole, with a parent-death signal where
//     the platform has one. A program that calls ServeIfKeeper first in
//     main also gets keepers (Linux): Kept runs a command under a small
//     re-executed copy of the program that adopts every descendant and
//     kills them all when the command ends, when it is stopped, or when
//     troupe itself dies, even by SIGKILL.
//
// Run runs one command to its end that way, bounded in time and output,
// and, on Linux, confined as far as the kernel allows: it may change
// files only beneath the directories it is given (Landlock, applied by
// its keeper before the command starts), and it has no network (its
// keeper starts in a network namespace of its own). The result says
// which of the two applied.
package process
