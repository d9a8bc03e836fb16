package cli

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/reconciliation"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/billing/catchup"
	"github.com/oceanway/core/internal/billing/catchup/catchupmetering"
	billingschema "github.com/oceanway/core/internal/billing/schema"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/casegateway"
	"github.com/oceanway/core/internal/grants"
	"github.com/oceanway/core/internal/metering"
	meteringschema "github.com/oceanway/core/internal/metering/schema"
	"github.com/oceanway/core/internal/operations/cases"
	operationsschema "github.com/oceanway/core/internal/operations/schema"
	"github.com/oceanway/core/internal/workload"
)

// caseOptions are the flags of oceanway case.
type caseOptions struct {
	conn   boundaryFlags
	asJSON bool
	// Authentication: the operator's actor assertion, or a principal and
	// the stand-in identity provider's key to mint one.
	assertion   string
	as          string
	actorKey    string
	actorIssuer string
	// trusted identity providers (NAME=PUBLIC KEY) and Core's grant key.
	trustIssuers []string
	grantKey     string
	grantIssuer  string
	// late: the command is apply-late (the gateway also needs Billing's
	// late settlement command and the Metering database).
	late bool
}

func newCaseCmd(streams *IO) *cobra.Command {
	o := &caseOptions{}
	cmd := &cobra.Command{
		Use:   "case",
		Short: "Reconciliation cases (finalization and late settlement): list, show, request, approve, apply",
		Long: `case is the operator surface of the Finalization reconciliation cases (ADR-031). A
reservation whose inputs conflict, or exceed what was reserved, enters reconciliation_required
and Operations opens a case; the case closes only through the fixed command chain:

  request   an operator asks to re-evaluate the current owner state of an open case
            (justification and investigation evidence; the impact preview states: no
            direct ledger or reservation effect)
  approve   a second operator approves (the requester cannot)
  apply     the requester runs it: Operations' JIT activation, candidate and decision,
            Core's single-use grant for the operator's actor assertion, Billing's
            resolution; the coordinator then re-evaluates with every input that arrived
            during the case, and a re-evaluation that still conflicts opens the next
            generation
  list      open (or --state resolved|all) cases with their requests
  show      one case and its chain

Every command that writes is authenticated by the operator's actor assertion: a short-lived
JWT of a trusted workforce identity provider (--actor-assertion, env OCEANWAY_ACTOR_ASSERTION),
or minted here with the provider's key (--as PRINCIPAL --actor-key KEY --actor-issuer NAME) for
a one-machine install. --trust-actor-issuer NAME=PUBKEY names the trusted providers, --grant-key
is Core's grant signing key. The only action is re-evaluation: no amount, no replacement input,
no override.

Late settlement cases (lcase-…, issue 32) are the second kind: a positive difference after the
reservation was released is never charged automatically; it opens a case per settlement
dimension and case generation, and the only way to charge it is the late settlement command:

  list --late     open late cases with their exposures
  request-late    ask to fund the case's latest unresolved exposure (no amount: the exposure's)
  approve-late    a second operator approves
  apply-late      the requester runs it: Operations' decision, Billing's funding decision,
                  Core's single-use grant, and Billing's one ledger transaction (post-release
                  adjustment, exposure resolved, both JTIs consumed); needs --grant-key and the
                  Metering database (--metering-dsn) for Metering's current receipt`,
	}
	cmd.PersistentFlags().BoolVar(&o.asJSON, "json", false, "print JSON instead of text")
	conn := &cobra.Command{}
	o.conn.register(conn)
	cmd.PersistentFlags().AddFlagSet(conn.Flags())
	auth := func(c *cobra.Command) {
		c.Flags().StringVar(&o.assertion, "actor-assertion", envOr("OCEANWAY_ACTOR_ASSERTION", ""), "the operator's actor assertion (JWT, audience "+grants.AudienceGrantExchange+")")
		c.Flags().StringVar(&o.as, "as", "", "mint the assertion for this workforce principal (with --actor-key)")
		c.Flags().StringVar(&o.actorKey, "actor-key", envOr("OCEANWAY_ACTOR_KEY", ""), "the stand-in identity provider's Ed25519 private key (PEM file or text)")
		c.Flags().StringVar(&o.actorIssuer, "actor-issuer", envOr("OCEANWAY_ACTOR_ISSUER", "oceanway-local-idp"), "the stand-in identity provider's name (iss)")
		c.Flags().StringSliceVar(&o.trustIssuers, "trust-actor-issuer", envList("OCEANWAY_ACTOR_ISSUERS", ";"), "a trusted identity provider NAME=PUBKEY (PEM file or text); repeatable")
		c.Flags().StringVar(&o.grantKey, "grant-key", envOr("OCEANWAY_GRANT_KEY", ""), "Core's grant signing key (Ed25519 PEM file or text; apply)")
		c.Flags().StringVar(&o.grantIssuer, "grant-issuer", envOr("OCEANWAY_GRANT_ISSUER", "core.grants"), "Core's grant issuer name")
	}

	var state string
	var limit int
	var late bool
	list := &cobra.Command{
		Use: "list", Short: "List cases (open by default) with their requests", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if state == "all" {
				state = ""
			}
			if late {
				return o.withOperations(cmd.Context(), func(pool *pgxpool.Pool) error {
					v, err := cases.ListLate(cmd.Context(), pool, state, limit)
					if err != nil {
						return err
					}
					return o.print(streams.Out, v, func() error { return printLateCases(streams.Out, v) })
				})
			}
			return o.withOperations(cmd.Context(), func(pool *pgxpool.Pool) error {
				v, err := cases.List(cmd.Context(), pool, state, limit)
				if err != nil {
					return err
				}
				return o.print(streams.Out, v, func() error { return printCases(streams.Out, v) })
			})
		},
	}
	list.Flags().StringVar(&state, "state", "open", "open, resolved or all")
	list.Flags().IntVar(&limit, "limit", 100, "at most this many cases")
	list.Flags().BoolVar(&late, "late", false, "list late settlement cases (with their exposures) instead")
	show := &cobra.Command{
		Use: "show CASE_REF", Short: "Show one case (finalization, or late settlement: lcase-…) and its command chain", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.HasPrefix(args[0], lateCaseRefPrefix) {
				return o.withOperations(cmd.Context(), func(pool *pgxpool.Pool) error {
					v, err := cases.ShowLate(cmd.Context(), pool, args[0])
					if err != nil {
						return err
					}
					return o.print(streams.Out, v, func() error { return printLateCases(streams.Out, []cases.LateCaseView{v}) })
				})
			}
			return o.withOperations(cmd.Context(), func(pool *pgxpool.Pool) error {
				v, err := cases.Show(cmd.Context(), pool, args[0])
				if err != nil {
					return err
				}
				return o.print(streams.Out, v, func() error { return printCases(streams.Out, []cases.CaseView{v}) })
			})
		},
	}

	var justification, operation string
	var evidence []string
	request := &cobra.Command{
		Use: "request CASE_REF", Short: "Ask to re-evaluate an open case's current owner state", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			refs, err := parseEvidence(evidence)
			if err != nil {
				return err
			}
			return o.withGateway(cmd.Context(), false, func(g casegateway.Gateway, assertion string) error {
				if len(refs) == 0 {
					v, err := o.showCase(cmd.Context(), args[0])
					if err != nil {
						return err
					}
					refs = []reconciliation.EvidenceReference{{EvidenceKind: "billing_finalization_case", Object: v.Identity}}
				}
				if operation == "" {
					operation = uuid.NewString()
				}
				ch, err := g.Request(cmd.Context(), assertion, cases.RequestInput{CaseRef: args[0], OperationID: operation, Evidence: refs, Justification: justification})
				if err != nil {
					return err
				}
				return o.print(streams.Out, ch, func() error {
					_, err := fmt.Fprintf(streams.Out, "request %s for case %s generation %d by %s\n  impact: %s\n  next: a second operator runs: oceanway case approve %s\n",
						ch.Request.Request.Ref, ch.Request.Case.ReconciliationCaseRef, ch.Request.Case.ReconciliationGeneration,
						ch.Request.RequesterWorkforcePrincipalID, reconciliation.ImpactStatement, ch.Request.Request.Ref)
					return err
				})
			})
		},
	}
	auth(request)
	request.Flags().StringVar(&justification, "justification", "", "why the owner state should be re-evaluated (required)")
	request.Flags().StringSliceVar(&evidence, "evidence", nil, "investigation evidence KIND=REF@DIGEST (jcs-sha256-v1, schema 1); repeatable; default: the case's identity")
	request.Flags().StringVar(&operation, "operation", "", "idempotency key of the request (a UUID; default: a new one)")
	_ = request.MarkFlagRequired("justification")

	approve := &cobra.Command{
		Use: "approve REQUEST_REF", Short: "Approve another operator's request", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.withGateway(cmd.Context(), false, func(g casegateway.Gateway, assertion string) error {
				ch, err := g.Approve(cmd.Context(), assertion, args[0])
				if err != nil {
					return err
				}
				return o.print(streams.Out, ch, func() error {
					_, err := fmt.Fprintf(streams.Out, "request %s approved by %s\n  next: the requester runs: oceanway case apply %s\n",
						args[0], ch.Approval.ApproverWorkforcePrincipalID, args[0])
					return err
				})
			})
		},
	}
	auth(approve)
	apply := &cobra.Command{
		Use: "apply REQUEST_REF", Short: "Run your approved request: decision, grant, Billing's resolution", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.withGateway(cmd.Context(), true, func(g casegateway.Gateway, assertion string) error {
				a, err := g.Apply(cmd.Context(), assertion, args[0])
				if err != nil {
					return err
				}
				return o.print(streams.Out, a.Result.Fact, func() error {
					f := a.Result.Fact
					_, err := fmt.Fprintf(streams.Out, "resolution %s applied to case %s generation %d by %s (grant %s%s)\n  the coordinator re-evaluates the reservation with the current owner state\n",
						f.Applied.Ref, f.Case.ReconciliationCaseRef, f.Case.ReconciliationGeneration, f.ActorWorkforcePrincipalID, f.GrantJTI,
						map[bool]string{true: ", replayed", false: ""}[a.Result.Replayed])
					return err
				})
			})
		},
	}
	auth(apply)
	cmd.AddCommand(list, show, request, approve, apply, o.requestLateCmd(streams, auth), o.approveLateCmd(streams, auth),
		o.applyLateCmd(streams, auth))
	return cmd
}

// lateCaseRefPrefix starts every late settlement case ref
// (reconciliation.LateSettlementCaseRef).
const lateCaseRefPrefix = "lcase-"

// requestLateCmd is `case request-late`: Operations' LateSettlementCommandRequest@1
// to fund one exposure of an open late settlement case (issue 32).
func (o *caseOptions) requestLateCmd(streams *IO, auth func(*cobra.Command)) *cobra.Command {
	var justification, operation, exposure string
	var evidence []string
	c := &cobra.Command{
		Use: "request-late CASE_REF", Short: "Ask to fund the latest unresolved exposure of an open late settlement case", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			refs, err := parseEvidence(evidence)
			if err != nil {
				return err
			}
			if len(refs) == 0 {
				return errors.New("case request-late: --evidence is required (KIND=REF@DIGEST)")
			}
			return o.withGateway(cmd.Context(), false, func(g casegateway.Gateway, assertion string) error {
				if operation == "" {
					operation = uuid.NewString()
				}
				ch, err := g.RequestLate(cmd.Context(), assertion, cases.LateRequestInput{CaseRef: args[0], LateSettlementExposureID: exposure,
					Evidence: refs, Justification: justification, CommandRequestOperationID: operation})
				if err != nil {
					return err
				}
				return o.print(streams.Out, ch, func() error {
					_, err := fmt.Fprintf(streams.Out, "late request %s for case %s generation %d, exposure %s, by %s\n  impact: %s\n  next: a second operator runs: oceanway case approve-late %s\n",
						ch.Request.Request.Ref, ch.Request.Case.ReconciliationCaseRef, ch.Request.Case.CaseGeneration,
						ch.Request.Exposure.LateSettlementExposureID, ch.Request.RequesterWorkforcePrincipalID, reconciliation.LateImpactStatement,
						ch.Request.Request.Ref)
					return err
				})
			})
		},
	}
	auth(c)
	c.Flags().StringVar(&exposure, "exposure", "", "the exposure to fund: the case's latest unresolved lateSettlementExposureId (required)")
	c.Flags().StringVar(&justification, "justification", "", "why the exposure should be charged (required)")
	c.Flags().StringSliceVar(&evidence, "evidence", nil, "investigation evidence KIND=REF@DIGEST (jcs-sha256-v1, schema 1); repeatable; at least one")
	c.Flags().StringVar(&operation, "operation", "", "idempotency key of the request (a UUID; default: a new one)")
	_ = c.MarkFlagRequired("justification")
	_ = c.MarkFlagRequired("exposure")
	return c
}

// approveLateCmd is `case approve-late`: another operator's
// LateSettlementCommandApproval@1.
func (o *caseOptions) approveLateCmd(streams *IO, auth func(*cobra.Command)) *cobra.Command {
	c := &cobra.Command{
		Use: "approve-late REQUEST_REF", Short: "Approve another operator's late settlement request", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.withGateway(cmd.Context(), false, func(g casegateway.Gateway, assertion string) error {
				ch, err := g.ApproveLate(cmd.Context(), assertion, args[0])
				if err != nil {
					return err
				}
				return o.print(streams.Out, ch, func() error {
					_, err := fmt.Fprintf(streams.Out, "late request %s approved by %s\n  next: the requester runs: oceanway case apply-late %s\n",
						args[0], ch.Approval.ApproverWorkforcePrincipalID, args[0])
					return err
				})
			})
		},
	}
	auth(c)
	return c
}

// applyLateCmd is `case apply-late`: the requester runs the approved late
// settlement request to its end (Operations' decision, Billing's
// FundingDecision@1, Core's single-use grant, Billing's one ledger
// transaction with Metering's current receipt). It needs Core's grant key
// and the Metering database (--metering-dsn).
func (o *caseOptions) applyLateCmd(streams *IO, auth func(*cobra.Command)) *cobra.Command {
	c := &cobra.Command{
		Use: "apply-late REQUEST_REF", Short: "Run your approved late settlement request: decision, funding, grant, Billing's late settlement command", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.late = true
			return o.withGateway(cmd.Context(), true, func(g casegateway.Gateway, assertion string) error {
				a, err := g.ApplyLate(cmd.Context(), assertion, args[0])
				if err != nil {
					return err
				}
				r := a.Outcome.Result
				return o.print(streams.Out, r, func() error {
					_, err := fmt.Fprintf(streams.Out, "late settlement command %s committed for case %s generation %d by %s%s\n  exposure %s resolved: %s charged as a post-release adjustment (settled %s → %s, revision %d → %d)\n  grant jti %s and funding jti %s consumed\n",
						r.Result.Ref, r.Case.ReconciliationCaseRef, r.Case.CaseGeneration, r.ActorWorkforcePrincipalID,
						map[bool]string{true: " (replayed)", false: ""}[a.Outcome.Replayed], r.Exposure.LateSettlementExposureID,
						r.AdjustmentAmount, r.SettledAmountBefore, r.SettledAmountAfter, r.FromSettlementStateRevision, r.ToSettlementStateRevision(),
						r.GrantJTI, r.FundingDecisionJTI)
					return err
				})
			})
		},
	}
	auth(c)
	return c
}

func printLateCases(w io.Writer, cs []cases.LateCaseView) error {
	if len(cs) == 0 {
		_, err := fmt.Fprintln(w, "no late settlement cases")
		return err
	}
	for _, c := range cs {
		fmt.Fprintf(w, "%s  generation %d  %s  reservation %s  dimension %s (%s)  since %s\n", c.CaseRef, c.Generation, c.State,
			c.ReservationID, c.SettlementDimensionID, c.ChargeDimensionKey, c.OpenedAt.Format(time.RFC3339))
		for _, x := range c.Exposures {
			fmt.Fprintf(w, "    exposure %s  amount %s", x.ExposureID, x.Amount)
			if x.ResolvedAt != nil {
				fmt.Fprintf(w, "  resolved %s (%s)", x.ResolvedAt.Format(time.RFC3339), deref(x.ResolutionSource))
			}
			fmt.Fprintln(w)
		}
		for _, r := range c.Requests {
			fmt.Fprintf(w, "    late request %s by %s: %q", r.Ref, r.Requester, r.Justification)
			if r.Approver != nil {
				fmt.Fprintf(w, "; approved by %s", *r.Approver)
			}
			if r.DecisionRef != nil {
				fmt.Fprintf(w, "; decided %s", *r.DecisionRef)
			}
			fmt.Fprintln(w)
		}
	}
	return nil
}

func (o *caseOptions) showCase(ctx context.Context, ref string) (cases.CaseView, error) {
	var v cases.CaseView
	err := o.withOperations(ctx, func(pool *pgxpool.Pool) (err error) {
		v, err = cases.Show(ctx, pool, ref)
		return err
	})
	return v, err
}

// withOperations runs f on the core database as oceanway_operations.
func (o *caseOptions) withOperations(ctx context.Context, f func(*pgxpool.Pool) error) error {
	pools, err := o.pools(ctx, operationsschema.RoleOperations)
	if err != nil {
		return err
	}
	defer closePools(pools)
	return f(pools[0])
}

func (o *caseOptions) pools(ctx context.Context, roles ...string) ([]*pgxpool.Pool, error) {
	// Cases live in the core database only: no other boundary is resolved.
	dsns, err := o.conn.resolveSome(ctx, []boundary.Boundary{boundary.Core}, nil, nil)
	if err != nil {
		return nil, err
	}
	dsn, ok := dsns[boundary.Core]
	if !ok {
		return nil, errors.New("case: no core database")
	}
	var out []*pgxpool.Pool
	for _, role := range roles {
		p, err := openRolePools(ctx, map[boundary.Boundary]string{boundary.Core: dsn}, 4, role)
		if err != nil {
			closePools(out)
			return nil, err
		}
		out = append(out, p[boundary.Core])
	}
	return out, nil
}

// meteringPool opens the Metering database as the Metering role: the late
// settlement command takes Metering's current late_settlement_command
// receipt there (its validation writes the receipt).
func (o *caseOptions) meteringPool(ctx context.Context) (*pgxpool.Pool, error) {
	dsns, err := o.conn.resolveSome(ctx, []boundary.Boundary{boundary.Metering}, nil, nil)
	if err != nil {
		return nil, err
	}
	dsn, ok := dsns[boundary.Metering]
	if !ok {
		return nil, errors.New("case apply-late: no metering database (--metering-dsn)")
	}
	p, err := openRolePools(ctx, map[boundary.Boundary]string{boundary.Metering: dsn}, 2, meteringschema.RoleMetering)
	if err != nil {
		return nil, err
	}
	return p[boundary.Metering], nil
}

func closePools(pools []*pgxpool.Pool) {
	for _, p := range pools {
		p.Close()
	}
}

// withGateway authenticates the operator and runs f on a gateway whose
// owners are in process (each on its own role); withGrant: Core's grant
// key is required (apply).
func (o *caseOptions) withGateway(ctx context.Context, withGrant bool, f func(casegateway.Gateway, string) error) error {
	assertion, actors, err := o.authenticate()
	if err != nil {
		return err
	}
	g := casegateway.Gateway{Actors: actors}
	pools, err := o.pools(ctx, operationsschema.RoleOperations, billingschema.RoleGrants, billingschema.RoleBilling)
	if err != nil {
		return err
	}
	defer closePools(pools)
	ops := cases.Commands{Pool: pools[0], Workload: casegateway.Workload}
	g.Operations = casegateway.LocalOperations{Actors: actors, Commands: ops}
	g.LateOperations = casegateway.LocalOperations{Actors: actors, Commands: ops}
	if withGrant {
		if o.grantKey == "" {
			return errors.New("case apply: --grant-key (or OCEANWAY_GRANT_KEY), Core's grant signing key, is required")
		}
		key, err := workload.LoadPrivateKey(o.grantKey)
		if err != nil {
			return err
		}
		signer, err := grants.NewSigner(o.grantIssuer, key)
		if err != nil {
			return err
		}
		verifier, err := grants.NewVerifier(o.grantIssuer, key.Public().(ed25519.PublicKey))
		if err != nil {
			return err
		}
		exchange := grants.Exchanger{Pool: pools[1], Signer: signer, Assertions: actors, Decisions: ops, LateDecisions: ops}
		g.Grants = exchange
		g.Billing = casegateway.BillingResolutions{Pool: pools[2], Grants: verifier}
		if o.late {
			lateGrants, err := catchup.NewLateGrantVerifier(o.grantIssuer, key.Public().(ed25519.PublicKey))
			if err != nil {
				return err
			}
			m, err := o.meteringPool(ctx)
			if err != nil {
				return err
			}
			defer m.Close()
			g.LateGrants = exchange
			g.LateBilling = &catchup.LateCommands{Pool: pools[2], Grants: lateGrants,
				Metering: catchupmetering.Reads{Metering: metering.Reads{DB: m}}}
		}
	}
	return f(g, assertion)
}

// authenticate returns the operator's assertion (given, or minted with the
// stand-in provider's key) and the verifier of the trusted providers.
func (o *caseOptions) authenticate() (string, *grants.AssertionVerifier, error) {
	trusted, err := parseActorIssuers(o.trustIssuers)
	if err != nil {
		return "", nil, fmt.Errorf("case: %w", err)
	}
	assertion := o.assertion
	if o.as != "" {
		if assertion != "" {
			return "", nil, errors.New("case: give --actor-assertion or --as, not both")
		}
		if o.actorKey == "" {
			return "", nil, errors.New("case: --as needs --actor-key (the identity provider's key)")
		}
		key, err := workload.LoadPrivateKey(o.actorKey)
		if err != nil {
			return "", nil, err
		}
		idp, err := grants.NewAssertionSigner(o.actorIssuer, key, nil)
		if err != nil {
			return "", nil, err
		}
		if assertion, err = idp.Assert(o.as, 2*time.Minute); err != nil {
			return "", nil, err
		}
	}
	if assertion == "" {
		return "", nil, errors.New("case: an actor assertion is required (--actor-assertion, or --as with --actor-key)")
	}
	if len(trusted) == 0 {
		return "", nil, errors.New("case: --trust-actor-issuer (or OCEANWAY_ACTOR_ISSUERS) names no trusted identity provider")
	}
	v, err := grants.NewAssertionVerifier(trusted...)
	return assertion, v, err
}

// parseEvidence reads KIND=REF@DIGEST references.
func parseEvidence(specs []string) ([]reconciliation.EvidenceReference, error) {
	var out []reconciliation.EvidenceReference
	for _, s := range specs {
		kind, rest, ok1 := strings.Cut(s, "=")
		ref, dig, ok2 := strings.Cut(rest, "@")
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("case: --evidence %q is not KIND=REF@DIGEST", s)
		}
		out = append(out, reconciliation.EvidenceReference{EvidenceKind: kind,
			Object: strict.Quadruple{Ref: ref, SchemaVersion: "1", DigestAlgorithmVersion: digest.JCSSHA256V1, Digest: dig}})
	}
	return out, nil
}

func (o *caseOptions) print(w io.Writer, v any, text func() error) error {
	if o.asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	return text()
}

func printCases(w io.Writer, cs []cases.CaseView) error {
	if len(cs) == 0 {
		_, err := fmt.Fprintln(w, "no cases")
		return err
	}
	for _, c := range cs {
		fmt.Fprintf(w, "%s  generation %d  %s  reservation %s  reason %s  since %s\n", c.CaseRef, c.Generation, c.State,
			c.ReservationID, c.ReasonCode, c.RequestedAt.Format(time.RFC3339))
		if c.ResolvedAt != nil {
			fmt.Fprintf(w, "    resolved %s by %s (operation %s)\n", c.ResolvedAt.Format(time.RFC3339), deref(c.ResolvedBy), deref(c.ResolutionOperationID))
		}
		for _, r := range c.Requests {
			fmt.Fprintf(w, "    request %s by %s: %q", r.Ref, r.Requester, r.Justification)
			if r.Approver != nil {
				fmt.Fprintf(w, "; approved by %s", *r.Approver)
			}
			if r.DecisionRef != nil {
				fmt.Fprintf(w, "; decided %s", *r.DecisionRef)
			}
			fmt.Fprintln(w)
		}
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
