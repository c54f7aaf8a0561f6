//go:build race

package receipt

// raceEnabled: the race detector allocates on its own, so allocation guards do not apply.
const raceEnabled = true
