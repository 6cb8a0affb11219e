-- Bring-your-own-key: an organisation's own provider credentials, used for
-- its seat calls instead of the service's (internal/byok, docs/byok.md).
--
-- An API key (openai, anthropic, google, mistral) is stored sealed only:
-- sealed is AES-256-GCM nonce || ciphertext || tag, under the sealing key
-- that key_id names (CONCLAVE_BYOK_KEY, or an earlier one during a
-- rotation), with the organisation and provider as additional data, so a
-- sealed key copied to another row does not open. The aws row holds a
-- cross-account role the service assumes per request; nothing long-lived is
-- stored for it. hint is the last four characters of the key, or of the
-- external id, for the owner to recognise it.
CREATE TABLE byok_credentials (
    org_id      text NOT NULL REFERENCES orgs (id),
    provider    text NOT NULL CHECK (provider IN ('openai', 'anthropic', 'google', 'mistral', 'aws')),
    sealed      bytea CHECK (length(sealed) >= 28),
    key_id      text CHECK (key_id ~ '^[0-9a-f]{16}$'),
    role_arn    text CHECK (role_arn LIKE 'arn:aws%:iam::%:role/%'),
    external_id text CHECK (length(external_id) BETWEEN 2 AND 1224),
    hint        text NOT NULL CHECK (length(hint) <= 4),
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, provider),
    CONSTRAINT byok_credential_shape CHECK (
        CASE WHEN provider = 'aws'
            THEN sealed IS NULL AND key_id IS NULL AND role_arn IS NOT NULL AND external_id IS NOT NULL
            ELSE sealed IS NOT NULL AND key_id IS NOT NULL AND role_arn IS NULL AND external_id IS NULL
        END)
);
