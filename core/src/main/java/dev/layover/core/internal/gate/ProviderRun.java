package dev.layover.core.internal.gate;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.outcome.OutcomeException;
import dev.layover.core.provider.FallbackStep;
import dev.layover.core.provider.ProviderCalls;
import dev.layover.core.provider.RateLimitHeaders;
import dev.layover.core.internal.jobs.RunTokens;
import dev.layover.core.tokens.TokenEstimate;
import dev.layover.core.tokens.TokenUsage;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.ArrayList;
import java.util.List;

/**
 * The provider side of one run of one job: its provider key, the breaker trial it holds, and the
 * fallback trail its handler builds; as {@link ProviderCalls}, the gate a handler's own calls pass
 * through ({@code JobContext.providerCalls()}).
 */
public final class ProviderRun implements ProviderCalls {

    private static final ObjectMapper JSON = new ObjectMapper();

    private final ProviderGate gate;
    private final String providerKey;
    private final String taskName;
    private final String jobId;
    private final long version;
    private final int attempt;
    private final List<FallbackStep> trail = new ArrayList<>();
    private volatile String trialToken;
    /** Whether the permit its pick took for the job's own key is still to be spent by a call of that key. */
    private volatile boolean ownPermit = true;
    // the token ledger of this run (TokenLedger): its estimate, the reservations it took, the usage its call reported
    private TokenEstimate estimate;
    private boolean estimated;
    private List<TokenLedger.Reservation> reservations = List.of();
    private TokenUsage usage;
    private RateLimitHeaders limits;

    ProviderRun(ProviderGate gate, String providerKey, String taskName, String jobId, long version, TokenEstimate estimate,
            boolean estimated, int attempt) {
        this.gate = gate;
        this.providerKey = providerKey;
        this.taskName = taskName;
        this.jobId = jobId;
        this.version = version;
        this.estimate = estimate == null ? TokenEstimate.NONE : estimate;
        this.estimated = estimated;
        this.attempt = attempt;
    }

    /**
     * What the job's pick admitted it with: the breaker trial it claimed for the job's key, and the
     * tokens it reserved from the key's bucket ({@code reserved} per dimension at the key's token
     * {@code rates}), settled after the call.
     *
     * @param trial the trial's claim, or null
     * @param reserved tokens reserved per dimension (combined, input, output), or null
     * @param rates the key's token rates per second at the pick, or null
     * @return this run
     */
    public ProviderRun admitted(String trial, double[] reserved, double[] rates) {
        this.trialToken = trial;
        if (reserved != null && rates != null && providerKey != null) {
            reserved(TokenLedger.reservation(providerKey, rates, reserved, estimate()));
        }
        return this;
    }

    @Override
    public Permission ask(String providerKey, long tokens) {
        Objects.requireNonNull(providerKey, "providerKey");
        if (providerKey.equals(this.providerKey) && ownPermit) {
            ownPermit = false; // the job's own key admitted this call at its pick
            return new Permission.Granted(trialToken);
        }
        Admission a = gate.admitEndpoint(providerKey, tokens > 0 ? TokenEstimate.total(tokens) : null, this);
        if (a instanceof Admission.Wait w) {
            return new Permission.Wait(w.runAt(), w.reason(), w.detail());
        }
        if (a instanceof Admission.Refuse r) {
            return new Permission.Refused(r.openUntil(), r.detail());
        }
        if (a instanceof Admission.TooLarge t) {
            return new Permission.Refused(Instant.MAX, t.detail()); // this key can never take the call
        }
        return new Permission.Granted(((Admission.Go) a).trialToken());
    }

    @Override
    public Instant record(String providerKey, Permission.Granted granted, Outcome outcome) {
        return gate.afterCall(Objects.requireNonNull(providerKey, "providerKey"),
                granted == null ? null : granted.trial(), Objects.requireNonNull(outcome, "outcome"));
    }

    @Override
    public Clock clock() {
        return gate.clock();
    }

    @Override
    public void trail(FallbackStep step) {
        addTrail(step);
    }

    /** @return the job's provider key, or {@code null} */
    public String providerKey() {
        return providerKey;
    }

    /** @return the breaker trial this run holds for its key, or {@code null} */
    public String trialToken() {
        return trialToken;
    }

    void trialToken(String token) {
        this.trialToken = token;
    }

    String taskName() {
        return taskName;
    }

    String jobId() {
        return jobId;
    }

    long version() {
        return version;
    }

    /** @return the estimate's combined tokens (what a combined dimension reserves) */
    long tokens() {
        return estimate().totalTokens();
    }

    /** @return the call's token estimate ({@link TokenEstimate#NONE} when its job type has none) */
    public synchronized TokenEstimate estimate() {
        return estimate;
    }

    synchronized void reserved(TokenLedger.Reservation r) {
        List<TokenLedger.Reservation> l = new ArrayList<>(reservations);
        l.add(r);
        reservations = List.copyOf(l);
    }

    /**
     * A handler's better estimate before its call: the reservations taken at admission move to it
     * at once (the difference given back or charged, {@link TokenLedger#refine}).
     *
     * @param e the refined estimate
     * @throws OutcomeException rejecting the job when the job's key's bucket can never admit it
     */
    public synchronized void refine(TokenEstimate e) {
        Objects.requireNonNull(e, "estimate");
        String big = gate.tooLarge(providerKey, e);
        if (big != null) {
            throw new OutcomeException(Outcome.rejected(big));
        }
        reservations = gate.ledger().refine(reservations, e, gate.clock().instant());
        estimate = e;
        estimated = true;
    }

    /**
     * Records the usage a call of this run reported; several reports add up (a handler that makes
     * several calls).
     *
     * @param u the usage
     */
    public synchronized void reportUsage(TokenUsage u) {
        Objects.requireNonNull(u, "usage");
        usage = usage == null ? u : usage.plus(u);
    }

    /**
     * Records the provider's own count of what remains of its limits, read from a response's
     * rate-limit headers; applied with {@link #settle} (the newest report wins).
     *
     * @param h the headers read
     */
    public synchronized void reportLimits(RateLimitHeaders h) {
        limits = Objects.requireNonNull(h, "headers");
    }

    /** @return the usage reported so far, or null */
    public synchronized TokenUsage usage() {
        return usage;
    }

    /**
     * After the call: the reported usage replaces the reservations in every bucket they were
     * taken from, in one statement ({@link TokenLedger#settle}); without a report they stay. At
     * most once per report; never throws.
     *
     * @return the tokens for the job's history row
     */
    public synchronized RunTokens settle() {
        if (usage != null) {
            reservations = gate.ledger().settle(reservations, usage, gate.clock().instant());
        }
        if (limits != null && providerKey != null) { // after the settle: the provider's count has the last word
            gate.learnTokenLimits(providerKey, limits); // a key without a configured bucket learns the stated limits
            gate.ledger().correct(providerKey, limits, gate.clock().instant());
            limits = null;
        }
        return new RunTokens(usage == null ? null : usage.totalInputTokens(), usage == null ? null : usage.outputTokens(),
                usage == null ? null : usage.cachedInputTokens(), estimated ? estimate.totalTokens() : null);
    }

    /** @return the attempt number the handler sees */
    public int attempt() {
        return attempt;
    }

    /**
     * Adds a line to the trail.
     *
     * @param step what happened with one endpoint
     */
    public synchronized void addTrail(FallbackStep step) {
        trail.add(step);
    }

    /** @return the trail so far, oldest first */
    public synchronized List<FallbackStep> trail() {
        return List.copyOf(trail);
    }

    /** @return the trail as the jsonb array stored with the job ({@code []} when empty) */
    public synchronized String trailJson() {
        ArrayNode a = JSON.createArrayNode();
        for (FallbackStep s : trail) {
            ObjectNode n = a.addObject();
            n.put("at", s.at().toString());
            n.put("attempt", attempt);
            n.put("key", s.providerKey());
            n.put("result", s.result());
            n.put("detail", s.detail());
            if (s.retryAfter() != null) {
                n.put("wait_ms", s.retryAfter().toMillis());
            } else {
                n.putNull("wait_ms");
            }
        }
        return a.toString();
    }
}
