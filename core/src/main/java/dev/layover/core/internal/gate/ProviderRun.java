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
    // the step that runs now (JobContext#step): its usage and reservations, settled when it ends
    private boolean inStep;
    private boolean stepKeyed;
    private int stepFrom;
    private boolean stepTookOwnPermit;
    private TokenUsage stepUsage;
    private TokenUsage stepsUsage; // every ended step's usage, settled already, for the run's totals
    private TokenLedger.Reservation pickReservation;
    private Outcome stepOutcome;
    private Instant stepCooldown;

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
            TokenLedger.Reservation r = TokenLedger.reservation(providerKey, rates, reserved, estimate());
            synchronized (this) {
                pickReservation = r;
            }
            reserved(r);
        }
        return this;
    }

    @Override
    public Permission ask(String providerKey, long tokens) {
        return ask(providerKey, tokens > 0 ? TokenEstimate.total(tokens) : null);
    }

    /**
     * {@link #ask(String, long)} with a full token estimate (a step's, {@code StepOptions#tokens}).
     *
     * @param providerKey the key
     * @param estimate the call's estimate, or null
     * @return granted, wait or refused
     */
    public Permission ask(String providerKey, TokenEstimate estimate) {
        Objects.requireNonNull(providerKey, "providerKey");
        if (providerKey.equals(this.providerKey) && ownPermit) {
            ownPermit = false; // the job's own key admitted this call at its pick
            synchronized (this) {
                if (inStep) {
                    stepTookOwnPermit = true;
                }
            }
            return new Permission.Granted(trialToken);
        }
        Admission a = gate.admitEndpoint(providerKey, estimate, this);
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
        if (inStep) {
            stepUsage = stepUsage == null ? u : stepUsage.plus(u);
        } else {
            usage = usage == null ? u : usage.plus(u);
        }
    }

    /**
     * A step begins ({@code JobContext#step}): usage reported and reservations taken from now on are its own.
     *
     * @param keyed whether the step was admitted by a provider key of its own ({@code StepOptions#providerKey})
     */
    public synchronized void beginStep(boolean keyed) {
        inStep = true;
        stepKeyed = keyed;
        stepFrom = reservations.size();
        stepTookOwnPermit = false;
        stepUsage = null;
    }

    /**
     * The step ends (finished or not): its reservations (those taken during it, and its pick's when
     * it used the pick's permit) are settled by the usage reported during it, in one statement, and
     * leave the run's; the usage counts in the run's totals. A step that took no reservation of its
     * own (no provider key) adds its usage to the run's, settled after the run as a handler's call
     * is. Never throws.
     *
     * @return the usage reported during the step, or null
     */
    public synchronized TokenUsage endStep() {
        inStep = false;
        TokenUsage u = stepUsage;
        stepUsage = null;
        List<TokenLedger.Reservation> mine = new ArrayList<>(reservations.subList(Math.min(stepFrom, reservations.size()),
                reservations.size()));
        List<TokenLedger.Reservation> rest = new ArrayList<>(reservations.subList(0, Math.min(stepFrom, reservations.size())));
        if (stepTookOwnPermit && pickReservation != null && rest.remove(pickReservation)) {
            mine.add(pickReservation);
            pickReservation = null;
        }
        if (!stepKeyed && mine.isEmpty()) {
            // a step admitted by nothing of its own (no provider key): its usage is the job's call's, settled with the run
            if (u != null) {
                usage = usage == null ? u : usage.plus(u);
            }
            return u;
        }
        reservations = List.copyOf(rest);
        if (u != null) {
            if (!mine.isEmpty()) {
                try {
                    gate.ledger().settle(mine, u, gate.clock().instant());
                } catch (RuntimeException e) {
                    // settle never throws by contract; guarded all the same: a step's result matters more
                }
            }
            stepsUsage = stepsUsage == null ? u : stepsUsage.plus(u);
        }
        return u;
    }

    /**
     * A step's own key learnt this outcome already ({@code JobContext#step} with a provider key):
     * when it becomes the run's outcome, the job's key does not learn it again.
     *
     * @param o the outcome
     * @param cooldown the step key's cooldown end after it, or null
     */
    public synchronized void stepTaught(Outcome o, Instant cooldown) {
        stepOutcome = o;
        stepCooldown = cooldown;
    }

    /**
     * @param o the run's outcome
     * @return whether a step's key learnt it already ({@link #stepTaught})
     */
    public synchronized boolean taughtByStep(Outcome o) {
        return o != null && o == stepOutcome;
    }

    /** @return the cooldown end the step that taught the run's outcome met, or null */
    public synchronized Instant stepCooldown() {
        return stepCooldown;
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
        TokenUsage all = usage == null ? stepsUsage : stepsUsage == null ? usage : usage.plus(stepsUsage);
        return new RunTokens(all == null ? null : all.totalInputTokens(), all == null ? null : all.outputTokens(),
                all == null ? null : all.cachedInputTokens(), estimated ? estimate.totalTokens() : null);
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
