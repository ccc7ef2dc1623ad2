package main

import (
	"context"
	"errors"
	"io"
)

// runTrace is the `ndbg trace` subcommand (being written).
func runTrace(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("not implemented yet")
}
