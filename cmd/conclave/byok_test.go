package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/plugins/byok"
)

// byokRun runs `conclave byok …` with stdin and an environment of its own.
func (b *adminBundle) byokRun(t *testing.T, stdin string, env map[string]string, args ...string) (map[string]any, string, error) {
	t.Helper()
	var out bytes.Buffer
	cio := cmdIO{stdout: &out, stderr: io.Discard, stdin: strings.NewReader(stdin),
		lookupEnv: func(n string) (string, bool) { v, ok := env[n]; return v, ok }}
	err := runIO(context.Background(), append(append([]string{"byok"}, args...), "--config", b.cfgPath, "--json"), cio)
	if err != nil {
		return nil, out.String(), err
	}
	var v map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &v), "output: %s", out.String())
	return v, out.String(), nil
}

// failingReader fails the test if the secret is read when it must not be.
type failingReader struct{ t *testing.T }

func (f failingReader) Read([]byte) (int, error) {
	f.t.Error("standard input was read")
	return 0, errors.New("not to be read")
}

func TestBYOKCommands(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	ctx := context.Background()
	orgID := b.mustRun(t, "org", "create", "--name", "Acme Research", "--ticker", "ACME")["org_id"].(string)
	sealKey := make([]byte, 32)
	_, _ = rand.Read(sealKey)
	env := map[string]string{byok.EnvKey: base64.StdEncoding.EncodeToString(sealKey)}
	const key = "sk-proj-acme-0123456789abcdefghij-WXYZ"

	// Without the sealing key, set refuses in one line, before reading the key.
	var out bytes.Buffer
	err := runIO(ctx, []string{"byok", "set", "--org", orgID, "--provider", "openai", "--key-stdin", "--config", b.cfgPath},
		cmdIO{stdout: &out, stderr: io.Discard, stdin: failingReader{t}, lookupEnv: func(string) (string, bool) { return "", false }})
	require.ErrorIs(t, err, byok.ErrNoKey)
	require.NotContains(t, err.Error(), "\n")
	require.Contains(t, err.Error(), "CONCLAVE_BYOK_KEY is not set")
	_, _, err = b.byokRun(t, "", nil, "set", "--org", orgID, "--provider", "aws", "--role-arn", "arn:aws:iam::111122223333:role/acme", "--external-id", "acme-ext")
	require.ErrorIs(t, err, byok.ErrNoKey)

	v, raw, err := b.byokRun(t, key+"\n", env, "set", "--org", orgID, "--provider", "openai", "--key-stdin")
	require.NoError(t, err)
	require.NotContains(t, raw, "0123456789abcdefghij", "the key is never printed")
	require.Equal(t, "openai", v["provider"])
	require.Equal(t, "api_key", v["kind"])
	require.Equal(t, "WXYZ", v["hint"])
	require.Equal(t, byok.KeyID(sealKey), v["key_id"])

	stored, err := b.store.LookupProviderCredential(ctx, orgID, "openai")
	require.NoError(t, err)
	require.False(t, bytes.Contains(stored.Sealed, []byte(key)), "stored sealed")
	sealer, err := byok.NewSealer(sealKey)
	require.NoError(t, err)
	plain, err := sealer.Open(orgID, "openai", stored.KeyID, stored.Sealed)
	require.NoError(t, err)
	require.Equal(t, key, string(plain), "trimmed of the newline")

	env["MISTRAL_KEY_FOR_ACME"] = "mistral-acme-0123456789abcdef-M1S7"
	v, _, err = b.byokRun(t, "", env, "set", "--org", orgID, "--provider", "mistral", "--key-env", "MISTRAL_KEY_FOR_ACME")
	require.NoError(t, err)
	require.Equal(t, "M1S7", v["hint"])

	v, _, err = b.byokRun(t, "", env, "set", "--org", orgID, "--provider", "aws",
		"--role-arn", "arn:aws:iam::111122223333:role/acme-bedrock", "--external-id", "acme-ext-7f3a")
	require.NoError(t, err)
	require.Equal(t, "aws_role", v["kind"])
	require.Equal(t, "arn:aws:iam::111122223333:role/acme-bedrock", v["role_arn"])
	require.Equal(t, "7f3a", v["hint"])
	require.NotContains(t, v, "key_id")

	list, raw, err := b.byokRun(t, "", nil, "list", "--org", orgID)
	require.NoError(t, err, "list needs no sealing key")
	require.NotContains(t, raw, "0123456789abcdef")
	require.NotContains(t, raw, "acme-ext-7f3a", "nor the whole external id")
	creds := list["credentials"].([]any)
	require.Len(t, creds, 3)
	var providers []string
	for _, c := range creds {
		providers = append(providers, c.(map[string]any)["provider"].(string))
	}
	require.Equal(t, []string{"openai", "mistral", "aws"}, providers)

	// The human listing.
	out.Reset()
	require.NoError(t, run(ctx, []string{"byok", "list", "--org", orgID, "--config", b.cfgPath}, &out, &out))
	require.Contains(t, out.String(), "openai    key  …WXYZ")
	require.Contains(t, out.String(), "aws       role arn:aws:iam::111122223333:role/acme-bedrock (external id …7f3a)")

	v, _, err = b.byokRun(t, "", nil, "remove", "--org", orgID, "--provider", "mistral")
	require.NoError(t, err)
	require.Equal(t, true, v["removed"])
	_, _, err = b.byokRun(t, "", nil, "remove", "--org", orgID, "--provider", "mistral")
	require.ErrorContains(t, err, "has no mistral credential")
	_, err = b.store.LookupProviderCredential(ctx, orgID, "mistral")
	require.ErrorIs(t, err, core.ErrNotFound)
}

func TestBYOKCommandErrors(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	sealKey := make([]byte, 32)
	_, _ = rand.Read(sealKey)
	env := map[string]string{byok.EnvKey: base64.StdEncoding.EncodeToString(sealKey)}
	const key = "sk-proj-0123456789abcdefghij"
	cases := []struct {
		stdin string
		args  []string
		want  string
		usage bool
	}{
		{"", []string{"set", "--provider", "openai", "--key-stdin"}, "--org is required", true},
		{"", []string{"set", "--org", "o", "--provider", "cohere", "--key-stdin"}, `--provider "cohere" is not openai, anthropic, google, mistral or aws`, true},
		{key, []string{"set", "--org", "o", "--provider", "openai"}, "exactly one of --key-stdin or --key-env", true},
		{key, []string{"set", "--org", "o", "--provider", "openai", "--key-stdin", "--key-env", "X"}, "exactly one of --key-stdin or --key-env", true},
		{"", []string{"set", "--org", "o", "--provider", "openai", "--key", key}, "flag provided but not defined: -key", true},
		{"", []string{"set", "--org", "o", "--provider", "openai", "--key-stdin"}, "standard input held no key", true},
		{"short", []string{"set", "--org", "o", "--provider", "openai", "--key-stdin"}, "a provider key has 16 to 1024", true},
		{"", []string{"set", "--org", "o", "--provider", "openai", "--key-env", "UNSET_VAR"}, "UNSET_VAR named by --key-env is unset", true},
		{key, []string{"set", "--org", "o", "--provider", "openai", "--key-stdin", "--role-arn", "arn:aws:iam::111122223333:role/x"}, "are for aws", true},
		{"", []string{"set", "--org", "o", "--provider", "aws", "--role-arn", "arn:aws:iam::111122223333:role/x"}, "--external-id is required", true},
		{"", []string{"set", "--org", "o", "--provider", "aws", "--role-arn", "arn:aws:iam::1:role/x", "--external-id", "ext-1"}, "not an IAM role ARN", true},
		{"", []string{"set", "--org", "o", "--provider", "aws", "--key-stdin"}, "not a key", true},
		{key, []string{"set", "--org", "org_missing", "--provider", "openai", "--key-stdin"}, `no organisation with id "org_missing"`, false},
		{"", []string{"list", "--org", "org_missing"}, `no organisation with id "org_missing"`, false},
		{"", []string{"remove", "--org", "org_missing", "--provider", "openai"}, `no organisation with id "org_missing"`, false},
		{"", []string{"remove", "--org", "o", "--provider", "x"}, `--provider "x" is not`, true},
		{"", []string{"rotate"}, `byok: unknown subcommand "rotate"`, true},
	}
	for _, tc := range cases {
		_, _, err := b.byokRun(t, tc.stdin, env, tc.args...)
		require.ErrorContains(t, err, tc.want, "args %v", tc.args)
		require.NotContains(t, err.Error(), "0123456789abcdefghij", "args %v: an error repeats the key", tc.args)
		var u usageError
		require.Equal(t, tc.usage, errors.As(err, &u), "usage error for %v: %v", tc.args, err)
	}
	var out bytes.Buffer
	err := run(context.Background(), []string{"byok"}, &out, &out)
	require.ErrorContains(t, err, "byok: want set, list or remove")
}

// serve runs without bring-your-own-key when the sealing key is unset, and
// says so louder when organisations have stored credentials it cannot use;
// a key that does not decode stops it.
func TestServeBYOKSwitch(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	ctx := context.Background()
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	none := func(string) (string, bool) { return "", false }

	r, err := byokResolver(ctx, b.store, log, none)
	require.NoError(t, err)
	require.Nil(t, r)
	require.Contains(t, logs.String(), "level=INFO msg=\"bring-your-own-key is off: CONCLAVE_BYOK_KEY is not set\"")

	sealKey := make([]byte, 32)
	_, _ = rand.Read(sealKey)
	env := map[string]string{byok.EnvKey: base64.StdEncoding.EncodeToString(sealKey)}
	lookup := func(n string) (string, bool) { v, ok := env[n]; return v, ok }
	orgID := b.mustRun(t, "org", "create", "--name", "Acme Research")["org_id"].(string)
	_, _, err = b.byokRun(t, "sk-proj-0123456789abcdefghij", env, "set", "--org", orgID, "--provider", "openai", "--key-stdin")
	require.NoError(t, err)

	logs.Reset()
	r, err = byokResolver(ctx, b.store, log, none)
	require.NoError(t, err)
	require.Nil(t, r)
	require.Contains(t, logs.String(), "level=WARN")
	require.Contains(t, logs.String(), "stored credentials are not used")

	r, err = byokResolver(ctx, b.store, log, lookup)
	require.NoError(t, err)
	require.NotNil(t, r)
	require.Contains(t, logs.String(), "bring-your-own-key is on")
	c, err := (&byok.Credentials{Resolver: r}).Credential(ctx, &core.CredentialRequest{
		Engine: &core.Engine{ID: "openai/gpt", Family: "openai"}, Scheme: core.AuthBearer, OrgID: orgID})
	require.NoError(t, err)
	require.Equal(t, "sk-proj-0123456789abcdefghij", c.Secret, "the server opens what byok set sealed")
	require.NotContains(t, logs.String(), "0123456789abcdefghij")

	env[byok.EnvKey] = "not-a-key"
	_, err = byokResolver(ctx, b.store, log, lookup)
	require.ErrorContains(t, err, byok.EnvKey)
}
