package sim

import "github.com/conclavehq/conclave/core"

// AWSAccount is the simulator's AWS side as a service that points a Bedrock
// engine at it must see it. It lives here, beside the simulator, so that
// the production wiring (plugins/providers) holds none of a test double's
// secrets: it asks the running Server.
type AWSAccount struct {
	// Region is the region a simulated Bedrock engine signs for when its
	// configuration names none.
	Region string
	// RoleARN is the role the service assumes when a simulated Bedrock
	// engine names none. The simulator's STS lets any caller assume any
	// well-formed role that demands no external id.
	RoleARN string
	// STSEndpoint is the base URL of the simulator's AssumeRole endpoint.
	STSEndpoint string
	// AccessKeyID and SecretAccessKey are the long-lived base credentials
	// the service signs AssumeRole with. The simulator's STS does not check
	// that signature, so they identify the caller and open nothing; no real
	// AWS account has them.
	AccessKeyID     string
	SecretAccessKey string
}

// The simulated account's fixed values.
const (
	simRegion          = "us-east-1"
	simRoleARN         = "arn:aws:iam::000000000000:role/conclave-sim"
	simAccessKeyID     = "AKIASIMULATED0000000"
	simSecretAccessKey = "simulated-base-secret"
)

// AWSAccount describes the simulated AWS account this server serves.
func (s *Server) AWSAccount() AWSAccount {
	return AWSAccount{
		Region:          simRegion,
		RoleARN:         simRoleARN,
		STSEndpoint:     s.Endpoint("sts"),
		AccessKeyID:     simAccessKeyID,
		SecretAccessKey: simSecretAccessKey,
	}
}

// WireEngine points e, an engine configured to run on the simulator, at
// this server: its endpoint is the one for e.Adapter, and a Bedrock engine
// also gets the STS endpoint and, where its configuration names none, the
// simulated account's region and role.
func (s *Server) WireEngine(e *core.Engine) {
	e.Endpoint = s.Endpoint(e.Adapter)
	if e.Adapter != "bedrock" {
		return
	}
	acct := s.AWSAccount()
	if e.AWSRegion == "" {
		e.AWSRegion = acct.Region
	}
	if e.AWSRoleARN == "" {
		e.AWSRoleARN = acct.RoleARN
	}
	e.STSEndpoint = acct.STSEndpoint
}
