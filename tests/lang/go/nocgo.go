//go:build !cgo

package main

func linkage() string { return "static" }
