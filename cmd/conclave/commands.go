package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/conclavehq/conclave/core"
)

// cmdIO is what a command reads and writes besides its flags.
type cmdIO struct {
	stdout, stderr io.Writer
	stdin          io.Reader
	lookupEnv      func(string) (string, bool)
}

// command is one of conclave's commands. The table commands is what run
// dispatches on and what every help text is printed from; a test asks each
// entry for its --help through the binary, so a command cannot be added
// without its usage and an example.
type command struct {
	// name is the words after "conclave": "key create".
	name string
	// args are its flags in brief, as the usage line shows them; a test
	// holds them to the flags the command defines.
	args string
	// summary says what it does, in one line.
	summary string
	// example is one command line or more to copy, one per line.
	example string
	// run defines its flags on fs, parses args with parse (which answers
	// flag.ErrHelp to -h and --help) and does the work.
	run func(ctx context.Context, fs *flag.FlagSet, args []string, cio cmdIO) error
}

// commands lists every command, in the order the help shows them.
var commands = []command{
	{
		name: "serve",
		args: "[--addr HOST:PORT] [--operator-addr HOST:PORT|off] [--operator-public] [--data-dir DIR] " +
			"[--config FILE] [--policy-dir DIR] [--demo]",
		summary: "run the gateway until SIGINT or SIGTERM, then drain",
		example: "conclave serve --demo                       # make run: a local cluster in ./.data, a demo key\n" +
			"conclave serve --addr 127.0.0.1:9000 --operator-addr 127.0.0.1:9001 --data-dir /srv/conclave\n" +
			"DATABASE_URL='postgres://conclave@db.internal/conclave' conclave serve --addr 0.0.0.0:8080",
		run: serve,
	},
	{
		name:    "migrate",
		args:    "[--json] [--config FILE] [--data-dir DIR]",
		summary: "apply the database migrations and print the schema version, without serving",
		example: "DATABASE_URL='postgres://conclave@db.internal/conclave' conclave migrate",
		run:     migrate,
	},
	{
		name:    "org create",
		args:    "--name NAME [--ticker ABCD] [--plan PLAN] [--unverified] [--json] [--config FILE] [--data-dir DIR]",
		summary: "create an organisation with the $10 trial credit (journaled)",
		example: `conclave org create --name "Acme Research" --ticker ACME`,
		run:     orgCreate,
	},
	{
		name:    "org suspend",
		args:    orgOnly,
		summary: "suspend an organisation: its calls get 403 org_suspended",
		example: "conclave org suspend --org org_…",
		run:     orgSuspend,
	},
	{
		name:    "org unsuspend",
		args:    orgOnly,
		summary: "lift an organisation's suspension",
		example: "conclave org unsuspend --org org_…",
		run:     orgUnsuspend,
	},
	{
		name:    "org verify",
		args:    orgOnly,
		summary: "verify an organisation: it may spend past the activation allowance",
		example: "conclave org verify --org org_…",
		run:     orgVerify,
	},
	{
		name:    "org unverify",
		args:    orgOnly,
		summary: "make an organisation unverified again: it may spend only the activation allowance",
		example: "conclave org unverify --org org_…",
		run:     orgUnverify,
	},
	{
		name:    "org plan",
		args:    "--org ID --plan PLAN [--json] [--config FILE] [--data-dir DIR]",
		summary: "set the plan the entitlement policy reads",
		example: "conclave org plan --org org_… --plan pro",
		run:     orgPlan,
	},
	{
		name: "org limits",
		args: "--org ID [--concurrency N] [--monthly-quota-usd X|none] [--json] [--config FILE] " +
			"[--data-dir DIR]",
		summary: "set an organisation's calls in flight and monthly spend quota",
		example: "conclave org limits --org org_… --concurrency 20 --monthly-quota-usd 500",
		run:     orgLimits,
	},
	{
		name:    "balance add",
		args:    "--org ID --usd AMOUNT [--memo TEXT] [--json] [--config FILE] [--data-dir DIR]",
		summary: "add prepaid funds, journaled, exact to the micro-dollar",
		example: `conclave balance add --org org_… --usd 25 --memo "invoice 1042"`,
		run:     balanceAdd,
	},
	{
		name:    "balance show",
		args:    orgOnly,
		summary: "show the balance, the amount held by calls in flight, and the trial credit left",
		example: "conclave balance show --org org_… --json",
		run:     balanceShow,
	},
	{
		name: "key create",
		args: "--org ID [--test] [--name NAME] [--scopes s1,s2] [--modes m1,m2] [--rpm N] [--concurrency N] " +
			"[--max-input-tokens N] [--ceiling-usd X] [--expires-in DURATION] [--json] [--config FILE] [--data-dir DIR]",
		summary: "issue an API key; its secret is printed once and only its hash is stored",
		example: "conclave key create --org org_… --name ci --scopes models:read,estimate --rpm 120\n" +
			"CONCLAVE_DATA_DIR=~/conclave/.data conclave key create --org org_…   # from another directory",
		run: keyCreate,
	},
	{
		name:    "listing approve",
		args:    listingArgs,
		summary: "approve a mode's pending (or rejected, or delisted) listing: it is listed as lab until its certified version is published",
		example: "conclave listing approve --mode ACME:PANL",
		run:     listingReview(core.ActionApprove),
	},
	{
		name:    "listing reject",
		args:    listingArgs,
		summary: "reject a mode's pending listing; the author sees listing_rejected",
		example: "conclave listing reject --mode ACME:PANL",
		run:     listingReview(core.ActionReject),
	},
	{
		name:    "listing delist",
		args:    listingArgs,
		summary: "take an approved listing down, withdrawing its published version from other organisations",
		example: "conclave listing delist --mode acme-panl --revision 4",
		run:     listingReview(core.ActionDelist),
	},
	{
		name:    "key revoke",
		args:    "--key ID [--json] [--config FILE] [--data-dir DIR]",
		summary: "revoke a key; every replica refuses it within auth.key_cache_ttl",
		example: "conclave key revoke --key key_…",
		run:     keyRevoke,
	},
	{
		name:    "key list",
		args:    orgOnly,
		summary: "list an organisation's keys with their status, never a secret",
		example: "conclave key list --org org_…",
		run:     keyList,
	},
	{
		name:    "person create",
		args:    "--org ID|TICKER --email EMAIL [--name NAME] [--role owner|member] [--json] [--config FILE] [--data-dir DIR]",
		summary: "add a person to an organisation and print their set-up link (once; single-use; 7 days)",
		example: "conclave person create --org ACME --email ada@acme.example --role owner",
		run:     personCreate,
	},
	{
		name:    "person link",
		args:    "--email EMAIL [--json] [--config FILE] [--data-dir DIR]",
		summary: "print a new set-up link for a person who lost their passkeys and password",
		example: "conclave person link --email ada@acme.example",
		run:     personLink,
	},
	{
		name:    "audit",
		args:    "--org ID|TICKER [--since 24h|TIME] [--limit N] [--json] [--config FILE] [--data-dir DIR]",
		summary: "read an organisation's audit trail: who changed what, when, from where",
		example: "conclave audit --org ACME --since 24h",
		run:     auditList,
	},
	{
		name:    "apps list",
		args:    "--org ID [--person ID] [--json] [--config FILE] [--data-dir DIR]",
		summary: "list an organisation's connected apps (OAuth grants), active and revoked",
		example: "conclave apps list --org org_…\nconclave apps list --org org_… --person person_…",
		run:     appsList,
	},
	{
		name:    "apps revoke",
		args:    "--org ID --grant ID [--json] [--config FILE] [--data-dir DIR]",
		summary: "revoke a connected app: its refresh fails at once, its next call within 10 s",
		example: "conclave apps revoke --org org_… --grant grant_…",
		run:     appsRevoke,
	},
	{
		name: "byok set",
		args: "--org ID --provider P (--key-stdin | --key-env VAR | --role-arn ARN --external-id X) [--json] " +
			"[--config FILE] [--data-dir DIR]",
		summary: "store an organisation's own provider key or AWS role, sealed with CONCLAVE_BYOK_KEY",
		example: `printf '%s' "$ACME_OPENAI_KEY" | conclave byok set --org org_… --provider openai --key-stdin` + "\n" +
			"conclave byok set --org org_… --provider aws --role-arn arn:aws:iam::111122223333:role/conclave --external-id acme-7",
		run: byokSet,
	},
	{
		name:    "byok list",
		args:    orgOnly,
		summary: "list an organisation's own provider credentials, never a key",
		example: "conclave byok list --org org_…",
		run:     byokList,
	},
	{
		name:    "byok remove",
		args:    "--org ID --provider P [--json] [--config FILE] [--data-dir DIR]",
		summary: "remove an organisation's own credential: its calls return to the service's keys",
		example: "conclave byok remove --org org_… --provider openai",
		run:     byokRemove,
	},
	{
		name:    "jobs sweep",
		args:    "[--json] [--config FILE] [--data-dir DIR]",
		summary: "run the background jobs' work once, now: hold sweep, trial expiry, idempotency reap",
		example: "conclave jobs sweep --json",
		run:     jobsSweep,
	},
	{
		name:    "bank calibrate",
		args:    "[--baseline ENGINE] [--json] [--config FILE] [--data-dir DIR]",
		summary: "report the baseline's pass rate on the question bank per bucket and family, against the certification bands",
		example: "conclave bank calibrate\nconclave bank calibrate --baseline sonnet --json",
		run:     bankCalibrate,
	},
	{
		name:    "sim",
		args:    "[--addr HOST:PORT] [--profile quick|seed] [--time-scale X] [--seed N] [--api-key K]",
		summary: "run the simulated provider on its own (OpenAI, Anthropic, Gemini and Bedrock wire formats)",
		example: "conclave sim --addr 127.0.0.1:9090 --profile seed --time-scale 0.01",
		run:     simCmd,
	},
	{
		name:    "traces",
		args:    "[--addr HOST:PORT] [--quiet D]",
		summary: "receive OTLP/HTTP traces on loopback and print each trace as a tree (no collector needed)",
		example: "conclave traces --addr 127.0.0.1:4318       # then serve with OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318\nconclave traces --quiet 5s",
		run:     tracesCmd,
	},
	{
		name:    "plugins list",
		args:    "[--manifest FILE] [--json] [--config FILE] [--data-dir DIR]",
		summary: "show the native adapters, the manifest's plugins and the engines using each",
		example: "conclave plugins list --manifest bin/plugins/plugins.yaml",
		run:     pluginsRun(false),
	},
	{
		name:    "plugins verify",
		args:    "[--manifest FILE] [--json] [--config FILE] [--data-dir DIR]",
		summary: "load every plugin on its carrier and check every engine's reference; exit 1 on a failure",
		example: "conclave plugins verify --config conclave.yaml",
		run:     pluginsRun(true),
	},
	{
		name:    "version",
		summary: "print the version",
		example: "conclave version",
		run:     versionCmd,
	},
}

// orgOnly is the usage of a command that takes only the organisation.
const orgOnly = "--org ID [--json] [--config FILE] [--data-dir DIR]"

// usageFooter ends the list of commands.
const usageFooter = `Run 'conclave <command> --help' for a command's flags and an example.

The database is DATABASE_URL (or database.url in --config) when set; otherwise
the PostgreSQL cluster that 'conclave serve' manages in the data directory's
pg/ (--data-dir DIR or CONCLAVE_DATA_DIR; default ./.data). Only serve creates
that cluster: the other commands use the one there, running or not, or stop
with one line saying where they looked. byok set, and bring-your-own-key in
serve, need CONCLAVE_BYOK_KEY (docs/byok.md).
`

// runIO runs the command args name.
func runIO(ctx context.Context, args []string, cio cmdIO) error {
	if len(args) == 0 {
		writeUsage(cio.stdout)
		return nil
	}
	switch args[0] {
	case "help", "-h", "--help":
		return help(ctx, args[1:], cio)
	}
	c, rest := lookup(args)
	if c == nil {
		return groupUsage(args, cio.stdout)
	}
	return c.invoke(ctx, rest, cio)
}

// lookup finds the command args start with, and the arguments after its
// name.
func lookup(args []string) (*command, []string) {
	for i := range commands {
		words := strings.Fields(commands[i].name)
		if len(args) >= len(words) && slices.Equal(args[:len(words)], words) {
			return &commands[i], args[len(words):]
		}
	}
	return nil, nil
}

// invoke runs c: --help prints its help on stdout; a usage error carries
// its usage for main to print on stderr.
func (c *command) invoke(ctx context.Context, args []string, cio cmdIO) error {
	// Every change a command makes is the operator's in the audit trail.
	ctx = core.WithActor(ctx, core.Operator)
	fs := newFlags(c.name)
	err := c.run(ctx, fs, args, cio)
	if errors.Is(err, flag.ErrHelp) {
		c.writeHelp(cio.stdout, fs)
		return nil
	}
	var u usageError
	if errors.As(err, &u) && u.usage == "" {
		var b strings.Builder
		c.writeUsage(&b, fs)
		fmt.Fprintf(&b, "\nRun 'conclave %s --help' for an example.\n", c.name)
		u.usage = b.String()
		return u
	}
	return err
}

// help answers `conclave help [command]`.
func help(ctx context.Context, args []string, cio cmdIO) error {
	if len(args) == 0 {
		writeUsage(cio.stdout)
		return nil
	}
	c, rest := lookup(args)
	if c == nil || len(rest) > 0 {
		return groupUsage(append(slices.Clone(args), "--help"), cio.stdout)
	}
	return c.invoke(ctx, []string{"--help"}, cio)
}

// groupUsage answers a name that is no command: the first word of several
// (`conclave key`) lists them — on stdout after --help, with a usage error
// otherwise.
func groupUsage(args []string, stdout io.Writer) error {
	var subs []*command
	for i := range commands {
		if group, _, ok := strings.Cut(commands[i].name, " "); ok && group == args[0] {
			subs = append(subs, &commands[i])
		}
	}
	if len(subs) == 0 {
		return usagef("unknown command %q", args[0])
	}
	var list strings.Builder
	fmt.Fprintf(&list, "Commands of conclave %s:\n", args[0])
	writeCommands(&list, subs)
	fmt.Fprintf(&list, "\nRun 'conclave %s <command> --help' for a command's flags and an example.\n", args[0])
	names := make([]string, len(subs))
	for i, c := range subs {
		names[i] = strings.TrimPrefix(c.name, args[0]+" ")
	}
	want := names[0]
	if len(names) > 1 {
		want = strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
	}
	switch {
	case len(args) > 1 && (args[1] == "-h" || args[1] == "--help"):
		_, err := io.WriteString(stdout, list.String())
		return err
	case len(args) > 1:
		return usageError{msg: fmt.Sprintf("%s: unknown subcommand %q (want %s)", args[0], args[1], want), usage: list.String()}
	}
	return usageError{msg: fmt.Sprintf("%s: want %s", args[0], want), usage: list.String()}
}

// writeUsage prints conclave's usage: every command with its summary.
func writeUsage(w io.Writer) {
	fmt.Fprint(w, "conclave — a deliberation gateway.\n\nUsage:\n  conclave <command> [flags]\n\nCommands:\n")
	all := make([]*command, len(commands))
	for i := range commands {
		all[i] = &commands[i]
	}
	writeCommands(w, all)
	fmt.Fprintf(w, "  %-16s %s\n\n", "help [command]", "this text, or a command's flags and an example")
	fmt.Fprint(w, usageFooter)
}

func writeCommands(w io.Writer, cs []*command) {
	for _, c := range cs {
		fmt.Fprintf(w, "  %-16s %s\n", c.name, c.summary)
	}
}

// writeHelp prints c's help: what it does, its usage, its flags and an
// example.
func (c *command) writeHelp(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, "conclave %s — %s.\n\n", c.name, c.summary)
	c.writeUsage(w, fs)
	fmt.Fprintln(w, "\nExample:")
	for _, line := range strings.Split(c.example, "\n") {
		fmt.Fprintf(w, "  %s\n", line)
	}
}

// writeUsage prints c's usage line and its flags.
func (c *command) writeUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintln(w, "Usage:")
	fmt.Fprintln(w, wrap(strings.TrimRight("  conclave "+c.name+" "+c.args, " "), "      ", 100))
	type row struct{ left, usage string }
	var rows []row
	width := 0
	fs.VisitAll(func(f *flag.Flag) {
		left := "--" + f.Name
		if arg := flagArg(f); arg != "" {
			left += " " + arg
		}
		usage := strings.ReplaceAll(f.Usage, "`", "")
		if !isZeroDefault(f) {
			usage += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		rows = append(rows, row{left, usage})
		width = max(width, len(left))
	})
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w, "\nFlags:")
	for _, r := range rows {
		fmt.Fprintln(w, wrap(fmt.Sprintf("  %-*s  %s", width, r.left, r.usage), strings.Repeat(" ", width+4), 100))
	}
}

// flagArg is the placeholder of f's value: the word its usage quotes in
// backquotes, else its type; none for a switch.
func flagArg(f *flag.Flag) string {
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return ""
	}
	if _, rest, ok := strings.Cut(f.Usage, "`"); ok {
		if name, _, ok := strings.Cut(rest, "`"); ok {
			return name
		}
	}
	name, _ := flag.UnquoteUsage(f)
	return strings.ToUpper(name)
}

func isZeroDefault(f *flag.Flag) bool {
	switch f.DefValue {
	case "", "0", "false", "0s":
		return true
	}
	return false
}

// wrap breaks s at spaces into lines of at most width bytes, continuing
// with indent.
func wrap(s, indent string, width int) string {
	var b strings.Builder
	line := 0
	for i, word := range strings.Split(s, " ") {
		if i > 0 {
			if line+1+len(word) > width {
				b.WriteString("\n" + indent)
				line = len(indent)
			} else {
				b.WriteByte(' ')
				line++
			}
		}
		b.WriteString(word)
		line += len(word)
	}
	return b.String()
}

// versionCmd prints the version.
func versionCmd(_ context.Context, fs *flag.FlagSet, args []string, cio cmdIO) error {
	if err := parse(fs, args); err != nil {
		return err
	}
	_, err := fmt.Fprintln(cio.stdout, "conclave", version)
	return err
}
