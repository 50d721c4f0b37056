// Package fault is troupe's one vocabulary of failures: a Code per class
// of failure, the Error that carries one (code, message, retryable), and
// one sentinel per code for errors.Is.
//
// The host, its plugins and the sdk all speak it, and it is what crosses
// the plugin boundary: a code sent from one side matches the same
// sentinel under errors.Is on the other. The package imports nothing of
// troupe and nothing of gRPC, so that every side may import it.
package fault
