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
			fmt.Fprintln(os.Stderr, "Run 'conclave help' for usage.")
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "conclave:", err)
		os.Exit(1)
	}
}

// usageError is an error in how the command was called.
type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

const usage = `conclave — a deliberation gateway.

Usage:
  conclave serve [--addr HOST:PORT] [--operator-addr HOST:PORT|off] [--config conclave.yaml]
                [--policy-dir DIR] [--demo]
  conclave org create --name NAME [--ticker ABCD] [--plan PLAN] [--unverified] [--json]
  conclave org suspend|unsuspend --org ID [--json]
  conclave org verify|unverify --org ID [--json]
  conclave org plan --org ID --plan PLAN [--json]
  conclave org limits --org ID [--concurrency N] [--monthly-quota-usd X|none] [--json]
  conclave balance add --org ID --usd AMOUNT [--memo TEXT] [--json]
  conclave balance show --org ID [--json]
  conclave key create --org ID [--test] [--name N] [--scopes s1,s2] [--modes m1,m2]
                      [--rpm N] [--concurrency N] [--max-input-tokens N]
                      [--ceiling-usd X] [--expires-in DURATION] [--json]
  conclave key revoke --key ID [--json]
  conclave key list --org ID [--json]
  conclave byok set --org ID --provider openai|anthropic|google|mistral (--key-stdin | --key-env VAR) [--json]
  conclave byok set --org ID --provider aws --role-arn ARN --external-id X [--json]
  conclave byok list --org ID [--json]
  conclave byok remove --org ID --provider P [--json]
  conclave jobs sweep [--json]
  conclave sim [--addr HOST:PORT] [--profile quick|seed] [--time-scale X] [--seed N] [--api-key K]
  conclave plugins list|verify [--config conclave.yaml] [--manifest plugins.yaml] [--json]
  conclave migrate
  conclave version

Every subcommand reads the same configuration (--config, then DATABASE_URL).
Without DATABASE_URL it uses the managed local PostgreSQL cluster in
./.data/pg, starting it if needed. byok set, and bring-your-own-key in
serve, need CONCLAVE_BYOK_KEY (base64 of 32 random bytes; docs/byok.md).
`

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stdout, usage)
		return nil
	}
	switch args[0] {
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	case "version":
		fmt.Fprintln(stdout, "conclave", version)
		return nil
	case "serve":
		return serve(ctx, args[1:], stdout, stderr)
	case "migrate":
		return migrate(ctx, args[1:], stdout)
	case "sim":
		return simCmd(ctx, args[1:], stderr)
	case "plugins":
		return pluginsCmd(ctx, args[1:], stdout)
	case "org":
		return orgCmd(ctx, args[1:], stdout)
	case "balance":
		return balanceCmd(ctx, args[1:], stdout)
	case "key":
		return keyCmd(ctx, args[1:], stdout)
	case "byok":
		return byokCmd(ctx, args[1:], byokIO{stdin: os.Stdin, lookupEnv: os.LookupEnv}, stdout)
	case "jobs":
		return jobsCmd(ctx, args[1:], stdout)
	}
	return usagef("unknown command %q", args[0])
}
