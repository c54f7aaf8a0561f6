//go:build race

package verify

// raceFactor is how much more the race detector's builds allocate than plain ones, which
// allocation bounds allow for.
const raceFactor = 2
