package sim

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
)

// The account a server describes works against that server: its base
// credentials sign an AssumeRole of its role at its STS endpoint.
func TestAWSAccountAssumesItsRole(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{TimeScale: 0.01})
	acct := b.srv.AWSAccount()
	client := sts.New(sts.Options{
		Region:       acct.Region,
		BaseEndpoint: aws.String(acct.STSEndpoint),
		Credentials:  credentials.NewStaticCredentialsProvider(acct.AccessKeyID, acct.SecretAccessKey, ""),
		HTTPClient:   b.client,
	})
	out, err := client.AssumeRole(t.Context(), &sts.AssumeRoleInput{RoleArn: aws.String(acct.RoleARN), RoleSessionName: aws.String("conclave")})
	require.NoError(t, err)
	require.Equal(t, "arn:aws:sts::000000000000:assumed-role/conclave-sim/conclave", *out.AssumedRoleUser.Arn)
}

func TestWireEngine(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{TimeScale: 0.01})
	acct := b.srv.AWSAccount()

	openai := core.Engine{ID: "sim/atlas", Adapter: "openai", Endpoint: "sim"}
	b.srv.WireEngine(&openai)
	require.Equal(t, core.Engine{ID: "sim/atlas", Adapter: "openai", Endpoint: b.srv.Endpoint("openai")}, openai,
		"an API-key engine gets its endpoint and nothing else")

	bedrock := core.Engine{ID: "sim/titan", Adapter: "bedrock", Endpoint: "sim"}
	b.srv.WireEngine(&bedrock)
	require.Equal(t, b.srv.Endpoint("bedrock"), bedrock.Endpoint)
	require.Equal(t, acct.STSEndpoint, bedrock.STSEndpoint)
	require.Equal(t, acct.Region, bedrock.AWSRegion)
	require.Equal(t, acct.RoleARN, bedrock.AWSRoleARN)

	own := core.Engine{ID: "sim/titan", Adapter: "bedrock", Endpoint: "sim",
		AWSRegion: "eu-west-1", AWSRoleARN: "arn:aws:iam::123456789012:role/seat"}
	b.srv.WireEngine(&own)
	require.Equal(t, "eu-west-1", own.AWSRegion, "a configured region is kept")
	require.Equal(t, "arn:aws:iam::123456789012:role/seat", own.AWSRoleARN, "a configured role is kept")
	require.Equal(t, acct.STSEndpoint, own.STSEndpoint)
}
