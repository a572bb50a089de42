// The Go service of the language test project (golang-go 1.19), built
// twice: static (CGO_ENABLED=0) and with cgo (cgo.go links the C library).
package main

import "fmt"

const unit = 2000000

var sink uint64

//go:noinline
func hot_seventy_five(x uint64, units uint64) uint64 {
	for i := uint64(0); i < units*unit; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

//go:noinline
func cool_twenty_five(x uint64, units uint64) uint64 {
	for i := uint64(0); i < units*unit; i++ {
		x = x*2862933555777941757 + 3037000493
	}
	return x
}

func main() {
	x := uint64(1)
	for round := 1; ; round++ {
		x = hot_seventy_five(x, 3)
		x = cool_twenty_five(x, 1)
		sink = x
		if round%50 == 0 {
			fmt.Printf("lang: %d rounds (%s)\n", round, linkage())
		}
	}
}
