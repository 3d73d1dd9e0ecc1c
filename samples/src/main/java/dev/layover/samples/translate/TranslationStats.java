package dev.layover.samples.translate;

import dev.layover.core.outcome.Outcome;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * What the translation job saw, counted in memory for the demo's report. Thread-safe.
 *
 * <p>It also checks the rule "a rate limit never spends an attempt" from the handler's side: it
 * remembers each job's attempt number and whether its last run ended rate limited, and counts a
 * violation when the job's next run sees a higher attempt number.
 */
public final class TranslationStats {

    private record LastRun(int attempt, boolean rateLimited) {}

    private final Map<String, LastRun> lastRuns = new ConcurrentHashMap<>();
    private final Set<String> completed = ConcurrentHashMap.newKeySet();
    private final AtomicInteger runs = new AtomicInteger();
    private final AtomicInteger segmentsReused = new AtomicInteger();
    private final AtomicInteger rateLimitedRuns = new AtomicInteger();
    private final AtomicInteger attemptsSpentOnRateLimits = new AtomicInteger();
    private final AtomicInteger attemptsSpent = new AtomicInteger();
    private final AtomicInteger answeredByPrimary = new AtomicInteger();
    private final AtomicInteger answeredBySecondary = new AtomicInteger();
    private final AtomicInteger fenced = new AtomicInteger();
    private final AtomicInteger chatty = new AtomicInteger();
    private final AtomicInteger truncated = new AtomicInteger();
    private final AtomicInteger otherUnusable = new AtomicInteger();
    private final AtomicInteger charges = new AtomicInteger();
    private final AtomicInteger noCredits = new AtomicInteger();
    private final AtomicInteger deliveryFailures = new AtomicInteger();

    void runStarted(String jobId, int attempt) {
        runs.incrementAndGet();
        LastRun last = lastRuns.get(jobId);
        if (last != null && last.rateLimited() && attempt > last.attempt()) {
            attemptsSpentOnRateLimits.incrementAndGet();
        }
    }

    void runEnded(String jobId, int attempt, Outcome outcome) {
        boolean rateLimited = outcome instanceof Outcome.RateLimited;
        if (rateLimited) {
            rateLimitedRuns.incrementAndGet();
        }
        if (outcome instanceof Outcome.Done) {
            completed.add(jobId);
            lastRuns.remove(jobId);
            return;
        }
        if (outcome.spendsAttempt()) {
            attemptsSpent.incrementAndGet();
        }
        lastRuns.put(jobId, new LastRun(attempt, rateLimited));
    }

    void answered(String providerKey, String content) {
        (TranslateJob.PRIMARY_KEY.equals(providerKey) ? answeredByPrimary : answeredBySecondary).incrementAndGet();
        String c = content == null ? "" : content.strip();
        if (c.startsWith("```")) {
            fenced.incrementAndGet();
        } else if (!c.isEmpty() && !c.startsWith("{")) {
            chatty.incrementAndGet();
        }
    }

    void segmentsReused(int n) {
        segmentsReused.addAndGet(n);
    }

    /** @return segments a resumed job read back from its stored steps instead of calling the model again */
    public int segmentsReused() {
        return segmentsReused.get();
    }

    void unusable(boolean wasTruncated) {
        (wasTruncated ? truncated : otherUnusable).incrementAndGet();
    }

    void charged(Credits.Charge charge) {
        if (charge.result() == Credits.Result.CHARGED) {
            charges.incrementAndGet();
        }
    }

    void accountCouldNotPay() {
        noCredits.incrementAndGet();
    }

    void deliveryFailed() {
        deliveryFailures.incrementAndGet();
    }

    /** @return handler runs */
    public int runs() {
        return runs.get();
    }

    /** @return distinct jobs whose handler returned done */
    public int completed() {
        return completed.size();
    }

    /** @return runs that ended rate limited (every endpoint refused or skipped): rescheduled, no attempt spent */
    public int rateLimitedRuns() {
        return rateLimitedRuns.get();
    }

    /** @return runs after a rate-limited run that saw a higher attempt number; must be 0 */
    public int attemptsSpentOnRateLimits() {
        return attemptsSpentOnRateLimits.get();
    }

    /** @return runs that ended spending an attempt (provider failures, unusable answers, failed deliveries) */
    public int attemptsSpent() {
        return attemptsSpent.get();
    }

    /** @return answers given by the primary endpoint */
    public int answeredByPrimary() {
        return answeredByPrimary.get();
    }

    /** @return answers given by the secondary endpoint */
    public int answeredBySecondary() {
        return answeredBySecondary.get();
    }

    /** @return answers whose JSON came in a code fence (and was read) */
    public int fenced() {
        return fenced.get();
    }

    /** @return answers whose JSON came with prose around it (and was read) */
    public int chatty() {
        return chatty.get();
    }

    /** @return truncated answers refused (the job retried) */
    public int truncated() {
        return truncated.get();
    }

    /** @return other unusable answers (no JSON, a missing segment) refused */
    public int otherUnusable() {
        return otherUnusable.get();
    }

    /** @return charges made by this process */
    public int charges() {
        return charges.get();
    }

    /** @return runs that found the account unable to pay (the job was parked) */
    public int noCredits() {
        return noCredits.get();
    }

    /** @return deliveries that failed (the job retried without charging again) */
    public int deliveryFailures() {
        return deliveryFailures.get();
    }
}
