package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/plugins/byok"
)

type byokJSON struct {
	OrgID    string `json:"org_id"`
	Provider string `json:"provider"`
	// Kind is "api_key" or "aws_role".
	Kind string `json:"kind"`
	// Hint is the last four characters of the key, or of the external id.
	Hint      string    `json:"hint"`
	KeyID     string    `json:"key_id,omitempty"`   // the sealing key's id (api_key)
	RoleARN   string    `json:"role_arn,omitempty"` // aws_role
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

func byokOut(r *core.ProviderCredential) byokJSON {
	out := byokJSON{OrgID: r.OrgID, Provider: r.Provider, Kind: "api_key", Hint: r.Hint, KeyID: r.KeyID,
		RoleARN: r.RoleARN, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	if r.Provider == core.ProviderAWS {
		out.Kind = "aws_role"
	}
	return out
}

func byokLine(r *core.ProviderCredential) string {
	if r.Provider == core.ProviderAWS {
		return fmt.Sprintf("%-9s role %s (external id …%s), updated %s", r.Provider, r.RoleARN, r.Hint, r.UpdatedAt.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("%-9s key  …%s (sealed with key %s), updated %s", r.Provider, r.Hint, r.KeyID, r.UpdatedAt.UTC().Format(time.RFC3339))
}

const providerList = "openai, anthropic, google, mistral or aws"

// maxKeyInput bounds what --key-stdin reads.
const maxKeyInput = 8 << 10

// byokSet reads the secret from stdin or the environment (--key-env), and
// the sealing key from the environment, through cio.
func byokSet(ctx context.Context, fs *flag.FlagSet, args []string, cio cmdIO) error {
	cf := addCommon(fs)
	org := fs.String("org", "", "organisation `ID` (org_…)")
	provider := fs.String("provider", "", "the provider `P`: "+providerList)
	keyStdin := fs.Bool("key-stdin", false, "read the API key from standard input")
	keyEnv := fs.String("key-env", "", "read the API key from the environment variable `VAR`")
	roleARN := fs.String("role-arn", "", "aws: the `ARN` of the role Conclave assumes in your account")
	externalID := fs.String("external-id", "", "aws: the external id `X` the role's trust policy requires")
	if err := parse(fs, args, "org", "provider"); err != nil {
		return err
	}
	if !core.ValidBYOKProvider(*provider) {
		return usagef("byok set: --provider %q is not %s", *provider, providerList)
	}
	var rec *core.ProviderCredential
	if *provider == core.ProviderAWS {
		if *keyStdin || *keyEnv != "" {
			return usagef("byok set: aws takes --role-arn and --external-id, not a key")
		}
		if err := checkRequired(fs, "role-arn", "external-id"); err != nil {
			return err
		}
		if _, err := byok.FromEnv(cio.lookupEnv); err != nil {
			return err
		}
		r, err := byok.NewRoleCredential(*org, *roleARN, *externalID)
		if err != nil {
			return usagef("byok set: %v", err)
		}
		rec = r
	} else {
		if *roleARN != "" || *externalID != "" {
			return usagef("byok set: --role-arn and --external-id are for aws; %s takes a key", *provider)
		}
		if *keyStdin == (*keyEnv != "") {
			return usagef("byok set: give the key with exactly one of --key-stdin or --key-env VAR (never on the command line)")
		}
		// Refuse before reading the secret when it could not be sealed.
		sealer, err := byok.FromEnv(cio.lookupEnv)
		if err != nil {
			return err
		}
		key, err := readKey(cio, *keyStdin, *keyEnv)
		if err != nil {
			return err
		}
		r, err := byok.NewKeyCredential(sealer, *org, *provider, key)
		if err != nil {
			return usagef("byok set: %v", err)
		}
		rec = r
	}
	return withStore(ctx, cf, func(s *pgstore.Store) error {
		out, err := s.SetProviderCredential(ctx, rec)
		if err != nil {
			return notFound(err, "organisation", *org)
		}
		what := fmt.Sprintf("key …%s", out.Hint)
		if out.Provider == core.ProviderAWS {
			what = "role " + out.RoleARN
		}
		return emit(cio.stdout, *cf.json, byokOut(out), fmt.Sprintf("Stored %s's own %s %s. Its seat calls to %s engines run on it within 30 seconds.", out.OrgID, out.Provider, what, out.Provider))
	})
}

func byokList(ctx context.Context, fs *flag.FlagSet, args []string, cio cmdIO) error {
	cf := addCommon(fs)
	org := fs.String("org", "", "organisation `ID` (org_…)")
	if err := parse(fs, args, "org"); err != nil {
		return err
	}
	return withOrgStore(ctx, cf, *org, func(s *pgstore.Store) error {
		recs, err := s.ListProviderCredentials(ctx, *org)
		if err != nil {
			return err
		}
		out := struct {
			OrgID       string     `json:"org_id"`
			Credentials []byokJSON `json:"credentials"`
		}{OrgID: *org, Credentials: []byokJSON{}}
		lines := []string{}
		for _, r := range recs {
			out.Credentials = append(out.Credentials, byokOut(r))
			lines = append(lines, byokLine(r))
		}
		if len(lines) == 0 {
			lines = append(lines, fmt.Sprintf("Organisation %s has no credentials of its own: its calls run on the service's keys.", *org))
		}
		return emit(cio.stdout, *cf.json, out, strings.Join(lines, "\n"))
	})
}

func byokRemove(ctx context.Context, fs *flag.FlagSet, args []string, cio cmdIO) error {
	cf := addCommon(fs)
	org := fs.String("org", "", "organisation `ID` (org_…)")
	provider := fs.String("provider", "", "the provider `P`: "+providerList)
	if err := parse(fs, args, "org", "provider"); err != nil {
		return err
	}
	if !core.ValidBYOKProvider(*provider) {
		return usagef("byok remove: --provider %q is not %s", *provider, providerList)
	}
	return withOrgStore(ctx, cf, *org, func(s *pgstore.Store) error {
		if err := s.RemoveProviderCredential(ctx, *org, *provider); err != nil {
			if errors.Is(err, core.ErrNotFound) {
				return fmt.Errorf("organisation %s has no %s credential", *org, *provider)
			}
			return err
		}
		out := map[string]any{"org_id": *org, "provider": *provider, "removed": true}
		return emit(cio.stdout, *cf.json, out, fmt.Sprintf("Removed %s's own %s credential. Its calls run on the service's keys within 30 seconds.", *org, *provider))
	})
}

// readKey reads the API key from stdin or from the named variable, trimmed
// of surrounding white space.
func readKey(in cmdIO, fromStdin bool, env string) (string, error) {
	if fromStdin {
		if in.stdin == nil {
			return "", errors.New("byok set: no standard input to read the key from")
		}
		b, err := io.ReadAll(io.LimitReader(in.stdin, maxKeyInput+1))
		if err != nil {
			return "", fmt.Errorf("byok set: reading the key from standard input: %w", err)
		}
		if len(b) > maxKeyInput {
			return "", usagef("byok set: standard input holds more than %d bytes; pipe in the key alone", maxKeyInput)
		}
		key := strings.TrimSpace(string(b))
		if key == "" {
			return "", usagef("byok set: standard input held no key")
		}
		return key, nil
	}
	v, _ := in.lookupEnv(env)
	key := strings.TrimSpace(v)
	if key == "" {
		return "", usagef("byok set: the environment variable %s named by --key-env is unset or empty", env)
	}
	return key, nil
}

// byokResolver is serve's bring-your-own-key: on when CONCLAVE_BYOK_KEY is
// set, off (nil, with a log line) when it is not. A key that does not
// decode stops the server rather than quietly bill organisations' calls at
// the service's rate. lookupEnv defaults to os.LookupEnv.
func byokResolver(ctx context.Context, s core.ProviderCredentials, log *slog.Logger,
	lookupEnv func(string) (string, bool)) (*byok.Resolver, error) {
	sealer, err := byok.FromEnv(lookupEnv)
	if errors.Is(err, byok.ErrNoKey) {
		if stored, qerr := s.AnyProviderCredentials(ctx); qerr == nil && stored {
			log.Warn("bring-your-own-key is off: " + byok.EnvKey + " is not set, so organisations' stored credentials are not used and every call runs on the service's keys")
		} else {
			log.Info("bring-your-own-key is off: " + byok.EnvKey + " is not set")
		}
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	log.Info("bring-your-own-key is on", slog.String("sealing_key_id", sealer.KeyID()))
	return byok.NewResolver(byok.ResolverConfig{Store: s, Sealer: sealer})
}
