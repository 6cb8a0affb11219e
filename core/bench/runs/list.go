package runs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
)

// ListStore is what the run pages read besides one batch: an
// organisation's batches, and the publication of certificates. It is part
// of the Service's LaunchStore (internal/pgstore.Batches); none of it is on
// a billed call's path.
type ListStore interface {
	// ListBatches reads up to limit of orgID's batches, newest first, with
	// their progress and certification but without their plan, quote,
	// result or per-bucket progress.
	ListBatches(ctx context.Context, orgID string, limit int) ([]*Batch, error)
	// CertificatePublicID is the public id of one of orgID's
	// certifications: "" while it is not published; core.ErrNotFound for
	// another organisation's batch, or none.
	CertificatePublicID(ctx context.Context, orgID, batchID string) (string, error)
	// PublishCertificate publishes one of orgID's complete certifications
	// under publicID, or unpublishes it with publicID "", audited in the
	// same statement; a batch that is not one is core.ErrNotFound.
	PublishCertificate(ctx context.Context, orgID, batchID, publicID string) error
	// PublishedCertificate reads the batch published under publicID;
	// core.ErrNotFound when none is.
	PublishedCertificate(ctx context.Context, publicID string) (*Batch, error)
}

// ListLimit is how many batches List returns: the newest.
const ListLimit = 100

// Certificate is a complete certification whose verdict is certified, as
// its certificate shows it; PublicID is the id of its public address, ""
// while it is not published.
type Certificate struct {
	Batch    *Batch
	PublicID string
}

// List reads p's organisation's newest test runs and certifications
// (ListLimit of them), newest first, as the policy lets p read them: test
// runs with tests.read, certifications with certify.read; without
// tests.read, the policy's refusal.
func (s *Service) List(ctx context.Context, p *access.Principal) ([]*Batch, error) {
	if err := s.d.Access.Authorize(ctx, p, core.ActionTestsRead, nil, ""); err != nil {
		return nil, err
	}
	certify := s.d.Access.Authorize(ctx, p, core.ActionCertifyRead, nil, "") == nil
	all, err := s.d.Store.ListBatches(ctx, p.Org.ID, ListLimit)
	if err != nil {
		return nil, core.Errorf(core.CodeServiceUnavailable, "The runs could not be read. Retry shortly.").WithCause(err)
	}
	out := all[:0]
	for _, b := range all {
		if b.Kind == KindTest || certify {
			out = append(out, b)
		}
	}
	return out, nil
}

// Certified reports whether b is a complete certification whose verdict is
// certified: one with a certificate.
func (b *Batch) Certified() bool {
	return b.Kind == KindCertify && b.Status == StatusComplete && b.Certification != nil &&
		b.Certification.Verdict == CertCertified
}

// Certificate reads the certificate of one of p's organisation's
// certifications: the refusals of Batch, and batch_not_found for a
// certification that is not complete and certified.
func (s *Service) Certificate(ctx context.Context, p *access.Principal, id string) (*Certificate, error) {
	b, err := s.Batch(ctx, p, KindCertify, id)
	if err != nil {
		return nil, err
	}
	if !b.Certified() {
		return nil, core.Errorf(core.CodeBatchNotFound, "Certification %q has no certificate: it is not complete with the verdict certified.", id).WithParam("batch_id")
	}
	public, err := s.d.Store.CertificatePublicID(ctx, p.Org.ID, id)
	if err != nil {
		return nil, core.Errorf(core.CodeServiceUnavailable, "The certificate could not be read. Retry shortly.").WithCause(err)
	}
	return &Certificate{Batch: b, PublicID: public}, nil
}

// PublishCertificate publishes the certificate of one of p's
// organisation's certifications at a public address (publish), under a
// new random id, or unpublishes it, after which its address answers
// nothing. It is an owner's change of the organisation's settings
// (org.settings), audited as one. Publishing one published already keeps
// its address.
func (s *Service) PublishCertificate(ctx context.Context, p *access.Principal, id string, publish bool) (*Certificate, error) {
	if err := s.d.Access.Authorize(ctx, p, core.ActionOrgSettings, nil, ""); err != nil {
		return nil, err
	}
	c, err := s.Certificate(ctx, p, id)
	if err != nil {
		return nil, err
	}
	if publish == (c.PublicID != "") {
		return c, nil
	}
	public := ""
	if publish {
		public = newPublicID()
	}
	switch err := s.d.Store.PublishCertificate(ctx, p.Org.ID, id, public); {
	case errors.Is(err, core.ErrNotFound):
		return nil, core.Errorf(core.CodeBatchNotFound, "Certification %q has no certificate.", id).WithParam("batch_id")
	case err != nil:
		return nil, core.Errorf(core.CodeServiceUnavailable, "The certificate's publication could not be changed; nothing changed. Retry shortly.").WithCause(err)
	}
	c.PublicID = public
	return c, nil
}

// PublicCertificate reads the certificate published under publicID, for
// anyone: core.ErrNotFound when none is (never published, unpublished, or
// a malformed id).
func (s *Service) PublicCertificate(ctx context.Context, publicID string) (*Batch, error) {
	if !validPublicID(publicID) {
		return nil, core.ErrNotFound
	}
	b, err := s.d.Store.PublishedCertificate(ctx, publicID)
	if err != nil {
		return nil, err
	}
	if !b.Certified() {
		return nil, core.ErrNotFound
	}
	return b, nil
}

// publicIDBytes is the randomness of a public id: 128 bits, unguessable.
const publicIDBytes = 16

// newPublicID is a random public id: 32 lowercase hex digits.
func newPublicID() string {
	var b [publicIDBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("crypto/rand failed: " + err.Error())
	}
	return hex.EncodeToString(b[:])
}

// validPublicID reports whether s has a public id's shape.
func validPublicID(s string) bool {
	if len(s) != 2*publicIDBytes {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
