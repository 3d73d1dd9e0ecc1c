package dev.layover.core.internal.gate;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.provider.FallbackStep;
import dev.layover.core.provider.ProviderCalls;
import java.time.Clock;
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
    private final long tokens;
    private final int attempt;
    private final List<FallbackStep> trail = new ArrayList<>();
    private volatile String trialToken;

    ProviderRun(ProviderGate gate, String providerKey, String taskName, String jobId, long version, long tokens,
            int attempt) {
        this.gate = gate;
        this.providerKey = providerKey;
        this.taskName = taskName;
        this.jobId = jobId;
        this.version = version;
        this.tokens = tokens;
        this.attempt = attempt;
    }

    @Override
    public Permission ask(String providerKey, long tokens) {
        Admission a = gate.admitEndpoint(Objects.requireNonNull(providerKey, "providerKey"), tokens);
        if (a instanceof Admission.Wait w) {
            return new Permission.Wait(w.runAt(), w.reason(), w.detail());
        }
        if (a instanceof Admission.Refuse r) {
            return new Permission.Refused(r.openUntil(), r.detail());
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

    long tokens() {
        return tokens;
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
