// Package draintest provides deterministic stand-ins for drain's inputs: a
// FakeClock whose timers fire only when the test advances it, and a
// FakeAllocations counter. Tests of drain and of packages built on it (such as
// pkg/server) use them to run a whole drain without sleeping.
package draintest
