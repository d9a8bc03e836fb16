package digest_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/jcs"
)

// SHA-256 of the two bytes "{}", the canonical form of every empty object.
const emptyObjectSHA256 = "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"

// CT-1: jcs-sha256-v1 is lowercase hex SHA-256 over the JCS bytes.
func TestJCSSHA256V1(t *testing.T) {
	t.Parallel()
	d, err := digest.OfCanonical(digest.JCSSHA256V1, []byte("{}"))
	require.NoError(t, err)
	require.Equal(t, digest.Digest{Algorithm: digest.JCSSHA256V1, Value: emptyObjectSHA256}, d)
	require.Equal(t, "jcs-sha256-v1:"+emptyObjectSHA256, d.String())

	viaJSON, err := digest.OfJSON(digest.JCSSHA256V1, []byte(" {\n} "))
	require.NoError(t, err)
	require.Equal(t, d, viaJSON)
	viaTree, err := digest.Of(digest.JCSSHA256V1, map[string]any{})
	require.NoError(t, err)
	require.Equal(t, d, viaTree)

	// Member order and number spelling never change the digest.
	a, err := digest.OfJSON(digest.JCSSHA256V1, []byte(`{"b":1E2,"a":"\u00e9"}`))
	require.NoError(t, err)
	b, err := digest.Of(digest.JCSSHA256V1, map[string]any{"a": "é", "b": 100})
	require.NoError(t, err)
	require.Equal(t, a, b)
	require.NoError(t, a.Validate())
}

// CT-2, CT-6: the algorithm registry is closed; there is no fallback.
func TestParseAlgorithm(t *testing.T) {
	t.Parallel()
	alg, err := digest.ParseAlgorithm("jcs-sha256-v1")
	require.NoError(t, err)
	require.Equal(t, digest.JCSSHA256V1, alg)

	_, err = digest.ParseAlgorithm("")
	require.ErrorIs(t, err, digest.ErrMissingAlgorithm)
	for _, unknown := range []string{"jcs-sha256-v2", "JCS-SHA256-V1", "jcs-sha256-v1 ", "sha256", "jcs-sha512-v1", "jcs-sha256"} {
		_, err := digest.ParseAlgorithm(unknown)
		require.ErrorIs(t, err, digest.ErrUnknownAlgorithm, unknown)
	}
}

// CT-3: a digest is never valid without its algorithm version, and its value has one exact form.
func TestValidate(t *testing.T) {
	t.Parallel()
	require.ErrorIs(t, digest.Digest{}.Validate(), digest.ErrMissingAlgorithm, "zero value")
	require.ErrorIs(t, digest.Digest{Value: emptyObjectSHA256}.Validate(), digest.ErrMissingAlgorithm, "bare digest")
	require.ErrorIs(t, digest.Digest{Algorithm: "jcs-sha256-v9", Value: emptyObjectSHA256}.Validate(), digest.ErrUnknownAlgorithm)

	for name, value := range map[string]string{
		"empty":             "",
		"63 chars":          emptyObjectSHA256[:63],
		"65 chars":          emptyObjectSHA256 + "0",
		"uppercase":         strings.ToUpper(emptyObjectSHA256),
		"non-hex":           "g" + emptyObjectSHA256[1:],
		"prefixed":          "sha256:" + emptyObjectSHA256[7:],
		"base64":            "RBNvo1WzZ4oRRq0W9+hknpT7T8If536DEMBg9hyq/4o=",
		"surrounding space": " " + emptyObjectSHA256[1:],
	} {
		err := digest.Digest{Algorithm: digest.JCSSHA256V1, Value: value}.Validate()
		require.ErrorIs(t, err, digest.ErrMalformedDigest, name)
	}
	require.ErrorIs(t, digest.ValidateValue("nope", emptyObjectSHA256), digest.ErrUnknownAlgorithm)
}

func TestUnknownAlgorithmEverywhere(t *testing.T) {
	t.Parallel()
	_, err := digest.OfCanonical("md5", []byte("{}"))
	require.ErrorIs(t, err, digest.ErrUnknownAlgorithm)
	_, err = digest.Of("md5", map[string]any{})
	require.ErrorIs(t, err, digest.ErrUnknownAlgorithm)
	_, err = digest.OfJSON("", []byte("{}"))
	require.ErrorIs(t, err, digest.ErrMissingAlgorithm)
	_, err = digest.OfCanonical("", []byte("{}"))
	require.ErrorIs(t, err, digest.ErrMissingAlgorithm)
	require.ErrorIs(t, digest.ValidateValue("", emptyObjectSHA256), digest.ErrMissingAlgorithm)
}

func TestDigestRejectsInvalidDocuments(t *testing.T) {
	t.Parallel()
	_, err := digest.OfJSON(digest.JCSSHA256V1, []byte(`{"a":1,"a":2}`))
	require.ErrorIs(t, err, jcs.ErrDuplicateKey)
	var perr *jcs.ParseError
	require.ErrorAs(t, err, &perr)
	require.Equal(t, 7, perr.Offset)

	_, err = digest.Of(digest.JCSSHA256V1, map[string]any{"n": int64(1 << 60)})
	require.ErrorIs(t, err, jcs.ErrUnsafeInteger)
	_, err = digest.Of(digest.JCSSHA256V1, map[string]any{"s": struct{}{}})
	require.ErrorIs(t, err, jcs.ErrUnsupportedValue)
}

// Verify recomputes; the four failure classes stay distinguishable.
func TestVerify(t *testing.T) {
	t.Parallel()
	v := map[string]any{"amount": 100, "currency": "EUR"}
	d, err := digest.Of(digest.JCSSHA256V1, v)
	require.NoError(t, err)
	require.NoError(t, digest.Verify(d, v))
	require.NoError(t, digest.Verify(d, map[string]any{"currency": "EUR", "amount": 100.0}), "same value, other Go types")

	err = digest.Verify(d, map[string]any{"amount": 101, "currency": "EUR"})
	require.ErrorIs(t, err, digest.ErrMismatch)
	require.ErrorIs(t, digest.Verify(digest.Digest{Value: d.Value}, v), digest.ErrMissingAlgorithm)
	require.ErrorIs(t, digest.Verify(digest.Digest{Algorithm: "jcs-sha256-v2", Value: d.Value}, v), digest.ErrUnknownAlgorithm)
	require.ErrorIs(t, digest.Verify(digest.Digest{Algorithm: d.Algorithm, Value: strings.ToUpper(d.Value)}, v), digest.ErrMalformedDigest)
}

func TestParse(t *testing.T) {
	t.Parallel()
	d, err := digest.Parse("jcs-sha256-v1:" + emptyObjectSHA256)
	require.NoError(t, err)
	require.Equal(t, digest.Digest{Algorithm: digest.JCSSHA256V1, Value: emptyObjectSHA256}, d)

	_, err = digest.Parse(emptyObjectSHA256)
	require.ErrorIs(t, err, digest.ErrMissingAlgorithm, "bare digest")
	_, err = digest.Parse(":" + emptyObjectSHA256)
	require.ErrorIs(t, err, digest.ErrMissingAlgorithm)
	_, err = digest.Parse("jcs-sha256-v2:" + emptyObjectSHA256)
	require.ErrorIs(t, err, digest.ErrUnknownAlgorithm)
	_, err = digest.Parse("jcs-sha256-v1:" + emptyObjectSHA256 + "\n")
	require.ErrorIs(t, err, digest.ErrMalformedDigest)
}
