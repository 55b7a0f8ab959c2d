package main

import (
	"os"

	"github.com/nexuskernel/nexus/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:]))
}
