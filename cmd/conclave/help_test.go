package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// runBinary runs the built conclave in dir with env added to this
// process's environment, and returns what it printed and its exit code.
func runBinary(t testing.TB, dir string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return out.String(), errOut.String(), exit.ExitCode()
	}
	require.NoError(t, err)
	return out.String(), errOut.String(), 0
}

var (
	flagInUsageRe = regexp.MustCompile(`--([a-z][a-z-]*)`)
	flagLineRe    = regexp.MustCompile(`(?m)^  --([a-z][a-z-]*)`)
)

// section is the text of a help output from the line after heading to the
// next blank line.
func section(t *testing.T, help, heading string) string {
	t.Helper()
	_, rest, ok := strings.Cut(help, "\n"+heading+"\n")
	if !ok && strings.HasPrefix(help, heading+"\n") {
		rest, ok = strings.TrimPrefix(help, heading+"\n"), true
	}
	require.True(t, ok, "no %q section in:\n%s", heading, help)
	body, _, _ := strings.Cut(rest, "\n\n")
	return strings.TrimRight(body, "\n")
}

func names(re *regexp.Regexp, s string) []string {
	var out []string
	for _, m := range re.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Every command the CLI dispatches on answers -h and --help with its usage,
// its flags and an example, on stdout and with exit status 0; its usage
// line names exactly the flags it takes. The table is the one run looks
// commands up in, so a command added without help fails here.
func TestEveryCommandHasHelp(t *testing.T) {
	t.Parallel()
	for _, c := range commands {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			words := strings.Fields(c.name)
			help, stderr, code := runBinary(t, t.TempDir(), nil, append(slices.Clone(words), "--help")...)
			require.Zero(t, code, "stderr: %s", stderr)
			require.Empty(t, stderr)
			require.True(t, strings.HasPrefix(help, "conclave "+c.name+" — "), "it starts with what the command does:\n%s", help)

			usage := section(t, help, "Usage:")
			require.True(t, strings.HasPrefix(usage, "  conclave "+c.name), usage)
			example := section(t, help, "Example:")
			for _, line := range strings.Split(example, "\n") {
				require.Contains(t, line, "conclave "+c.name, "every example runs the command")
			}
			var flags []string
			if strings.Contains(help, "\nFlags:\n") {
				flags = names(flagLineRe, section(t, help, "Flags:"))
			}
			require.Equal(t, flags, names(flagInUsageRe, usage), "the usage line names the flags the command defines")

			short, _, code := runBinary(t, t.TempDir(), nil, append(slices.Clone(words), "-h")...)
			require.Zero(t, code)
			require.Equal(t, help, short)
			viaHelp, _, code := runBinary(t, t.TempDir(), nil, append([]string{"help"}, words...)...)
			require.Zero(t, code)
			require.Equal(t, help, viaHelp)

			// A flag it does not take is a usage error: exit 2, the usage
			// on stderr, nothing on stdout.
			out, stderr, code := runBinary(t, t.TempDir(), nil, append(slices.Clone(words), "--no-such-flag")...)
			require.Equal(t, 2, code)
			require.Empty(t, out)
			require.Contains(t, stderr, "flag provided but not defined: -no-such-flag")
			require.Contains(t, stderr, "Usage:\n"+usage+"\n")
		})
	}
}

// `conclave --help` lists every command; the first word of several lists
// its commands.
func TestHelpListsEveryCommand(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {}} {
		out, stderr, code := runBinary(t, t.TempDir(), nil, args...)
		require.Zero(t, code, "args %v", args)
		require.Empty(t, stderr)
		for _, c := range commands {
			require.Contains(t, out, "\n  "+c.name+" ", "args %v", args)
		}
		require.Contains(t, out, "--data-dir DIR or CONCLAVE_DATA_DIR")
	}

	out, _, code := runBinary(t, t.TempDir(), nil, "key", "--help")
	require.Zero(t, code)
	require.Contains(t, out, "  key create ")
	require.Contains(t, out, "  key list ")
	require.NotContains(t, out, "org create")

	out, stderr, code := runBinary(t, t.TempDir(), nil, "key")
	require.Equal(t, 2, code)
	require.Empty(t, out)
	require.Contains(t, stderr, "conclave: key: want create, revoke or list\n")
	require.Contains(t, stderr, "  key revoke ")

	_, stderr, code = runBinary(t, t.TempDir(), nil, "frobnicate")
	require.Equal(t, 2, code)
	require.Contains(t, stderr, `unknown command "frobnicate"`)
}
