//go:build cgo

package main

// #include <stdlib.h>
import "C"

// linkage: with cgo the program is dynamic and calls the C library once.
func linkage() string {
	C.srand(1)
	return "cgo"
}
