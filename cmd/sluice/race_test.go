//go:build race

package main

// raceEnabled: the tests run under the race detector, where the
// simulator's runs take several times as long.
const raceEnabled = true
