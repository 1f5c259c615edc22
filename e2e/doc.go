// Package e2e holds the tests that drive the built parley binary: TestMain
// builds it from the module's main package once, and each test runs it as
// child processes against real relay processes on loopback (and tmux for
// the terminal tests), so what they check is the command-line contract a
// person or a script sees: output, exit codes, files on disk. The package
// has no code outside its tests, and its tests import nothing of cli: the
// commands' unit tests, which call cli's run in process, sit beside the
// commands.
package e2e
