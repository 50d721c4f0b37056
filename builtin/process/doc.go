// Package process starts the processes troupe runs for a project
// (plugins, and later servers and commands) so that they hold only what
// they need and never outlive troupe.
//
// Three things are contained:
//
//   - The environment. Env passes a short, documented allow-list of the
//     caller's variables (PATH, HOME, locale, temporary directory and the
//     like) and what the caller names; nothing else, so a provider's API
//     key never reaches a plugin by accident.
//   - The bytes that run. Open reads an executable once, into a sealed
//     in-memory file on Linux (a private copy elsewhere), while hashing
//     it; the process runs from that image, so a binary swapped after its
//     checksum was checked never runs.
//   - The process tree. Contain puts a process in a process group of its
//     own, which KillGroup ends whole, with a parent-death signal where
//     the platform has one. A program that calls ServeIfKeeper first in
//     main also gets keepers (Linux): Kept runs a command under a small
//     re-executed copy of the program that adopts every descendant and
//     kills them all when the command ends, when it is stopped, or when
//     troupe itself dies, even by SIGKILL.
package process
