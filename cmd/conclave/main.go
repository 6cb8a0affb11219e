// Command conclave is Conclave's one binary: `conclave serve` runs the
// gateway; the admin subcommands (org, balance, key, byok, jobs) provision
// organisations, money, API keys and organisations' own provider
// credentials in the same database. Run `conclave help` for usage.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		var u usageError
		if errors.As(err, &u) {
			fmt.Fprintln(os.Stderr, "conclave:", err)
			if u.usage != "" {
				fmt.Fprint(os.Stderr, "\n"+u.usage)
			} else {
				fmt.Fprintln(os.Stderr, "Run 'conclave help' for usage.")
			}
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "conclave:", err)
		os.Exit(1)
	}
}

// usageError is an error in how a command was called. usage, when set, is
// the command's usage, printed after the error.
type usageError struct{ msg, usage string }

func (u usageError) Error() string { return u.msg }

func usagef(format string, args ...any) error { return usageError{msg: fmt.Sprintf(format, args...)} }

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

// run runs the command args name with the process's stdin and environment.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runIO(ctx, args, cmdIO{stdout: stdout, stderr: stderr, stdin: os.Stdin, lookupEnv: os.LookupEnv})
}
